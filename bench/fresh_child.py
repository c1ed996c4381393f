"""One fresh process's first read, run by the history workload as ``python -m bench.fresh_child``.

Imports only what its saver needs, opens the saver, makes one call and prints JSON: the time of
the imports, of opening the saver, and of the call alone, and the ids it found (the parent checks
them). Everything a short-lived process pays is in the parent's wall time of this process.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def open_saver(kind: str, path: str) -> Any:
    """``repo``: ``RepoSaver(path)``; ``sqlite``: ``SqliteSaver`` on a new connection to ``path``."""
    if kind == "repo":
        from langgraph_checkpoint_repo import RepoSaver

        return RepoSaver(path)
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def first_call(saver: Any, call: str, thread_id: str, step: int) -> list[str]:
    """``get_tuple`` of the latest checkpoint, or ``list(filter={"step": step})``; the ids found."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if call == "get_tuple":
        tup = saver.get_tuple(config)
        return [] if tup is None else [tup.checkpoint["id"]]
    return [t.checkpoint["id"] for t in saver.list(config, filter={"step": step})]


def main(argv: list[str]) -> int:
    kind, path, call, thread_id, step = argv
    t0 = time.perf_counter_ns()
    if kind == "repo":
        import langgraph_checkpoint_repo  # noqa: F401
    else:
        import langgraph.checkpoint.sqlite  # noqa: F401
    t1 = time.perf_counter_ns()  # the imports above are timed apart from opening the saver
    saver = open_saver(kind, path)
    t2 = time.perf_counter_ns()
    found = first_call(saver, call, thread_id, int(step))
    t3 = time.perf_counter_ns()
    out = {"import_ms": (t1 - t0) / 1e6, "open_ms": (t2 - t1) / 1e6, "call_ms": (t3 - t2) / 1e6}
    print(json.dumps({**out, "found": found}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
