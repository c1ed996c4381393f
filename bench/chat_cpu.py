"""The CPU of a chat turn, measured the same way every time (docs/profile-chat.md).

The chat graph of ``bench/workloads/chat.py`` runs once on ``bench.replay``'s recorder; its
calls are replayed into one saver on the main thread, one turn after another, with a pause of
``--pause`` ms between turns (the bench runs the other savers' turns meanwhile, so a turn's
files are settled by the next, core/caches.py). For RepoSaver each ``put_writes`` is made on a
helper thread and waits there, as in a graph run, until the next ``put`` takes it into its file
(ride.py): the put does the work on the main thread. For the other savers ``put_writes`` runs
on the main thread.

Per measured turn: ``thread_time`` of the main thread (median), Python function calls
(cProfile, main thread; ``--cprofile N`` prints the top N) and file-system calls made by the
main thread (``os`` functions and ``open``, wrapped).

    .venv/bin/python -m bench.chat_cpu --saver repo --turns 40 --cprofile 30
"""

from __future__ import annotations

import argparse
import builtins
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from bench.common import open_sqlite
from bench.replay import Call, PutWrites, Rebuild, apply, for_saver, record
from bench.workloads.chat import build_chat_graph, user_text
from langgraph_checkpoint_repo import RepoSaver

OS_CALLS = (
    "fsync",
    "open",
    "lstat",
    "stat",
    "fstat",
    "replace",
    "rename",
    "mkdir",
    "unlink",
    "close",
    "write",
    "read",
    "listdir",
    "scandir",
    "getpid",
)


class OsCounts:
    """File-system calls made by one thread."""

    def __init__(self, thread: int) -> None:
        self.thread = thread
        self.on = False
        self.counts: Counter[str] = Counter()
        self.sites: Counter[tuple[str, str]] | None = None

    def note(self, name: str) -> None:
        if self.on and threading.get_ident() == self.thread:
            self.counts[name] += 1
            if self.sites is not None:
                self.sites[(name, _site())] += 1


def _site() -> str:
    """The package's three innermost functions on the stack."""
    frame = sys._getframe(3)
    chain: list[str] = []
    while frame is not None and len(chain) < int(os.environ.get("SITE_DEPTH", "3")):
        path = frame.f_code.co_filename
        if "langgraph_checkpoint_repo" in path:
            chain.append(f"{Path(path).stem}.{frame.f_code.co_name}")
        frame = frame.f_back  # type: ignore[assignment]
    return " < ".join(chain)


@contextmanager
def counting_os(counts: OsCounts) -> Iterator[None]:
    """Wrap the os functions (one module object) and ``open`` while replaying."""
    originals: dict[str, Callable[..., Any]] = {n: getattr(os, n) for n in OS_CALLS if hasattr(os, n)}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts.note(name)
            return fn(*args, **kwargs)

        return wrapper

    for name, fn in originals.items():
        setattr(os, name, wrap(name, fn))
    real_open = builtins.open
    builtins.open = io.open = wrap("io.open", real_open)  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(os, name, fn)
        builtins.open = io.open = real_open  # type: ignore[assignment]


def recorded(turns: int) -> list[list[Call]]:
    """The chat graph's calls, turn by turn."""
    config: Any = {"configurable": {"thread_id": "chat-0"}}
    inputs = [({"messages": [HumanMessage(content=user_text(0, t))]}, config) for t in range(turns)]
    rec = record(build_chat_graph, inputs)
    calls = list(Rebuild(rec.calls))
    starts = [*rec.turn_starts, len(calls)]
    return [calls[starts[i] : starts[i + 1]] for i in range(turns)]


def make_saver(kind: str, tmp: Path) -> BaseCheckpointSaver[Any]:
    if kind == "repo":
        return RepoSaver(tmp / "repo", durable=False)
    if kind == "repo-durable":
        return RepoSaver(tmp / "repo")
    if kind == "sqlite":
        saver = open_sqlite(tmp / "chat.db")
        saver.conn.execute("PRAGMA synchronous=OFF")
        return saver
    return InMemorySaver()


