"""The agents workload (bench/workloads/agents.py) runs end to end for 3 turns through ``--turns``.

No timing is asserted: only that every turn was measured and the report says what was measured.
"""

from __future__ import annotations

from typing import Any

import pytest
from bench import run
from bench.agent_graphs import BUILDERS
from bench.common import REPO, SQLITE
from bench.goals import GOALS, check_goals
from bench.workloads import agents

TURNS = 3


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``bench/run.py --tiny --only agents --turns 3``, in process: the results of every workload."""
    tmp = tmp_path_factory.mktemp("bench-agents")
    argv = ["--tiny", "--only", "agents", "--turns", str(TURNS), "--tmp-dir", str(tmp / "work")]
    results = run.run_all(run.parse_args(argv), argv)
    assert not (tmp / "work").exists(), "the temp data is removed at the end"
    return results


def test_turns_sets_the_number_of_turns_of_every_graph(result: dict[str, Any]) -> None:
    agent = result["agents"]
    assert agent["turns"] == TURNS
    assert result["sizes"]["agent_turns"] == TURNS
    assert sorted(agent["graphs"]) == sorted(BUILDERS)
    for per in agent["graphs"].values():
        for name in (REPO, SQLITE):
            for key in ("bytes", "files", "lines", "copies", "turn_ms"):
                assert len(per[name][key]) == TURNS, (name, key)


def test_every_repo_turn_adds_text_files_that_hold_the_turns_user_text_and_adds_up_by_folder(
    result: dict[str, Any],
) -> None:
    for graph, per in result["agents"]["graphs"].items():
        repo = per[REPO]
        assert all(b > 0 for b in repo["bytes"]), graph
        assert all(f > 0 for f in repo["files"]), graph
        assert all(n is not None and n > 0 for n in repo["lines"]), graph
        assert all(c >= 1 for c in repo["copies"]), graph
        assert [sum(kinds.values()) for kinds in repo["by_kind"]] == repo["bytes"], graph
        assert [sum(kinds.values()) for kinds in repo["lines_by_kind"]] == repo["lines"], graph
        assert [sum(kinds.values()) for kinds in repo["copies_by_kind"]] == repo["copies"], graph


def test_sqlite_turns_are_binary_commits_whose_blobs_hold_the_users_text(result: dict[str, Any]) -> None:
    for graph, per in result["agents"]["graphs"].items():
        sqlite = per[SQLITE]
        assert sqlite["lines"] == [None] * TURNS, graph
        assert all(b > 0 for b in sqlite["blob_bytes"]), graph
        assert all(c >= 1 for c in sqlite["copies"]), graph


def test_git_sizes_after_gc_are_measured_for_both_savers(result: dict[str, Any]) -> None:
    for per in result["agents"]["graphs"].values():
        for name in (REPO, SQLITE):
            s = per[name]
            assert s["git_dir_bytes"] > s["git_dir_bytes_empty"] > 0
            assert s["git_growth_bytes"] == s["git_dir_bytes"] - s["git_dir_bytes_empty"]


def test_rows_details_and_goals_say_what_was_measured(result: dict[str, Any]) -> None:
    agent = result["agents"]
    rows = agents.rows(agent)
    assert {r.workload for r in rows} == {f"6 agents: {g}" for g in BUILDERS}
    details = agents.details(agent, result["sizes"])
    for graph in BUILDERS:
        assert f"| {graph} | {REPO} |" in details
        assert f"| {graph} | {SQLITE} |" in details
    checked = check_goals(result)
    assert [g.key for g in checked] == [g.key for g in GOALS if g.workload == "agents"]
    assert all(g.met in (True, False) for g in checked), "every agents goal could be measured"
