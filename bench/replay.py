"""LangGraph's saver calls, recorded once and replayed into any saver.

A graph runs once on ``Recorder``: a saver that keeps each thread's latest checkpoint in memory,
as the objects LangGraph passed, and notes every call (``get_tuple``, ``put``, ``put_writes``)
with its arguments, in the order LangGraph made them. ``Replay`` then hands a saver the same
calls: each argument rebuilt as LangGraph built it (a new dict per checkpoint, the channel
values shared objects), outside any timing, so every saver is given exactly the same work and
none pays for the graph.

A list channel (``messages``) is noted as the items appended to the list the channel held at
the previous ``put`` (``Appended``), so a recording of 3,000 turns holds each message once
instead of once per checkpoint; a replay rebuilds the whole list, a new list object per
checkpoint holding the same message objects, as LangGraph's ``add_messages`` does.

Channel versions are RepoSaver's (``"00000017.9f3a61c2"``, core/format/versions.py): the
versions LangGraph gets from RepoSaver's ``get_next_version``; the SQL savers store them as
the strings they are.
"""

from __future__ import annotations

import pickle
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
)
from langgraph.checkpoint.base.id import uuid6

from langgraph_checkpoint_repo.core.format.versions import next_version
from langgraph_checkpoint_repo.ride import writes_alone

ListKey = tuple[str, str, str]
"""(thread_id, checkpoint_ns, channel)."""


@dataclass(frozen=True)
class Appended:
    """A list channel's value: the list the channel held at the previous put, plus ``tail``."""

    tail: tuple[Any, ...]


@dataclass(frozen=True)
class GetTuple:
    config: RunnableConfig
    found: str | None
    """The checkpoint id the recorder returned: a replayed saver must return the same."""


@dataclass(frozen=True)
class Put:
    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    new_versions: ChannelVersions


@dataclass(frozen=True)
class PutWrites:
    config: RunnableConfig
    writes: tuple[tuple[str, Any], ...]
    task_id: str
    task_path: str


Call = GetTuple | Put | PutWrites


