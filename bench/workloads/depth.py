"""Workloads 2 and 3: deep threads; ``get_tuple`` latest and ``list(filter={"step": k})``.

A thread of ``big_checkpoints`` and one of ``small_checkpoints``, written with ``put``; then the
latest checkpoint read warm (many calls on one instance) and by the first call of a fresh instance.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver

from bench import goals
from bench.common import (
    MAIN_SAVERS,
    MEMORY,
    REPO,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    dir_usage,
    median_ms,
    ms,
    open_sqlite,
    progress,
    quantile_ms,
    rotated,
)
from bench.report import Row, md_table
from langgraph_checkpoint_repo import RepoSaver

NAME = "depth"
TITLE = "Deep threads in detail"

Step = tuple[Checkpoint, CheckpointMetadata, ChannelVersions]
ByThread = dict[str, dict[str, list[int]]]
"""Nanoseconds by saver, then by thread ("big" or "small")."""
THREADS = ("big", "small")


def make_chain(n: int, rng: random.Random) -> list[Step]:
    """A thread of ``n`` checkpoints: a counter and a trigger change every step, a status
    every 25 steps, a growing ``log`` list every 10 steps. Versions in InMemorySaver's shape."""
    counter = 0

    def next_version() -> str:
        nonlocal counter
        counter += 1
        return f"{counter:032}.{rng.random():016}"

    versions: dict[str, str] = {}
    values: dict[str, Any] = {}
    log: list[str] = []
    steps: list[Step] = []
    for i in range(n):
        changed = ["count", "branch:to:work"]
        values["count"] = i
        values["branch:to:work"] = None
        if i % 25 == 0:
            changed.append("status")
            values["status"] = f"phase {i // 25}: collecting results"
        if i % 10 == 0:
            changed.append("log")
            log = [*log, f"step {i}: checked {rng.randrange(1000)} items"][-20:]
            values["log"] = list(log)
        seen_work = versions.get("branch:to:work")
        new_versions: dict[str, str | int | float] = {}
        for ch in changed:
            versions[ch] = next_version()
            new_versions[ch] = versions[ch]
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=i)),
            "ts": dt.datetime.now(dt.timezone.utc).isoformat(),
            "channel_values": dict(values),
            "channel_versions": dict(versions),
            "versions_seen": {"work": {"branch:to:work": seen_work} if seen_work else {}},
            "updated_channels": sorted(changed),
        }
        metadata: CheckpointMetadata = {"source": "loop", "step": i, "parents": {}}
        steps.append((checkpoint, metadata, new_versions))
    return steps


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def run(tmp: Path, sizes: Sizes) -> Result:
    rng = random.Random(1234)
    chains = {
        "small": make_chain(sizes.small_checkpoints, rng),
        "big": make_chain(sizes.big_checkpoints, rng),
    }
    repo_root = tmp / "depth-repo"
    db = tmp / "depth.db"
    fill_savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(repo_root),
        SQLITE: open_sqlite(db),
        MEMORY: InMemorySaver(),
    }
    put_ns = _fill(fill_savers, chains)
    progress("depth: filled")
    openers: dict[str, Callable[[], BaseCheckpointSaver[Any]]] = {
        REPO: lambda: RepoSaver(repo_root),
        SQLITE: lambda: open_sqlite(db),
    }
    cold = _cold(openers, chains, sizes.cold_repeats)
    # warm: many calls on one fresh instance each (InMemorySaver: the filled one)
    readers = {REPO: openers[REPO](), SQLITE: openers[SQLITE](), MEMORY: fill_savers[MEMORY]}
    warm = _warm(readers, chains, sizes.get_tuple_calls)
    progress("depth: get_tuple done")
    ks = [rng.randrange(sizes.big_checkpoints) for _ in range(sizes.list_calls + 1)]
    list_ns = _list_filter(readers, ks)
    progress("depth: list done")
    for saver in {id(s): s for s in [*fill_savers.values(), *readers.values()]}.values():
        close_saver(saver)
    return {
        "big_checkpoints": sizes.big_checkpoints,
        "small_checkpoints": sizes.small_checkpoints,
        "per_saver": {name: _summarise(name, put_ns, cold, warm, list_ns) for name in fill_savers},
        "repo_files": dir_usage(repo_root),
    }


