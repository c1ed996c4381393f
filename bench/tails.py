"""The tail of a long thread's puts, measured the same way every time (issue 37, item 3).

The tool-calling agent's conversation (bench/growth.py ``conversation``: five checkpoints and
four ``put_writes`` a turn) is recorded once (kept in ``--cache``) and replayed, call by call,
into RepoSaver (``durable=False``: the same files, no fsync wait) and, in the same loop, the
savers taking turns call by call, into SqliteSaver (``synchronous=OFF``), as bench/workloads/
turns.py replays. Per put: wall and ``thread_time``, whether a garbage collection ran inside it
(``gc.callbacks``: its generation and duration), file-system calls of the main thread (os
functions and ``open``, wrapped) and, with ``--calls``, Python function calls (a cProfile per
put, so that run's times are not the plain ones). Also: each get_tuple's CPU, every full
(generation 2) collection of the process while replaying, in a put or not, and the
collector's time by the call it ran in (each saver's put, put_writes, get_tuple).

What the full collections scan: the process's objects, the savers' caches (RepoSaver's parsed
files of a 5,000-checkpoint thread) as much as the recording. ``--freeze`` moves what is there
before the replay (the libraries, the recording) out of the collector's scans (``gc.freeze``
after a ``gc.collect``). Over a 1,000-turn replay (December 2026, a loaded machine) it made the
full collections twice as many (236 and 238 against 112: the collector's rule counts the
long-lived objects, and fewer were counted) and no cheaper in all (254 s against 102 s, at a
higher load); frozen, they ran in ``get_tuple`` (about 120 in each saver's: a turn's call that
builds the most objects) and in 0 or 2 puts; not frozen, in 1 put. So the default leaves the
collector as an application has it, and the passes are reported by the call they ran in.

    .venv/bin/python -m bench.tails --turns 1000 --calls --json /tmp/tails.json
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import growth
from bench.chat_cpu import OsCounts, counting_os
from bench.common import close_saver, open_sqlite, rotated
from bench.replay import GetTuple, Put, Rebuild, Recording, apply, for_saver
from langgraph_checkpoint_repo import RepoSaver

REPO, SQLITE = "repo", "sqlite"
PROFILED: list[Any] = [0, None]
"""The most Python calls a put made so far, and its profile."""
FULL: list[int] = []
"""The durations (ns) of the process's full (generation 2) collections while replaying."""
GETS: dict[str, list[tuple[int, int]]] = {}
"""Each saver's get_tuple calls: (turn, thread_time ns)."""
LATE: list[Any] = [10**9, []]
BY_KIND: dict[str, list[int]] = {}
"""The collector's passes by the call they ran in: [count, ns] per generation (0, 1, 2)."""
"""RepoSaver's puts after this turn: their profiles."""


@dataclass
class PutSample:
    """One put of one saver."""

    turn: int
    wall_ns: int
    cpu_ns: int
    gc: list[tuple[int, int]] = field(default_factory=list)  # (generation, ns) of each collection
    fs: dict[str, int] = field(default_factory=dict)
    calls: int = 0


class GcWatch:
    """The collections that run while ``on``, each (generation, duration); and all of them
    by the call running (``kind``: "<saver> <call>", or "between" outside the savers' calls)."""

    def __init__(self) -> None:
        self.on = False
        self.kind = "between"
        self.seen: list[tuple[int, int]] = []
        self.full: list[int] = []  # every full collection of the process meanwhile, inside a put or not
        self.by_kind: dict[str, list[int]] = {}  # kind -> [count, ns] per generation (0, 1, 2)
        self._start = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
            return
        took = time.perf_counter_ns() - self._start
        gen = info["generation"]
        if gen == 2:
            self.full.append(took)
        row = self.by_kind.setdefault(self.kind, [0] * 6)
        row[2 * gen] += 1
        row[2 * gen + 1] += took
        if self.on:
            self.seen.append((gen, took))


def recording(turns: int, cache: Path) -> Recording:
    """The conversation of ``turns`` turns, recorded once and kept in ``cache``."""
    path = cache / f"tails-{turns}.pickle"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        growth.conversation(turns, "long", "user-long", "the long thread").save(path)
    return Recording.load(path)


def open_savers(tmp: Path, names: list[str]) -> dict[str, BaseCheckpointSaver[Any]]:
    out: dict[str, BaseCheckpointSaver[Any]] = {}
    for name in names:
        if name == REPO:
            out[name] = RepoSaver(tmp / "repo", durable=False)
        else:
            saver = open_sqlite(tmp / "tails.db")
            saver.conn.execute("PRAGMA synchronous=OFF")
            out[name] = saver
    return out


