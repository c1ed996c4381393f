"""Where the time of a chat turn's saver calls goes (docs/profile-chat.md).

Runs the chat graph of ``bench/workloads/chat.py`` on a durable RepoSaver in a temp folder,
warms it up, then for the measured turns counts, per saver method (``put``, ``put_writes``,
``get_tuple``): calls, time inside, and the file-system calls made meanwhile (``os.fsync``,
``os.open``, ``os.lstat``, ``os.stat``, ``os.replace``, ``os.mkdir``, ``os.unlink``) with the
time spent in fsync. ``--cprofile N`` also prints the N most expensive functions (cumulative)
inside ``put`` and ``put_writes``.

    .venv/bin/python -m bench.profile_chat --turns 45 --cprofile 40
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
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

from bench.workloads.chat import build_chat_graph, user_text
from langgraph_checkpoint_repo import RepoSaver

OS_CALLS = ("fsync", "open", "lstat", "stat", "replace", "mkdir", "unlink", "close", "write", "listdir")
METHODS = ("put", "put_writes", "get_tuple")

_state = threading.local()


class Counts:
    """Per method: calls, ns inside, os calls and ns in fsync, counted on the calling thread."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.ns: Counter[str] = Counter()
        self.os: dict[str, Counter[str]] = {m: Counter() for m in (*METHODS, "other")}
        self.lock = threading.Lock()
        self.sites: Counter[tuple[str, str, str]] | None = None

    def note_os(self, name: str, ns: int) -> None:
        method = getattr(_state, "method", None) or "other"
        with self.lock:
            self.os[method][name] += 1
            if self.sites is not None and method != "other":
                self.sites[(method, name, _site())] += 1
            if name == "fsync":
                self.os[method]["fsync_ns"] += ns


def _site() -> str:
    """The innermost caller in the package or filelock, with the package function that led there."""
    frame = sys._getframe(3)
    chain: list[str] = []
    while frame is not None and len(chain) < 3:
        path = frame.f_code.co_filename
        if "langgraph_checkpoint_repo" in path or "filelock" in path or "pathlib" in path:
            chain.append(f"{Path(path).stem}.{frame.f_code.co_name}")
        frame = frame.f_back  # type: ignore[assignment]
    return " < ".join(chain)


@contextmanager
def counting_os(counts: Counts) -> Iterator[None]:
    """Wrap the os functions everywhere (os is one module object) while measuring."""
    originals = {name: getattr(os, name) for name in OS_CALLS}

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                counts.note_os(name, time.perf_counter_ns() - t0)

        return wrapper

    for name, fn in originals.items():
        setattr(os, name, wrap(name, fn))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(os, name, fn)


def instrument(saver: RepoSaver, counts: Counts, profiles: dict[str, cProfile.Profile] | None) -> None:
    lock = threading.Lock()
    for name in METHODS:
        original = getattr(saver, name)

        def wrapper(*args: Any, _name: str = name, _orig: Any = original, **kwargs: Any) -> Any:
            _state.method = _name
            prof = None
            if profiles is not None and _name != "get_tuple" and lock.acquire(blocking=False):
                prof = profiles[_name]
            t0 = time.perf_counter_ns()
            try:
                if prof is None:
                    return _orig(*args, **kwargs)
                return prof.runcall(_orig, *args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - t0
                if prof is not None:
                    lock.release()
                _state.method = None
                with counts.lock:
                    counts.calls[_name] += 1
                    counts.ns[_name] += elapsed

        setattr(saver, name, wrapper)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--turns", type=int, default=45)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cprofile", type=int, default=0, help="print the N top functions of put and put_writes")
    ap.add_argument("--durable", type=int, default=1)
    ap.add_argument("--sort", default="cumulative", help="pstats sort key for --cprofile")
    ap.add_argument("--sites", type=int, default=0, help="print the N call sites making the most os calls")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        saver = RepoSaver(Path(tmp) / "repo", durable=bool(args.durable))
        graph = build_chat_graph(saver)
        config: Any = {"configurable": {"thread_id": "chat-0"}}
        for turn in range(args.warmup):
            graph.invoke({"messages": [HumanMessage(content=user_text(0, turn))]}, config)
        counts = Counts()
        if args.sites:
            counts.sites = Counter()
        profiles = {m: cProfile.Profile() for m in METHODS} if args.cprofile else None
        instrument(saver, counts, profiles)
        walls = []
        with counting_os(counts):
            for turn in range(args.warmup, args.warmup + args.turns):
                t0 = time.perf_counter_ns()
                graph.invoke({"messages": [HumanMessage(content=user_text(0, turn))]}, config)
                walls.append(time.perf_counter_ns() - t0)
    report(counts, walls, args.turns)
    if counts.sites is not None:
        print("\nper turn, by call site:")
        for (method, name, site), n in counts.sites.most_common(args.sites):
            print(f"{n / args.turns:6.1f}  {method:<10} {name:<8} {site}")
    if profiles is not None:
        for name in ("put", "put_writes"):
            print(f"\n=== cProfile of {name} ({args.sort}) ===")
            pstats.Stats(profiles[name], stream=sys.stdout).sort_stats(args.sort).print_stats(args.cprofile)
    return 0


def report(counts: Counts, walls: list[int], turns: int) -> None:
    walls.sort()
    print(f"turns: {turns}, median turn {walls[len(walls) // 2] / 1e6:.2f} ms")
    print("method      calls/turn  ms/call  " + "  ".join(f"{n}/call" for n in OS_CALLS) + "  fsync ms/call")
    for m in METHODS:
        c = counts.calls[m] or 1
        os_per = "  ".join(f"{counts.os[m][n] / c:>{len(n) + 5}.1f}" for n in OS_CALLS)
        fs = counts.os[m]["fsync_ns"] / c / 1e6
        per_call = counts.ns[m] / c / 1e6
        print(f"{m:<11} {counts.calls[m] / turns:>10.2f}  {per_call:>7.2f}  {os_per}  {fs:>13.2f}")
    other = counts.os["other"]
    print("outside saver calls, per turn: " + ", ".join(f"{n} {other[n] / turns:.1f}" for n in OS_CALLS))


if __name__ == "__main__":
    raise SystemExit(main())
