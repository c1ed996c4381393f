"""What a checkpoint document holds, read by name.

The one place that knows where each of LangGraph's fields sits in a checkpoint file (the
``checkpoint`` object, the ``metadata``, the value references): readers ask here instead of
indexing the document, so a format that moves a field (format 4) changes this module and its
migration, not every reader. Documents are validated before they get here (validation.py),
so the fields are there with the types the schema gives them.
"""

from __future__ import annotations

from .validation import pointer_part

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from typing import Any

    Doc = dict[str, Any]


#: the metadata key of a checkpoint ``migrate-state`` wrote: ``{"migration": NAME}``
#: (statemigration.py); the review and ``history`` name the migration there, not a hand edit
MIGRATION_KEY = "migration"


def migration_name(metadata: object) -> str | None:
    """The migration an ``update`` checkpoint's metadata says wrote it, else None."""
    name = metadata.get(MIGRATION_KEY) if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else None


def channel_versions(doc: Doc) -> dict[str, Any]:
    """The version of every channel at this checkpoint."""
    return doc["checkpoint"]["channel_versions"]  # type: ignore[no-any-return]


def versions_seen(doc: Doc) -> dict[str, dict[str, Any]]:
    """Per node, the channel versions it had seen when this checkpoint was taken."""
    return doc["checkpoint"]["versions_seen"]  # type: ignore[no-any-return]


def checkpoint_fields(doc: Doc) -> dict[str, Any]:
    """LangGraph's ``Checkpoint`` as stored (without its values and its id)."""
    return doc["checkpoint"]  # type: ignore[no-any-return]


def ts(doc: Doc) -> str:
    """When the checkpoint was taken (ISO 8601, as LangGraph wrote it)."""
    return str(doc["checkpoint"]["ts"])


def step(doc: Doc) -> int | None:
    """The metadata's step, when it is an integer."""
    value = doc["metadata"].get("step")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def source(doc: Doc) -> str | None:
    """The metadata's source (input, loop, update, fork), when it is a string."""
    value = doc["metadata"].get("source")
    return value if isinstance(value, str) else None


def parent_id(doc: Doc) -> str | None:
    return doc["parent_checkpoint_id"]  # type: ignore[no-any-return]


def value_refs(doc: Doc) -> dict[str, str]:
    """Where each channel's value lives (every channel: documents.py fills in its own)."""
    return doc["values"]  # type: ignore[no-any-return]


def new_values(doc: Doc) -> dict[str, Any]:
    """The bodies of the channels this checkpoint changed."""
    return doc.get("new_values") or {}


def new_value_pointer(channel: str) -> str:
    """Where a checkpoint file keeps the body of ``channel`` it changed (for errors)."""
    return "/new_values/" + pointer_part(channel)


def parent_write_pointer(key: str) -> str:
    """Where a checkpoint file keeps the parent's pending write ``key`` it took in."""
    return "/parent_writes/" + pointer_part(key)


def parent_writes(doc: Doc) -> dict[str, Any]:
    """The parent's pending writes this checkpoint took in (format 4), by write key."""
    return doc.get("parent_writes") or {}


def updated_channels(doc: Doc) -> list[str] | None:
    """The channels the step that made this checkpoint updated, as LangGraph recorded them."""
    value = doc["checkpoint"].get("updated_channels")
    return list(value) if value is not None else None


def held_objects(doc: Doc) -> dict[str, Any]:
    """The objects a checkpoint or writes file holds (format 4), by name: each stored once,
    in the first file that needed it, and named by ``$ref`` (with ``$in`` from elsewhere)."""
    return doc.get("objects") or {}
