"""One fresh process's first store call, run by the store workload as ``python -m bench.store_child``.

Imports only what its store needs, opens the store, makes one call and prints JSON: the time of
the imports, of opening the store, of the call alone, and what it found (the parent checks it).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.embedding import DIMS, hash_embed

FILTER = {"kind": "fact", "n": {"$gte": 90}}


def open_store(kind: str, path: str, indexed: bool) -> Any:
    index = {"dims": DIMS, "embed": hash_embed, "fields": ["text"]} if indexed else None
    if kind == "repo":
        from langgraph_checkpoint_repo import RepoStore

        return RepoStore(path, index=index)  # type: ignore[arg-type]
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    return SqliteStore(sqlite3.connect(path, check_same_thread=False, isolation_level=None))


def first_call(store: Any, call: str, key: str) -> list[str]:
    """``get`` of one item, a filtered ``search``, or a ``search(query=...)``; the keys found."""
    if call == "get":
        ns, _, name = key.rpartition("/")
        item = store.get(tuple(ns.split("/")), name)
        return [] if item is None else [item.key]
    if call == "search":
        return [i.key for i in store.search(("users",), filter=FILTER, limit=10)]
    return [i.key for i in store.search(("docs",), query=key, limit=10)]


def main(argv: list[str]) -> int:
    kind, path, call, key = argv
    t0 = time.perf_counter_ns()
    if kind == "repo":
        import langgraph_checkpoint_repo  # noqa: F401
    else:
        import langgraph.store.sqlite  # noqa: F401
    t1 = time.perf_counter_ns()
    store = open_store(kind, path, call == "query")
    t2 = time.perf_counter_ns()
    found = first_call(store, call, key)
    t3 = time.perf_counter_ns()
    out = {"import_ms": (t1 - t0) / 1e6, "open_ms": (t2 - t1) / 1e6, "call_ms": (t3 - t2) / 1e6}
    print(json.dumps({**out, "found": found}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
