"""A written document as the schema check needs to see it: its long lists of scalars emptied.

Why this checks every byte the schema would: in every schema a value's tree is
``defs.schema.json#/$defs/tree``: an object is a ``$defs/object``, an array has each item a
tree, and anything else (a string, a number, true, false, null) is not constrained at all. So
an array at a tree's place whose items are all scalars is valid whatever they are, and the
document is valid exactly when it is valid with that array empty. What the validator would
still do with those items is convert them, and refuse what JSON cannot hold: among scalars
only a string with a lone surrogate (jsonschema-rs takes any int, nan and inf as numbers).
Both are checked here, in C: the strings joined and encoded as UTF-8 (which refuses anything
that is not a string), else every item's type (``set(map(type, ...))``). A document refused
so is checked again whole (``validation._written_error``): the error is the validator's own.
A 50,000-item list of strings was 3 ms of the schema check of its ``large/`` file on each
first put; its emptied copy is checked in microseconds, the strings in 0.5 ms.

Only where the schema puts a tree: ``/value/json`` of a ``large_value``, ``/tree`` of an
``object``, and inside a tree the members of an array, the members of an object not named
``$...``, and ``$arg``, ``$kwargs``, ``$fields``, ``$delta_snapshot`` and each of ``$args``
(``$map``, ``$chunks``, ``$type`` and ``$numpy`` hold arrays the schema constrains: never
emptied). Short lists are left (their check costs nothing), and the walk looks at a few
containers only: it looks for a big list near the top, it does not walk a big tree of objects.
"""

from __future__ import annotations

from .vouched import vouched

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (as validation.py)
if TYPE_CHECKING:
    from typing import Any

#: where each kind of file holds a tree (the kinds that may be big: a ``large/`` value, an object)
TREE_AT: dict[str, tuple[str, ...]] = {"large_value": ("value", "json"), "object": ("tree",)}
#: a list with fewer items is checked by the validator as it is
MIN_ITEMS = 256
#: containers looked at in one tree, at most
MAX_LOOKS = 64
#: the members of a tag object that are trees themselves (``$args``: an array of trees)
_TREE_TAGS = frozenset({"$arg", "$kwargs", "$fields", "$delta_snapshot", "$args"})
_NUMBERS = frozenset({int, float, bool, type(None)})


def hollowed(doc: Any, kind: str) -> Any:
    """``doc`` with each long list of scalars at a tree's place emptied (a copy along the way
    to it), after checking its items are scalars JSON holds; ``doc`` itself when none is."""
    path = TREE_AT.get(kind)
    if path is None or not isinstance(doc, dict):
        return doc
    parents = [doc]
    for key in path[:-1]:
        inner = parents[-1].get(key)
        if not isinstance(inner, dict):
            return doc
        parents.append(inner)
    tree = parents[-1].get(path[-1], None)
    new = _hollow(tree, [MAX_LOOKS])
    if new is tree:
        return doc
    for parent, key in zip(reversed(parents), reversed(path), strict=True):
        new = {**parent, key: new}
    return new


def _hollow(tree: Any, looks: list[int]) -> Any:
    """The tree with its long scalar lists emptied (copies on the way), or itself."""
    if looks[0] <= 0:
        return tree
    if type(tree) is list:
        looks[0] -= 1
        if len(tree) >= MIN_ITEMS and only_scalars(tree):
            return []
        out: list[Any] | None = None
        for i, item in enumerate(tree):
            if type(item) is list or type(item) is dict:
                new = _hollow(item, looks)
                if new is not item:
                    out = list(tree) if out is None else out
                    out[i] = new
        return tree if out is None else out
    if type(tree) is dict:
        looks[0] -= 1
        changed: dict[str, Any] | None = None
        for key, value in tree.items():
            if type(value) is not list and type(value) is not dict:
                continue
            if key[:1] == "$" and key not in _TREE_TAGS:
                continue
            new = _hollow_args(value, looks) if key == "$args" else _hollow(value, looks)
            if new is not value:
                changed = dict(tree) if changed is None else changed
                changed[key] = new
        return tree if changed is None else changed
    return tree


def _hollow_args(args: Any, looks: list[int]) -> Any:
    """``$args``: an array (never emptied itself) whose items are trees."""
    if type(args) is not list:
        return args
    out = [_hollow(item, looks) for item in args]
    return args if all(a is b for a, b in zip(out, args, strict=True)) else out


def only_scalars(items: list[Any]) -> bool:
    """Whether every item is a scalar the validator takes without a word: a string that is
    valid Unicode (all of them joined and encoded: one pass in C, which stops at the first
    item that is not a string), else a number, a bool or null. A list mixing strings with
    others, or holding a lone surrogate, is left to the validator, whose error says where.
    A list the put has vouched for (``vouched``) was told so already."""
    if vouched(items):
        return True
    try:
        text = "".join(items)
    except TypeError:
        return set(map(type, items)) <= _NUMBERS
    if text.isascii():  # known from how the string is stored: no surrogate, nothing to encode
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
