"""Documents to what LangGraph is handed: the decoding half of ``encode``.

A checkpoint file keeps LangGraph's fields in its own layout (short versions, the id and the
values apart, other keys under ``extra``); readers ask here for LangGraph's shape, so that
layout is known in this package alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import FileFormatError
from . import fields
from .validation import RESERVED_EXTRA_KEYS, pointer_part
from .versions import for_langgraph, seen_for_langgraph


def langgraph_checkpoint(doc: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's ``Checkpoint`` of a checkpoint document, with its channel ``values``
    (revived by the caller) and without its ``extra`` keys (``extra_trees``)."""
    stored = fields.checkpoint_fields(doc)
    checkpoint: dict[str, Any] = {
        "v": stored["v"],
        "id": doc["checkpoint_id"],
        "ts": stored["ts"],
        "channel_values": values,
        # widened: another saver's next version must compare above them (versions.py)
        "channel_versions": {k: for_langgraph(v) for k, v in stored["channel_versions"].items()},
        "versions_seen": seen_for_langgraph(stored["versions_seen"]),
    }
    if "updated_channels" in stored:
        checkpoint["updated_channels"] = fields.updated_channels(doc)
    return checkpoint


def extra_trees(doc: dict[str, Any], path: str) -> Iterator[tuple[str, str, Any]]:
    """(key, pointer, stored tree) of each other key of LangGraph's checkpoint; a key that
    would replace one of the checkpoint's own is refused, naming the file (``path``)."""
    stored = fields.checkpoint_fields(doc)
    for key, tree in stored.get("extra", {}).items():
        if key in RESERVED_EXTRA_KEYS:  # every key of LangGraph's checkpoint the file keeps
            raise FileFormatError(
                path,
                f"/checkpoint/extra/{pointer_part(key)}",
                f"{key!r} is a key of the checkpoint itself and cannot come from extra",
            )
        yield key, f"/checkpoint/extra/{key}", tree
