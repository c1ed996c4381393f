"""The history workload's picture (bench/plot.py): well-formed SVG, one line per saver and mode
in each panel; the picture of a real ``--tiny`` run is checked in test_bench.py, which has one.

No timing is asserted: the figures are whatever the machine gives.
"""

from __future__ import annotations

import json
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
