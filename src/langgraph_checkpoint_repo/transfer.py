"""Copying threads between any two checkpointers (repo files, SQLite, PostgreSQL, memory).

Only the public ``BaseCheckpointSaver`` contract is used, so every pair of savers
works: each checkpoint is read with ``list`` and written again with ``put`` under
its own id, oldest first, with its parent link, metadata and pending writes. What
the contract does not return is asked of the savers we know: a write's
``task_path`` (which orders pending writes) and ``idx`` (which a later
``put_writes`` of the same task is deduplicated against) come from RepoSaver's
files, the SQLite and PostgreSQL tables or InMemorySaver's dict; from any other
saver the path is written empty and writes come back ordered by task id.
"""

from __future__ import annotations

import builtins
import importlib
import re
import sqlite3
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from ._compat import adopt_sqlite_tables, postgres_cursor, sqlite_has_task_path
from .core.errors import FileFormatError, RepoCheckpointError, UnrevivableValueError
from .core.errors import SaverSpecError as SaverSpecError  # re-exported: their old home
from .core.errors import ThreadExistsError as ThreadExistsError
from .core.errors import ThreadNotFoundError as ThreadNotFoundError
from .core.typenames import SAFE_TYPES, rejection
from .ride import writes_alone
from .saver import RepoSaver
from .serde import LOADED_SERDE_TYPES, run_strict, strict_loader


@dataclass
class CopyReport:
    """What was copied, per thread: checkpoints and pending writes."""

    threads: list[str] = field(default_factory=list)
    checkpoints: int = 0
    writes: int = 0
    # threads left out because a file of theirs in the source does not read (``keep_going``)
    failed: dict[str, FileFormatError] = field(default_factory=dict)
    # threads the target already held whole (``skip_copied``): compared, not copied again
    skipped: list[str] = field(default_factory=list)
    current: str | None = None  # the thread being copied (after an interruption: not whole)
    staging: str | None = None  # the staging thread of a replace under way (``staging_id``)
    # staging threads an interrupted replace had left, removed by ``skip_copied``
    cleared: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "checkpoints": self.checkpoints,
            "writes": self.writes,
            "failed": {t: str(e) for t, e in self.failed.items()},
            "skipped": self.skipped,
            "cleared": self.cleared,
        }


WHOLE, PART, OTHER = "whole", "part", "other"


def copied_state(source: Sequence[CheckpointTuple], target: Sequence[CheckpointTuple]) -> str:
    """How the target's copy of a thread stands against the source's: ``WHOLE`` (every
    checkpoint there, with its parent, values and pending writes), ``PART`` (some of them, each
    as the source has it, the last perhaps with only some of its pending writes: what an
    interrupted copy leaves) or ``OTHER`` (anything else: another thread of the same id).
    Compared, never assumed from the ids alone."""
    theirs = {_where(t): t for t in source}
    mine = {_where(t): t for t in target}
    if not mine.keys() <= theirs.keys():
        return OTHER
    whole = mine.keys() == theirs.keys()
    for key, tup in mine.items():
        same = _compared(theirs[key], tup)
        if same is None:
            return OTHER
        whole = whole and same
    return WHOLE if whole else PART


def _where(t: CheckpointTuple) -> tuple[str, str]:
    conf = t.config["configurable"]
    return str(conf.get("checkpoint_ns", "")), str(conf["checkpoint_id"])


def _compared(a: CheckpointTuple, b: CheckpointTuple) -> bool | None:
    """One checkpoint as two savers return it: True when ``b`` has ``a``'s parent, values and
    pending writes; False when it has only some of the writes (a copy stopped between a
    checkpoint's put and its put_writes); None when it is another checkpoint."""
    if _parent_id(a) != _parent_id(b) or a.checkpoint["channel_values"] != b.checkpoint["channel_values"]:
        return None
    left = list(a.pending_writes or [])
    for write in b.pending_writes or []:
        if write not in left:
            return None
        left.remove(write)
    return not left


