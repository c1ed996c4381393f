"""What the growth workloads (``turns``, ``threads``) share: the conversation they replay, the three
savers on their stores, fresh processes under a time cap, and the cap's bookkeeping.

The conversation is LangChain's ``create_agent`` with the bench's fake tool-calling model
(bench/agent_graphs.py): each turn a user message, a model message calling ``lookup_order``,
the tool's message and the model's answer; five checkpoints and four ``put_writes`` a turn.
It runs once on ``bench.replay.Recorder``; every saver is then given the recorded calls.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import pg
from bench.agent_graphs import build_create_agent, user_message
from bench.common import (
    REPO,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    dir_usage,
    files_usage,
    open_sqlite,
    run_child,
    sqlite_files,
    sqlite_wal_checkpoint,
)
from bench.replay import Recording, record
from langgraph_checkpoint_repo import RepoSaver

POSTGRES = pg.POSTGRES
SAVERS = (REPO, SQLITE, POSTGRES)
KIND = {REPO: "repo", SQLITE: "sqlite", POSTGRES: "postgres"}
"""The saver as ``bench/fresh_child.py`` names it."""
COLORS = {REPO: "#1f6fb4", SQLITE: "#c62828", POSTGRES: "#6a1b9a"}
CACHE = ".cache"


def turn_input(turn: int, token: str) -> dict[str, Any]:
    """The graph's input at user turn ``turn`` (1-based): the agents workload's user message,
    ``token`` added to its text (so a replay can give every thread its own text)."""
    message = user_message(turn)
    return {"messages": [HumanMessage(content=f"{message.content} ({token})", id=message.id)]}


def turn_config(thread_id: str, user_id: str) -> RunnableConfig:
    """A run's config: the thread, and a ``user_id``, which LangGraph's savers copy into every
    checkpoint's metadata (what the threads workload filters on)."""
    return {"configurable": {"thread_id": thread_id, "user_id": user_id}}


def conversation(turns: int, thread_id: str, user_id: str, token: str) -> Recording:
    """``turns`` turns of the tool-calling agent on one thread, recorded."""
    config = turn_config(thread_id, user_id)
    return record(build_create_agent, [(turn_input(turn, token), config) for turn in range(1, turns + 1)])


def kept(recording: Recording, path: Path) -> tuple[Recording, Result]:
    """The recording as saved to ``path`` and loaded back (what a replay reads), and its size."""
    recording.save(path)
    loaded = Recording.load(path)
    return loaded, {"calls": len(loaded.calls), "turns": loaded.turns(), "pickle_bytes": path.stat().st_size}


@dataclass
class Stores:
    """Where each saver keeps its data: a RepoSaver root, a SQLite file, a PostgreSQL database."""

    root: Path
    db: Path
    pg_uri: str | None
    settings: dict[str, str] = field(default_factory=dict)

    def names(self) -> tuple[str, ...]:
        return SAVERS if self.pg_uri else (REPO, SQLITE)

    def open(self, name: str) -> BaseCheckpointSaver[Any]:
        """A new instance of the saver on its store (RepoSaver: default, durable)."""
        if name == REPO:
            return RepoSaver(self.root)
        if name == SQLITE:
            return open_sqlite(self.db)
        assert self.pg_uri is not None
        saver: BaseCheckpointSaver[Any] = pg.open_postgres(self.pg_uri)
        return saver

    def open_builder(self, name: str) -> BaseCheckpointSaver[Any]:
        """An instance that writes what ``open`` would, without waiting for the disk: RepoSaver
        ``durable=False`` (no fsync; the same files), SqliteSaver on a connection with
        ``synchronous=OFF``, PostgresSaver on one with ``synchronous_commit=off``. For building
        data that is then only read (the threads workload), on instances from ``open``."""
        if name == REPO:
            return RepoSaver(self.root, durable=False)
        saver = self.open(name)
        if name == SQLITE:
            saver.conn.execute("PRAGMA synchronous=OFF")  # type: ignore[attr-defined]
        else:
            saver.conn.execute("SET synchronous_commit TO off")  # type: ignore[attr-defined]
        return saver

    def close(self, name: str, saver: BaseCheckpointSaver[Any]) -> None:
        if name == POSTGRES:
            pg.close_postgres(saver)
        else:
            close_saver(saver)

    def location(self, name: str) -> str:
        """What ``bench/fresh_child.py`` opens."""
        return str(self.root if name == REPO else self.db if name == SQLITE else self.pg_uri)

    def disk_bytes(self, name: str, saver: BaseCheckpointSaver[Any]) -> int:
        """RepoSaver: its files but ``.cache/``; SqliteSaver: the database file after folding
        the WAL into it (``wal_checkpoint(TRUNCATE)``); PostgresSaver: ``pg_database_size``."""
        if name == REPO:
            return dir_usage(self.root, skip=lambda p: CACHE in p.relative_to(self.root).parts)["apparent"]
        if name == SQLITE:
            sqlite_wal_checkpoint(saver)
            return files_usage(sqlite_files(self.db))["apparent"]
        return pg.database_bytes(saver)


@contextmanager
def stores(tmp: Path, prefix: str, postgres: bool) -> Iterator[Stores]:
    """The stores of one workload under ``tmp``; a PostgreSQL server while inside when ``postgres``.
    Their data is removed on the way out (SqliteSaver's database of 3,000 turns is about 20 GB;
    the next workload need not share the disk with it)."""
    root, db = tmp / f"{prefix}-repo", tmp / f"{prefix}.db"
    try:
        if not postgres:
            yield Stores(root, db, None)
            return
        with pg.server(tmp / f"{prefix}-pg") as uri:
            found = Stores(root, db, pg.new_database(uri))
            probe = pg.open_postgres(found.location(POSTGRES))
            found.settings = pg.settings(probe)
            pg.close_postgres(probe)
            yield found
    finally:
        shutil.rmtree(root, ignore_errors=True)
        for path in sqlite_files(db):
            path.unlink(missing_ok=True)


class Skips:
    """Where a saver's curve ended and why, by (saver, measurement); ``ALL``: the whole curve."""

    ALL = "all"

    def __init__(self) -> None:
        self.reasons: dict[str, dict[str, str]] = {}

    def add(self, name: str, what: str, reason: str) -> None:
        self.reasons.setdefault(name, {}).setdefault(what, reason)

    def why(self, name: str, what: str) -> str | None:
        """The reason ``what`` of ``name`` is no longer measured, or None."""
        mine = self.reasons.get(name, {})
        return mine.get(self.ALL) or mine.get(what)


def over(cap_s: float) -> str:
    return f"skipped: over {cap_s:g} s"


def fresh(
    stores: Stores, name: str, call: str, thread_id: str, arg: str, sizes: Sizes
) -> dict[str, Any] | None:
    """One fresh process (``bench/fresh_child.py --app``: LangGraph imported first, as by an app
    that reads its saver): its JSON and ``wall_ms``; None when it ran past ``growth_cap_s`` (killed)."""
    argv = [KIND[name], stores.location(name), call, thread_id, arg, "--app"]
    try:
        proc, wall_ms = run_child("bench.fresh_child", argv, sizes.forked_children, sizes.growth_cap_s)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"fresh {name} {call} process failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return {**out, "wall_ms": wall_ms}


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure of fresh processes, and every call's time."""
    keys = ("call_ms", "wall_ms", "import_ms", "open_ms", "opened")
    return {
        **{k: statistics.median(r[k] for r in runs) for k in keys},
        "call_all_ms": [r["call_ms"] for r in runs],
    }


def fmt_ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}" if value >= 10 else f"{value:,.2f}"