def _fill(savers: dict[str, BaseCheckpointSaver[Any]], chains: dict[str, list[Step]]) -> dict[str, list[int]]:
    """``put`` every chain into every saver, round-robin; the time of each ``put``."""
    names = list(savers)
    put_ns: dict[str, list[int]] = {n: [] for n in names}
    rnd = 0
    for thread_id in ("small", "big"):
        configs = {n: thread_config(thread_id) for n in names}
        for checkpoint, metadata, new_versions in chains[thread_id]:
            for name in rotated(names, rnd):
                t0 = time.perf_counter_ns()
                configs[name] = savers[name].put(configs[name], checkpoint, metadata, new_versions)
                put_ns[name].append(time.perf_counter_ns() - t0)
            rnd += 1
    return put_ns


def _cold(
    openers: dict[str, Callable[[], BaseCheckpointSaver[Any]]], chains: dict[str, list[Step]], repeats: int
) -> ByThread:
    """The first ``get_tuple`` of a fresh instance (the OS page cache is warm)."""
    cold: ByThread = {name: {t: [] for t in THREADS} for name in openers}
    for rep in range(repeats):
        for name in rotated(list(openers), rep):
            for thread_id in THREADS:
                saver = openers[name]()
                t0 = time.perf_counter_ns()
                tup = saver.get_tuple(thread_config(thread_id))
                cold[name][thread_id].append(time.perf_counter_ns() - t0)
                assert tup is not None and tup.checkpoint["id"] == chains[thread_id][-1][0]["id"], name
                close_saver(saver)
    return cold


def _warm(
    readers: dict[str, BaseCheckpointSaver[Any]], chains: dict[str, list[Step]], calls: int
) -> ByThread:
    """``calls`` calls of ``get_tuple`` on each reader after its first, which is checked, not timed."""
    names = list(readers)
    warm: ByThread = {n: {t: [] for t in THREADS} for n in names}
    for rep in range(calls + 1):
        for name in rotated(names, rep):
            for thread_id in rotated(THREADS, rep):
                t0 = time.perf_counter_ns()
                tup = readers[name].get_tuple(thread_config(thread_id))
                elapsed = time.perf_counter_ns() - t0
                if rep == 0:
                    _check_latest(name, tup, chains[thread_id][-1][0])
                    continue  # the first call of an instance is the cold one, measured in _cold
                warm[name][thread_id].append(elapsed)
    return warm


def _check_latest(name: str, tup: Any, want: Checkpoint) -> None:
    assert tup is not None and tup.checkpoint["id"] == want["id"], name
    want_values = {k: v for k, v in want["channel_values"].items() if v is not None}
    got = {k: v for k, v in tup.checkpoint["channel_values"].items() if v is not None}
    assert got == want_values, (name, got, want_values)


def _list_filter(readers: dict[str, BaseCheckpointSaver[Any]], ks: list[int]) -> dict[str, list[int]]:
    """``list(filter={"step": k})`` in the big thread for every k; the first call of each reader first."""
    names = list(readers)
    list_ns: dict[str, list[int]] = {n: [] for n in names}
    for rep, k in enumerate(ks):
        for name in rotated(names, rep):
            t0 = time.perf_counter_ns()
            found = list(readers[name].list(thread_config("big"), filter={"step": k}))
            list_ns[name].append(time.perf_counter_ns() - t0)
            if len(found) != 1 or found[0].metadata["step"] != k:
                raise RuntimeError(f"{name}: list(filter step={k}) found {len(found)} checkpoints")
    return list_ns


