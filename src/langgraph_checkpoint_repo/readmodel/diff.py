"""What changed in a channel between two checkpoints, on the stored trees.

Lists are compared item by item (``list_changes``, O(n log n) whatever they hold), objects
(plain, or one stored type's fields) key by key; everything else as a whole value.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..core.format.tree import object_fields
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
    return object_fields(tree) or {}


def _same_type(a: Any, b: Any) -> bool:
    """Two stored objects of one type whose fields are named (pydantic models, dataclasses)."""
    return (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "$type" in a
        and a.get("$type") == b.get("$type")
        and bool(_fields(a) or _fields(b))
        and object_fields(a) is not None
        and object_fields(b) is not None
    )


ANCHOR_LEVELS = 8  # how often list_changes looks again for anchors inside the gaps it found


def list_changes(a: Sequence[bytes], b: Sequence[bytes]) -> tuple[list[int], list[int]]:
    """The indices of ``a`` removed and of ``b`` added to turn ``a`` into ``b``.

    A patience-style diff, O(n log n) whatever the lists hold (``difflib.SequenceMatcher``
    is quadratic to cubic on lists whose items repeat, and a stored list can be anything):
    the common prefix and suffix are kept, then the items that occur exactly once on each
    side are matched in the longest run that keeps their order (anchors), and each gap
    between anchors is looked at the same way, at most ``ANCHOR_LEVELS`` deep; what is
    left in a gap is listed as removed and added."""
    removed: list[int] = []
    added: list[int] = []
    todo = [(0, len(a), 0, len(b), 0)]
    while todo:
        a0, a1, b0, b1, level = todo.pop()
        while a0 < a1 and b0 < b1 and a[a0] == b[b0]:
            a0, b0 = a0 + 1, b0 + 1
        while a0 < a1 and b0 < b1 and a[a1 - 1] == b[b1 - 1]:
            a1, b1 = a1 - 1, b1 - 1
        anchors = _anchors(a, a0, a1, b, b0, b1) if a0 < a1 and b0 < b1 and level < ANCHOR_LEVELS else []
        if not anchors:
            removed.extend(range(a0, a1))
            added.extend(range(b0, b1))
            continue
        for i, j in anchors:
            todo.append((a0, i, b0, j, level + 1))
            a0, b0 = i + 1, j + 1
        todo.append((a0, a1, b0, b1, level + 1))
    return sorted(removed), sorted(added)


def _anchors(
    a: Sequence[bytes], a0: int, a1: int, b: Sequence[bytes], b0: int, b1: int
) -> list[tuple[int, int]]:
    """Pairs (i, j), ascending in both, of items found exactly once in ``a[a0:a1]`` and once in
    ``b[b0:b1]``: the longest increasing run of such pairs (patience sorting, O(k log k))."""
    in_a = Counter(a[a0:a1])
    in_b = Counter(b[b0:b1])
    where_a = {a[i]: i for i in range(a0, a1) if in_a[a[i]] == 1}
    pairs = sorted((where_a[b[j]], j) for j in range(b0, b1) if in_b[b[j]] == 1 and b[j] in where_a)
    tops: list[int] = []  # smallest j ending an increasing run of each length
    ends: list[int] = []  # index into pairs of that run's last pair
    before: list[int] = []  # index into pairs of the pair before it in its run
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        before.append(ends[at - 1] if at else -1)
        if at == len(tops):
            tops.append(j)
            ends.append(k)
        else:
            tops[at], ends[at] = j, k
    run: list[tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        run.append(pairs[k])
        k = before[k]
    return run[::-1]


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
            removed, added = list_changes([_key(x) for x in a], [_key(x) for x in b])
            change.removed.extend((i, a[i]) for i in removed)
            change.added.extend((j, b[j]) for j in added)
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
