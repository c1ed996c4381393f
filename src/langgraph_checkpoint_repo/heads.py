"""Heads of a namespace and the choice of which one continues (docs/forks.md).

A *head* is a checkpoint no other checkpoint of its namespace names as its parent. A git
merge of two branches that both continued a thread, a checkout of an older commit and a
re-run, two processes continuing one thread at once, and LangGraph's own time travel
(``update_state`` on an older config) all leave a namespace with more than one. The newest
id still continues, as with every LangGraph saver; what this module adds is seeing it.

A choice is a checkpoint whose metadata holds ``{"chose": <head>, "over": [<heads>]}``
under ``CHOICE_KEY``: the heads it lists under ``over`` (and the chosen one and its
ancestors) are *settled*. A namespace needs a choice while more than one head is unsettled.

``find_heads`` is the pure rule; ``scan`` reads it off a store; ``read_heads`` and
``choose`` are ``RepoSaver.heads`` and ``RepoSaver.choose_head`` (saver.py keeps only the
method names, so its classes stay short).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.base.id import uuid6
from langgraph.types import Send

from .errors import BadInputError, FileFormatError, NotFoundError, RepoCheckpointError

if TYPE_CHECKING:
    from .checks import Problem
    from .saver import RepoSaver
    from .store import FileStore

CHOICE_KEY = "langgraph_repo_choice"
_TASKS = "__pregel_tasks"
_PULL, _PUSH = "__pregel_pull", "__pregel_push"


@dataclass(frozen=True)
class Choice:
    """One recorded choice: ``chose`` continues, the heads in ``over`` do not."""

    chose: str
    over: tuple[str, ...]


@dataclass(frozen=True)
class HeadState:
    """A head of a namespace, and whether a choice has settled it."""

    checkpoint_id: str
    settled: bool


@dataclass(frozen=True)
class Head:
    """What ``RepoSaver.heads`` returns per head: its checkpoint as ``get_tuple`` reads it."""

    checkpoint_tuple: CheckpointTuple
    settled: bool

    @property
    def config(self) -> RunnableConfig:
        return self.checkpoint_tuple.config

    @property
    def checkpoint_id(self) -> str:
        return str(self.checkpoint_tuple.checkpoint["id"])


def choice_of(metadata: Mapping[str, Any], where: str) -> Choice | None:
    """The choice a checkpoint's metadata records, if any; a malformed one is an error
    naming the file (``where``), never read as no choice."""
    raw = metadata.get(CHOICE_KEY)
    if raw is None:
        return None
    over = raw.get("over") if isinstance(raw, Mapping) else None
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("chose"), str)
        or not isinstance(over, list)
        or not all(isinstance(i, str) for i in over)
    ):
        raise FileFormatError(
            where,
            f"/metadata/{CHOICE_KEY}",
            'expected {"chose": <checkpoint id>, "over": [<checkpoint ids>]}',
        )
    return Choice(raw["chose"], tuple(over))


def find_heads(parents: Mapping[str, str | None], choices: Iterable[Choice]) -> list[HeadState]:
    """The heads of one namespace, newest first, each settled or not.

    ``parents`` maps every checkpoint id of the namespace to its parent id. A head is settled
    when a choice lists it under ``over``, or it is the chosen one or an ancestor of it."""
    named = {p for p in parents.values() if p is not None}
    settled: set[str] = set()
    for choice in choices:
        settled.update(choice.over)
        current: str | None = choice.chose
        while current is not None and current not in settled:
            settled.add(current)
            current = parents.get(current)
    return [HeadState(c, c in settled) for c in sorted(parents, reverse=True) if c not in named]


def unsettled(heads: Iterable[HeadState]) -> list[str]:
    """The ids of the heads no choice has settled; more than one: the namespace needs a choice."""
    return [h.checkpoint_id for h in heads if not h.settled]


def scan(store: FileStore, thread_id: str, ns: str) -> list[HeadState]:
    """``find_heads`` over a namespace's checkpoint files (headers only, no values)."""
    parents: dict[str, str | None] = {}
    choices: list[Choice] = []
    for cid in store.checkpoint_ids(thread_id, ns):
        try:
            doc = store.cached_header(thread_id, ns, cid)
        except FileNotFoundError:
            if store.layout.checkpoint_path(thread_id, ns, cid).exists():
                raise
            continue  # removed since it was listed (prune in another process)
        parents[cid] = doc["parent_checkpoint_id"]
        choice = choice_of(doc["metadata"], str(store.layout.checkpoint_path(thread_id, ns, cid)))
        if choice is not None:
            choices.append(choice)
    return find_heads(parents, choices)


def unsettled_namespaces(store: FileStore, thread_id: str) -> dict[str, list[str]]:
    """Per namespace of a thread that needs a choice, its unsettled heads (newest first)."""
    out: dict[str, list[str]] = {}
    for ns in store.namespaces(thread_id):
        ids = unsettled(scan(store, thread_id, ns))
        if len(ids) > 1:
            out[ns] = ids
    return out


def _where(thread_id: str, ns: str) -> str:
    return f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")


def _config(thread_id: str, ns: str, cid: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}


def _thread_ns(config: RunnableConfig) -> tuple[str, str]:
    conf = config.get("configurable") or {}
    if conf.get("thread_id") is None:
        raise BadInputError("config['configurable']['thread_id'] is required")
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns") or "")


