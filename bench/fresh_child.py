"""One fresh process's first read, run by the history and growth workloads as ``python -m bench.fresh_child``.

Imports only what its saver needs, opens the saver, makes one call and prints JSON: the time of
the imports, of opening the saver, and of the call alone, the files the call opened (Python's
``open`` audit events) and the ids it found (the parent checks them). Everything a short-lived
process pays is in the parent's wall time of this process.

``python -m bench.fresh_child KIND PATH CALL THREAD ARG``: KIND ``repo`` (PATH: the root),
``sqlite`` (PATH: the database file) or ``postgres`` (PATH: the database's URI); CALL
``get_tuple`` (the latest of THREAD), ``list`` (``list`` of THREAD, ``filter={"step": ARG}``),
``list_all`` (``list(None, filter=ARG)``, ARG a JSON object) or ``group_by`` (SQL savers: one
``GROUP BY thread_id`` query over the checkpoints table, the SQL counterpart of
``langgraph-repo threads``; no saver is opened). ``--app`` after ARG: import what a process
running a LangGraph agent has imported before it reads its saver (``langgraph.graph``,
``langchain_core.messages``) first, so the call times the saver's work and not the first
import of LangGraph's types, which SqliteSaver and PostgresSaver make lazily when they
revive a message or a task (the growth workloads; the history workload runs without).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

GROUP_BY = (
    "SELECT thread_id, COUNT(*) AS checkpoints, MAX(checkpoint_id) AS latest "
    "FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id"
)


def import_app() -> None:
    """What a process running a LangGraph agent has imported before it reads its saver."""
    import langchain_core.messages  # noqa: F401
    import langgraph.graph  # noqa: F401


def import_saver(kind: str, call: str) -> None:
    """The package the call needs: the saver's (the SQL driver alone for ``group_by``)."""
    if call == "group_by":
        if kind == "postgres":
            import psycopg  # noqa: F401
        else:
            import sqlite3  # noqa: F401
    elif kind == "repo":
        import langgraph_checkpoint_repo  # noqa: F401
    elif kind == "postgres":
        import langgraph.checkpoint.postgres
    else:
        import langgraph.checkpoint.sqlite  # noqa: F401


def open_saver(kind: str, path: str) -> Any:
    """``repo``: ``RepoSaver(path)``; ``sqlite``: ``SqliteSaver`` on a new connection to ``path``;
    ``postgres``: ``PostgresSaver`` on a new connection to ``path``, as ``from_conn_string`` opens it."""
    if kind == "repo":
        from langgraph_checkpoint_repo import RepoSaver

        return RepoSaver(path)
    if kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        return PostgresSaver(
            Connection.connect(path, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        )
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def open_sql(kind: str, path: str) -> Any:
    """A plain connection for ``group_by``."""
    if kind == "postgres":
        import psycopg

        return psycopg.connect(path, autocommit=True)
    import sqlite3

    return sqlite3.connect(path)


def first_call(saver: Any, call: str, thread_id: str, arg: str) -> list[str]:
    """The call; the checkpoint ids found (``group_by``: the thread ids)."""
    if call == "group_by":
        return [str(row[0]) for row in saver.execute(GROUP_BY).fetchall()]
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    if call == "get_tuple":
        tup = saver.get_tuple(config)
        return [] if tup is None else [tup.checkpoint["id"]]
    if call == "list_all":
        return [t.checkpoint["id"] for t in saver.list(None, filter=json.loads(arg))]
    return [t.checkpoint["id"] for t in saver.list(config, filter={"step": int(arg)})]


class Opens:
    """Counts the files Python opens (the ``open`` audit event) while ``counting`` is on."""

    def __init__(self) -> None:
        self.counting = False
        self.count = 0
        sys.addaudithook(self.hook)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.counting and event == "open":
            self.count += 1


def main(argv: list[str]) -> int:
    kind, path, call, thread_id, arg = argv[:5]
    t0 = time.perf_counter_ns()
    if "--app" in argv[5:] and call != "group_by":
        import_app()
    import_saver(kind, call)
    t1 = time.perf_counter_ns()  # the imports above are timed apart from opening the saver
    saver = open_sql(kind, path) if call == "group_by" else open_saver(kind, path)
    opens = Opens()
    t2 = time.perf_counter_ns()
    opens.counting = True
    found = first_call(saver, call, thread_id, arg)
    opens.counting = False
    t3 = time.perf_counter_ns()
    out = {"import_ms": (t1 - t0) / 1e6, "open_ms": (t2 - t1) / 1e6, "call_ms": (t3 - t2) / 1e6}
    print(json.dumps({**out, "opened": opens.count, "found": found}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
