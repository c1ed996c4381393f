"""Repair that never makes a valid state invalid (issue 38, item 1).

Random sequences of what happens to a root in a repository (turns of two graphs, prunes left
uncommitted, commits, checkouts that restore the committed files and leave the new ones, and
``fsck --repair``) are run on a real root; at each repair: a root ``validate`` passes still
passes after it, and every checkpoint that read before reads back the same. 40 sequences in
the default run (each repair checks the whole root twice, about 0.1 s: 200 would cost the
suite's 5-minute budget 20 s), 2,000 in the long mode (docs/reliability.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from graphs import cfg, chat_graph, question, relay_graph
from helpers import LONG
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.checks import Validator, fsck, repair

THREADS = ("chat", "relay")
OPS = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(THREADS), st.integers(1, 3)),
    st.tuples(st.just("prune"), st.sampled_from(THREADS), st.integers(1, 4)),
    # the report's case: a prune left uncommitted, then the committed state checked out again
    st.tuples(st.just("prune, then checkout"), st.sampled_from(THREADS), st.integers(1, 4)),
    st.tuples(st.just("commit")),
    st.tuples(st.just("checkout")),
    st.tuples(st.just("repair")),
)


def files(root: Path) -> dict[str, bytes]:
    """The state as git would commit it: every file below threads/ (never .cache/)."""
    out = {}
    for here, _, names in os.walk(root / "threads"):
        for name in names:
            path = Path(here) / name
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


def checkout(root: Path, committed: dict[str, bytes]) -> None:
    """``git checkout .``: the committed files back as they were; new files stay."""
    for rel, data in committed.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.unlink(missing_ok=True)
            path.write_bytes(data)


def problems(root: Path) -> list[str]:
    validator = Validator(root, None)
    validator.run(None)
    return [p.line() for p in validator.problems]


def readable(root: Path) -> dict[tuple[str, str, str], Any]:
    """Every checkpoint a fresh saver reads, with its values and pending writes."""
    saver = RepoSaver(root)
    out = {}
    for thread in THREADS:
        for t in saver.list(cfg(thread)):
            conf = t.config["configurable"]
            out[thread, conf["checkpoint_ns"], conf["checkpoint_id"]] = (
                t.checkpoint["channel_values"],
                t.pending_writes,
            )
    return out


def turn(root: Path, thread: str, n: int, said: list[int]) -> None:
    saver = RepoSaver(root, durable=False)
    for _ in range(n):
        said[0] += 1
        if thread == "chat":
            chat_graph(saver).invoke({"messages": [HumanMessage(content=f"turn {said[0]}")]}, cfg("chat"))
        else:
            relay_graph(saver).invoke({"messages": [question(said[0])]}, cfg("relay"))


def prune(root: Path, thread: str, keep: int) -> None:
    from datetime import datetime, timezone

    from langgraph_checkpoint_repo.core.plans import carry_out, plan_prune

    store = RepoSaver(root, durable=False).store
    if thread not in store.thread_ids():
        return
    with store.thread_lock(thread, exclusive=True):
        plan = plan_prune(
            store, thread, keep_last=keep, older_than=None, now=datetime.now(timezone.utc), allow_growth=True
        )
        carry_out(store, plan)


def repaired(root: Path) -> None:
    """``fsck --repair``; valid before, valid after, and nothing that read is lost."""
    before_problems = problems(root)
    before = readable(root) if not before_problems else None
    store = RepoSaver(root, durable=False).store
    repair(store, fsck(store))
    if before is None:
        return
    assert problems(root) == [], "repair made a valid root invalid"
    assert readable(root) == before, "repair changed what a checkpoint reads"


@settings(
    max_examples=2000 if LONG else 40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(OPS, min_size=1, max_size=7))
def test_repair_never_makes_a_valid_root_invalid_nor_loses_a_checkpoint(ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / ".langgraph"
        committed: dict[str, bytes] = {}
        said = [0]
        for op in ops:
            if op[0] == "turn":
                turn(root, op[1], op[2], said)
            elif op[0] == "prune":
                prune(root, op[1], op[2])
            elif op[0] == "prune, then checkout":
                committed = files(root) if root.exists() else {}
                prune(root, op[1], op[2])
                checkout(root, committed)
            elif op[0] == "commit":
                committed = files(root) if root.exists() else {}
            elif op[0] == "checkout":
                checkout(root, committed)
            else:
                if root.exists():
                    repaired(root)
        if root.exists():
            repaired(root)
        shutil.rmtree(root, ignore_errors=True)


def test_repair_after_an_uncommitted_prune_and_a_checkout_removes_what_it_left_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """The sequence the property draws most to find: repair has orphans to remove (the files
    the prune wrote, which the checked-out checkpoints do not use) and removes them, and the
    root still validates and reads the same (so the property test's repairs are not all no-ops)."""
    root = tmp_path / ".langgraph"
    turn(root, "chat", 6, [0])
    turn(root, "relay", 4, [0])
    committed = files(root)
    for thread in THREADS:
        prune(root, thread, 2)
    checkout(root, committed)
    store = RepoSaver(root, durable=False).store
    orphans = [f for f in fsck(store) if f.kind.startswith("orphan")]
    assert orphans, "the prune left nothing for repair to remove"
    before = readable(root)
    assert problems(root) == []
    repaired(root)
    assert [f for f in fsck(RepoSaver(root).store) if f.kind.startswith("orphan")] == []
    assert readable(root) == before
