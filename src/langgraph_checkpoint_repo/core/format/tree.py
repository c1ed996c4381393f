"""Python's msgpack, as LangGraph's serializer writes it, to readable JSON trees and back.

The pure half of the value codec: no LangGraph, no serializer, nothing imported or
constructed. The serializer (serde.py, an adapter) turns a value into msgpack; this module
unpacks those bytes into a JSON tree a person can read and grep, and packs a tree back into
the same bytes. Everything that reads files without reviving values (validate, the
derived index, the review, a textconv driver) needs only this.

Tree forms (a JSON object with a key starting with ``$`` is always a tag):

* JSON scalars, lists, objects with string keys not starting with ``$``;
* ``{"$bytes": b64}``, ``{"$float": "nan"|"inf"|"-inf"}``;
* ``{"$map": [[key, value], ...]}`` for other mappings;
* ``{"$type": [module, name], "$arg"|"$args"|"$kwargs"|"$fields": ...}``
  for constructed objects (messages, dataclasses, datetimes, ...);
* ``{"$numpy": {...}}``, ``{"$delta_snapshot": tree}``, ``{"$ext": code, "$data": b64}``.

An encoded value ("node") is ``{"json": tree}`` (format 3 also wrote ``"serde": "msgpack"``
beside it), the serde's ``null`` payload (None, a trigger's value) included as
``{"json": null}``, or, for anything that is not JSON (bytes, encrypted payloads),
``{"serde": type, "base64": ...}`` (``payload_node``). Files written before wrote ``null``
as ``{"serde": "null", "base64": ""}``; every reader still takes it (``markers.is_null_payload``).
"""

from __future__ import annotations

import base64
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import ormsgpack

from ..errors import UnrevivableValueError
from .markers import NULL_SERDE
from .validation import pointer_part

_OPT = ormsgpack.OPT_NON_STR_KEYS

# LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus: EXT_CONSTRUCTOR_
# SINGLE_ARG ...), kept here as data so the file layer needs no LangGraph; a test checks
# they are LangGraph's (tests/test_layers.py)
EXT_SINGLE, EXT_POS, EXT_KW, EXT_METHOD, EXT_PYD1, EXT_PYD2, EXT_NUMPY, EXT_DELTA = range(8)
CONSTRUCTOR_CODES = frozenset({EXT_SINGLE, EXT_POS, EXT_KW, EXT_METHOD, EXT_PYD1, EXT_PYD2})
ARG_KEY = {EXT_SINGLE: "$arg", EXT_POS: "$args", EXT_KW: "$kwargs"}


class _Ext:
    __slots__ = ("code", "payload", "raw")

    def __init__(self, code: int, payload: Any, raw: bytes) -> None:
        self.code = code
        self.payload = payload
        self.raw = raw


def _ext_hook(code: int, data: bytes) -> _Ext:
    try:
        payload = ormsgpack.unpackb(data, ext_hook=_ext_hook, option=_OPT)
    except Exception:  # unknown payload shape: keep the raw bytes, losslessly
        payload = None
    return _Ext(code, payload, data)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def payload_node(serde: str, data: bytes) -> dict[str, Any]:
    """The node of a payload the serde did not write as msgpack: ``null`` (None, every
    trigger channel's value) as the JSON it is, ``{"json": null}`` (msgpack's nil, which
    every serde reading msgpack revives as the same None); anything else (bytes, bytearray,
    ciphertext: never JSON) as base64. ``null+<cipher>`` stays base64: ciphertext."""
    if serde == NULL_SERDE and not data:
        return {"json": None}
    return {"serde": serde, "base64": b64(data)}


def is_name(v: Any) -> bool:
    return isinstance(v, str)


# what ``to_tree`` gives back as it is (a float may be nan or inf: looked at one by one)
_AS_IS = frozenset({str, int, bool, type(None)})


