"""Strict turns (issue 38, item 2): ``RepoSaver(strict_turns=True)`` refuses a put that would
continue a checkpoint another writer already continued, writing nothing, so two processes
running turns on one thread never fork it silently; a fork made through LangGraph's API is
allowed. The default stays as LangGraph's savers behave (docs/forks.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, time_travel
from helpers import cli_env
from langgraph_checkpoint_repo import ConcurrentTurnError, RepoSaver

TURNS = 20


def test_two_processes_taking_turns_on_one_thread_lose_no_acknowledged_turn(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    child = Path(__file__).parent / "strict_child.py"
    procs = [
        subprocess.Popen(
            [sys.executable, str(child), str(root), name, str(TURNS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for name in ("a", "b")
    ]
    said = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in said]
    acknowledged = [line for out, _ in said for line in out.splitlines() if line != "REFUSED"]
    refused = sum(out.splitlines().count("REFUSED") for out, _ in said)
    assert len(acknowledged) + refused == 2 * TURNS
    saver = RepoSaver(root)
    state = saver.get_tuple(cfg("race"))
    assert state is not None
    kept = {m.content for m in state.checkpoint["channel_values"]["messages"]}
    assert set(acknowledged) <= kept  # every acknowledged turn is on the line that continues
    assert len(saver.store.lineage("race", "").heads()) == 1  # and nothing forked


def test_a_second_child_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False, strict_turns=True)
    base = saver.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    saver.put(base, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    files = sorted(p.name for p in root.rglob("*.json") if ".cache" not in p.parts)
    with pytest.raises(ConcurrentTurnError, match="continued by another writer"):
        saver.put(base, empty_checkpoint(), {"source": "input", "step": 0}, {})
    assert sorted(p.name for p in root.rglob("*.json") if ".cache" not in p.parts) == files
    saver.put(base, empty_checkpoint(), {"source": "fork", "step": 0}, {})  # on purpose: allowed
    lenient = RepoSaver(root, durable=False)  # the default: as LangGraph's savers, a fork
    lenient.put(base, empty_checkpoint(), {"source": "loop", "step": 0}, {})


def test_a_second_writer_starting_the_same_thread_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    """Two processes starting one thread at once: both saw no checkpoint, both write a first
    one (no parent); the second is refused, else its turn is on a line that never continues."""
    root = tmp_path / ".langgraph"
    first = RepoSaver(root, durable=False, strict_turns=True)
    second = RepoSaver(root, durable=False, strict_turns=True)
    first.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    files = sorted(p.name for p in root.rglob("*.json") if ".cache" not in p.parts)
    with pytest.raises(ConcurrentTurnError, match="another writer started it"):
        second.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {})
    assert sorted(p.name for p in root.rglob("*.json") if ".cache" not in p.parts) == files
    # on purpose: allowed
    second.put(cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "fork", "step": -1}, {})
    assert RepoSaver(root, durable=False).put(  # the default, as LangGraph's savers: not refused
        cfg("t", checkpoint_ns=""), empty_checkpoint(), {"source": "input", "step": -1}, {}
    )


def test_langgraph_s_time_travel_works_in_strict_turns(tmp_path: Path) -> None:
    """A replay and an update_state on the past, as LangGraph's docs show them: no refusal,
    and the state is InMemorySaver's."""

    strict = RepoSaver(tmp_path / ".langgraph", durable=False, strict_turns=True)
    assert time_travel(strict) == time_travel(InMemorySaver())
