"""Workload 7: ``get_tuple`` and ``list(filter)`` against history length, warm and in a fresh process.

One chain of ``max(history_lengths)`` checkpoints (the depth workload's ``make_chain``) is written
once per saver, round-robin; the fill stops at each length to measure and then goes on, so no saver
writes a checkpoint twice. At each length: warm calls (a new instance per saver, its first call
untimed) and fresh processes (``python -m bench.fresh_child``: imports, opens the saver, one call).
RepoSaver's fresh processes run with the root's ``.cache/`` moved away (no index) and as earlier
processes left it. The picture of it all is drawn by ``picture`` (``bench/plot.py``).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from bench import goals, plot
from bench.common import (
    MEMORY,
    REPO,
    REPO_CACHED,
    REPO_NO_CACHE,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    median_ms,
    open_sqlite,
    progress,
    rotated,
    run_child,
)
from bench.report import Row, md_table
from bench.workloads.depth import Step, _check_latest, make_chain, thread_config
from langgraph_checkpoint_repo import RepoSaver

NAME = "history"
TITLE = "History length: warm calls and the first call of a fresh process"
PICTURE = "depth"
"""The picture's name: ``performance-depth.svg`` beside ``performance.md``."""

THREAD = "history"
CALLS = ("get_tuple", "list")
NO_INDEX = REPO_NO_CACHE
WITH_INDEX = REPO_CACHED
FRESH = (NO_INDEX, WITH_INDEX, SQLITE)
"""The fresh-process variants; InMemorySaver has none (its state dies with the process)."""
CACHE = ".cache"
COLORS = {REPO: "#1f6fb4", SQLITE: "#c62828", MEMORY: "#2e7d32"}


def run(tmp: Path, sizes: Sizes) -> Result:
    lengths = sorted(set(sizes.history_lengths))
    if sizes.big_checkpoints not in lengths:
        raise ValueError(f"history_lengths {lengths} must hold big_checkpoints {sizes.big_checkpoints}")
    chain = make_chain(lengths[-1], random.Random(4321))
    root, db = tmp / "history-repo", tmp / "history.db"
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(root),
        SQLITE: open_sqlite(db),
        MEMORY: InMemorySaver(),
    }
    rng = random.Random(99)
    put_ns: dict[str, list[int]] = {n: [] for n in savers}
    configs = {n: thread_config(THREAD) for n in savers}
    points: dict[str, Any] = {}
    for start, n in zip([0, *lengths], lengths, strict=False):
        _fill(savers, configs, chain[start:n], put_ns, start)
        progress(f"history: {n:,} checkpoints written; timing")
        ks = [rng.randrange(n) for _ in range(max(sizes.list_calls, sizes.fresh_repeats))]
        warm = _warm(root, db, savers[MEMORY], chain[:n], sizes.get_tuple_calls, ks[: sizes.list_calls])
        repeats = sizes.fresh_repeats if n == sizes.big_checkpoints else sizes.curve_repeats
        fresh = _fresh(root, db, tmp / "cache-aside", chain[:n], repeats, ks, sizes)
        points[str(n)] = {"warm": warm, "fresh": fresh, "fresh_repeats": repeats}
    for saver in savers.values():
        close_saver(saver)
    return {
        "lengths": lengths,
        "table_length": sizes.big_checkpoints,
        "fresh_repeats": sizes.fresh_repeats,
        "curve_repeats": sizes.curve_repeats,
        "put_median_ms": {n: median_ms(v) for n, v in put_ns.items()},
        "points": points,
    }


def _fill(
    savers: dict[str, BaseCheckpointSaver[Any]],
    configs: dict[str, Any],
    steps: list[Step],
    put_ns: dict[str, list[int]],
    first: int,
) -> None:
    """``put`` the next ``steps`` of the chain into every saver, round-robin, after ``configs``."""
    names = list(savers)
    for i, (checkpoint, metadata, new_versions) in enumerate(steps, start=first):
        for name in rotated(names, i):
            t0 = time.perf_counter_ns()
            configs[name] = savers[name].put(configs[name], checkpoint, metadata, new_versions)
            put_ns[name].append(time.perf_counter_ns() - t0)


def _warm(
    root: Path, db: Path, memory: BaseCheckpointSaver[Any], chain: list[Step], calls: int, ks: list[int]
) -> dict[str, dict[str, float]]:
    """Median ms of ``get_tuple`` latest and of ``list(filter)`` on one new instance per saver
    (InMemorySaver: the filled one), after each instance's first call of each, which is untimed."""
    readers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(root),
        SQLITE: open_sqlite(db),
        MEMORY: memory,
    }
    names = list(readers)
    ns: dict[str, dict[str, list[int]]] = {n: {c: [] for c in CALLS} for n in names}
    for rep in range(calls + 1):
        for name in rotated(names, rep):
            t0 = time.perf_counter_ns()
            tup = readers[name].get_tuple(thread_config(THREAD))
            elapsed = time.perf_counter_ns() - t0
            if rep == 0:
                _check_latest(name, tup, chain[-1][0])
            else:
                ns[name]["get_tuple"].append(elapsed)
    for rep, k in enumerate([ks[0], *ks]):
        for name in rotated(names, rep):
            t0 = time.perf_counter_ns()
            found = [
                t.checkpoint["id"] for t in readers[name].list(thread_config(THREAD), filter={"step": k})
            ]
            elapsed = time.perf_counter_ns() - t0
            if found != [chain[k][0]["id"]]:
                raise RuntimeError(f"{name}: list(filter step={k}) found {found}")
            if rep:
                ns[name]["list"].append(elapsed)
    close_saver(readers[SQLITE])
    return {n: {f"{c}_ms": median_ms(ns[n][c]) for c in CALLS} for n in names}


