"""A fresh process's view of a store, for the tests that compare it with the process that wrote it.

Run as ``python tests/store_child.py ROOT NOW OMIT_EXPIRED``: opens ``RepoStore(ROOT)`` with a
clock stopped at NOW (ISO 8601), reads everything without refreshing any TTL, and prints JSON:
every item (``storeref.shown``), every namespace, and a get of each item found.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

from langgraph_checkpoint_repo import RepoStore
from storeref import dump, shown  # tests/ is on sys.path: this script's own folder


def main(argv: list[str]) -> int:
    root, now, omit = argv
    moment = datetime.fromisoformat(now)
    store = RepoStore(root, clock=lambda: moment, ttl={"omit_expired": omit == "1"})
    items = store.search((), limit=10**9, refresh_ttl=False)
    gets = [shown(store.get(i.namespace, i.key, refresh_ttl=False)) for i in items]
    spaces = [list(ns) for ns in store.list_namespaces(limit=10**9)]
    print(json.dumps({"items": dump(items), "namespaces": spaces, "gets": sorted(gets, key=repr)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
