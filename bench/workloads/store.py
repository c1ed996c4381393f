"""Workload 9: the long-term memory store: RepoStore beside SqliteStore and InMemoryStore.

``store_items`` items (10,000 in the full run) in 100 namespaces ``("users", "u<k>")`` are
written to each store first (RepoStore through an instance without fsync, SqliteStore and
InMemoryStore in batches: the fill is not what is timed). Then, round-robin with the order
rotating every round, on a new RepoStore instance (``durable=True``, the default) and the filled
SqliteStore (a database file, as ``SqliteStore(sqlite3.connect(path))`` opens it) and
InMemoryStore: ``put`` of an existing item (a new value), ``get`` of a random item, and
``search(("users",), filter=...)`` over every item (a page of 10). Semantic search is timed on
its own ``store_query_items`` items (1,000) with a deterministic 64-dimension embedding
(bench/embedding.py): ``search(("docs",), query=...)``. Each store's first call is untimed.
Fresh process: ``python -m bench.store_child`` opens the store and makes one call (RepoStore with
the ``.cache/`` earlier processes left: its embeddings, listings and recorded items; one untimed
process of each call runs first).
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from bench import goals
from bench.common import (
    MEMORY,
    REPO,
    SQLITE,
    Result,
    Sizes,
    fmt_load,
    loadavg,
    median_ms,
    progress,
    rotated,
    run_child,
)
from bench.embedding import DIMS, hash_embed
from bench.report import Row, md_table
from bench.store_child import FILTER
from langgraph_checkpoint_repo import RepoStore

NAME = "store"
TITLE = "The store: RepoStore beside SqliteStore and InMemoryStore"

REPO_STORE, SQLITE_STORE, MEMORY_STORE = "RepoStore", "SqliteStore", "InMemoryStore"
STORES = (REPO_STORE, SQLITE_STORE, MEMORY_STORE)
COLUMN = {REPO_STORE: REPO, SQLITE_STORE: SQLITE, MEMORY_STORE: MEMORY}
"""The results table has a column per saver; the store rows put each store in its saver's."""
NAMESPACES = 100
WORDS = "apple pear plum fig kiwi lime date yuzu mango peach cherry grape melon lemon".split()
CHUNK = 500


def value(i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "text": " ".join(rng.choice(WORDS) for _ in range(8)),
        "n": i % 100,
        "kind": ("note", "fact", "pref")[i % 3],
        "user": {"name": f"user {i % NAMESPACES}", "lang": rng.choice(["en", "fr", "de"])},
        "tags": rng.sample(WORDS, 3),
    }


def item_name(i: int) -> tuple[tuple[str, ...], str]:
    return ("users", f"u{i % NAMESPACES}"), f"k{i}"


def sqlite_store(db: Path) -> SqliteStore:
    store = SqliteStore(sqlite3.connect(str(db), check_same_thread=False, isolation_level=None))
    store.setup()
    return store


def fill(stores: dict[str, BaseStore], ops: list[PutOp]) -> None:
    for start in range(0, len(ops), CHUNK):
        for store in stores.values():
            store.batch(ops[start : start + CHUNK])


def timed(call: Callable[..., Any], *args: Any) -> int:
    t0 = time.perf_counter_ns()
    call(*args)
    return time.perf_counter_ns() - t0


def _passes(v: Any) -> bool:
    return bool(v["kind"] == FILTER["kind"] and v["n"] >= FILTER["n"]["$gte"])  # type: ignore[index]


def _search_into(store: BaseStore, out: list[Any]) -> None:
    out.extend(store.search(("users",), filter=FILTER, limit=10))