@dataclass
class Recording:
    """The calls of one run, and where each turn's calls start."""

    calls: list[Call] = field(default_factory=list)
    turn_starts: list[int] = field(default_factory=list)

    def turns(self) -> int:
        return len(self.turn_starts)

    def upto(self, turns: int) -> int:
        """The number of calls of the first ``turns`` turns."""
        return len(self.calls) if turns >= len(self.turn_starts) else self.turn_starts[turns]

    def save(self, path: Path) -> None:
        with path.open("wb") as f:
            pickle.dump(self, f, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def load(path: Path) -> Recording:
        with path.open("rb") as f:
            loaded = pickle.load(f)
        assert isinstance(loaded, Recording)
        return loaded


def _key(config: RunnableConfig, channel: str) -> ListKey:
    conf = config["configurable"]
    return (conf["thread_id"], conf.get("checkpoint_ns", ""), channel)


class Recorder(BaseCheckpointSaver[str]):
    """A saver that serves each thread's latest checkpoint and notes every call (``recording``).

    Only the latest checkpoint of a thread and namespace is kept (a run reads no other); its
    pending writes are those ``put_writes`` gave it. Calls from LangGraph's background thread
    are noted in the order they reach the saver."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = Recording()
        self._latest: dict[tuple[str, str], CheckpointTuple] = {}
        self._lists: dict[ListKey, list[Any]] = {}
        self._lock = threading.Lock()

    def get_next_version(self, current: str | None, channel: None) -> str:
        return next_version(current)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        with self._lock:
            tup = self._latest.get((conf["thread_id"], conf.get("checkpoint_ns", "")))
            if conf.get("checkpoint_id") and (
                tup is None or tup.config["configurable"]["checkpoint_id"] != conf["checkpoint_id"]
            ):
                raise NotImplementedError("the recorder serves the latest checkpoint only")
            found = None if tup is None else tup.checkpoint["id"]
            self.recording.calls.append(GetTuple(_copy_config(config), found))
            if tup is None:
                return None
            return tup._replace(
                checkpoint=copy_checkpoint(tup.checkpoint), pending_writes=list(tup.pending_writes or [])
            )

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        saved = copy_checkpoint(checkpoint)
        with self._lock:
            noted = cast(
                Checkpoint, {**saved, "channel_values": self._note_lists(config, saved["channel_values"])}
            )
            meta = cast(CheckpointMetadata, dict(metadata))
            self.recording.calls.append(Put(_copy_config(config), noted, meta, dict(new_versions)))
            out: RunnableConfig = {
                "configurable": {
                    "thread_id": thread_id,
                    "checkpoint_ns": ns,
                    "checkpoint_id": checkpoint["id"],
                }
            }
            parent = conf.get("checkpoint_id")
            parent_config: RunnableConfig | None = (
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
                if parent
                else None
            )
            self._latest[(thread_id, ns)] = CheckpointTuple(out, saved, meta, parent_config, [])
        return out

    def _note_lists(self, config: RunnableConfig, values: dict[str, Any]) -> dict[str, Any]:
        """``values`` with each list that extends the channel's previous list as ``Appended``."""
        noted: dict[str, Any] = {}
        for channel, value in values.items():
            if isinstance(value, list):
                key = _key(config, channel)
                prev = self._lists.get(key)
                self._lists[key] = value
                if (
                    prev is not None
                    and len(prev) <= len(value)
                    and all(a is b for a, b in zip(prev, value, strict=False))
                ):
                    noted[channel] = Appended(tuple(value[len(prev) :]))
                    continue
            noted[channel] = value
        return noted

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        conf = config["configurable"]
        with self._lock:
            self.recording.calls.append(PutWrites(_copy_config(config), tuple(writes), task_id, task_path))
            tup = self._latest.get((conf["thread_id"], conf.get("checkpoint_ns", "")))
            if tup is not None and tup.checkpoint["id"] == conf.get("checkpoint_id"):
                assert tup.pending_writes is not None
                tup.pending_writes.extend((task_id, c, v) for c, v in writes)

    def turn(self) -> None:
        """The calls from here on are the next turn's."""
        with self._lock:
            self.recording.turn_starts.append(len(self.recording.calls))


PLAIN = (str, int, float, bool, type(None))


def _plain(values: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(values or {}).items() if isinstance(v, PLAIN)}


def _copy_config(config: RunnableConfig) -> RunnableConfig:
    """What a saver reads of a config: the plain values of ``configurable`` (the ids, and what
    savers copy into a checkpoint's metadata) and of ``metadata``. LangGraph's run objects
    (its runtime, callbacks) are left out: no saver reads them, and they do not pickle."""
    out: RunnableConfig = {"configurable": _plain(config.get("configurable"))}
    if config.get("metadata"):
        out["metadata"] = _plain(config.get("metadata"))
    return out


def record(
    build: Callable[[BaseCheckpointSaver[Any]], Any], turns: Sequence[tuple[dict[str, Any], RunnableConfig]]
) -> Recording:
    """Run ``build(recorder)`` once per (input, config) of ``turns``, with sync durability (each
    put reaches the saver before the step after it runs, so the calls come in one order)."""
    recorder = Recorder()
    graph = build(recorder)
    for graph_input, config in turns:
        recorder.turn()
        graph.invoke(graph_input, config, durability="sync")
    return recorder.recording


@dataclass
class Target:
    """Where a replay of a template thread goes: its thread id, the strings put in place of the
    template's (in configs, metadata and message text), a suffix for message ids; checkpoint
    ids are new ``uuid6`` ids (in order, so they still sort by time) and timestamps now's."""

    thread_id: str
    strings: dict[str, str]
    suffix: str
    ids: dict[str, str] = field(default_factory=dict)
    messages: dict[int, BaseMessage] = field(default_factory=dict)

    def id_of(self, cid: str | None) -> str | None:
        if cid is None:
            return None
        if cid not in self.ids:
            self.ids[cid] = str(uuid6(clock_seq=len(self.ids)))
        return self.ids[cid]

    def text(self, value: str) -> str:
        for old, new in self.strings.items():
            value = value.replace(old, new)
        return value

    def message(self, msg: BaseMessage) -> BaseMessage:
        """The template's message with this thread's text and id (one object per template message)."""
        got = self.messages.get(id(msg))
        if got is None:
            update: dict[str, Any] = {"id": None if msg.id is None else f"{msg.id}-{self.suffix}"}
            if isinstance(msg.content, str):
                update["content"] = self.text(msg.content)
            got = self.messages[id(msg)] = msg.model_copy(update=update)
        return got

    def value(self, value: Any) -> Any:
        if isinstance(value, BaseMessage):
            return self.message(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def config(self, config: RunnableConfig) -> RunnableConfig:
        conf = {k: self.text(v) if isinstance(v, str) else v for k, v in config["configurable"].items()}
        conf["thread_id"] = self.thread_id
        if "checkpoint_id" in conf:
            conf["checkpoint_id"] = self.id_of(conf["checkpoint_id"])
        return {**config, "configurable": conf}  # type: ignore[typeddict-item]

    def call(self, call: Call) -> Call:
        if isinstance(call, GetTuple):
            return GetTuple(self.config(call.config), self.id_of(call.found))
        if isinstance(call, PutWrites):
            writes = tuple((c, self.value(v)) for c, v in call.writes)
            return replace(call, config=self.config(call.config), writes=writes)
        cp = call.checkpoint
        values = {k: self.value(v) for k, v in cp["channel_values"].items()}
        checkpoint: Checkpoint = {
            **cp,
            "id": self.id_of(cp["id"]) or "",
            "ts": _now(),
            "channel_values": values,
        }
        metadata = {k: self.text(v) if isinstance(v, str) else v for k, v in call.metadata.items()}
        return Put(self.config(call.config), checkpoint, metadata, call.new_versions)  # type: ignore[arg-type]


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat()


class Rebuild:
    """A recording's calls as LangGraph made them, one at a time: each list channel's value
    rebuilt whole (a new list object per checkpoint, the item objects shared)."""

    def __init__(self, calls: Sequence[Call]) -> None:
        self._calls = calls
        self._lists: dict[ListKey, list[Any]] = {}

    def __iter__(self) -> Iterator[Call]:
        for call in self._calls:
            yield self._whole(call) if isinstance(call, Put) else call

    def _whole(self, call: Put) -> Put:
        values: dict[str, Any] = {}
        for channel, value in call.checkpoint["channel_values"].items():
            if isinstance(value, Appended):
                key = _key(call.config, channel)
                value = [*self._lists[key], *value.tail]
            if isinstance(value, list):
                self._lists[_key(call.config, channel)] = value
            values[channel] = value
        return replace(call, checkpoint={**call.checkpoint, "channel_values": values})


def for_saver(call: Call) -> Call:
    """A copy of ``call`` for one saver: its own dicts and lists (the items shared), so nothing
    one saver does to its arguments reaches another's."""
    if isinstance(call, GetTuple):
        return GetTuple(_copy_config(call.config), call.found)
    if isinstance(call, PutWrites):
        return replace(call, config=_copy_config(call.config))
    checkpoint = copy_checkpoint(call.checkpoint)
    checkpoint["channel_values"] = {
        k: list(v) if isinstance(v, list) else v for k, v in checkpoint["channel_values"].items()
    }
    return Put(_copy_config(call.config), checkpoint, dict(call.metadata), dict(call.new_versions))  # type: ignore[arg-type]


def apply(saver: BaseCheckpointSaver[Any], call: Call) -> None:
    """Make ``call`` on ``saver``; a ``get_tuple`` must find what the recorder found."""
    if isinstance(call, GetTuple):
        tup = saver.get_tuple(call.config)
        found = None if tup is None else tup.checkpoint["id"]
        if found != call.found:
            raise RuntimeError(f"{type(saver).__name__}: get_tuple found {found}, the recording {call.found}")
    elif isinstance(call, Put):
        saver.put(call.config, call.checkpoint, call.metadata, call.new_versions)
    else:
        # one call after another, as recorded: the next put comes only after this returns
        # (RepoSaver's put_writes would wait for it in vain: ride.py)
        with writes_alone():
            saver.put_writes(call.config, list(call.writes), call.task_id, call.task_path)


def new_suffix() -> str:
    return uuid.uuid4().hex[:8]