def read_heads(saver: RepoSaver, config: RunnableConfig) -> builtins.list[Head]:
    """``RepoSaver.heads``: the heads of ``config``'s namespace, newest first."""
    thread_id, ns = _thread_ns(config)
    out = []
    for state in scan(saver.store, thread_id, ns):
        tup = saver.get_tuple(_config(thread_id, ns, state.checkpoint_id))
        if tup is not None:  # None: removed since it was listed
            out.append(Head(tup, state.settled))
    return out


def choose(saver: RepoSaver, config: RunnableConfig) -> RunnableConfig:
    """``RepoSaver.choose_head``: a new newest checkpoint, child of the chosen head, holding
    the same values and versions, the head's metadata (source "fork") with the choice, and
    the head's pending writes under the task ids the new checkpoint gives the same tasks."""
    thread_id, ns = _thread_ns(config)
    cid = (config.get("configurable") or {}).get("checkpoint_id")
    if not cid:
        raise BadInputError(
            "choose_head needs config['configurable']['checkpoint_id']: the head that is to continue"
        )
    cid = str(cid)
    with saver.store.thread_lock(thread_id):
        heads = scan(saver.store, thread_id, ns)
        if not heads:
            raise NotFoundError(f"{_where(thread_id, ns)} has no checkpoints under {saver.root}")
        ids = [h.checkpoint_id for h in heads]
        if cid not in ids:
            known = cid in saver.store.checkpoint_ids(thread_id, ns)
            what = "is not a head (a later checkpoint continues it)" if known else "is not there"
            raise (BadInputError if known else NotFoundError)(
                f"checkpoint {cid!r} of {_where(thread_id, ns)} {what}; its heads are {', '.join(ids)}"
            )
        over = [i for i in ids if i != cid]
        if not over:
            return _config(thread_id, ns, cid)  # the only head: it continues already
        head = saver.get_tuple(_config(thread_id, ns, cid))
        if head is None:
            raise NotFoundError(f"checkpoint {cid!r} of {_where(thread_id, ns)} was removed meanwhile")
        step = head.metadata.get("step")
        new_id = str(uuid6(clock_seq=step if isinstance(step, int) else None))
        newest = saver.store.checkpoint_ids(thread_id, ns)[-1]
        if new_id <= newest:
            raise RepoCheckpointError(
                f"cannot choose in {_where(thread_id, ns)}: this machine's clock is behind checkpoint "
                f"{newest}, so a new checkpoint would not be the newest; fix the clock and retry"
            )
        checkpoint: Any = {
            **head.checkpoint,
            "id": new_id,
            "ts": datetime.now(timezone.utc).isoformat(),
        }
        metadata: Any = {**head.metadata, "source": "fork", CHOICE_KEY: {"chose": cid, "over": over}}
        new_config = saver.put(head.config, checkpoint, metadata, {})
        renamed = _task_ids(head, new_id)
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in head.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            new_task, path = renamed.get(task_id, (task_id, ""))
            saver.put_writes(new_config, writes, new_task, path)
        return new_config


def _task_ids(head: CheckpointTuple, new_id: str) -> dict[str, tuple[str, str]]:
    """Old task id -> (new task id, task path): LangGraph derives a task's id from its
    checkpoint's id, so the same task of the copy has another id; its writes must move with it.
    Tasks that cannot be derived from the checkpoint alone keep their id (docs/forks.md)."""
    from .review import derive_tasks  # review imports the saver, which imports this module

    cp: Any = head.checkpoint
    values = cp["channel_values"]
    sends = [
        {"$type": ["langgraph.types", "Send"], "$args": [p.node]} if isinstance(p, Send) else p
        for p in values.get(_TASKS) or []
    ]
    ns = str(head.config["configurable"].get("checkpoint_ns") or "")

    def tasks(cid: str) -> list[Any]:
        doc = {"checkpoint_ns": ns, "checkpoint_id": cid, "metadata": dict(head.metadata), "checkpoint": cp}
        return derive_tasks(doc, set(values), sends)

    out: dict[str, tuple[str, str]] = {}
    for old, new in zip(tasks(str(cp["id"])), tasks(new_id), strict=True):
        if old.id is None or new.id is None:
            continue
        kind, _, idx = old.kind.partition(" ")
        path = f"~{_PULL}, {old.name}" if kind == "pull" else f"~{_PUSH}, {int(idx):010d}"
        out[old.id] = (new.id, path)
    return out


def unsettled_problems(store: FileStore, folders: list[Path] | None = None) -> list[Problem]:
    """``validate --heads``: one problem per namespace with more than one unsettled head,
    naming thread, namespace and heads (only the threads in ``folders``, when given). A choice
    record that cannot be read is a problem at its file and pointer."""
    from .checks import Problem, _message  # checks reads through review, which imports the saver

    wanted = None if folders is None else {f.resolve() for f in folders}
    out = []
    for thread_id in store.thread_ids():
        if wanted is not None and store.layout.thread_dir(thread_id).resolve() not in wanted:
            continue
        for ns in store.namespaces(thread_id):
            try:
                ids = unsettled(scan(store, thread_id, ns))
            except FileFormatError as exc:  # reported, not skipped: validate lists it
                out.append(Problem(exc.path, exc.pointer, _message(exc)))
                continue
            if len(ids) > 1:
                out.append(
                    Problem(
                        str(store.layout.checkpoints_dir(thread_id, ns)),
                        "/",
                        f"{_where(thread_id, ns)} has {len(ids)} heads nobody chose: {', '.join(ids)} "
                        f"(the newest continues; choose one with: langgraph-repo heads {thread_id}"
                        + (f" --ns {ns}" if ns else "")
                        + " --choose ID)",
                    )
                )
    return out
