"""The benchmark (``bench/``) runs end to end in its smallest mode, and each goal is written once.

No timing is asserted: a goal may be met or not; only that the report says so.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from bench.common import REPO
from bench.goals import GOALS
from bench.workloads import WORKLOADS, history

from test_bench_plot import LINES, by_panel, polylines

BENCH = Path(__file__).resolve().parent.parent / "bench"
TREES = {path: ast.parse(path.read_text()) for path in sorted(BENCH.rglob("*.py"))}


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python bench/run.py --tiny`` (one run for this module: it is the slowest fixture we have):
    the folder with ``report.md``, its picture and ``results.json``."""
    tmp = tmp_path_factory.mktemp("bench")
    report, results = tmp / "report.md", tmp / "results.json"
    args = ["--tiny", "--out", str(report), "--json", str(results), "--tmp-dir", str(tmp / "work")]
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), *args], capture_output=True, text=True, timeout=600, cwd=tmp
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp / "work").exists(), "the temp data is removed at the end"
    (tmp / "console.txt").write_text(proc.stdout)
    return tmp


@pytest.fixture(scope="module")
def tiny_run(tiny_dir: Path) -> tuple[str, str, dict[str, Any]]:
    """The report, the console output and the JSON results of the ``--tiny`` run."""
    return (
        (tiny_dir / "report.md").read_text(),
        (tiny_dir / "console.txt").read_text(),
        json.loads((tiny_dir / "results.json").read_text()),
    )


def test_every_workload_has_its_section_and_rows(tiny_run: tuple[str, str, dict[str, Any]]) -> None:
    report, console, results = tiny_run
    for w in WORKLOADS:
        assert report.count(f"\n### {w.TITLE}\n") == 1, w.NAME
        rows = w.rows(results[w.NAME])
        assert rows, w.NAME
        for row in rows:
            line = f"| {row.workload} | {row.metric} | {row.unit} |"
            assert line in report, line
            assert line in console, line


def test_every_goal_is_printed_in_the_report_and_the_console(
    tiny_run: tuple[str, str, dict[str, Any]],
) -> None:
    report, console, results = tiny_run
    assert [g["key"] for g in results["goals"]] == [g.key for g in GOALS]
    for goal, checked in zip(GOALS, results["goals"], strict=True):
        text = goal.text(results[goal.workload])
        assert checked["text"] == text
        assert checked["met"] in (True, False, None)
        met = {True: "yes", False: "**NO**", None: "n/a"}[checked["met"]]
        line = f"| {text} | {checked['measured']} | {met} |"
        assert report.count(line) == 1, line
        assert console.count(line) == 1, line
    for section in (
        "## Goals",
        "## Results",
        "## Notes on method",
        "## Machine",
        "## Sizes",
        "## How to reproduce",
    ):
        assert report.count(f"\n{section}\n") == 1, section


def test_each_goal_and_its_threshold_are_written_once() -> None:
    """Each goal is one ``Goal(...)`` in goals.py with a literal threshold, and no float equal to a
    goal's threshold is written anywhere else in bench/ (so no second check like ``ratio <= 1.2``)."""
    written: list[ast.Constant] = []
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Goal":
                assert path.name == "goals.py", f"{path}:{node.lineno}: a goal outside goals.py"
                values = [kw.value for kw in node.keywords if kw.arg == "threshold"]
                assert len(values) == 1 and isinstance(values[0], ast.Constant), f"{path}:{node.lineno}"
                written.append(values[0])
    assert sorted(c.value for c in written) == sorted(g.threshold for g in GOALS)
    thresholds = {g.threshold for g in GOALS}
    again = [
        f"{path}:{node.lineno}: {node.value}"
        for path, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and type(node.value) is float
        and node.value in thresholds
        and not any(node is c for c in written)
    ]
    assert not again


def test_no_goal_wording_is_written_out() -> None:
    """A goal's comparison and threshold are printed only by rendering its definition: no string
    in bench/ spells one out (as ``"RepoSaver <= 1.2x SqliteSaver"`` once did)."""
    strings = [
        node.value
        for tree in TREES.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    any_result = defaultdict(int)  # fills the {fields} some goals take from their workload's results
    for goal in GOALS:
        for spelled in (goal.bound(any_result), f"{goal.compare} {goal.threshold:g}"):
            assert not [s for s in strings if spelled in s], spelled


# the picture of the history workload (bench/plot.py), from the same run
def test_the_run_writes_a_well_formed_svg_next_to_the_report(
    tiny_run: tuple[str, str, dict[str, Any]], tiny_dir: Path
) -> None:
    _, _, results = tiny_run
    svg = (tiny_dir / "report-depth.svg").read_text()
    ET.fromstring(svg)  # raises on anything that is not well-formed XML
    lengths = results["history"]["lengths"]
    assert len(lengths) >= 2
    panels = by_panel(svg)
    assert set(panels) == set(history.CALLS)
    for found in panels.values():
        assert sorted(found) == sorted(LINES)
    for line in polylines(svg):
        assert len(line.attrib["points"].split()) == len(lengths), line.attrib


def test_the_report_links_the_svg_and_holds_the_numbers(tiny_run: tuple[str, str, dict[str, Any]]) -> None:
    text, _, results = tiny_run
    assert len(re.findall(r"!\[[^\]]+\]\(report-depth\.svg\)", text)) == 1
    for n in results["history"]["lengths"]:
        point = results["history"]["points"][str(n)]
        for call in history.CALLS:
            cell = f"{point['warm'][REPO][f'{call}_ms']:,.3f}"
            assert f"| {n:,} | {history._CALL[call]} | {cell} |" in text, (n, call)


def test_the_growth_workloads_draw_their_pictures_next_to_the_report(
    tiny_run: tuple[str, str, dict[str, Any]], tiny_dir: Path
) -> None:
    """turns and threads: one well-formed SVG each, linked from the report, a line per saver
    and figure in each panel, a point per size of the ladder (the put curve: per bucket)."""
    text, _, results = tiny_run
    for name in ("turns", "threads"):
        result = results[name]
        assert result["picture"] == f"report-{name}.svg"
        assert len(re.findall(rf"!\[[^\]]+\]\(report-{name}\.svg\)", text)) == 1
        svg = (tiny_dir / result["picture"]).read_text()
        ET.fromstring(svg)
        for panel, lines in by_panel(svg).items():
            assert sorted({saver for saver, _ in lines}) == sorted(result["savers"]), (name, panel)
        for line in polylines(svg):
            if line.attrib["data-panel"] != "put":
                assert len(line.attrib["points"].split()) == len(result["ladder"]), line.attrib