def to_tree(obj: Any) -> Any:
    """Unpacked msgpack (with ``_Ext`` markers) to a JSON tree."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is dict:
        for k in obj:
            if type(k) is not str or k[:1] == "$":
                return {"$map": [[to_tree(k), to_tree(v)] for k, v in obj.items()]}
        if _AS_IS.issuperset(map(type, obj.values())):
            return dict(obj)
        return {k: to_tree(v) for k, v in obj.items()}
    if t is list or t is tuple:  # non-string map keys come back as tuples
        if _AS_IS.issuperset(map(type, obj)):  # each member its own tree: a list of strings
            return list(obj)
        return [to_tree(x) for x in obj]
    if t is _Ext:
        return _ext_to_tree(obj)
    if t is float:
        if math.isfinite(obj):
            return obj
        return {"$float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": b64(bytes(obj))}
    raise TypeError(f"unexpected unpacked msgpack value of type {t.__name__}")


def member_order(tree: Any) -> tuple[int, Any]:
    """A total order on JSON trees, for the members of a set: null, booleans, numbers (by
    value), strings (by code point), then anything else by its canonical JSON bytes. Python
    iterates a set of strings in an order that changes with ``PYTHONHASHSEED``; sorted, the
    same state always gives the same file. (A dict's order is its insertion order, part of
    the value: string keys are sorted by ``dump_json``, a ``$map`` keeps its pairs' order.)"""
    if tree is None:
        return (0, 0)
    t = type(tree)
    if t is bool:
        return (1, tree)
    if t is int or t is float:
        return (2, tree)
    if t is str:
        return (3, tree)
    return (4, canonical_bytes(tree))


def canonical_bytes(tree: Any) -> bytes:
    """One byte form per JSON tree (sorted keys, compact), for ordering."""
    return orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)


def _is_set_type(module: str, name: str) -> bool:
    """True for ``set``/``frozenset`` and their subclasses: the serde stores them as
    ``tuple(obj)``. Looked up only among modules already imported (the value being encoded
    is in memory, so its class is), through ``__dict__``: a file never makes us import."""
    if module == "builtins":
        return name in ("set", "frozenset")
    mod = sys.modules.get(module)
    cls = getattr(mod, "__dict__", {}).get(name) if mod is not None else None
    return isinstance(cls, type) and issubclass(cls, (set, frozenset))


def _ext_to_tree(ext: _Ext) -> Any:
    p, code = ext.payload, ext.code
    if code == EXT_DELTA:
        return {"$delta_snapshot": to_tree(p)}
    if isinstance(p, list):
        if code in ARG_KEY and len(p) == 3 and is_name(p[0]) and is_name(p[1]):
            arg = to_tree(p[2])
            if code == EXT_SINGLE and isinstance(arg, list) and _is_set_type(p[0], p[1]):
                arg = sorted(arg, key=member_order)  # iteration order follows PYTHONHASHSEED
            return {"$type": [p[0], p[1]], ARG_KEY[code]: arg}
        if code == EXT_METHOD and len(p) == 4 and all(map(is_name, (p[0], p[1], p[3]))):
            return {"$type": [p[0], p[1]], "$method": p[3], "$arg": to_tree(p[2])}
        if code == EXT_PYD1 and len(p) == 3 and is_name(p[0]) and is_name(p[1]):
            return {"$type": [p[0], p[1]], "$pydantic": 1, "$fields": to_tree(p[2])}
        if code == EXT_PYD2 and len(p) in (3, 4) and is_name(p[0]) and is_name(p[1]):
            node = {"$type": [p[0], p[1]], "$pydantic": 2, "$fields": to_tree(p[2])}
            if len(p) == 4 and is_name(p[3]):
                node["$method"] = p[3]
                return node
            if len(p) == 3:
                return node
        if code == EXT_NUMPY and len(p) == 4 and is_name(p[0]) and is_name(p[2]) and isinstance(p[3], bytes):
            return {"$numpy": {"dtype": p[0], "shape": p[1], "order": p[2], "data": b64(p[3])}}
    return {"$ext": code, "$data": b64(ext.raw)}