def run(tmp: Path, sizes: Sizes) -> Result:
    started, load = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), loadavg()
    n, nq, calls = sizes.store_items, sizes.store_query_items, sizes.store_calls
    rng = random.Random(27)
    root, db = tmp / "store-repo", tmp / "store.db"
    progress(f"store: filling {n:,} items per store")
    ops = [PutOp(*item_name(i), value(i, rng)) for i in range(n)]
    sqlite = sqlite_store(db)
    memory = InMemoryStore()
    fill({REPO_STORE: RepoStore(root, durable=False), SQLITE_STORE: sqlite, MEMORY_STORE: memory}, ops)
    stores: dict[str, BaseStore] = {REPO_STORE: RepoStore(root), SQLITE_STORE: sqlite, MEMORY_STORE: memory}
    samples: dict[str, dict[str, list[int]]] = {s: {"put": [], "get": [], "search": []} for s in STORES}
    matching = sum(1 for op in ops if _passes(op.value))
    for store in stores.values():  # first calls, untimed: caches and statements warm
        store.get(*item_name(0))
        store.search(("users",), filter=FILTER, limit=10)
    progress(f"store: {calls} puts and gets, {max(3, calls // 10)} filtered searches per store")
    for r in range(calls):
        i, j = rng.randrange(n), rng.randrange(n)
        new = value(i + n, rng)
        if _passes(new) != _passes(ops[i].value):
            new["kind"] = ops[i].value["kind"]  # the number of items the filter finds stays the same
            new["n"] = ops[i].value["n"]
        for s in rotated(STORES, r):
            samples[s]["put"].append(timed(stores[s].put, *item_name(i), new))
        for s in rotated(STORES, r):
            samples[s]["get"].append(timed(stores[s].get, *item_name(j)))
        if r % 10 == 0 or r < 3:
            for s in rotated(STORES, r):
                found: list[Any] = []
                samples[s]["search"].append(timed(_search_into, stores[s], found))
                assert len(found) == min(10, matching) and all(_passes(x.value) for x in found), s
    query = _query_workload(tmp, nq, calls, rng)
    fresh = _fresh(
        root, db, n, min(10, matching), sizes.fresh_repeats, rng, sizes.warm_up, sizes.forked_children
    )
    return {
        "started": started,
        "loadavg": [load, loadavg()],
        "items": n,
        "query_items": nq,
        "calls": calls,
        "sqlite_journal_mode": sqlite.conn.execute("PRAGMA journal_mode").fetchone()[0],
        "sqlite_synchronous": sqlite.conn.execute("PRAGMA synchronous").fetchone()[0],
        "per_store": {
            s: {f"{k}_median_ms": median_ms(v) for k, v in samples[s].items()} | query["per_store"].get(s, {})
            for s in STORES
        },
        "query_note": query["note"],
        "fresh": fresh,
    }