def _parent_id(t: CheckpointTuple) -> Any:
    return (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")


Progress = Callable[[str, int, int], None]  # thread id, checkpoints copied so far, of how many


def thread_ids_of(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread a saver holds, sorted.

    The contract has no call for this, so the savers we know are asked directly
    (a folder listing or one SQL query); any other saver is listed in full.
    """

    if isinstance(saver, RepoSaver):
        return sorted(saver.store.thread_ids())
    storage = getattr(saver, "storage", None)
    if isinstance(storage, dict):  # InMemorySaver
        return sorted(str(t) for t in storage)
    kind = _sql_kind(saver)
    if kind is not None:
        cursor = saver.cursor if kind == "sqlite" else postgres_cursor(saver)  # type: ignore[attr-defined]
        with cursor() as cur:
            cur.execute("SELECT DISTINCT thread_id FROM checkpoints")
            rows = cur.fetchall()
        return sorted(str(r["thread_id"] if isinstance(r, dict) else r[0]) for r in rows)
    return sorted({str(t.config["configurable"]["thread_id"]) for t in saver.list(None)})


# (checkpoint_ns, checkpoint_id, task_id) -> (task_path, the idx of each of its writes, sorted)
WriteInfo = dict[tuple[str, str, str], tuple[str, builtins.list[int]]]
_WRITES_SQL = {
    "sqlite": "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx FROM writes WHERE thread_id = ?",
    "postgres": (
        "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx "
        "FROM checkpoint_writes WHERE thread_id = %s"
    ),
}
_NO_TASK_PATH = {
    "sqlite": "SELECT checkpoint_ns, checkpoint_id, task_id, '', idx FROM writes WHERE thread_id = ?"
}


def _sql_kind(saver: BaseCheckpointSaver[Any]) -> str | None:
    module = type(saver).__module__
    for kind in ("sqlite", "postgres"):
        if module.startswith(f"langgraph.checkpoint.{kind}"):
            return kind
    return None


def _collect(rows: Iterable[Sequence[Any]]) -> WriteInfo:
    """Rows of (ns, checkpoint id, task id, task path, idx), one per stored write."""
    out: WriteInfo = {}
    for ns, cid, task_id, path, idx in rows:
        key = (str(ns), str(cid), str(task_id))
        old = out.get(key)
        idxs = old[1] if old else []
        if int(idx) not in idxs:
            idxs.append(int(idx))
        out[key] = (str(path or ""), idxs)
    for _, idxs in out.values():
        idxs.sort()
    return out


def _local_rows(saver: BaseCheckpointSaver[Any], thread_id: str) -> builtins.list[tuple[Any, ...]] | None:
    """Write rows from savers that keep them in this process (repo files, memory); else None."""

    if isinstance(saver, RepoSaver):
        store = saver.store
        return [
            (ns, cid, found.task.task_id, found.task.task_path, w["idx"])
            for ns in store.namespaces(thread_id)
            for cid in store.checkpoint_ids(thread_id, ns)
            for found in store.writes_records(thread_id, ns, cid)
            for w in found.task.writes
        ]
    writes = getattr(saver, "writes", None)
    if isinstance(writes, dict):  # InMemorySaver: (thread, ns, id) -> (task, idx) -> (task, ch, value, path)
        return [
            (ns, cid, task_id, path, idx)
            for (tid, ns, cid), inner in writes.items()
            if tid == thread_id
            for (_, idx), (task_id, _, _, path) in inner.items()
        ]
    return None


def _sql(kind: str, saver: BaseCheckpointSaver[Any]) -> str:
    if kind == "sqlite" and not sqlite_has_task_path(saver):
        return _NO_TASK_PATH[kind]
    return _WRITES_SQL[kind]


def write_info_of(saver: BaseCheckpointSaver[Any], thread_id: str) -> WriteInfo:
    """Task path and idx of every pending write of a thread, where the saver keeps them.

    The contract returns neither; both matter: the task path orders pending writes,
    and ``(task_id, idx)`` is what a later ``put_writes`` of the same task is
    deduplicated against.
    """
    rows = _local_rows(saver, thread_id)
    if rows is None and (kind := _sql_kind(saver)) is not None:
        cursor = saver.cursor if kind == "sqlite" else postgres_cursor(saver)  # type: ignore[attr-defined]
        with cursor() as cur:
            cur.execute(_sql(kind, saver), (thread_id,))
            rows = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in cur.fetchall()]
    return _collect(rows or [])


async def awrite_info_of(saver: BaseCheckpointSaver[Any], thread_id: str) -> WriteInfo:
    """``write_info_of`` for AsyncSqliteSaver and AsyncPostgresSaver."""
    rows = _local_rows(saver, thread_id)
    kind = _sql_kind(saver)
    if rows is None and kind == "sqlite":
        await saver.setup()  # type: ignore[attr-defined]
        async with saver.lock, saver.conn.execute(_sql(kind, saver), (thread_id,)) as cur:  # type: ignore[attr-defined]
            rows = [tuple(r) for r in await cur.fetchall()]
    elif rows is None and kind == "postgres":
        async with postgres_cursor(saver)() as cur:
            await cur.execute(_WRITES_SQL[kind], (thread_id,))
            rows = [tuple(r.values()) for r in await cur.fetchall()]
    return _collect(rows or [])


def _parents_first(tuples: Iterable[CheckpointTuple]) -> builtins.list[CheckpointTuple]:
    """Each checkpoint after its parent, following the parent links themselves.

    Ids are time-ordered, but a thread continued on two machines with different
    clocks can hold a child whose id sorts before its parent's; id order only
    breaks ties.
    """

    def key(t: CheckpointTuple) -> tuple[str, str]:
        conf = t.config["configurable"]
        return (conf.get("checkpoint_ns", ""), conf["checkpoint_id"])

    ordered = sorted(tuples, key=key)
    by_key = {key(t): t for t in ordered}
    done: set[tuple[str, str]] = set()
    out: builtins.list[CheckpointTuple] = []
    for tup in ordered:
        chain: builtins.list[CheckpointTuple] = []
        on_chain: set[tuple[str, str]] = set()
        cur: CheckpointTuple | None = tup
        while cur is not None and key(cur) not in done:
            if key(cur) in on_chain:  # no order puts each after its parent: refuse, copy nothing
                ns, cid = key(cur)
                raise RepoCheckpointError(
                    f"thread {cur.config['configurable'].get('thread_id')!r}"
                    + (f" namespace {ns!r}" if ns else "")
                    + f": parent links form a cycle at checkpoint {key(chain[-1])[1]} (its parent {cid} "
                    "is itself or descends from it); nothing of this thread was copied"
                )
            chain.append(cur)
            on_chain.add(key(cur))
            parent = cur.parent_config
            cur = by_key.get((key(cur)[0], parent["configurable"]["checkpoint_id"])) if parent else None
        done |= on_chain
        out.extend(reversed(chain))
    return out


def _new_versions(tup: CheckpointTuple, parent: CheckpointTuple | None) -> ChannelVersions:
    """The channels this checkpoint gave a new version: what a graph passed to ``put``."""
    versions = tup.checkpoint["channel_versions"]
    if parent is None:
        return dict(versions)
    before = parent.checkpoint["channel_versions"]
    return {k: v for k, v in versions.items() if before.get(k) != v}


def _put_config(tup: CheckpointTuple, thread_id: str | None = None) -> RunnableConfig:
    """Where ``put`` stores a copy of ``tup``: its thread (or ``thread_id``), namespace, parent."""
    conf = tup.config["configurable"]
    configurable: dict[str, Any] = {
        "thread_id": conf["thread_id"] if thread_id is None else thread_id,
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
    }
    if tup.parent_config is not None:
        configurable["checkpoint_id"] = tup.parent_config["configurable"]["checkpoint_id"]
    return {"configurable": configurable}


WriteCall = tuple[str, builtins.list[tuple[str, Any]], str]  # task id, writes, task path


def _write_calls(tup: CheckpointTuple, info: WriteInfo) -> builtins.list[WriteCall]:
    """The ``put_writes`` calls that store this checkpoint's pending writes as the source has them.

    A regular write's idx is its place in the call, so each regular write is put at
    its original place, with the task's special writes (error, interrupt, resume:
    fixed negative idx) filling the places before it. When the places cannot be
    filled that way the writes go in one call, specials first.
    """
    conf = tup.config["configurable"]
    grouped: dict[str, builtins.list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in tup.pending_writes or []:
        grouped[task_id].append((channel, value))
    calls: builtins.list[WriteCall] = []
    for task_id, writes in grouped.items():
        path, idxs = info.get((conf.get("checkpoint_ns", ""), conf["checkpoint_id"], task_id), ("", []))
        calls.append((task_id, _in_place(writes, idxs), path))
    return calls


def _in_place(
    writes: builtins.list[tuple[str, Any]], idxs: builtins.list[int]
) -> builtins.list[tuple[str, Any]]:
    if len(idxs) != len(writes):
        return writes
    special = [w for w, i in zip(writes, idxs, strict=True) if i < 0 and w[0] in WRITES_IDX_MAP]
    regular = {i: w for w, i in zip(writes, idxs, strict=True) if i >= 0}
    if len(special) + len(regular) != len(writes):
        return writes
    size = max([*regular, -1]) + 1
    if size - len(regular) > len(special):
        return writes  # gaps no special write can fill
    out: builtins.list[tuple[str, Any]] = []
    spare = iter(special)
    for place in range(size):
        out.append(regular[place] if place in regular else next(spare))
    return out + list(spare)


@dataclass
class _Plan:
    """One thread's checkpoints, parents first, each with what ``put`` needs."""

    thread_id: str
    steps: builtins.list[tuple[CheckpointTuple, RunnableConfig, ChannelVersions]]


def _plan(thread_id: str, tuples: Iterable[CheckpointTuple], into: str | None = None) -> _Plan:
    """``into``: the thread id the copy is put under (default: the same)."""
    ordered = _parents_first(tuples)
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
        steps.append((tup, _put_config(tup, into), _new_versions(tup, parent)))
    return _Plan(thread_id, steps)


@contextmanager
def _unreadable(report: CopyReport, thread_id: str, keep_going: bool) -> Iterator[None]:
    """A thread of the source whose files do not read: the error raised, or (``keep_going``)
    noted in ``report.failed`` so the copy goes on with the other threads."""
    try:
        yield
    except FileFormatError as exc:
        if not keep_going:
            raise
        report.failed[thread_id] = exc


def _unique(thread_ids: Sequence[str]) -> builtins.list[str]:
    return list(dict.fromkeys(thread_ids))


def _refuse(thread_id: str, in_source: bool, in_target: bool, replace: bool) -> None:
    if not in_source:
        raise ThreadNotFoundError(f"thread {thread_id!r} is not in the source; nothing was copied")
    if in_target and not replace:
        raise ThreadExistsError(
            f"thread {thread_id!r} already exists in the target; nothing was copied "
            "(replace it with replace=True, or --replace on the command line)"
        )


def _has(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    return next(iter(saver.list({"configurable": {"thread_id": thread_id}}, limit=1)), None) is not None


async def _ahas(saver: BaseCheckpointSaver[Any], thread_id: str) -> bool:
    async for _ in saver.alist({"configurable": {"thread_id": thread_id}}, limit=1):
        return True
    return False


def staging_id(thread_id: str) -> str:
    """The thread a replacement is written under until it is complete (``copy_threads``).
    Left behind only by a copy stopped (killed, or Ctrl-C) during the swap: it then holds the
    whole new thread; ``skip_copied`` (``--skip-copied``) removes it and copies the thread again,
    or ``langgraph-repo copy STAGING THREAD`` finishes the job."""
    return f"{thread_id}.replacing-{uuid.uuid4().hex[:12]}"


_Put = tuple[RunnableConfig, Checkpoint, CheckpointMetadata, ChannelVersions]  # put's arguments
_Step = tuple[_Put, builtins.list[WriteCall]]


def _steps(plan: _Plan, info: WriteInfo, report: CopyReport, progress: Progress | None) -> Iterator[_Step]:
    """A plan's checkpoints, parents first: the arguments of each one's ``put`` and its
    ``put_writes`` calls (the saved config comes first). Counted and reported once the caller
    has made them: the sync and async drivers below differ only in how they call."""
    for done, (tup, config, new_versions) in enumerate(plan.steps, 1):
        calls = _write_calls(tup, info)
        yield (config, tup.checkpoint, tup.metadata, new_versions), calls
        report.writes += sum(len(writes) for _, writes, _ in calls)
        if progress is not None:
            progress(plan.thread_id, done, len(plan.steps))


def _put_steps(target: BaseCheckpointSaver[Any], steps: Iterable[_Step]) -> None:
    """Every checkpoint of a plan and its pending writes, put into ``target``, parents first."""
    with writes_alone():  # the next put comes only after these return
        for put, calls in steps:
            saved = target.put(*put)
            for task_id, writes, path in calls:
                target.put_writes(saved, writes, task_id, path)


async def _aput_steps(target: BaseCheckpointSaver[Any], steps: Iterable[_Step]) -> None:
    with writes_alone():  # the next put comes only after these return
        for put, calls in steps:
            saved = await target.aput(*put)
            for task_id, writes, path in calls:
                await target.aput_writes(saved, writes, task_id, path)


def _check_replaceable(target: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Refuse, before anything is written, a RepoSaver thread that could not be deleted (a
    symlink in it: removal.py), so a refused replace leaves no staging thread behind."""

    if isinstance(target, RepoSaver):
        folder = target.store.layout.thread_dir(thread_id)
        target.store.files.check_tree(folder, f"replace thread {thread_id!r}")


def _move(target: BaseCheckpointSaver[Any], staged: str, thread_id: str) -> None:
    """The staged thread's checkpoints and writes put under ``thread_id`` in the same saver
    (RepoSaver copies its files; any other saver gets them put again, read from itself)."""

    if isinstance(target, RepoSaver):
        target.copy_thread(staged, thread_id)
        return
    plan = _plan(staged, target.list({"configurable": {"thread_id": staged}}), into=thread_id)
    _put_steps(target, _steps(plan, write_info_of(target, staged), CopyReport(), None))


async def _amove(target: BaseCheckpointSaver[Any], staged: str, thread_id: str) -> None:

    if isinstance(target, RepoSaver):
        await target.acopy_thread(staged, thread_id)
        return
    tuples = [t async for t in target.alist({"configurable": {"thread_id": staged}})]
    plan = _plan(staged, tuples, into=thread_id)
    await _aput_steps(target, _steps(plan, await awrite_info_of(target, staged), CopyReport(), None))


def copy_threads(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
    *,
    replace: bool = False,
    progress: Progress | None = None,
    keep_going: bool = False,
    skip_copied: bool = False,
    report: CopyReport | None = None,
) -> CopyReport:
    """Copy threads (default: all) from ``source`` to ``target``, every checkpoint and write.

    Every thread is checked before anything is written: one missing from the source
    or already in the target (unless ``replace``) stops the copy with nothing done.
    ``replace`` writes the new thread whole under a staging id first (``staging_id``) and
    swaps it in only then: a checkpoint the target refuses leaves the old thread as it was.
    A thread is read whole before any of it is written; ``keep_going``: one whose files do not
    read (``FileFormatError``) is left out, nothing of it written, and named in
    ``report.failed``, and the copy goes on with the others. ``skip_copied`` finishes an
    interrupted copy: a thread the target holds whole is skipped (``report.skipped``), one it
    holds in part, as the source has it, is written again whole (``copied_state``).
    ``report``: filled as the copy goes, for a caller that is interrupted.
    """
    wanted = _unique(thread_ids) if thread_ids is not None else thread_ids_of(source)
    present = {t: _has(target, t) for t in wanted}
    report = report if report is not None else CopyReport()
    if skip_copied:
        _clear_staged(source, target, wanted, report)
    finish: set[str] = set()
    for t in (t for t in wanted if skip_copied and present[t]):
        with _unreadable(report, t, keep_going):
            theirs, mine = (list(saver.list(_thread(t))) for saver in (source, target))
            _sort_out(report, finish, t, copied_state(theirs, mine))
    for t in (t for t in wanted if t not in report.skipped):  # thread_ids_of's are in the source
        with _unreadable(report, t, keep_going):
            _refuse(t, thread_ids is None or _has(source, t), present[t] and t not in finish, replace)
    for thread_id in (t for t in wanted if t not in report.failed and t not in report.skipped):
        report.current = thread_id
        into = staging_id(thread_id) if present[thread_id] else None
        with _unreadable(report, thread_id, keep_going):
            info = write_info_of(source, thread_id)
            plan = _plan(thread_id, source.list(_thread(thread_id)), into=into)
        if thread_id in report.failed:
            continue
        if into is None:
            _put_steps(target, _steps(plan, info, report, progress))
        else:
            _replace(target, thread_id, into, _steps(plan, info, report, progress), report)
        report.threads.append(thread_id)
        report.checkpoints += len(plan.steps)
    report.current = None
    return report


def _replace(
    target: BaseCheckpointSaver[Any], thread_id: str, staged: str, steps: Iterable[_Step], report: CopyReport
) -> None:
    """``thread_id`` replaced by the thread ``steps`` write, written whole under ``staged``
    first and swapped in only then. Stopped while it is written: the staging thread is removed
    (the old thread is whole). Stopped while it is swapped in: it is the one whole copy, left
    for ``skip_copied`` to find (``report.staging`` names it)."""
    _check_replaceable(target, thread_id)
    report.staging = staged
    try:
        _put_steps(target, steps)
        target.delete_thread(thread_id)
    except BaseException:  # the old thread is whole (a RepoSaver removes it at once, or not)
        target.delete_thread(staged)
        report.staging = None
        raise
    _move(target, staged, thread_id)
    target.delete_thread(staged)
    report.staging = None


def _clear_staged(
    source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any], wanted: list[str], report: CopyReport
) -> None:
    """The staging threads an interrupted replace left in ``target`` for threads of ``wanted``,
    removed when each holds a copy (whole or part) of the source's thread; another thread of
    such a name is left alone."""
    for name in thread_ids_of(target):
        base = _staged_for(name, wanted)
        if base is None:
            continue
        theirs, mine = list(source.list(_thread(base))), list(target.list(_thread(name)))
        if copied_state(theirs, mine) != OTHER:
            target.delete_thread(name)
            report.cleared.append(name)


def _staged_for(name: str, wanted: list[str]) -> str | None:
    """The thread of ``wanted`` whose staging thread ``name`` is (``staging_id``), if any."""
    base, sep, tail = name.rpartition(".replacing-")
    return base if sep and base in wanted and re.fullmatch(r"[0-9a-f]{12}", tail) else None


def _sort_out(report: CopyReport, finish: set[str], thread_id: str, state: str) -> None:
    """A thread the target holds already (``skip_copied``): skipped when whole, written again
    whole when it holds part of it."""
    if state == WHOLE:
        report.skipped.append(thread_id)
    elif state == PART:
        finish.add(thread_id)


def _thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


async def acopy_threads(
    source: BaseCheckpointSaver[Any],
    target: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
    *,
    replace: bool = False,
    progress: Progress | None = None,
    keep_going: bool = False,
    skip_copied: bool = False,
    report: CopyReport | None = None,
) -> CopyReport:
    """``copy_threads`` for async savers (AsyncSqliteSaver, AsyncPostgresSaver, RepoSaver's a-methods)."""
    if thread_ids is None:
        wanted = sorted({str(t.config["configurable"]["thread_id"]) async for t in source.alist(None)})
    else:
        wanted = _unique(thread_ids)
    present = {t: await _ahas(target, t) for t in wanted}
    report = report if report is not None else CopyReport()
    if skip_copied:
        await _aclear_staged(source, target, wanted, report)
    finish: set[str] = set()
    for t in (t for t in wanted if skip_copied and present[t]):
        with _unreadable(report, t, keep_going):
            mine = [c async for c in target.alist(_thread(t))]
            _sort_out(report, finish, t, copied_state([c async for c in source.alist(_thread(t))], mine))
    for t in (t for t in wanted if t not in report.skipped):
        with _unreadable(report, t, keep_going):
            _refuse(t, thread_ids is None or await _ahas(source, t), present[t] and t not in finish, replace)
    for thread_id in (t for t in wanted if t not in report.failed and t not in report.skipped):
        report.current = thread_id
        into = staging_id(thread_id) if present[thread_id] else None
        with _unreadable(report, thread_id, keep_going):
            tuples = [t async for t in source.alist({"configurable": {"thread_id": thread_id}})]
            info = await awrite_info_of(source, thread_id)
            plan = _plan(thread_id, tuples, into=into)
        if thread_id in report.failed:
            continue
        if into is None:
            await _aput_steps(target, _steps(plan, info, report, progress))
        else:
            await _areplace(target, thread_id, into, _steps(plan, info, report, progress), report)
        report.threads.append(thread_id)
        report.checkpoints += len(plan.steps)
    report.current = None
    return report


async def _areplace(
    target: BaseCheckpointSaver[Any], thread_id: str, staged: str, steps: Iterable[_Step], report: CopyReport
) -> None:
    """``_replace`` for async savers."""
    _check_replaceable(target, thread_id)
    report.staging = staged
    try:
        await _aput_steps(target, steps)
        await target.adelete_thread(thread_id)
    except BaseException:
        await target.adelete_thread(staged)
        report.staging = None
        raise
    await _amove(target, staged, thread_id)
    await target.adelete_thread(staged)
    report.staging = None


async def _aclear_staged(
    source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any], wanted: list[str], report: CopyReport
) -> None:
    """``_clear_staged`` for async savers."""
    names = sorted({str(t.config["configurable"]["thread_id"]) async for t in target.alist(None)})
    for name in names:
        base = _staged_for(name, wanted)
        if base is None:
            continue
        theirs = [t async for t in source.alist(_thread(base))]
        if copied_state(theirs, [t async for t in target.alist(_thread(name))]) != OTHER:
            await target.adelete_thread(name)
            report.cleared.append(name)


SPEC_HELP = "sqlite:///PATH.db (sqlite:////abs/path.db), postgresql://..., or module:factory"


class StrictSerde:
    """The serde of a saver the command line opens (an import's source, an export's target):
    it loads through the strict allowlist, LangGraph's safe types plus what the user allowed
    (``--allow``, pyproject.toml), whatever serde the saver came with. A SQLite file someone
    hands you is data, like a file in the root: SqliteSaver's default serializer allows every
    type, so a msgpack extension in it naming ``os.system`` would run. A type outside the
    allowlist, or one that rejects its data, is an ``UnrevivableValueError`` naming the
    source; a payload type other than msgpack, null and bytes (pickle, LangGraph's legacy
    ``json``) is refused before any serde sees it. Writing is the saver's own serde's."""

    def __init__(self, serde: Any, allowed: frozenset[tuple[str, ...]], spec: str) -> None:
        self._serde = serde
        self._spec = spec
        self._loader = strict_loader(serde, allowed, {})
        if self._loader is serde:  # not LangGraph's JsonPlusSerializer (maybe encrypted)
            raise SaverSpecError(
                f"{spec}: its serde {type(serde).__name__} cannot be read through the strict msgpack "
                "allowlist; give a saver whose serde is LangGraph's JsonPlusSerializer or EncryptedSerializer"
            )

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self._serde.dumps_typed(obj)  # type: ignore[no-any-return]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_ = data[0]
        if type_.partition("+")[0] not in LOADED_SERDE_TYPES:
            raise UnrevivableValueError(
                f"{self._spec}: refusing to load a {type_!r} payload: only msgpack, null and bytes are read "
                "(a pickle or legacy json payload can run code)"
            )
        value, failed = run_strict(lambda: self._loader.loads_typed(data))
        if failed is not None:
            _, label, cause = failed
            if str(cause) == "not in the msgpack allowlist":
                why = f"refusing to construct {label}: not in the msgpack allowlist (allow a type of your "
                why += "state with --allow module:Name, or [tool.langgraph-repo] allow in pyproject.toml)"
            else:
                why = rejection(label, cause)
            raise UnrevivableValueError(f"{self._spec}: {why}; nothing of it was read")
        return value


def _strict(saver: BaseCheckpointSaver[Any], allowed: frozenset[tuple[str, ...]], spec: str) -> None:
    """Make ``saver`` load through ``StrictSerde`` (a RepoSaver checks every type itself)."""

    if not isinstance(saver, RepoSaver) and not isinstance(saver.serde, StrictSerde):
        saver.serde = StrictSerde(saver.serde, allowed, spec)  # type: ignore[assignment]


def _adopt_sqlite(saver: Any, spec: str) -> None:
    """Read an existing checkpoint database as it is, without setting it up."""
    tables = {r[0] for r in saver.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"checkpoints", "writes"} <= tables:
        raise SaverSpecError(f"{spec}: not a SqliteSaver database (no checkpoints and writes tables)")
    columns = {r[1] for r in saver.conn.execute("PRAGMA table_info(writes)")}
    adopt_sqlite_tables(saver, "task_path" in columns)


def _optional(module: str, name: str, extra: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise SaverSpecError(
            f"{name} is not installed ({exc}); pip install 'langgraph-checkpoint-repo[{extra}]'"
        ) from None


@contextmanager
def open_saver(
    spec: str, *, create: bool, allowlist: Iterable[tuple[str, ...]] = ()
) -> Iterator[BaseCheckpointSaver[Any]]:
    """Open the saver a command-line SOURCE or TARGET names, and close it afterwards.

    ``create`` is True for an export target: a SQLite file may be made and the
    PostgreSQL tables are set up. A source is only read: its file must exist and
    nothing is set up in it. ``module:factory`` calls ``factory()``, which returns
    a saver or a context manager giving one (as ``SqliteSaver.from_conn_string``).
    Whichever it is, it loads through the strict allowlist (``StrictSerde``): LangGraph's
    safe types plus ``allowlist``.
    """
    allowed = frozenset(SAFE_TYPES) | frozenset(tuple(a) for a in allowlist)
    with _opened(spec, create=create) as saver:
        _strict(saver, allowed, spec)
        yield saver


@contextmanager
def _opened(spec: str, *, create: bool) -> Iterator[BaseCheckpointSaver[Any]]:
    if spec.startswith("sqlite:///"):
        path = Path(spec[len("sqlite:///") :])
        if not create and not path.is_file():
            raise SaverSpecError(f"{spec}: no such SQLite file ({path})")
        SqliteSaver = _optional("langgraph.checkpoint.sqlite", "SqliteSaver", "sqlite")
        if create:
            conn = sqlite3.connect(path, check_same_thread=False)
        else:  # read only: SqliteSaver.setup() would add tables and switch the file to WAL
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            if create:
                saver.setup()
            else:
                _adopt_sqlite(saver, spec)
            yield saver
        finally:
            conn.close()
        return
    if spec.startswith("sqlite:"):
        raise SaverSpecError(
            f"{spec!r}: a SQLite file is sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
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