def from_tree(tree: Any, *, look: bool = True) -> Any:
    """JSON tree back to a structure ``ormsgpack.packb`` turns into the original bytes.

    The fields of a tagged object (a message's ``$fields``, a dataclass's ``$kwargs`` ...) are
    packed as they are when their JSON holds no tag (``untagged``, one look at C speed instead
    of a call per node); ``look``: whether to look, true until an object's fields were looked
    at and found to hold a tag (so no part of the tree is looked at twice)."""
    if isinstance(tree, list):
        return [from_tree(x, look=look) for x in tree]
    if not isinstance(tree, dict):
        return tree
    # a typed object (every message) first: one lookup, where the look for a tag key below
    # walks the keys of every plain object
    if "$type" not in tree and not any(k.startswith("$") for k in tree):
        return {k: from_tree(v, look=look) for k, v in tree.items()}
    if "$type" in tree:
        mod, name = tree["$type"]
        if "$pydantic" in tree:
            code = EXT_PYD1 if tree["$pydantic"] == 1 else EXT_PYD2
            payload = [mod, name, _fields_back(tree["$fields"], look)]
            if "$method" in tree:
                payload.append(tree["$method"])
        elif "$method" in tree:
            code = EXT_METHOD
            payload = [mod, name, _fields_back(tree["$arg"], look), tree["$method"]]
        else:
            code, key = next((c, k) for c, k in ARG_KEY.items() if k in tree)
            payload = [mod, name, _fields_back(tree[key], look)]
        return ormsgpack.Ext(code, ormsgpack.packb(payload, option=_OPT))
    if "$bytes" in tree:
        return base64.b64decode(tree["$bytes"], validate=True)
    if "$float" in tree:
        return float(tree["$float"])
    if "$map" in tree:
        return {hashable(from_tree(k, look=look)): from_tree(v, look=look) for k, v in tree["$map"]}
    if "$numpy" in tree:
        n = tree["$numpy"]
        payload = [n["dtype"], n["shape"], n["order"], base64.b64decode(n["data"])]
        return ormsgpack.Ext(EXT_NUMPY, ormsgpack.packb(payload, option=_OPT))
    if "$delta_snapshot" in tree:
        inner = ormsgpack.packb(from_tree(tree["$delta_snapshot"], look=look), option=_OPT)
        return ormsgpack.Ext(EXT_DELTA, inner)
    if "$ext" in tree:
        return ormsgpack.Ext(tree["$ext"], base64.b64decode(tree["$data"], validate=True))
    raise ValueError(f"unknown tag in {sorted(tree)}")


def _fields_back(tree: Any, look: bool) -> Any:
    """What a tagged object's fields pack as: themselves when they hold no tag."""
    if look and isinstance(tree, dict | list):
        if untagged(tree):
            return tree
        look = False  # what is below holds a tag: looked at once, walked from here on
    return from_tree(tree, look=look)


def hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(hashable(k) for k in key)
    return key


def tree_to_msgpack(tree: Any) -> bytes:
    return ormsgpack.packb(from_tree_bounded(tree), option=_OPT)


def from_tree_bounded(tree: Any) -> Any:
    """``from_tree``, with a tree nested deeper than Python's stack (a hand-made file) as ValueError."""
    try:
        return from_tree(tree)
    except RecursionError:
        raise ValueError("value is nested too deeply to rebuild") from None


def msgpack_to_tree(data: bytes) -> Any:
    return to_tree(ormsgpack.unpackb(data, ext_hook=_ext_hook, option=_OPT))


class _Extension(Exception):
    pass


def _no_extension(code: int, data: bytes) -> Any:
    raise _Extension


def holds_extension(data: bytes) -> bool:
    """Whether msgpack ``data`` holds an extension value (a type to construct), or does not
    decode: only a decode tells, an extension's first byte is also a text's or a number's."""
    try:
        ormsgpack.unpackb(data, ext_hook=_no_extension, option=_OPT)
    except _Extension:
        return True
    except (ValueError, TypeError, RecursionError):
        return True
    return False


