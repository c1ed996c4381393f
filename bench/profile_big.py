"""What the first put of a big value does, counted (docs/performance.md, "Big values").

Runs the graphs of ``bench/workloads/big.py`` (a node returning a 50,000-item list, one
returning a 5 MB string) on a durable RepoSaver in a temp folder, a new thread each round,
and profiles every ``put`` and ``put_writes`` in the thread that runs it (cProfile). For the
put that first holds the value it prints what does not depend on the machine's load: the
function calls made, and the calls of the functions that pass over the whole value (the
serializer, the unpacking, the canonical bytes, the schema check, the hashes, the byte scans
of the redaction and of the bounds check), with their time inside as a guide only.

    .venv/bin/python -m bench.profile_big --rounds 3
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
from pathlib import Path
from typing import Any

from bench.workloads.big import big_list, big_text, build_graph
from langgraph_checkpoint_repo import RepoSaver

#: (a label, the pstats key's file suffix or "~", the function name): each a pass over the value
PASSES: tuple[tuple[str, str, str], ...] = (
    ("serializer msgpack (ormsgpack.packb)", "~", "<built-in method ormsgpack.ormsgpack.packb>"),
    ("msgpack unpacked (ormsgpack.unpackb)", "~", "<built-in method ormsgpack.ormsgpack.unpackb>"),
    ("base64 (b2a_base64)", "~", "<built-in method binascii.b2a_base64>"),
    ("schema check (jsonschema_rs)", "~", "<method 'is_valid' of 'jsonschema_rs.Validator' objects>"),
    ("sha256", "~", "<built-in method _hashlib.openssl_sha256>"),
    ("orjson.dumps", "~", "<built-in method orjson.dumps>"),
    ("bytes.find", "~", "<method 'find' of 'bytes' objects>"),
    ("bytes.count", "~", "<method 'count' of 'bytes' objects>"),
    ("bytes.replace", "~", "<method 'replace' of 'bytes' objects>"),
    ("msgpack_to_tree", "tree.py", "msgpack_to_tree"),
    ("Sharer._share", "objects.py", "_share"),
    ("digest_node", "canonical.py", "digest_node"),
    ("dump_json", "canonical.py", "dump_json"),
    ("validate_write", "validation.py", "validate_write"),
    ("might_contain_secret", "masking.py", "might_contain_secret"),
    ("might_hold_pydantic_secret", "redaction.py", "might_hold_pydantic_secret"),
    ("json_bounds_problem", "jsonread.py", "json_bounds_problem"),
    ("ValueCodec._dumps", "serde.py", "_dumps"),
)
#: (calls, seconds) of a pass not made (no float literal: tests/test_bench.py keeps those for goals)
UNSEEN: tuple[int, float] = (0, float(0))


class Profiled:
    """Each put and put_writes profiled on its own, with whether it carried ``channel``."""

    def __init__(self, saver: RepoSaver, channel: str) -> None:
        self.calls: list[tuple[str, bool, cProfile.Profile, float]] = []
        self._lock = threading.Lock()
        put, put_writes = saver.put, saver.put_writes

        def timed(name: str, fn: Any, carries: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                prof = cProfile.Profile()
                t0 = time.perf_counter()
                try:
                    return prof.runcall(fn, *args, **kwargs)
                finally:
                    with self._lock:
                        self.calls.append((name, carries(args), prof, time.perf_counter() - t0))

            return wrapper

        saver.put = timed("put", put, lambda a: channel in a[3])  # type: ignore[method-assign]
        saver.put_writes = timed("put_writes", put_writes, lambda a: any(c == channel for c, _ in a[1]))  # type: ignore[method-assign]

    def first(self, method: str) -> tuple[cProfile.Profile, float]:
        for name, carries, prof, seconds in self.calls:
            if name == method and carries:
                return prof, seconds
        raise RuntimeError(f"no {method} carrying the value")


def counts(prof: cProfile.Profile) -> tuple[int, dict[str, tuple[int, float]]]:
    """Function calls in all, and (calls, seconds inside) of each of ``PASSES``."""
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    out: dict[str, tuple[int, float]] = {}
    total = 0
    for (path, _line, func), (_cc, nc, tt, _ct, _callers) in stats.items():
        total += nc
        for label, suffix, name in PASSES:
            if func == name and ((suffix == "~" and path == "~") or path.endswith(suffix)):
                calls, secs = out.get(label, UNSEEN)
                out[label] = (calls + nc, secs + tt)
    return total, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--values", default="list,text")
    ap.add_argument("--top", type=int, default=0, help="also print the N top functions of the last put")
    args = ap.parse_args(argv)
    makers = {"list": lambda r: big_list(50_000, r), "text": lambda r: big_text(5_000_000, r)}
    for value in args.values.split(","):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
            saver = RepoSaver(Path(tmp) / "repo")
            rows: list[tuple[str, int, dict[str, tuple[int, float]], float]] = []
            last: cProfile.Profile | None = None
            for rnd in range(args.rounds + 1):  # round 0 warms up (imports, schemas)
                made = makers[value](rnd)
                profiled = Profiled(saver, value)
                graph = build_graph(saver, value, lambda made=made: made)
                graph.invoke({}, {"configurable": {"thread_id": f"p{rnd}"}})
                if rnd:
                    for method in ("put", "put_writes"):
                        prof, seconds = profiled.first(method)
                        total, found = counts(prof)
                        rows.append((method, total, found, seconds))
                        last = prof if method == "put" else last
                saver.put = RepoSaver.put.__get__(saver)  # type: ignore[method-assign]
                saver.put_writes = RepoSaver.put_writes.__get__(saver)  # type: ignore[method-assign]
        report(value, rows)
        if args.top and last is not None:
            pstats.Stats(last, stream=sys.stdout).sort_stats("tottime").print_stats(args.top)
    return 0


def report(value: str, rows: list[tuple[str, int, dict[str, tuple[int, float]], float]]) -> None:
    for method in ("put", "put_writes"):
        mine = [r for r in rows if r[0] == method]
        walls = sorted(r[3] * 1000 for r in mine)
        median = walls[len(walls) // 2]
        print(f"\n{value}: first {method}, {len(mine)} rounds, wall (profiled) median {median:.1f} ms")
        print(f"  function calls: {', '.join(str(r[1]) for r in mine)}")
        for label, _suffix, _name in PASSES:
            got = [r[2].get(label, UNSEEN) for r in mine]
            if any(c for c, _ in got):
                ms = sorted(s * 1000 for _, s in got)[len(got) // 2]
                print(f"  {label:<40} calls {', '.join(str(c) for c, _ in got):<12} ~{ms:.2f} ms inside")


if __name__ == "__main__":
    raise SystemExit(main())