@contextmanager
def _cache_aside(root: Path, aside: Path) -> Iterator[None]:
    """The root without its ``.cache/`` while inside; what a process made there is then dropped
    and the earlier ``.cache/`` put back."""
    cache = root / CACHE
    moved = cache.exists()
    if moved:
        cache.rename(aside)
    try:
        yield
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if moved:
            aside.rename(cache)


def _child(kind: str, path: Path, call: str, k: int, forked: bool) -> dict[str, Any]:
    """One fresh process (``bench/fresh_child.py``): its JSON, and ``wall_ms``, its whole life."""
    proc, wall_ms = run_child("bench.fresh_child", [kind, str(path), call, THREAD, str(k)], forked)
    if proc.returncode != 0:
        raise RuntimeError(f"fresh {kind} {call} process failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return {**out, "wall_ms": wall_ms}


def _fresh(
    root: Path, db: Path, aside: Path, chain: list[Step], repeats: int, ks: list[int], sizes: Sizes
) -> Result:
    """Median ms of fresh processes' first call, each variant and call ``repeats`` times,
    round-robin; first one untimed process of each call leaves ``.cache/`` as a reader does."""
    for call in CALLS if sizes.warm_up else ():
        _child("repo", root, call, ks[0], sizes.forked_children)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {v: {c: [] for c in CALLS} for v in FRESH}
    for rep in range(repeats):
        k = ks[rep % len(ks)]
        for variant in rotated(FRESH, rep):
            kind, path = ("sqlite", db) if variant == SQLITE else ("repo", root)
            for call in rotated(CALLS, rep):
                with _cache_aside(root, aside) if variant == NO_INDEX else nullcontext():
                    out = _child(kind, path, call, k, sizes.forked_children)
                want = [chain[-1][0]["id"] if call == "get_tuple" else chain[k][0]["id"]]
                if out["found"] != want:
                    raise RuntimeError(f"fresh {variant} {call}: found {out['found']}, not {want}")
                runs[variant][call].append(out)
    return {v: {c: _medians(runs[v][c]) for c in CALLS} for v in FRESH}


def _medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("call_ms", "wall_ms", "import_ms", "open_ms")
    return {
        **{k: statistics.median(r[k] for r in runs) for k in keys},
        "call_all_ms": [r["call_ms"] for r in runs],
    }


def at_table_length(result: Result) -> Result:
    """The point at ``table_length`` checkpoints (5,000 in the full run): the issue's table."""
    point: Result = result["points"][str(result["table_length"])]
    return point


def rows(result: Result) -> list[Row]:
    fresh = at_table_length(result)["fresh"]
    n = result["table_length"]

    def row(call: str, what: str, variant: str, key: str, goal: str = "") -> Row:
        values = {REPO: fresh[variant][call][key], SQLITE: fresh[SQLITE][call][key]}
        return Row(
            "7 fresh process", f"first {_CALL[call]}, {n:,} checkpoints, {what}", values, "ms", goal, 3
        )

    out: list[Row] = []
    for call, goal in (("get_tuple", goals.FRESH_GET_TUPLE), ("list", goals.FRESH_LIST)):
        out += [
            row(call, "the call; .cache/ of an earlier process", WITH_INDEX, "call_ms", goal.column(result)),
            row(call, "the call; no .cache/", NO_INDEX, "call_ms"),
            row(call, "process wall time; .cache/ of an earlier process", WITH_INDEX, "wall_ms"),
        ]
    return out


_CALL = {"get_tuple": "get_tuple latest", "list": "list(filter={'step': k})"}


def _series(result: Result, call: str) -> tuple[plot.Line, ...]:
    """The lines of one panel: warm solid, fresh process dashed (no ``.cache/``: dotted)."""
    lengths = result["lengths"]
    pts = result["points"]

    def line(saver: str, mode: str, dash: str | None, value: Any) -> plot.Line:
        return plot.Line(saver, mode, COLORS[saver], dash, tuple((n, value(pts[str(n)])) for n in lengths))

    def warm(saver: str) -> plot.Line:
        return line(saver, "warm", None, lambda p: p["warm"][saver][f"{call}_ms"])

    def fresh(saver: str, variant: str, mode: str, dash: str) -> plot.Line:
        return line(saver, mode, dash, lambda p: p["fresh"][variant][call]["call_ms"])

    return (
        warm(REPO),
        fresh(REPO, WITH_INDEX, "fresh process", "7 4"),
        fresh(REPO, NO_INDEX, "fresh process, no .cache/", "2 3"),
        warm(SQLITE),
        fresh(SQLITE, SQLITE, "fresh process", "7 4"),
        warm(MEMORY),
    )


def picture(result: Result) -> str:
    """The SVG of the report: latency against history length, one panel per call."""
    panels = [plot.Panel(call, _CALL[call], _series(result, call)) for call in CALLS]
    title = "Latency against history length (warm: solid; first call of a fresh process: dashed)"
    return plot.render(panels, title, "history length (checkpoints)", "latency (ms)")


def details(result: Result, sizes: dict[str, Any]) -> str:
    n = result["table_length"]
    intro = (
        f"One thread of up to {result['lengths'][-1]:,} checkpoints (the depth workload's chain), written "
        "once per saver with `put`, round-robin; the fill stops at each history length "
        f"({', '.join(f'{x:,}' for x in result['lengths'])}) to time, then goes on. Warm: the median of "
        f"{sizes['get_tuple_calls']} `get_tuple` (latest) and {sizes['list_calls']} "
        "`list(config, filter={'step': k})` (random k) on one new instance per saver, after its first call "
        "(InMemorySaver: the instance that was filled). Fresh process: a new Python process "
        "(`python -m bench.fresh_child`) imports the saver's package, opens the saver (SqliteSaver: a new "
        "connection) and makes one call; the figure is the call alone, median of "
        f"{result['fresh_repeats']} processes per saver and call at {n:,} checkpoints and of "
        f"{result['curve_repeats']} at the other lengths; the process's wall time "
        "(start-up, imports, open, call) is in the table below. RepoSaver's fresh processes run with the "
        "root's `.cache/` moved away ('no .cache/') and as earlier processes left it (one untimed process "
        "of each call first). The OS page cache is warm throughout. InMemorySaver has no fresh process.\n"
    )
    out = [intro]
    if result.get("picture"):
        out.append(f"![get_tuple and list(filter) latency against history length]({result['picture']})\n")
    out.append(_numbers_table(result) + "\n")
    out.append(f"The fresh processes at {n:,} checkpoints, median ms:\n")
    out.append(_process_table(at_table_length(result)["fresh"]) + "\n")
    out.append(_FRESH_NOTE)
    return "\n".join(out)


_FRESH_NOTE = (
    "Where the first call of a fresh RepoSaver process goes, at 5,000 checkpoints with the index "
    "(timed piece by piece on this machine, idle): compiling the checkpoint schema (jsonschema-rs, "
    "once per process) about 2 ms; the folder's recorded listing from `.cache/index/` (200 KB: read, "
    "CRC-32, split, order check) about 1.5 ms; the ids derived from the names about 3 ms; reading, "
    "validating and reviving the latest checkpoint about 1.2 ms. At 10 checkpoints the call is about "
    "3.5 ms, mostly the schema and the checkpoint itself; SQLite's is a lookup in a B-tree. The filter: "
    "loading the recorded metadata (700 KB of JSON for 5,000 checkpoints) about 10 ms, then one `lstat` "
    "per checkpoint (15-30 ms here): that is how an in-place hand edit of any checkpoint is seen (an "
    "edit changes neither the folder nor the inode; docs/reliability.md, 'The derived index'), and the "
    "warm filter pays the same `lstat`s. Without `.cache/` the first process reads every header (the "
    "'no .cache/' column) and leaves the index for the next one.\n"
)


def _numbers_table(result: Result) -> str:
    """The numbers behind the picture, ms."""
    head = ["Checkpoints", "Call", f"{REPO} warm", f"{WITH_INDEX}, fresh", f"{NO_INDEX}, fresh"]
    head += [f"{SQLITE} warm", f"{SQLITE} fresh", f"{MEMORY} warm"]
    cells = []
    for n in result["lengths"]:
        p = result["points"][str(n)]
        for call in CALLS:
            warm, fresh = p["warm"], p["fresh"]
            values = [
                warm[REPO][f"{call}_ms"],
                fresh[WITH_INDEX][call]["call_ms"],
                fresh[NO_INDEX][call]["call_ms"],
                warm[SQLITE][f"{call}_ms"],
                fresh[SQLITE][call]["call_ms"],
                warm[MEMORY][f"{call}_ms"],
            ]
            cells.append([f"{n:,}", _CALL[call], *(f"{v:,.3f}" for v in values)])
    return md_table(head, "llrrrrrr", cells)


def _process_table(fresh: Result) -> str:
    keys = ("import_ms", "open_ms", "call_ms", "wall_ms")
    cells = [
        [variant, _CALL[call], *(f"{fresh[variant][call][k]:,.1f}" for k in keys)]
        for variant in FRESH
        for call in CALLS
    ]
    return md_table(["Saver", "Call", "imports", "open", "call", "process wall"], "llrrrr", cells)
