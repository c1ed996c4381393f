"""Crash safety of the store: SIGKILL at random moments while a process writes items.

A child (tests/store_crash_child.py, forked by tests/forkserver.py) puts, deletes and
increments a counter by compare-and-swap through ``RepoStore(durable=True)``, logging
(fsynced) each write before it starts and after it returns. The parent kills it at a random
moment, then checks:

(a) ``Validator.run`` finds no problem in any file, and ``fsck`` finds nothing but what
    ``fsck --repair`` removes (a temp file, a namespace folder left empty);
(b) every item holds the last value the store acknowledged for it, or the value of the one
    write that was in flight (begun, not returned) when the kill came: nothing acknowledged is
    lost and nothing is torn;
(c) the counter equals the number of increments acknowledged, or one more (in flight).

A new child continues on the same root after every kill; at the end ``fsck --repair`` leaves a
clean root. Only kills delivered while the child was alive count.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from forkserver import Parent
from helpers import LONG, cut_torn_tail, logged
from langgraph_checkpoint_repo import RepoStore
from langgraph_checkpoint_repo.core.checks import Validator, fsck, repair
from langgraph_checkpoint_repo.core.threads import ThreadStore

CHILD = Path(__file__).with_name("store_crash_child.py")
KILLS, OPS, MAX_DELAY = (40 if LONG else 5), 400, 0.4  # the long mode kills more
DEBRIS = {"temp", "empty-folder", "gitignore"}
WAIT_LIMIT = 120.0  # seconds for a child to start (never reached when healthy)


def allowed_values(entries: list[dict[str, Any]]) -> dict[tuple[tuple[str, ...], str], list[Any]]:
    """Per item: the values it may hold now (the last acknowledged, then any begun after it)."""
    acked: set[str] = {e["ack"] for e in entries if "ack" in e and not e.get("refused")}
    begun = [e for e in entries if "begin" in e]
    out: dict[tuple[tuple[str, ...], str], list[Any]] = {}
    for entry in begun:
        name = (tuple(entry["ns"]), entry["key"])
        if entry["begin"] in acked:
            out[name] = [entry["value"]]  # acknowledged: replaces whatever came before
        else:
            out.setdefault(name, [None]).append(entry["value"])  # in flight: may or may not be there
    return out


def check(root: Path, log: Path) -> int:
    problems = Validator(root).run()
    assert problems == [], "\n".join(p.line() for p in problems)
    findings = fsck(ThreadStore(root))
    assert {f.kind for f in findings} <= DEBRIS, [(f.kind, f.path) for f in findings]
    store = RepoStore(root)  # nothing cached from before the kill
    entries = logged(log)
    verified = 0
    for (ns, key), values in allowed_values(entries).items():
        item = store.get(ns, key)
        got = None if item is None else item.value
        assert got in values, (ns, key, got, values[-3:])
        verified += 1
    increments = sum(
        1 for e in entries if "ack" in e and not e.get("refused") and e["ack"] in _counter_tags(entries)
    )
    # an increment begun and never acknowledged (its process was killed) may have landed, and
    # the next process counts on from it: each such one may add one
    acked = {e["ack"] for e in entries if "ack" in e}
    in_flight = sum(1 for tag in _counter_tags(entries) if tag not in acked)
    counter = store.get(("counter",), "c")
    count = counter.value["n"] if counter else 0
    assert increments <= count <= increments + in_flight, (count, increments, in_flight)
    return verified


def _counter_tags(entries: list[dict[str, Any]]) -> set[str]:
    return {e["begin"] for e in entries if "begin" in e and e["ns"] == ["counter"]}


def test_sigkill_while_writing_items_loses_no_acknowledged_write_and_tears_no_file(tmp_path: Path) -> None:
    seed = int(os.environ.get("LANGGRAPH_REPO_CRASH_SEED", str(random.SystemRandom().randrange(2**32))))
    print(f"store crash seed {seed} (set LANGGRAPH_REPO_CRASH_SEED to replay the delays)")
    rng = random.Random(seed)
    root, log, stderr = tmp_path / "root", tmp_path / "log", tmp_path / "stderr"
    delivered = verified = 0
    # each child a process of its own (its own store, caches and locks), forked from a parent
    # that imported the store once (tests/forkserver.py): a new interpreter costs more than its work
    parent = Parent(CHILD, "store_crash_child")
    try:
        for k in range(KILLS):
            ready = tmp_path / f"ready-{k}"
            args = [str(root), str(log), str(ready), str(seed + k), str(OPS)]
            proc = parent.start("main", args, stdout=Path(os.devnull), stderr=stderr)
            deadline = time.monotonic() + WAIT_LIMIT
            while not ready.exists():
                assert proc.poll() is None, stderr.read_text()
                assert time.monotonic() < deadline, "child never became ready"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, MAX_DELAY))
            if proc.poll() is None:
                proc.kill()
            code = proc.wait()
            cut_torn_tail(log)
            assert code in (0, -signal.SIGKILL), stderr.read_text()
            delivered += code == -signal.SIGKILL
            verified += check(root, log)
    finally:
        parent.close()
    store = ThreadStore(root)
    repair(store, fsck(store))
    assert fsck(ThreadStore(root)) == []
    print(f"store crash: {delivered} kills delivered, {verified} item checks")
    assert delivered >= KILLS // 2
