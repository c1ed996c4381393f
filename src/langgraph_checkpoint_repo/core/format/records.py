"""The format's records: what a file holds, named and typed, before it is laid out as JSON.

A writer builds a record and ``encode`` lays it out; a reader asks ``decode`` for the fields it
needs. Only the format package knows the document keys behind them, so a change of layout is a
change here, in one schema and in one migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def _empty() -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One checkpoint as stored: LangGraph's fields as stored trees, and where its values are."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    metadata: Any  # the metadata's stored tree
    # LangGraph's Checkpoint fields the file keeps (``encode.stored_fields``), versions short
    checkpoint: Mapping[str, Any]
    extra: Mapping[str, Any]  # the other keys of LangGraph's checkpoint, as stored trees
    values: Mapping[str, str]  # the file that holds each channel it does not change itself
    new_values: Mapping[str, Any] = field(default_factory=_empty)  # the bodies of the channels it changed
    parent_writes: Mapping[str, Any] = field(default_factory=_empty)  # the parent's writes it took in
    objects: Mapping[str, Any] = field(default_factory=_empty)  # the shared subtrees it holds

    @property
    def ts(self) -> str:
        """When the checkpoint was taken (ISO 8601, as LangGraph wrote it)."""
        return str(self.checkpoint["ts"])

    @property
    def channel_versions(self) -> Mapping[str, Any]:
        """The version of every channel at this checkpoint (short, as stored: versions.py)."""
        return self.checkpoint["channel_versions"]  # type: ignore[no-any-return]

    @property
    def versions_seen(self) -> Mapping[str, Mapping[str, Any]]:
        """Per node, the channel versions it had seen when this checkpoint was taken."""
        return self.checkpoint["versions_seen"]  # type: ignore[no-any-return]

    @property
    def updated_channels(self) -> list[str] | None:
        """The channels the step that made it updated, as LangGraph recorded them (None: unsaid)."""
        value = self.checkpoint.get("updated_channels")
        return list(value) if value is not None else None

    @property
    def scheduling(self) -> dict[str, Any]:
        """The fields that decide what runs next (channel versions, what each node had seen,
        the channels the step updated), as stored, absent ones as None: a digest of them
        tells whether two steps scheduled alike."""
        return {k: self.checkpoint.get(k) for k in ("channel_versions", "versions_seen", "updated_channels")}

    @property
    def step(self) -> int | None:
        """The metadata's step, when it is an integer."""
        value = self.metadata.get("step") if isinstance(self.metadata, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def source(self) -> str | None:
        """The metadata's source (input, loop, update, fork), when it is a string."""
        value = self.metadata.get("source") if isinstance(self.metadata, dict) else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class TaskWrites:
    """One task's pending writes of one checkpoint, as a writes file holds them."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    writes: list[dict[str, Any]]  # {"idx", "channel", "value": stored node}, in order
    objects: Mapping[str, Any] = field(default_factory=_empty)
