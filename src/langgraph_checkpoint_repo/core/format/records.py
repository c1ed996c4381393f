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
