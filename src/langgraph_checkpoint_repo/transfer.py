"""Copying threads between any two checkpointers (repo files, SQLite, PostgreSQL, memory).

Only the public ``BaseCheckpointSaver`` contract is used, so every pair of savers
works: each checkpoint is read with ``list`` and written again with ``put`` under
its own id, oldest first, with its parent link, metadata and pending writes. What
the contract does not return is asked of the savers we know: a write's
``task_path``, which orders pending writes, comes from RepoSaver's files, the
SQLite and PostgreSQL tables or InMemorySaver's dict; from any other saver it is
written empty, and writes then come back ordered by task id.
"""

from __future__ import annotations

import builtins
import importlib
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, CheckpointTuple

from .errors import RepoCheckpointError


class ThreadExistsError(RepoCheckpointError):
    """The target already holds a thread being copied; nothing of it was written."""


@dataclass
class CopyReport:
    """What was copied, per thread: checkpoints and pending writes."""

    threads: list[str] = field(default_factory=list)
    checkpoints: int = 0
    writes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"threads": self.threads, "checkpoints": self.checkpoints, "writes": self.writes}


Progress = Callable[[str, int, int], None]  # thread id, checkpoints copied so far, of how many


def thread_ids_of(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread a saver holds, sorted.

    The contract has no call for this, so the savers we know are asked directly
    (a folder listing or one SQL query); any other saver is listed in full.
    """
    from .saver import RepoSaver  # local: saver imports nothing from here

    if isinstance(saver, RepoSaver):
        return sorted(saver.store.thread_ids())
    storage = getattr(saver, "storage", None)
    if isinstance(storage, dict):  # InMemorySaver
        return sorted(str(t) for t in storage)
    kind = _sql_kind(saver)
    if kind is not None:
        cursor = saver.cursor if kind == "sqlite" else saver._cursor  # type: ignore[attr-defined]
        with cursor() as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints")
            rows = cur.fetchall()
        return sorted(str(r["thread_id"] if isinstance(r, dict) else r[0]) for r in rows)
    return sorted({str(t.config["configurable"]["thread_id"]) for t in saver.list(None)})


TaskPaths = dict[tuple[str, str, str], str]  # (checkpoint_ns, checkpoint_id, task_id) -> task_path
_WRITES_SQL = {
    "sqlite": "SELECT checkpoint_ns, checkpoint_id, task_id, task_path FROM writes WHERE thread_id = ?",
    "postgres": (
        "SELECT checkpoint_ns, checkpoint_id, task_id, task_path FROM checkpoint_writes WHERE thread_id = %s"
    ),
}


def _sql_kind(saver: BaseCheckpointSaver[Any]) -> str | None:
    module = type(saver).__module__
    for kind in ("sqlite", "postgres"):
        if module.startswith(f"langgraph.checkpoint.{kind}"):
            return kind
    return None


def task_paths_of(saver: BaseCheckpointSaver[Any], thread_id: str) -> TaskPaths:
    """The task path of every pending write of a thread, where the saver keeps one."""
    from .saver import RepoSaver

    out: TaskPaths = {}
    if isinstance(saver, RepoSaver):
        store = saver.store
        for ns in store.namespaces(thread_id):
            for cid in store.checkpoint_ids(thread_id, ns):
                for _, doc in store.writes_docs(thread_id, ns, cid):
                    out[(ns, cid, doc["task_id"])] = doc["task_path"]
        return out
    writes = getattr(saver, "writes", None)
    if isinstance(writes, dict):  # InMemorySaver: (thread, ns, id) -> (task, idx) -> (task, ch, value, path)
        for (tid, ns, cid), inner in writes.items():
            if tid == thread_id:
                for task_id, _, _, path in inner.values():
                    out[(ns, cid, task_id)] = path
        return out
    kind = _sql_kind(saver)
    if kind is None or (kind == "sqlite" and not getattr(saver, "_has_task_path", True)):
        return out
    cursor = saver.cursor if kind == "sqlite" else saver._cursor  # type: ignore[attr-defined]
    with cursor() as cur:
        cur.execute(_WRITES_SQL[kind], (thread_id,))
        for row in cur.fetchall():
            ns, cid, task_id, path = row.values() if isinstance(row, dict) else row
            out[(ns, cid, task_id)] = path or ""
    return out


def _oldest_first(tuples: Iterable[CheckpointTuple]) -> list[CheckpointTuple]:
    """Parents before children: ids are time-ordered (uuid6), and a parent is always older."""
    return sorted(
        tuples,
        key=lambda t: (
            t.config["configurable"].get("checkpoint_ns", ""),
            t.config["configurable"]["checkpoint_id"],
        ),
    )


def _new_versions(tup: CheckpointTuple, parent: CheckpointTuple | None) -> ChannelVersions:
    """The channels this checkpoint gave a new version: what a graph passed to ``put``."""
    versions = tup.checkpoint["channel_versions"]
    if parent is None:
        return dict(versions)
    before = parent.checkpoint["channel_versions"]
    return {k: v for k, v in versions.items() if before.get(k) != v}


def _put_config(tup: CheckpointTuple) -> RunnableConfig:
    conf = tup.config["configurable"]
    configurable: dict[str, Any] = {
        "thread_id": conf["thread_id"],
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
    }
    if tup.parent_config is not None:
        configurable["checkpoint_id"] = tup.parent_config["configurable"]["checkpoint_id"]
    return {"configurable": configurable}


def _writes_by_task(tup: CheckpointTuple) -> dict[str, builtins.list[tuple[str, Any]]]:
    grouped: dict[str, builtins.list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in tup.pending_writes or []:
        grouped[task_id].append((channel, value))
    return grouped


def _task_path(paths: TaskPaths, tup: CheckpointTuple, task_id: str) -> str:
    conf = tup.config["configurable"]
    return paths.get((conf.get("checkpoint_ns", ""), conf["checkpoint_id"], task_id), "")


@dataclass
class _Plan:
    """One thread's checkpoints, oldest first, each with what ``put`` needs."""

    thread_id: str
    steps: builtins.list[tuple[CheckpointTuple, RunnableConfig, ChannelVersions]]


def _plan(thread_id: str, tuples: Iterable[CheckpointTuple]) -> _Plan:
    ordered = _oldest_first(tuples)
    by_id = {
        (t.config["configurable"].get("checkpoint_ns", ""), t.config["configurable"]["checkpoint_id"]): t
        for t in ordered
    }
    steps = []
    for tup in ordered:
        ns = tup.config["configurable"].get("checkpoint_ns", "")
        parent = None
        if tup.parent_config is not None:
            # a parent pruned away in the source: the link is kept, every value is stored anew
            parent = by_id.get((ns, tup.parent_config["configurable"]["checkpoint_id"]))
        steps.append((tup, _put_config(tup), _new_versions(tup, parent)))
    return _Plan(thread_id, steps)


def _check_target(target_has: bool, thread_id: str, replace: bool) -> None:
    if target_has and not replace:
        raise ThreadExistsError(
            f"thread {thread_id!r} already exists in the target; nothing of it was copied "
            "(replace it with replace=True, or --replace on the command line)"
        )


def copy_threads(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy threads (default: all) from ``source`` to ``target``, every checkpoint and write.

    A thread that already exists in the target is refused before anything of it
    is written, unless ``replace`` deletes it there first.
    """
    report = CopyReport()
    for thread_id in thread_ids if thread_ids is not None else thread_ids_of(source):
        plan = _plan(thread_id, source.list({"configurable": {"thread_id": thread_id}}))
        if not plan.steps:
            raise RepoCheckpointError(f"thread {thread_id!r} is not in the source")
        exists = (
            next(iter(target.list({"configurable": {"thread_id": thread_id}}, limit=1)), None) is not None
        )
        _check_target(exists, thread_id, replace)
        if exists:
            target.delete_thread(thread_id)
        paths = task_paths_of(source, thread_id)
        for done, (tup, config, new_versions) in enumerate(plan.steps, 1):
            saved = target.put(config, tup.checkpoint, tup.metadata, new_versions)
            for task_id, writes in _writes_by_task(tup).items():
                target.put_writes(saved, writes, task_id, _task_path(paths, tup, task_id))
                report.writes += len(writes)
            if progress is not None:
                progress(thread_id, done, len(plan.steps))
        report.threads.append(thread_id)
        report.checkpoints += len(plan.steps)
    return report


async def acopy_threads(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> CopyReport:
    """``copy_threads`` for async savers (AsyncSqliteSaver, AsyncPostgresSaver, RepoSaver's a-methods)."""
    report = CopyReport()
    if thread_ids is None:
        thread_ids = sorted({str(t.config["configurable"]["thread_id"]) async for t in source.alist(None)})
    for thread_id in thread_ids:
        tuples = [t async for t in source.alist({"configurable": {"thread_id": thread_id}})]
        plan = _plan(thread_id, tuples)
        if not plan.steps:
            raise RepoCheckpointError(f"thread {thread_id!r} is not in the source")
        exists = False
        async for _ in target.alist({"configurable": {"thread_id": thread_id}}, limit=1):
            exists = True
        _check_target(exists, thread_id, replace)
        if exists:
            await target.adelete_thread(thread_id)
        paths = task_paths_of(source, thread_id)
        for done, (tup, config, new_versions) in enumerate(plan.steps, 1):
            saved = await target.aput(config, tup.checkpoint, tup.metadata, new_versions)
            for task_id, writes in _writes_by_task(tup).items():
                await target.aput_writes(saved, writes, task_id, _task_path(paths, tup, task_id))
                report.writes += len(writes)
            if progress is not None:
                progress(thread_id, done, len(plan.steps))
        report.threads.append(thread_id)
        report.checkpoints += len(plan.steps)
    return report


class SaverSpecError(RepoCheckpointError):
    """A SOURCE/TARGET that names no saver we can open."""


SPEC_HELP = "sqlite:///PATH.db (sqlite:////abs/path.db), postgresql://..., or module:factory"


def _optional(module: str, name: str, extra: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise SaverSpecError(
            f"{name} is not installed ({exc}); pip install 'langgraph-checkpoint-repo[{extra}]'"
        ) from None


@contextmanager
def open_saver(spec: str, *, create: bool) -> Iterator[BaseCheckpointSaver[Any]]:
    """Open the saver a command-line SOURCE or TARGET names, and close it afterwards.

    ``create`` is True for an export target: a SQLite file may be made and the
    PostgreSQL tables are set up. A source is only read: its file must exist and
    nothing is set up in it. ``module:factory`` calls ``factory()``, which returns
    a saver or a context manager giving one (as ``SqliteSaver.from_conn_string``).
    """
    if spec.startswith("sqlite:///"):
        path = Path(spec[len("sqlite:///") :])
        if not create and not path.is_file():
            raise SaverSpecError(f"{spec}: no such SQLite file ({path})")
        SqliteSaver = _optional("langgraph.checkpoint.sqlite", "SqliteSaver", "sqlite")
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            if create:
                saver.setup()
            yield saver
        finally:
            conn.close()
        return
    if spec.startswith(("postgresql://", "postgres://")):
        PostgresSaver = _optional("langgraph.checkpoint.postgres", "PostgresSaver", "postgres")
        with PostgresSaver.from_conn_string(spec) as pg:
            if create:
                pg.setup()
            yield pg
        return
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr or "/" in module_name:
        raise SaverSpecError(f"{spec!r} is not a saver: expected {SPEC_HELP}")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise SaverSpecError(f"{spec}: {exc}") from None
    made = factory()
    if isinstance(made, BaseCheckpointSaver):
        yield made
        return
    if isinstance(made, AbstractContextManager):
        with made as saver:
            if not isinstance(saver, BaseCheckpointSaver):
                got = type(saver).__name__
                raise SaverSpecError(f"{spec}: the factory's context gave {got}, not a saver")
            yield saver
        return
    raise SaverSpecError(f"{spec}: the factory returned {type(made).__name__}, not a checkpoint saver")