def play_turn(
    saver: BaseCheckpointSaver[Any],
    calls: list[Call],
    cpu: Counter[str],
    prof: cProfile.Profile | None = None,
) -> None:
    """One turn's calls; a RepoSaver's put_writes waits on a helper thread for the next put.
    ``cpu`` gets the main thread's CPU inside each kind of saver call; ``prof`` profiles them."""
    riders: list[threading.Thread] = []
    for call in calls:
        call = for_saver(call)
        if isinstance(call, PutWrites) and isinstance(saver, RepoSaver):
            riders.append(_ride(saver, call))
            continue
        t0 = time.thread_time_ns()
        if prof is not None:
            prof.enable()
        apply(saver, call)
        if prof is not None:
            prof.disable()
        cpu[type(call).__name__] += time.thread_time_ns() - t0
    for t in riders:
        t.join()


def _ride(saver: RepoSaver, call: PutWrites) -> threading.Thread:
    """``put_writes`` on a thread of its own, returned once it waits for its child's put."""
    conf = call.config["configurable"]
    key = (conf["thread_id"], conf.get("checkpoint_ns", ""), str(conf["checkpoint_id"]))
    t = threading.Thread(
        target=saver.put_writes, args=(call.config, list(call.writes), call.task_id, call.task_path)
    )
    t.start()
    ride = saver._ride
    deadline = time.monotonic() + 5
    while key not in ride._waiting and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.0002)
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--saver", default="repo", choices=("repo", "repo-durable", "sqlite", "memory"))
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--turns", type=int, default=40)
    ap.add_argument("--pause", type=float, default=60.0, help="ms between turns")
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--dump", default="", help="write the profile to this file (pstats)")
    ap.add_argument("--sites", type=int, default=0, help="print the N call sites of the most fs calls")
    args = ap.parse_args(argv)
    turns = recorded(args.warmup + args.turns)
    os_counts = OsCounts(threading.get_ident())
    if args.sites:
        os_counts.sites = Counter()
    prof = cProfile.Profile()
    per_turn: list[Counter[str]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        saver = make_saver(args.saver, Path(tmp))
        for calls in turns[: args.warmup]:
            play_turn(saver, calls, Counter())
        for calls in turns[args.warmup :]:  # CPU, unprofiled
            time.sleep(args.pause / 1000)
            per_turn.append(Counter())
            play_turn(saver, calls, per_turn[-1])
        (Path(tmp) / "second").mkdir()
        saver2 = make_saver(args.saver, Path(tmp) / "second")
        for calls in turns[: args.warmup]:
            play_turn(saver2, calls, Counter())
        with counting_os(os_counts):
            for calls in turns[args.warmup :]:  # calls: profiled, on a second root
                time.sleep(args.pause / 1000)
                os_counts.on = True
                play_turn(saver2, calls, Counter(), prof)
                os_counts.on = False
    if args.dump:
        prof.dump_stats(args.dump)
    stats = pstats.Stats(prof, stream=sys.stdout)
    n = args.turns
    print(f"saver {args.saver}: {n} turns after {args.warmup}")
    total_cpu = statistics.median(sum(c.values()) for c in per_turn) / 1e6
    parts = ", ".join(
        f"{k} {statistics.median(c[k] for c in per_turn) / 1e6:.2f}" for k in ("GetTuple", "Put", "PutWrites")
    )
    print(f"CPU in saver calls per turn (thread_time, median): {total_cpu:.2f} ms ({parts})")
    print(f"Python function calls per turn: {stats.total_calls / n:.0f}")  # type: ignore[attr-defined]
    total = sum(os_counts.counts.values())
    detail = ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(os_counts.counts.items()))
    print(f"file-system calls per turn (main thread): {total / n:.1f} ({detail})")
    if os_counts.sites is not None:
        for (name, site), k in os_counts.sites.most_common(args.sites):
            print(f"{k / n:6.1f}  {name:<8} {site}")
    if args.cprofile:
        stats.sort_stats(args.sort).print_stats(args.cprofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