def _query_workload(tmp: Path, nq: int, calls: int, rng: random.Random) -> dict[str, Any]:
    """``search(query=...)`` over ``nq`` items; SqliteStore's needs the sqlite-vec extension."""
    index = {"dims": DIMS, "embed": hash_embed, "fields": ["text"]}
    texts = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(nq)]
    ops = [PutOp(("docs",), f"d{i}", {"text": t}) for i, t in enumerate(texts)]
    stores: dict[str, BaseStore] = {
        REPO_STORE: RepoStore(tmp / "store-repo", index=index, durable=False),  # type: ignore[arg-type]
        MEMORY_STORE: InMemoryStore(index=index),  # type: ignore[arg-type]
    }
    note = ""
    try:
        sqlite = SqliteStore(
            sqlite3.connect(str(tmp / "store-vec.db"), check_same_thread=False, isolation_level=None),
            index=index,  # type: ignore[arg-type]
        )
        sqlite.setup()
        stores[SQLITE_STORE] = sqlite
    except AttributeError as exc:  # this Python's sqlite3 cannot load extensions (sqlite-vec)
        note = f"SqliteStore's vector search needs sqlite-vec, an extension this Python cannot load ({exc})"
    progress(f"store: {nq:,} items with embeddings; semantic searches")
    fill(stores, ops)
    samples: dict[str, list[int]] = {s: [] for s in stores}
    names = list(stores)
    for store in stores.values():
        store.search(("docs",), query="warm up", limit=10)
    for r in range(max(3, calls // 10)):
        q = " ".join(rng.sample(WORDS, 3))
        for s in rotated(names, r):
            samples[s].append(timed(_query, stores[s], q))
    return {"per_store": {s: {"query_median_ms": median_ms(v)} for s, v in samples.items()}, "note": note}


def _query(store: BaseStore, q: str) -> None:
    store.search(("docs",), query=q, limit=10)


def _fresh(
    root: Path,
    db: Path,
    n: int,
    page: int,
    repeats: int,
    rng: random.Random,
    warm_up: bool,
    forked: bool,
) -> dict[str, Any]:
    """The first call of a new Python process, per store and call: the call alone and the wall."""
    out: dict[str, Any] = {}
    plans = [
        ("get", (REPO_STORE, SQLITE_STORE)),
        ("search", (REPO_STORE, SQLITE_STORE)),
        ("query", (REPO_STORE,)),
    ]
    for call, kinds in plans:
        for kind in kinds:
            path = str(root if kind == REPO_STORE else db)
            runs = []
            for n_run in range(max(1, repeats) + warm_up):
                ns, key = item_name(rng.randrange(n))
                arg = "/".join((*ns, key)) if call == "get" else "plum fig kiwi"
                proc, wall_ms = run_child(
                    "bench.store_child",
                    ["repo" if kind == REPO_STORE else "sqlite", path, call, arg],
                    forked,
                )
                if proc.returncode != 0:
                    raise RuntimeError(f"fresh {kind} {call} process failed:\n{proc.stderr}")
                got = json.loads(proc.stdout)
                assert len(got["found"]) == (page if call == "search" else 1 if call == "get" else 10), (
                    kind,
                    call,
                )
                if n_run or not warm_up:  # the first leaves .cache/ as the process before this one would have
                    runs.append({**got, "wall_ms": wall_ms})
            out.setdefault(call, {})[kind] = {
                "call_ms": statistics.median(r["call_ms"] for r in runs),
                "wall_ms": statistics.median(r["wall_ms"] for r in runs),
                "repeats": len(runs),
            }
    return out


def rows(result: Result) -> list[Row]:
    per = result["per_store"]
    n, nq = result["items"], result["query_items"]

    def row(metric: str, key: str, goal: str = "") -> Row:
        values = {COLUMN[s]: per[s].get(key) for s in STORES}
        return Row("9 store", f"{metric} (RepoStore, SqliteStore, InMemoryStore)", values, "ms", goal, 3)

    def fresh(call: str, metric: str, key: str) -> Row:
        f = result["fresh"][call]
        values = {COLUMN[s]: f[s][key] if s in f else None for s in STORES}
        return Row("9 store", metric, values, "ms", "", 3)

    return [
        row(
            f"put of an existing item, median of {result['calls']}",
            "put_median_ms",
            goals.STORE_PUT.column(result),
        ),
        row(f"get, warm median of {result['calls']}", "get_median_ms", goals.STORE_GET.column(result)),
        row(f"search(filter), {n:,} items, page of 10, warm median", "search_median_ms"),
        row(f"search(query), {nq:,} items, page of 10, warm median", "query_median_ms"),
        fresh("get", "first get of a fresh process, the call", "call_ms"),
        fresh("get", "first get of a fresh process, process wall time", "wall_ms"),
        fresh("search", f"first search(filter) of a fresh process, {n:,} items, the call", "call_ms"),
        fresh("query", f"first search(query) of a fresh process, {nq:,} items, the call", "call_ms"),
    ]


def details(result: Result, sizes: dict[str, Any]) -> str:
    per = result["per_store"]
    head = [
        "Store",
        "put",
        "get",
        f"search(filter), {result['items']:,}",
        f"search(query), {result['query_items']:,}",
    ]

    def cell(v: float | None) -> str:
        return "n/a" if v is None else f"{v:,.3f}"

    table = md_table(
        head,
        "lrrrr",
        [
            [
                s,
                *(
                    cell(per[s].get(k))
                    for k in ("put_median_ms", "get_median_ms", "search_median_ms", "query_median_ms")
                ),
            ]
            for s in STORES
        ],
    )
    fresh_rows = [
        [call, s, cell(f["call_ms"]), cell(f["wall_ms"]), f["repeats"]]
        for call, by in result["fresh"].items()
        for s, f in by.items()
    ]
    fresh = md_table(
        ["Call", "Store", "the call (ms)", "process wall (ms)", "processes"], "llrrr", fresh_rows
    )
    note = f"\n{result['query_note']}.\n" if result.get("query_note") else ""
    when = ""
    if result.get("started"):
        start, end = result["loadavg"]
        when = f" This workload ran at {result['started']} (load {fmt_load(start)} -> {fmt_load(end)})."
    return (
        (__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").strip()
        + f" SqliteStore ran with journal_mode={result['sqlite_journal_mode']}, synchronous="
        f"{result['sqlite_synchronous']} (its defaults: SqliteStore sets neither); RepoStore fsyncs each "
        "item file and its folder. The filter is "
        f"`{json.dumps(FILTER)}`.{when}\n\nWarm medians, ms:\n\n{table}\n\n"
        f"Fresh processes, medians:\n\n{fresh}\n{note}"
    )
