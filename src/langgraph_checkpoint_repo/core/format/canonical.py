"""The canonical bytes of a document: what every file of the format is, byte for byte.

Part of the format (its bytes are what git stores and reviewers diff), so it lives here: the
one-line rule knows what a reference to an object looks like.
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

import orjson

from .objects import REF
from .vouched import vouched

_INDENT_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE
_INDENTED = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
# members orjson prints as ``_emit`` does, compact and alone (exact types: a tuple or a dict
# subclass takes the member-by-member way)
_SCALARS = frozenset({str, int, float, bool, type(None)})
LINE_WIDTH = 120  # an array or object whose compact JSON fits in this (indent included) is one line
# a node over this many bytes of compact JSON may have members that are too: below it, a
# short container is first weighed from a line's worth of its parts (``_surely_longer``)
_BIG = 64 * 1024
# what json.dumps(sort_keys=True, ensure_ascii=False, separators=(", ", ": ")) builds on every
# call, built once (it keeps no state between calls)
_FLAT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
# the C encoder ``_FLAT.encode`` makes on each call of a container, made once: the same
# chunks. Without the circular check: ``_emit`` serialises a node with orjson first, which
# refuses a cycle (and a depth JSON cannot hold) before this sees it
_FLAT_CHUNKS = (
    c_make_encoder(None, _FLAT.default, encode_basestring, None, ": ", ", ", True, False, True)
    if c_make_encoder is not None
    else lambda node, _level: _FLAT.iterencode(node)
)
_CONTAINERS = (dict, list)


def dump_json(doc: Any) -> bytes:
    """The one canonical byte form: sorted keys, 2-space indent, UTF-8, final newline, and
    every array or object that fits in ``LINE_WIDTH`` columns on one line.

    The one-line rule keeps bookkeeping (versions, references, empty bodies) to a line per
    entry, so the diff of a turn is about the turn. Each decision is taken on orjson's
    compact output, so the bytes depend on the document alone.
    """
    if not isinstance(doc, dict | list) or not doc:
        return orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
    if type(doc) is dict and doc.get("kind") in _ONE_TREE and _no_line_fits(doc, 0, 0):
        return orjson.dumps(doc, option=_INDENT_OPTIONS)
    out: list[bytes] = []
    _emit(doc, 0, out)
    out.append(b"\n")
    return b"".join(out)


def _emit(node: Any, indent: int, out: list[bytes], lead: int = 0, big: bool = False) -> None:
    """One value at ``indent`` after ``lead`` columns of key: an array or object on one line
    (``", "`` and ``": "`` between members, as a person writes it) when it fits, and a
    reference to an object (``{"$ref": ...}``, all its members strings) always: one line
    names one thing. ``big``: the node may be over ``_BIG`` bytes (its parent was)."""
    if isinstance(node, _CONTAINERS) and node:
        inner = False  # whether its members may be big: only below a short container
        is_dict = isinstance(node, dict)
        ref = isinstance(node, dict) and _is_reference(node)
        if len(node) * 4 <= LINE_WIDTH or ref:
            room = 1 << 30 if ref else LINE_WIDTH - indent - lead
            inner = big
            # compact is never longer: a cheap test first, and for a big node a bounded one
            # before it (a member of 5 MB was serialised whole at each level above it)
            if not (big and _surely_longer(node, room)):
                size = len(orjson.dumps(node))
                if size <= room:
                    data = "".join(_FLAT_CHUNKS(node, 0)).encode("utf-8")
                    if len(data) <= room:
                        out.append(data)
                        return
                inner = size > _BIG
        elif _only_scalars(node.values() if isinstance(node, dict) else node):
            out.append(_indented(node, indent))
            return
        pad = b"\n" + b" " * (indent + 2)
        sep = b"," + pad
        if not is_dict:
            out.append(b"[")
            for i, item in enumerate(node):
                out.append(sep if i else pad)
                if type(item) in _SCALARS:  # written as below, without a call a member
                    out.append(orjson.dumps(item))
                else:
                    _emit(item, indent + 2, out, 0, inner)
            out.append(b"\n" + b" " * indent + b"]")
            return
        out.append(b"{")
        for i, key in enumerate(sorted(node)):
            name = orjson.dumps(key) + b": "
            out.append((sep if i else pad) + name)
            value = node[key]
            if type(value) in _SCALARS:
                out.append(orjson.dumps(value))
            else:
                _emit(value, indent + 2, out, len(name), inner)
        out.append(b"\n" + b" " * indent + b"}")
        return
    out.append(orjson.dumps(node))


#: the kinds of file that hold one tree, which may be big: tried in one call (``_no_line_fits``)
_ONE_TREE = frozenset({"large_value", "object"})
_DEEPEST = 2 * 128  # the indent (two columns a level) past which ``_no_line_fits`` says False


def _no_line_fits(node: Any, indent: int, lead: int) -> bool:
    """Whether ``_emit`` would write ``node`` and every array and object in it one member a
    line, so its bytes are orjson's indented form, made in one call (a 50,000-item ``large/``
    value was written in pieces, joined, then copied). True only when sure: a container that
    may fit on its line, a reference (always one line), a key that is not a string or a type
    ``_emit`` writes another way (a tuple, a subclass) says False, and ``_emit`` decides."""
    t = type(node)
    if t is not dict and t is not list:
        return t in _SCALARS
    if not node:
        return True
    if indent > _DEEPEST:  # deep nesting is _emit's to refuse (orjson's limit), not this walk's
        return False
    if t is dict and (_is_reference(node) or not all(type(k) is str for k in node)):
        return False
    if len(node) * 4 <= LINE_WIDTH:
        if not _surely_longer(node, LINE_WIDTH - indent - lead):
            return False
    elif _only_scalars(node.values() if t is dict else node):
        return True  # ``_indented``: orjson's form
    if t is list:
        return all(_no_line_fits(item, indent + 2, 0) for item in node)
    return all(_no_line_fits(v, indent + 2, len(orjson.dumps(k)) + 2) for k, v in node.items())


def _only_scalars(members: Any) -> bool:
    """Whether every member is one orjson prints as ``_emit`` does, alone: strings joined in
    one pass in C (a ``str`` subclass prints as a string either way), else by exact type;
    a list the put has vouched for (``vouched``) without a pass."""
    if vouched(members):
        return True
    try:
        "".join(members)
    except TypeError:
        return _SCALARS.issuperset(map(type, members))
    return True


def _surely_longer(node: dict[str, Any] | list[Any], room: int) -> bool:
    """Whether ``node``'s compact JSON is longer than ``room`` bytes for sure, from at most
    ``room`` of its parts: a string is its characters and quotes, anything else at least one
    byte, a container its brackets, separators and keys. Without it, a member holding 5 MB
    was serialised whole at each level above it, to learn that the level does not fit."""
    left = room
    stack: list[Any] = [node]
    while stack:
        part = stack.pop()
        if type(part) is str:
            left -= len(part) + 2
        elif isinstance(part, dict):
            left -= 1 + len(part)
            if left < 0:
                return True
            left -= sum(len(k) + 3 for k in part)
            stack.extend(part.values())
        elif isinstance(part, list):
            left -= 1 + len(part)
            if left < 0:
                return True
            stack.extend(part)
        else:
            left -= 1
        if left < 0:
            return True
    return False


def _indented(node: dict[str, Any] | list[Any], indent: int) -> bytes:
    """A long container of scalars (one that may not fit on a line), one member a line: what the
    member-by-member way of ``_emit`` writes (orjson's indented form, sorted keys, ``": "``),
    in one call; a 50,000-item list took 50,000 calls. Moved ``indent`` columns right: a newline in
    JSON is only ever between members (a string holds ``\\n``)."""
    data = orjson.dumps(node, option=_INDENTED)
    return data.replace(b"\n", b"\n" + b" " * indent) if indent else data


def _is_reference(node: dict[str, Any]) -> bool:
    return REF in node and all(isinstance(v, str) for v in node.values())


def digest_node(node: Any) -> str:
    """sha256 of a node's indented JSON: the name of a ``large/`` file (the form format 2
    wrote, kept so every large file keeps its name)."""
    return hashlib.sha256(orjson.dumps(node, option=_INDENT_OPTIONS)).hexdigest()
