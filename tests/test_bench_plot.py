"""The history workload's picture (bench/plot.py): well-formed SVG, one line per saver and mode
in each panel, linked from the report; drawn from a real ``--tiny --only history`` run.

No timing is asserted: the figures are whatever the machine gives.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from bench.common import MEMORY, REPO, SQLITE
from bench.workloads import history

BENCH = Path(__file__).resolve().parent.parent / "bench"
SVG = "{http://www.w3.org/2000/svg}"
LINES = {
    (REPO, "warm"),
    (REPO, "fresh process"),
    (REPO, "fresh process, no .cache/"),
    (SQLITE, "warm"),
    (SQLITE, "fresh process"),
    (MEMORY, "warm"),
}
"""Every saver and mode of a panel; InMemorySaver has no fresh process."""


def polylines(svg: str) -> list[ET.Element]:
    return list(ET.fromstring(svg).iter(f"{SVG}polyline"))


def by_panel(svg: str) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for line in polylines(svg):
        out.setdefault(line.attrib["data-panel"], []).append(
            (line.attrib["data-saver"], line.attrib["data-mode"])
        )
    return out


def synthetic(lengths: list[int]) -> dict[str, Any]:
    """A history result with made-up figures that grow with the length (ms = n / divisor)."""

    def calls(divisor: float) -> dict[str, dict[str, float]]:
        return {
            c: {"call_ms": n / divisor, "wall_ms": n, "import_ms": 1, "open_ms": 1} for c in history.CALLS
        }

    points = {}
    for n in lengths:
        warm = {
            s: {f"{c}_ms": n / d for c in history.CALLS}
            for s, d in ((REPO, 100), (SQLITE, 1000), (MEMORY, 10))
        }
        fresh = {history.WITH_INDEX: calls(50), history.NO_INDEX: calls(5), SQLITE: calls(500)}
        points[str(n)] = {"warm": warm, "fresh": fresh}
    return {
        "lengths": lengths,
        "table_length": lengths[-1],
        "fresh_repeats": 1,
        "curve_repeats": 1,
        "points": points,
    }


def test_each_panel_has_one_line_per_saver_and_mode() -> None:
    svg = history.picture(synthetic([10, 100, 1000]))
    panels = by_panel(svg)
    assert set(panels) == set(history.CALLS)
    for found in panels.values():
        assert sorted(found) == sorted(LINES)


def test_warm_lines_are_solid_and_fresh_lines_dashed() -> None:
    for line in polylines(history.picture(synthetic([10, 100]))):
        dashed = "stroke-dasharray" in line.attrib
        assert dashed == line.attrib["data-mode"].startswith("fresh"), line.attrib


def test_points_are_on_log_axes_each_length_once() -> None:
    """Three lengths, a decade apart: three points, equally spaced in x, y falling as ms rises."""
    for line in polylines(history.picture(synthetic([10, 100, 1000]))):
        pts = [tuple(float(v) for v in p.split(",")) for p in line.attrib["points"].split()]
        assert len(pts) == 3
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)
        assert ys[0] > ys[1] > ys[2]  # SVG's y grows downwards: a longer history draws higher


def test_the_svg_depends_only_on_the_figures() -> None:
    result = synthetic([10, 100, 1000])
    assert history.picture(result) == history.picture(json.loads(json.dumps(result)))
    other = synthetic([10, 100, 1000])
    other["points"]["100"]["warm"][REPO]["get_tuple_ms"] *= 2
    assert history.picture(result) != history.picture(other)


def test_axes_have_labels_with_units_and_a_legend() -> None:
    svg = history.picture(synthetic([10, 100, 1000]))
    texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert texts.count("history length (checkpoints)") == 2
    assert texts.count("latency (ms)") == 2
    for saver, mode in LINES:
        assert texts.count(f"{saver}, {mode}") == 1, (saver, mode)


@pytest.fixture(scope="module")
def history_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, Any]]:
    """``python bench/run.py --tiny --only history``: the report's path, its text and the results."""
    tmp = tmp_path_factory.mktemp("bench-plot")
    report, results = tmp / "perf.md", tmp / "results.json"
    args = ["--tiny", "--only", "history", "--out", str(report), "--json", str(results)]
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), *args, "--tmp-dir", str(tmp / "work")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr
    return report, report.read_text(), json.loads(results.read_text())


def test_the_run_writes_a_well_formed_svg_next_to_the_report(
    history_run: tuple[Path, str, dict[str, Any]],
) -> None:
    report, _, results = history_run
    svg = report.with_name("perf-depth.svg").read_text()
    ET.fromstring(svg)  # raises on anything that is not well-formed XML
    lengths = results["history"]["lengths"]
    assert len(lengths) >= 2
    panels = by_panel(svg)
    assert set(panels) == set(history.CALLS)
    for found in panels.values():
        assert sorted(found) == sorted(LINES)
    for line in polylines(svg):
        assert len(line.attrib["points"].split()) == len(lengths), line.attrib


def test_the_report_links_the_svg_and_holds_the_numbers(
    history_run: tuple[Path, str, dict[str, Any]],
) -> None:
    _, text, results = history_run
    assert len(re.findall(r"!\[[^\]]+\]\(perf-depth\.svg\)", text)) == 1
    for n in results["history"]["lengths"]:
        point = results["history"]["points"][str(n)]
        for call in history.CALLS:
            cell = f"{point['warm'][REPO][f'{call}_ms']:,.3f}"
            assert f"| {n:,} | {history._CALL[call]} | {cell} |" in text, (n, call)