EXT_MARK = "<msgpack ext>"
NUMPY_MARK = "<numpy array>"
DELTA_MARK = "<delta snapshot>"
#: what ``named_types`` reports for values that name no type to construct
MARKS = frozenset({EXT_MARK, NUMPY_MARK, DELTA_MARK})


def json_objects(tree: Any, *, untyped_only: bool = False) -> Iterator[dict[str, Any]]:
    """Every JSON object of a tree, outer before inner; ``untyped_only``: nothing below an
    object holding ``$type`` (its own walk decides what below it to look at)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            if not (untyped_only and "$type" in node):
                stack.extend(node.values())


def named_types(tree: Any) -> list[tuple[str, ...]]:
    """Every (module, name[, method]) a tree asks the serde to construct, in ``json_objects``'
    order. Below an object naming a type whose JSON holds no other ``$type`` key (a message)
    nothing more is looked for; below one that holds some, every object is (and nothing is
    looked at twice)."""
    found: list[tuple[str, ...]] = []
    for node in json_objects(tree, untyped_only=True):
        node_types(node, found)
        if "$type" in node and not alone_type(node):
            for inner in json_objects(list(node.values())):
                node_types(inner, found)
    return found


def untagged(tree: dict[str, Any] | list[Any]) -> bool:
    """Whether no object of the tree has a key starting with ``$`` (so nothing in it is a
    tag), told from its JSON at C speed; False when unsure (a string starting with ``$``, a
    value orjson does not write)."""
    try:
        return b'"$' not in orjson.dumps(tree)
    except (TypeError, ValueError):
        return False


def alone_type(node: dict[str, Any]) -> bool:
    """Whether no ``$type`` key lies below an object that has one (nothing inside it is
    constructed or read as a message of its own), told from its JSON; False when unsure."""
    try:
        return orjson.dumps(node).count(b'"$type"') == 1
    except (TypeError, ValueError):
        return False


def node_types(node: dict[str, Any], found: list[tuple[str, ...]]) -> None:
    """What one JSON object of a tree asks the serde to construct, added to ``found`` (in
    ``named_types``' order; objects.types_and_refs walks a tree once for it and its references)."""
    if "$type" in node:
        mod, name = node["$type"]
        if "$method" in node and "$pydantic" not in node:
            found.append((mod, name, node["$method"]))
        else:
            found.append((mod, name))
    if "$ext" in node:
        found.append((EXT_MARK, str(node["$ext"])))
    if "$numpy" in node:
        found.append((NUMPY_MARK,))
    if "$delta_snapshot" in node:
        found.append((DELTA_MARK,))


def readable(tree: Any, revive: Callable[[Any], Any]) -> Any:
    """A stored tree for a person: each part ``revive`` constructs (it raises
    UnrevivableValueError for a type it may not construct) as its value, the rest as its tree,
    a refused ``$type`` node keeping its type name around its readable arguments."""
    if not named_types(tree):
        return tree
    try:
        return revive(tree)
    except UnrevivableValueError:
        pass
    if isinstance(tree, list):
        return [readable(item, revive) for item in tree]
    if not isinstance(tree, dict):
        return tree
    if "$map" in tree and isinstance(tree["$map"], list):
        return {**tree, "$map": [readable(pair, revive) for pair in tree["$map"]]}
    if "$type" in tree:
        args = (*ARG_KEY.values(), "$fields")
        return {k: readable(v, revive) if k in args else v for k, v in tree.items()}
    if any(k.startswith("$") for k in tree):
        return tree
    return {k: readable(v, revive) for k, v in tree.items()}


class TypeSet(frozenset[tuple[str, ...]]):
    """The types a list built by appends names, with the file each was first found in: an
    error about a type names the file that holds it, not only the head of the chain."""

    origins: dict[tuple[str, ...], str]


def object_parts(node: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """The arguments a ``$type`` node is built from, as (key, value, named): ``named`` for an
    object of fields or keyword arguments, else positional. What a walker over stored data
    (redaction) needs without naming the keys."""
    return [
        (k, node[k], k in ("$kwargs", "$fields"))
        for k in ("$arg", "$args", "$kwargs", "$fields")
        if k in node
    ]


def model_fields(node: Any) -> dict[str, Any] | None:
    """The fields of a pydantic model (a LangChain message) as a tree stores them, or None:
    readers of messages ask here rather than naming the key."""
    got = node.get("$fields") if isinstance(node, dict) else None
    return got if isinstance(got, dict) else None


def object_fields(node: Any) -> dict[str, Any] | None:
    """The fields of a constructed object: a model's, else its keyword arguments, or None."""
    if not isinstance(node, dict):
        return None
    got = node.get("$fields", node.get("$kwargs"))
    return got if isinstance(got, dict) else None


def plain_value(tree: Any) -> Any:
    """A tree without constructed types, as fresh Python objects (no serde needed)."""
    return from_tree_bounded(tree)


def ext_nodes(tree: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON pointer, node) of each extension value of ``tree``, in the order msgpack
    unpacking meets them (document order, a value before what it contains; tags read as
    ``from_tree`` reads them). Stops at raw ``$ext`` bytes: what is inside has no pointer."""
    stack: list[tuple[str, Any]] = [("", tree)]
    while stack:
        pointer, node = stack.pop()
        children: list[tuple[str, Any]] = []
        if isinstance(node, list):
            children = [(f"{pointer}/{i}", x) for i, x in enumerate(node)]
        elif isinstance(node, dict):
            tag = _tag(node)
            if tag is None:
                children = [(f"{pointer}/{pointer_part(k)}", v) for k, v in node.items()]
            elif tag == "$map":
                children = _map_children(pointer, node["$map"])
            elif tag in ("$type", "$numpy", "$delta_snapshot", "$ext"):
                yield pointer, node
                if tag == "$type":
                    key = _arg_key(node)
                    children = [(f"{pointer}/{key}", node[key])] if key in node else []
                elif tag == "$delta_snapshot":
                    children = [(f"{pointer}/$delta_snapshot", node["$delta_snapshot"])]
                elif tag == "$ext":
                    return
        stack.extend(reversed(children))


def ext_pointer(tree: Any, index: int) -> str | None:
    """JSON pointer (inside ``tree``) of its ``index``-th extension value (``ext_nodes``'
    order), or None when it cannot be told."""
    return next((p for i, (p, _) in enumerate(ext_nodes(tree)) if i == index), None)


def type_index(tree: Any, key: tuple[str, ...]) -> int | None:
    """The index (``ext_nodes``' order) of the first value naming type ``key``."""
    for i, (_, node) in enumerate(ext_nodes(tree)):
        if node.get("$type") == list(key[:2]):
            return i
    return None


def type_pointer(tree: Any, key: tuple[str, ...]) -> str | None:
    """The JSON pointer of the first value naming type ``key``."""
    return next((p for p, node in ext_nodes(tree) if node.get("$type") == list(key[:2])), None)


def _tag(node: dict[str, Any]) -> str | None:
    """The tag ``from_tree`` reads a JSON object as (None: a plain object)."""
    if not any(k.startswith("$") for k in node):
        return None
    for tag in ("$type", "$bytes", "$float", "$map", "$numpy", "$delta_snapshot", "$ext"):
        if tag in node:
            return tag
    return "?"


def _arg_key(node: dict[str, Any]) -> str:
    """The key holding a ``$type`` node's arguments, chosen as ``from_tree`` chooses it."""
    if "$pydantic" in node:
        return "$fields"
    if "$method" in node:
        return "$arg"
    return next((k for k in ARG_KEY.values() if k in node), "$arg")


def _map_children(pointer: str, pairs: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for i, pair in enumerate(pairs if isinstance(pairs, list) else []):
        if isinstance(pair, list):
            out.extend((f"{pointer}/$map/{i}/{j}", x) for j, x in enumerate(pair))
    return out
