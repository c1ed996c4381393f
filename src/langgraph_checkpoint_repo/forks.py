"""Fork editing over a saver: the heads of a namespace, choosing one, editing a head, merging
two (docs/forks.md). ``RepoSaver`` keeps a one-line method for each; what is written goes
through its own ``put`` and ``put_writes``, so every file is validated and written as any
other checkpoint is. Which heads exist is core/lineage.py's; how tool calls follow an edit is
edits.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.types import Send

from .configs import checkpoint_config, thread_ns
from .core.errors import BadInputError, NotFoundError, RepoCheckpointError, ThreadWaitsError
from .core.format.records import CheckpointRecord
from .core.lineage import CHOICE_KEY, MERGED_CHANNEL, where_of
from .core.sends import TASKS
from .core.threads import ThreadStore
from .edits import scheduled_calls, sends_after_edit
from .readmodel.tasks import CONTROL_WRITES, INTERRUPT, PULL, PUSH, derive_tasks
from .ride import writes_alone


class ForkSaver(Protocol):
    """What fork editing needs of a saver (RepoSaver is one): its documents, to read the
    lineage under the thread's lock, and the contract's reads and writes, so what it writes is
    validated and written as any checkpoint is."""

    @property
    def root(self) -> Path: ...

    @property
    def store(self) -> ThreadStore: ...

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None: ...

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig: ...

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None: ...

    def get_next_version(self, current: str | None, channel: None) -> str: ...


@dataclass(frozen=True)
class Head:
    """What ``RepoSaver.heads`` returns per head: its checkpoint as ``get_tuple`` reads it."""

    checkpoint_tuple: CheckpointTuple
    settled: bool
    continues: bool = False  # the head the graph continues from (docs/forks.md, "The rule")

    @property
    def config(self) -> RunnableConfig:
        return self.checkpoint_tuple.config

    @property
    def checkpoint_id(self) -> str:
        return str(self.checkpoint_tuple.checkpoint["id"])


def heads(view: ForkSaver, config: RunnableConfig) -> list[Head]:
    """The heads of ``config``'s namespace, settled or not: the one that continues first,
    then the others newest first (docs/forks.md)."""
    thread_id, ns = thread_ns(config)
    lineage = view.store.lineage(thread_id, ns)
    current = lineage.current()
    out = []
    for state in sorted(lineage.heads(), key=lambda h: h.checkpoint_id != current):
        tup = view.get_tuple(checkpoint_config(thread_id, ns, state.checkpoint_id))
        if tup is not None:  # None: removed since it was listed
            out.append(Head(tup, state.settled, state.checkpoint_id == current))
    return out


def choose_head(saver: ForkSaver, config: RunnableConfig) -> RunnableConfig:
    """Make the head ``config`` names continue, the choice recorded: a new checkpoint, child
    of the chosen head, holding the same values and versions, the head's metadata (source
    "fork") with the choice over every other head, and the head's pending writes under the
    task ids the new checkpoint gives the same tasks (docs/forks.md). A head that continues
    already while no other waits for a choice is returned as it is: nothing is written."""
    thread_id, ns = thread_ns(config)
    cid = (config.get("configurable") or {}).get("checkpoint_id")
    if not cid:
        raise BadInputError(
            "choose_head needs config['configurable']['checkpoint_id']: the head that is to continue"
        )
    cid = str(cid)
    with saver.store.thread_lock(thread_id):
        lineage = saver.store.lineage(thread_id, ns)
        heads = lineage.heads()
        if not heads:
            raise NotFoundError(f"{where_of(thread_id, ns)} has no checkpoints under {saver.root}")
        ids = [h.checkpoint_id for h in heads]
        if cid not in ids:
            known = cid in saver.store.checkpoint_ids(thread_id, ns)
            what = "is not a head (a later checkpoint continues it)" if known else "is not there"
            raise (BadInputError if known else NotFoundError)(
                f"checkpoint {cid!r} of {where_of(thread_id, ns)} {what}; its heads are {', '.join(ids)}"
            )
        over = [i for i in ids if i != cid]
        waiting = [h.checkpoint_id for h in heads if h.checkpoint_id != cid and not h.settled]
        if cid == lineage.current() and not waiting:
            return checkpoint_config(thread_id, ns, cid)  # it continues already, and no fork is open
        head = saver.get_tuple(checkpoint_config(thread_id, ns, cid))
        if head is None:
            raise NotFoundError(f"checkpoint {cid!r} of {where_of(thread_id, ns)} was removed meanwhile")
        step = head.metadata.get("step")
        # the choice continues whatever the clocks say: it passes over every other head
        new_id = str(uuid6(clock_seq=step if isinstance(step, int) else None))
        checkpoint: Any = {**head.checkpoint, "id": new_id, "ts": datetime.now(timezone.utc).isoformat()}
        metadata: Any = {**head.metadata, "source": "fork", CHOICE_KEY: {"chose": cid, "over": over}}
        new_config = saver.put(head.config, checkpoint, metadata, {})
        renamed = _task_ids(head, new_id)
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in head.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        with writes_alone():  # this caller's next put comes only after these return
            for task_id, writes in by_task.items():
                new_task, path = renamed.get(task_id, (task_id, ""))
                saver.put_writes(new_config, writes, new_task, path)
        return new_config


def edit_state(
    saver: ForkSaver, config: RunnableConfig, values: Mapping[str, Any], *, force: bool = False
) -> RunnableConfig:
    """A supported edit (``langgraph-repo edit``): a new checkpoint whose parent is the one
    ``config`` names, holding ``values`` (channel -> new value, whole) and every other
    channel as it was, each changed channel at a new version, metadata ``source: "update"``
    and the next step, as LangGraph's ``update_state`` writes one (InMemorySaver's result
    is the reference: tests/test_edit_waiting.py):

    - ``updated_channels`` unset, as ``update_state`` leaves it: LangGraph then looks at
      every node for the next step, so what the parent scheduled stays scheduled (naming
      only the edited channels made the loop skip the parent's pull tasks: the thread
      stopped without running them);
    - the ``Send`` packets run the tool calls as the edited messages make them (edits.py);
    - the parent's pending writes are not carried (they are the parent's tasks'): an
      interrupt waiting there is dropped, its task runs again from its first line and asks
      again (a ``Command(resume=...)`` answers that new question); a finished task's writes
      are dropped, it runs again.

    So the edit of a head with pending writes or scheduled tool calls is refused
    (``ThreadWaitsError``, naming them) unless ``force``. Nothing is changed in place: the
    fix is a checkpoint a reviewer sees, and history keeps the state before it."""
    return write_update(saver, config, Update(values), force=force)


@dataclass(frozen=True)
class Update:
    """What ``write_update`` writes: ``values`` (channel -> new value, whole); ``dropped``,
    channels the new checkpoint no longer holds (a renamed one's old name); ``new_channels``,
    whether ``values`` may name channels the parent lacks (a state migration's new schema:
    an edit may not); ``metadata``, keys besides ``source``, ``step`` and ``parents``."""

    values: Mapping[str, Any]
    dropped: frozenset[str] = frozenset()
    new_channels: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


def write_update(
    saver: ForkSaver, config: RunnableConfig, update: Update, *, force: bool = False
) -> RunnableConfig:
    """``edit_state``'s write, shared with a state migration (statemigration.py): under the
    thread's lock, the checkpoint ``config`` names continued by ``update``, as
    ``update_state`` writes it (``edit_state``'s docstring)."""
    thread_id, ns = thread_ns(config)
    with saver.store.thread_lock(thread_id):
        parent = saver.get_tuple(config)
        if parent is None:
            missing = get_checkpoint_id(config)
            raise NotFoundError(f"no checkpoint {missing!r} in {where_of(thread_id, ns)}")
        known = set(parent.checkpoint["channel_versions"])
        unknown = sorted((set(update.values) - known) if not update.new_channels else set())
        if unknown:
            raise BadInputError(f"{where_of(thread_id, ns)} has no channel {unknown[0]!r} to edit")
        sends = parent.checkpoint["channel_values"].get(TASKS)
        head = saver.store.current(thread_id, ns) == parent.checkpoint["id"]
        if head and not force:
            _refuse_waiting(thread_id, ns, parent, scheduled_calls(sends))
        values = dict(update.values)
        if isinstance(sends, list) and sends and TASKS not in values:
            followed = sends_after_edit(sends, parent.checkpoint["channel_values"], values)
            if followed is not None:
                values[TASKS] = followed
        versions = {k: v for k, v in parent.checkpoint["channel_versions"].items() if k not in update.dropped}
        new_versions = _next_versions(saver, versions, values)
        step = parent.metadata.get("step")
        new_step = step + 1 if isinstance(step, int) else None
        kept: Checkpoint = {
            **parent.checkpoint,
            "channel_values": {
                k: v for k, v in parent.checkpoint["channel_values"].items() if k not in update.dropped
            },
        }
        checkpoint = _continued(kept, new_step, versions, values)
        parents = dict(parent.metadata.get("parents") or {})
        metadata: Any = {**update.metadata, "source": "update", "step": new_step, "parents": parents}
        return saver.put(parent.config, checkpoint, metadata, new_versions)


def _next_versions(saver: ForkSaver, versions: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Each channel of ``values`` at its next version (``versions`` updated in place, as the
    new checkpoint holds them): the versions the put stores."""
    new_versions: dict[str, Any] = {}
    for channel in values:
        current = versions.get(channel)
        versions[channel] = new_versions[channel] = saver.get_next_version(
            None if current is None else str(current), None
        )
    return new_versions


def _continued(
    parent: Checkpoint, step: int | None, versions: dict[str, Any], values: Mapping[str, Any]
) -> Checkpoint:
    """A checkpoint continuing ``parent`` with ``values`` changed (an edit, a merge): a new
    id and time, every other field kept; it names no updated channels, so what the parent
    scheduled stays scheduled."""
    changed = Checkpoint(
        v=parent["v"],
        id=str(uuid6(clock_seq=step)),
        ts=datetime.now(timezone.utc).isoformat(),
        channel_values={**parent["channel_values"], **values},
        channel_versions=versions,
        versions_seen=parent["versions_seen"],
        updated_channels=None,
    )
    return {**parent, **changed}


def merge_heads(saver: ForkSaver, config: RunnableConfig, other: str) -> RunnableConfig:
    """Keep both branches' turns (``langgraph-repo heads --merge``): a new checkpoint
    continuing the head ``config`` names, its ``messages`` that head's followed by the
    messages ``other`` added since the two branches parted, in order, and every other
    channel as the kept head has it; recorded as a choice over ``other`` (docs/forks.md).
    Refused, naming why, where a merge cannot be right: a head with pending writes (in the
    middle of a step, or waiting on an interrupt), or other channels that differ."""
    thread_id, ns = thread_ns(config)
    keep = str((config.get("configurable") or {}).get("checkpoint_id") or "")
    where = where_of(thread_id, ns)
    with saver.store.thread_lock(thread_id):
        lineage = saver.store.lineage(thread_id, ns)
        heads = {h.checkpoint_id for h in lineage.heads()}
        for cid in (keep, other):
            if cid not in heads:
                listed = ", ".join(sorted(heads))
                raise BadInputError(f"checkpoint {cid!r} of {where} is not a head; the heads: {listed}")
        if keep == other:
            raise BadInputError("--merge takes two different heads")
        fork = _fork_point(lineage.links, keep, other)
        kept = saver.get_tuple(checkpoint_config(thread_id, ns, keep))
        merged = saver.get_tuple(checkpoint_config(thread_id, ns, other))
        start = saver.get_tuple(checkpoint_config(thread_id, ns, fork)) if fork else None
        if kept is None or merged is None:
            raise NotFoundError(f"a head of {where} was removed meanwhile")
        for head in (kept, merged):
            if head.pending_writes:
                raise RepoCheckpointError(
                    f"cannot merge in {where}: head {head.checkpoint['id']} has pending writes (it is "
                    "in the middle of a step or waits on an interrupt); choose one with --choose instead"
                )
        differ = _other_channels_differ(kept, merged)
        if differ:
            raise RepoCheckpointError(
                f"cannot merge in {where}: the heads differ in {', '.join(differ)}, not only in "
                "messages; choose one with --choose instead"
            )
        own = list(kept.checkpoint["channel_values"].get(MERGED_CHANNEL) or [])
        added = _added_since(merged, start, own, where)
        versions = dict(kept.checkpoint["channel_versions"])
        current = versions.get(MERGED_CHANNEL)
        version = saver.get_next_version(None if current is None else str(current), None)
        versions[MERGED_CHANNEL] = version
        step = kept.metadata.get("step")
        step = step if isinstance(step, int) else None
        checkpoint = _continued(kept.checkpoint, step, versions, {MERGED_CHANNEL: own + added})
        over = sorted(heads - {keep})
        choice = {"chose": keep, "over": over, "merged": [other]}
        metadata: Any = {**kept.metadata, "source": "fork", CHOICE_KEY: choice}
        return saver.put(kept.config, checkpoint, metadata, {MERGED_CHANNEL: version})


def _task_ids(head: CheckpointTuple, new_id: str) -> dict[str, tuple[str, str]]:
    """Old task id -> (new task id, task path): LangGraph derives a task's id from its
    checkpoint's id, so the same task of the copy has another id; its writes must move with it.
    Tasks that cannot be derived from the checkpoint alone keep their id (docs/forks.md)."""
    cp: Any = head.checkpoint
    values = cp["channel_values"]
    sends = [
        {"$type": ["langgraph.types", "Send"], "$args": [p.node]} if isinstance(p, Send) else p
        for p in values.get(TASKS) or []
    ]
    ns = str(head.config["configurable"].get("checkpoint_ns") or "")

    def tasks(cid: str) -> list[Any]:
        record = CheckpointRecord(
            thread_id="",
            checkpoint_ns=ns,
            checkpoint_id=cid,
            parent_id=None,
            metadata=dict(head.metadata),
            checkpoint=cp,
            extra={},
            values={},
        )
        return derive_tasks(record, set(values), sends)

    out: dict[str, tuple[str, str]] = {}
    for old, new in zip(tasks(str(cp["id"])), tasks(new_id), strict=True):
        if old.id is None or new.id is None:
            continue
        kind, _, idx = old.kind.partition(" ")
        path = f"~{PULL}, {old.name}" if kind == "pull" else f"~{PUSH}, {int(idx):010d}"
        out[old.id] = (new.id, path)
    return out


def _fork_point(links: Mapping[str, Any], a: str, b: str) -> str | None:
    """The nearest checkpoint both ``a`` and ``b`` descend from (None: they share none)."""
    seen: set[str] = set()
    walk: str | None = a
    while walk is not None and walk not in seen:
        seen.add(walk)
        walk = links[walk].parent if walk in links else None
    walk, visited = b, set()
    while walk is not None and walk not in visited:
        if walk in seen:
            return walk
        visited.add(walk)
        walk = links[walk].parent if walk in links else None
    return None


def _refuse_waiting(
    thread_id: str, ns: str, parent: CheckpointTuple, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    """``edit_state`` without ``force``: refused, naming them, when the head waits (``waits``)."""
    parts = waits(parent, calls)
    if parts:
        raise ThreadWaitsError(
            f"{where_of(thread_id, ns)} checkpoint {parent.checkpoint['id']} waits: {'; '.join(parts)}. "
            "An edit writes a checkpoint without them, as update_state does: resume the thread "
            'first, or pass force=True (docs/cli.md, "edit")'
        )


def waits(parent: CheckpointTuple, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """What a checkpoint waits on, in words, and what a checkpoint written after it (an edit,
    a state migration) does to each: an interrupt waiting for an answer, a finished task's
    writes (pending writes), scheduled tool calls (``calls``); empty when nothing waits."""
    writes = parent.pending_writes or []
    asked = sum(1 for _, channel, _ in writes if channel == INTERRUPT)
    tasks = {t for t, channel, _ in writes if channel not in CONTROL_WRITES}  # a failed one runs again anyway
    parts = [f"{asked} interrupt{'s' if asked > 1 else ''} waiting for an answer (dropped: asked again)"]
    parts = parts if asked else []
    if tasks:
        parts.append(f"saved writes of {len(tasks)} task{'s' if len(tasks) > 1 else ''} (dropped: run again)")
    if calls:
        said = ", ".join(f"{c.get('name')} (id {c.get('id')})" for _, c in calls)
        parts.append(f"scheduled tool calls {said} (they run as the edit leaves them)")
    return parts


def _message_key(message: Any) -> Any:
    """A message's identity across branches: its id, else its content."""
    got = getattr(message, "id", None)
    return got if got else repr(message)


def _other_channels_differ(kept: CheckpointTuple, merged: CheckpointTuple) -> list[str]:
    """The channels besides ``messages`` (and LangGraph's own) the two heads hold differently:
    a merge of those would have to pick one, so it is refused."""
    a, b = kept.checkpoint["channel_values"], merged.checkpoint["channel_values"]
    return sorted(
        c
        for c in set(a) | set(b)
        if c != MERGED_CHANNEL and not c.startswith(("__", "branch:to:", "join:")) and a.get(c) != b.get(c)
    )


def _added_since(
    merged: CheckpointTuple, start: CheckpointTuple | None, own: list[Any], where: str
) -> list[Any]:
    """The messages ``merged`` added since the branches parted at ``start``, in order, less
    those the kept head has already; one id holding two messages is refused (add_messages
    would keep only one)."""
    parted = start.checkpoint["channel_values"].get(MERGED_CHANNEL) or [] if start else []
    before = {_message_key(m) for m in parted}
    have = {_message_key(m): m for m in own}
    added = []
    for m in merged.checkpoint["channel_values"].get(MERGED_CHANNEL) or []:
        key = _message_key(m)
        if key in before:
            continue
        if key in have:
            if have[key] != m:  # one id, two messages: add_messages would keep only one
                raise RepoCheckpointError(
                    f"cannot merge in {where}: both heads hold a different message with id {key!r}; "
                    "choose one with --choose instead"
                )
            continue
        added.append(m)
    return added
