"""Records to documents: how a checkpoint and a task's writes are laid out as files.

The saver builds records (records.py) from what LangGraph hands it; this module alone knows
the keys of the documents it makes. ``bookkeeping.compact`` then writes a checkpoint as a
delta on its parent where that is shorter, and ``writing.prepare`` validates the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .records import CheckpointRecord, TaskWrites
from .validation import SCHEMA_VERSION

# LangGraph's Checkpoint keys kept under "checkpoint"; its "id" is the file's checkpoint_id
# (format 2), its "channel_values" are the file's values; every other key is ``extra``
_STORED_KEYS = ("v", "ts", "channel_versions", "versions_seen", "updated_channels")
_NOT_EXTRA = frozenset({*_STORED_KEYS, "id", "channel_values"})


def stored_fields(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of LangGraph's checkpoint a file keeps as they are (versions already short)."""
    return {k: checkpoint[k] for k in _STORED_KEYS if k in checkpoint}


def extra_fields(checkpoint: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The other keys of LangGraph's checkpoint (a newer LangGraph's, a test's): stored as
    trees under ``extra`` so nothing given is lost."""
    return ((k, v) for k, v in checkpoint.items() if k not in _NOT_EXTRA)


def checkpoint_document(record: CheckpointRecord) -> dict[str, Any]:
    """The whole document of a checkpoint (before ``compact``): empty parts left out."""
    kept = dict(record.checkpoint)
    if record.extra:
        kept["extra"] = dict(record.extra)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "checkpoint",
        "thread_id": record.thread_id,
        "checkpoint_ns": record.checkpoint_ns,
        "checkpoint_id": record.checkpoint_id,
        "parent_checkpoint_id": record.parent_id,
        "metadata": record.metadata,
        "checkpoint": kept,
        "values": dict(record.values),
    }
    if record.new_values:
        doc["new_values"] = dict(record.new_values)
    if record.parent_writes:
        doc["parent_writes"] = dict(record.parent_writes)
    if record.objects:
        doc["objects"] = dict(record.objects)
    return doc


def writes_document(record: TaskWrites) -> dict[str, Any]:
    """The document of one task's pending writes."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "writes",
        "thread_id": record.thread_id,
        "checkpoint_ns": record.checkpoint_ns,
        "checkpoint_id": record.checkpoint_id,
        "task_id": record.task_id,
        "task_path": record.task_path,
        "writes": record.writes,
    }
    if record.objects:
        doc["objects"] = dict(record.objects)
    return doc
