"""What changed in a channel between two checkpoints, on the stored trees.

Lists are compared item by item, objects (plain, or one stored type's fields) key by key;
everything else as a whole value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import orjson

from .tasks import is_internal


@dataclass
class ChannelChange:
    """What happened to one channel between two checkpoints."""

    channel: str
    kind: str  # added | removed | changed | list | keys
    old: Any = None  # trees
    new: Any = None
    added: list[tuple[int, Any]] = field(default_factory=list)  # list items: (index in new, tree)
    removed: list[tuple[int, Any]] = field(default_factory=list)  # (index in old, tree)
    keys_added: dict[str, Any] = field(default_factory=dict)
    keys_changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    keys_removed: dict[str, Any] = field(default_factory=dict)



def _key(tree: Any) -> bytes:
    return orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)


def _plain_object(tree: Any) -> bool:
    return isinstance(tree, dict) and not any(k.startswith("$") for k in tree)


def _fields(tree: dict[str, Any]) -> dict[str, Any]:
    fields = tree.get("$fields", tree.get("$kwargs"))
    return fields if isinstance(fields, dict) else {}


def _same_type(a: Any, b: Any) -> bool:
    """Two stored objects of one type whose fields are named (pydantic models, dataclasses)."""
    return (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "$type" in a
        and a.get("$type") == b.get("$type")
        and bool(_fields(a) or _fields(b))
        and isinstance(a.get("$fields", a.get("$kwargs")), dict)
        and isinstance(b.get("$fields", b.get("$kwargs")), dict)
    )


def diff_trees(old: dict[str, Any], new: dict[str, Any], *, internal: bool = False) -> list[ChannelChange]:
    """Per channel: list items added or removed, object keys added, changed or removed,
    values set, replaced or removed. Equal channels are left out."""
    changes: list[ChannelChange] = []
    for channel in sorted(set(old) | set(new)):
        if is_internal(channel) and not internal:
            continue
        if channel not in old:
            changes.append(ChannelChange(channel, "added", new=new[channel]))
            continue
        if channel not in new:
            changes.append(ChannelChange(channel, "removed", old=old[channel]))
            continue
        a: Any = old[channel]
        b: Any = new[channel]
        if _key(a) == _key(b):
            continue
        elif isinstance(a, list) and isinstance(b, list):
            change = ChannelChange(channel, "list", old=a, new=b)
            matcher = SequenceMatcher(None, [_key(x) for x in a], [_key(x) for x in b], autojunk=False)
            for op, i1, i2, j1, j2 in matcher.get_opcodes():
                if op in ("delete", "replace"):
                    change.removed.extend((i, a[i]) for i in range(i1, i2))
                if op in ("insert", "replace"):
                    change.added.extend((j, b[j]) for j in range(j1, j2))
            changes.append(change)
        elif (_plain_object(a) and _plain_object(b)) or _same_type(a, b):
            change = ChannelChange(channel, "keys", old=a, new=b)
            if not _plain_object(a):  # one type on both sides: compare its fields
                a, b = _fields(a), _fields(b)
            for k in sorted(set(a) | set(b)):
                if k not in a:
                    change.keys_added[k] = b[k]
                elif k not in b:
                    change.keys_removed[k] = a[k]
                elif _key(a[k]) != _key(b[k]):
                    change.keys_changed[k] = (a[k], b[k])
            changes.append(change)
        else:
            changes.append(ChannelChange(channel, "changed", old=a, new=b))
    return changes


