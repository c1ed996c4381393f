"""Deliberate forks are not unsettled heads (issue 38, item 3).

Time travel as LangGraph's docs show it (a replay from a past checkpoint, ``update_state`` on
one) writes a new line whose first checkpoint says so: source ``fork`` or ``update``. Such a
line is a choice made through LangGraph's API, so ``validate --heads`` passes on it, and
``heads`` shows its heads settled. Two writers that both continued one checkpoint (a race, a
merge of two branches) still leave heads to settle: their first checkpoints are plain steps
(``input``, ``loop``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, time_travel
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver


def test_time_travel_through_langgraph_s_api_passes_validate_heads(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    time_travel(RepoSaver(root, durable=False))
    heads = cli(root, "heads", "fork", "--json")
    assert heads.returncode == 0, heads.stderr
    assert cli(root, "validate", "--heads").returncode == 0
    memory = InMemorySaver()
    time_travel(memory)  # the one that continues is InMemorySaver's, fork or not
    got = RepoSaver(root).get_tuple(cfg("fork"))
    want = memory.get_tuple(cfg("fork"))
    assert got is not None and want is not None
    assert got.checkpoint["channel_values"] == want.checkpoint["channel_values"]


@pytest.mark.parametrize(
    ("sources", "settled"),
    [
        (("loop", "loop"), False),  # two writers that both went on: a race
        (("input", "loop"), False),
        (("fork", "loop"), True),  # a replay from the past beside the line that went on
        (("update", "input"), True),  # update_state on a past checkpoint
        (("fork", "update"), True),
    ],
)
def test_two_lines_from_one_checkpoint_are_settled_only_when_one_is_a_fork(
    tmp_path: Path, sources: tuple[str, str], settled: bool
) -> None:
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    base = saver.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    for source in sources:
        saver.put(base, empty_checkpoint(), {"source": source, "step": 0}, {})
    heads = RepoSaver(root).store.lineage("t", "").heads()
    assert len(heads) == 2 and all(h.settled == settled for h in heads)
    assert (cli(root, "validate", "--heads").returncode == 0) == settled


def test_a_race_below_a_deliberate_fork_still_needs_a_choice(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    base = saver.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    saver.put(base, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    forked = saver.put(base, empty_checkpoint(), {"source": "fork", "step": 0}, {})
    for _ in range(2):  # two writers both continued the fork
        saver.put(forked, empty_checkpoint(), {"source": "loop", "step": 1}, {})
    heads = {h.checkpoint_id: h.settled for h in RepoSaver(root).store.lineage("t", "").heads()}
    assert sorted(heads.values()) == [False, False, True]
    assert cli(root, "validate", "--heads").returncode == 1
