"""Documents to what LangGraph is handed: the decoding half of ``encode``.

A checkpoint file keeps LangGraph's fields in its own layout (short versions, the id and the
values apart, other keys under ``extra``); readers ask here for LangGraph's shape, so that
layout is known in this package alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import FileFormatError
from .records import CheckpointRecord, TaskWrites
from .validation import RESERVED_EXTRA_KEYS, pointer_part
from .versions import for_langgraph, seen_for_langgraph


def langgraph_checkpoint(record: CheckpointRecord, values: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's ``Checkpoint`` of a checkpoint, with its channel ``values`` (revived by the
    caller) and without its ``extra`` keys (``extra_trees``)."""
    stored = record.checkpoint
    checkpoint: dict[str, Any] = {
        "v": stored["v"],
        "id": record.checkpoint_id,
        "ts": stored["ts"],
        "channel_values": values,
        # widened: another saver's next version must compare above them (versions.py)
        "channel_versions": {k: for_langgraph(v) for k, v in stored["channel_versions"].items()},
        "versions_seen": seen_for_langgraph(stored["versions_seen"]),
    }
    if "updated_channels" in stored:
        checkpoint["updated_channels"] = record.updated_channels
    return checkpoint


def extra_trees(record: CheckpointRecord, path: str) -> Iterator[tuple[str, str, Any]]:
    """(key, pointer, stored tree) of each other key of LangGraph's checkpoint; a key that
    would replace one of the checkpoint's own is refused, naming the file (``path``)."""
    for key, tree in record.extra.items():
        if key in RESERVED_EXTRA_KEYS:  # every key of LangGraph's checkpoint the file keeps
            raise FileFormatError(
                path,
                f"/checkpoint/extra/{pointer_part(key)}",
                f"{key!r} is a key of the checkpoint itself and cannot come from extra",
            )
        yield key, f"/checkpoint/extra/{key}", tree


def checkpoint_record(doc: dict[str, Any]) -> CheckpointRecord:
    """The record of a whole checkpoint document (``values`` names every channel's file)."""
    cp = doc["checkpoint"]
    return CheckpointRecord(
        thread_id=doc["thread_id"],
        checkpoint_ns=doc["checkpoint_ns"],
        checkpoint_id=doc["checkpoint_id"],
        parent_id=doc["parent_checkpoint_id"],
        metadata=doc["metadata"],
        checkpoint={k: v for k, v in cp.items() if k != "extra"},
        extra=cp.get("extra") or {},
        values=doc["values"],
        new_values=doc.get("new_values") or {},
        parent_writes=doc.get("parent_writes") or {},
        objects=doc.get("objects") or {},
    )


def taken_writes(entry: dict[str, Any], thread_id: str, ns: str, cid: str) -> TaskWrites:
    """The record of a parent's writes a child checkpoint took in (one entry of its
    ``parent_writes``), for the parent ``cid``."""
    return TaskWrites(
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=cid,
        task_id=entry["task_id"],
        task_path=entry["task_path"],
        writes=entry["writes"],
    )


def writes_record(doc: dict[str, Any]) -> TaskWrites:
    """The record of a writes file's document."""
    return TaskWrites(
        thread_id=doc["thread_id"],
        checkpoint_ns=doc["checkpoint_ns"],
        checkpoint_id=doc["checkpoint_id"],
        task_id=doc["task_id"],
        task_path=doc["task_path"],
        writes=doc["writes"],
        objects=doc.get("objects") or {},
    )