def measured_put(
    saver: BaseCheckpointSaver[Any], call: Put, turn: int, watch: GcWatch, fs: OsCounts, calls: bool
) -> PutSample:
    """One put, with what ran inside it."""
    prof = cProfile.Profile() if calls else None
    watch.seen, fs.counts = [], Counter()
    watch.on = fs.on = True
    watch.kind = f"{type(saver).__name__} put"
    c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
    if prof is not None:
        prof.enable()
    apply(saver, call)
    if prof is not None:
        prof.disable()
    wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
    watch.on = fs.on = False
    watch.kind = "between"
    n = sum(e.callcount for e in prof.getstats()) if prof is not None else 0
    if prof is not None and n > PROFILED[0]:
        PROFILED[:] = [n, prof]
    if prof is not None and turn > LATE[0] and type(saver) is RepoSaver:
        LATE[1].append(prof)
    return PutSample(turn, wall, cpu, watch.seen, dict(fs.counts), n)


def replay(rec: Recording, names: list[str], calls: bool, freeze: bool) -> dict[str, list[PutSample]]:
    """Every call into every saver, the savers taking turns; each put measured."""
    samples: dict[str, list[PutSample]] = {name: [] for name in names}
    watch, fs = GcWatch(), OsCounts(threading.get_ident())
    if freeze:
        gc.collect()
        gc.freeze()
    gc.callbacks.append(watch)  # after: the collection before the freeze is not the replay's
    starts = rec.turn_starts
    turn = -1
    try:
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp, counting_os(fs):
            savers = open_savers(Path(tmp), names)
            for i, call in enumerate(Rebuild(rec.calls)):
                while turn + 1 < len(starts) and starts[turn + 1] <= i:
                    turn += 1
                for name in rotated(names, i):
                    args = for_saver(call)
                    if isinstance(args, Put):
                        samples[name].append(measured_put(savers[name], args, turn + 1, watch, fs, calls))
                    elif isinstance(args, GetTuple):
                        watch.kind = f"{type(savers[name]).__name__} get_tuple"
                        c0 = time.thread_time_ns()
                        apply(savers[name], args)
                        GETS.setdefault(name, []).append((turn + 1, time.thread_time_ns() - c0))
                    else:
                        watch.kind = f"{type(savers[name]).__name__} put_writes"
                        apply(savers[name], args)
                    watch.kind = "between"
            for saver in savers.values():
                close_saver(saver)
    finally:
        FULL[:] = watch.full
        BY_KIND.update(watch.by_kind)
        gc.callbacks.remove(watch)
        if freeze:
            gc.unfreeze()
    return samples


def summary(samples: list[PutSample], at: list[int]) -> dict[str, Any]:
    """Median, p99 and slowest put; per-put counts around each turn of ``at``; the slowest puts."""
    walls = sorted(s.wall_ns for s in samples)
    cpus = sorted(s.cpu_ns for s in samples)
    med, p99 = statistics.median(walls), walls[min(len(walls) - 1, round(0.99 * (len(walls) - 1)))]
    out: dict[str, Any] = {
        "puts": len(samples),
        "median_ms": med / 1e6,
        "p99_ms": p99 / 1e6,
        "max_ms": walls[-1] / 1e6,
        "max_over_median": walls[-1] / med,
        # the same by the put's own CPU (thread_time, the collector's passes inside included):
        # on a shared machine a put's wall time also holds the time other processes ran
        "cpu_median_ms": statistics.median(cpus) / 1e6,
        "cpu_max_ms": cpus[-1] / 1e6,
        "cpu_max_over_median": cpus[-1] / statistics.median(cpus),
        "puts_with_gc": {g: sum(1 for s in samples if any(c[0] == g for c in s.gc)) for g in (0, 1, 2)},
    }
    by_turn: dict[str, Any] = {}
    for t in at:
        near = [s for s in samples if t - 10 < s.turn <= t]
        if not near:
            continue
        fs = Counter[str]()
        for s in near:
            fs.update(s.fs)
        by_turn[str(t)] = {
            "calls": statistics.median(s.calls for s in near),
            "calls_max": max(s.calls for s in near),
            "fs": {k: round(v / len(near), 1) for k, v in sorted(fs.items())},
            "fs_max": max(sum(s.fs.values()) for s in near),
            "cpu_ms": statistics.median(s.cpu_ns for s in near) / 1e6,
            "wall_ms": statistics.median(s.wall_ns for s in near) / 1e6,
        }
    out["by_turn"] = by_turn
    out["get_tuple_cpu_ms"] = {}
    slow = sorted(samples, key=lambda s: s.wall_ns, reverse=True)[:10]
    out["slowest"] = [
        {**asdict(s), "wall_ms": s.wall_ns / 1e6, "cpu_ms": s.cpu_ns / 1e6, "gc_ms": _gc_ms(s)} for s in slow
    ]
    return out