def _summarise(
    name: str, put_ns: dict[str, list[int]], cold: ByThread, warm: ByThread, list_ns: dict[str, list[int]]
) -> dict[str, Any]:
    first_list, *later_lists = list_ns[name]
    entry: dict[str, Any] = {
        "put_median_ms": median_ms(put_ns[name]),
        "put_p90_ms": quantile_ms(put_ns[name], 0.9),
        "get_tuple_big_median_ms": median_ms(warm[name]["big"]),
        "get_tuple_big_p90_ms": quantile_ms(warm[name]["big"], 0.9),
        "get_tuple_small_median_ms": median_ms(warm[name]["small"]),
        "get_tuple_small_p90_ms": quantile_ms(warm[name]["small"], 0.9),
        "get_tuple_calls": len(warm[name]["big"]),
        "list_filter_median_ms": median_ms(later_lists),
        "list_filter_p90_ms": quantile_ms(later_lists, 0.9),
        "list_filter_first_ms": ms(first_list),
        "list_calls": len(later_lists),
    }
    if name in cold:
        for t in THREADS:
            entry[f"get_tuple_{t}_cold_median_ms"] = median_ms(cold[name][t])
        for t in THREADS:
            entry[f"get_tuple_{t}_cold_all_ms"] = [ms(x) for x in cold[name][t]]
    return entry


def rows(depth: Result) -> list[Row]:
    per = depth["per_saver"]
    nb, ns = depth["big_checkpoints"], depth["small_checkpoints"]

    def row(workload: str, metric: str, key: str, goal: str = "") -> Row:
        return Row(workload, metric, {n: per[n].get(key) for n in MAIN_SAVERS}, "ms", goal, 3)

    return [
        row(
            "2 get_tuple",
            f"latest, {nb:,} checkpoints, warm median",
            "get_tuple_big_median_ms",
            goals.GET_TUPLE_WARM.column(depth),
        ),
        row("2 get_tuple", f"latest, {ns} checkpoints, warm median", "get_tuple_small_median_ms"),
        row(
            "2 get_tuple",
            f"latest, {nb:,} checkpoints, first call of a fresh instance",
            "get_tuple_big_cold_median_ms",
        ),
        row(
            "2 get_tuple",
            f"latest, {ns} checkpoints, first call of a fresh instance",
            "get_tuple_small_cold_median_ms",
        ),
        row("2 put", f"direct put while filling ({ns} + {nb:,} checkpoints), median", "put_median_ms"),
        row(
            "3 list",
            f"filter step=k in {nb:,} checkpoints, median of {per[REPO]['list_calls']}",
            "list_filter_median_ms",
            goals.LIST_FILTER.column(depth),
        ),
        row("3 list", "filter, first call of the instance", "list_filter_first_ms"),
    ]


def details(depth: Result, sizes: dict[str, int]) -> str:
    per = depth["per_saver"]
    intro = (
        f"Threads of {depth['big_checkpoints']:,} and {depth['small_checkpoints']} checkpoints "
        "written with `put` in a parent chain (the same checkpoints for every saver: `count` "
        "and a trigger channel change every step, `status` every 25, a 20-item `log` list every 10; "
        "metadata `{source: loop, step: i, parents: {}}`). Warm: the median of "
        f"{per[REPO]['get_tuple_calls']} calls on one instance after its first call. "
        f"Fresh instance: the first call of a new saver object (median of {sizes['cold_repeats']}); "
        "the OS page cache is warm. "
        f"list: `list(config, filter={{'step': k}})` with {per[REPO]['list_calls']} random k.\n"
    )
    keys = ("get_tuple_big_p90_ms", "get_tuple_small_p90_ms", "list_filter_p90_ms", "put_p90_ms")
    table = md_table(
        ["Saver", "get_tuple big p90 ms", "get_tuple small p90 ms", "list p90 ms", "put p90 ms"],
        "lrrrr",
        [[name, *(f"{r[k]:.3f}" for k in keys)] for name, r in per.items()],
    )
    rf = depth["repo_files"]
    files = (
        f"RepoSaver files for both threads: {rf['files']:,} files, {rf['apparent'] / 1024:,.0f} KB "
        f"(allocated {rf['allocated'] / 1024:,.0f} KB).\n"
    )
    return "\n".join([intro, table + "\n", files])