def _gc_ms(sample: PutSample) -> float:
    return sum(ns for _, ns in sample.gc) / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--savers", default="repo,sqlite")
    ap.add_argument("--calls", action="store_true", help="count Python calls per put (cProfile)")
    ap.add_argument("--freeze", action="store_true", help="gc.freeze() the recording before replaying")
    ap.add_argument("--cache", default=os.environ.get("BENCH_CACHE", "/tmp/bench-tails"))
    ap.add_argument("--json", default="")
    ap.add_argument("--top", type=int, default=0, help="print the N functions the busiest put called most")
    args = ap.parse_args(argv)
    rec = recording(args.turns, Path(args.cache))
    LATE[0] = args.turns - 10 if args.top else 10**9
    samples = replay(rec, args.savers.split(","), args.calls, args.freeze)
    at = [t for t in (10, 30, 100, 300, 1000, 3000) if t <= args.turns]
    result = {name: summary(s, at) for name, s in samples.items()}
    for name, gets in GETS.items():
        result[name]["get_tuple_cpu_ms"] = {
            str(t): statistics.median(ns for turn, ns in gets if t - 10 < turn <= t) / 1e6 for t in at
        }
    if REPO in result and SQLITE in result:
        result["p99_ratio"] = result[REPO]["p99_ms"] / result[SQLITE]["p99_ms"]
    result["full_collections_ms"] = [round(ns / 1e6, 1) for ns in FULL]
    result["frozen"] = args.freeze
    result["collector_by_call"] = {
        kind: {f"gen{g}": {"passes": row[2 * g], "ms": round(row[2 * g + 1] / 1e6, 1)} for g in (0, 1, 2)}
        for kind, row in sorted(BY_KIND.items())
    }
    if args.json:
        kept = {k: [asdict(s) for s in v] for k, v in samples.items()}
        Path(args.json).write_text(json.dumps({"summary": result, "samples": kept}))
    for name in samples:
        r = result[name]
        print(
            f"{name}: {r['puts']} puts; median {r['median_ms']:.2f} ms, p99 {r['p99_ms']:.2f}, "
            f"max {r['max_ms']:.2f} ({r['max_over_median']:.1f}x); puts with a gc pass {r['puts_with_gc']}"
        )
        print(
            f"  by CPU: median {r['cpu_median_ms']:.2f} ms, max {r['cpu_max_ms']:.2f} "
            f"({r['cpu_max_over_median']:.1f}x)"
        )
        for t, row in r["by_turn"].items():
            print(
                f"  turn {t:>5}: calls {row['calls']:.0f} (max {row['calls_max']}), fs {row['fs']} "
                f"(max {row['fs_max']}), cpu {row['cpu_ms']:.2f} ms, wall {row['wall_ms']:.2f} ms"
            )
        gets = ", ".join(f"{t}: {ms:.2f}" for t, ms in r["get_tuple_cpu_ms"].items())
        print(f"  get_tuple CPU ms by turn (median of 10 turns): {gets}")
        for s in r["slowest"][:5]:
            print(
                f"  slow: turn {s['turn']} wall {s['wall_ms']:.2f} cpu {s['cpu_ms']:.2f} gc {s['gc']} "
                f"calls {s['calls']} fs {sum(s['fs'].values())}"
            )
    if args.top and PROFILED[1] is not None:
        PROFILED[1].dump_stats("/tmp/bench-tails-busiest.prof")
        pstats.Stats(PROFILED[1]).sort_stats("ncalls").print_stats(args.top)
        pstats.Stats(PROFILED[1]).sort_stats("cumulative").print_stats(args.top)
        print("the puts of the last 10 turns:")
        pstats.Stats(*LATE[1]).sort_stats("tottime").print_stats(args.top)
    for kind, gens in result["collector_by_call"].items():
        parts = ", ".join(f"{g} {v['passes']} in {v['ms']} ms" for g, v in gens.items())
        print(f"collector in {kind}: {parts}")
    full = result["full_collections_ms"]
    print(f"full collections while replaying (ms): {full}; objects tracked: {len(gc.get_objects()):,}")
    if "p99_ratio" in result:
        print(f"p99 repo/sqlite: {result['p99_ratio']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
