"""Python values to readable JSON and back, losslessly, through LangGraph's serde.

The serde (JsonPlusSerializer by default) turns a value into msgpack. Instead
of storing those bytes we unpack them into a JSON tree that a person can read
and grep, and on load pack the tree into the same msgpack and hand it back to
the serde. So whatever the serde round-trips, we round-trip, and reviving
types stays the serde's job, under its allowlist. Before anything is handed to
the serde we check every type the tree names against that allowlist, so a
hostile file fails with a clear error instead of importing or calling anything.

Tree forms (a JSON object with a key starting with ``$`` is always a tag):

* JSON scalars, lists, objects with string keys not starting with ``$``;
* ``{"$bytes": b64}``, ``{"$float": "nan"|"inf"|"-inf"}``;
* ``{"$map": [[key, value], ...]}`` for other mappings;
* ``{"$type": [module, name], "$arg"|"$args"|"$kwargs"|"$fields": ...}``
  for constructed objects (messages, dataclasses, datetimes, ...);
* ``{"$numpy": {...}}``, ``{"$delta_snapshot": tree}``, ``{"$ext": code, "$data": b64}``.

An encoded value ("node") is ``{"serde": "msgpack", "json": tree}`` or, for
anything that is not msgpack (bytes, encrypted payloads), ``{"serde": type,
"base64": ...}``.
"""

from __future__ import annotations

import base64
import copy
import math
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson
import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import (
    EXT_CONSTRUCTOR_KW_ARGS,
    EXT_CONSTRUCTOR_POS_ARGS,
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_DELTA_SNAPSHOT,
    EXT_METHOD_SINGLE_ARG,
    EXT_NUMPY_ARRAY,
    EXT_PYDANTIC_V1,
    EXT_PYDANTIC_V2,
    JsonPlusSerializer,
)

from ._compat import (
    SAFE_MSGPACK_METHODS,
    SAFE_MSGPACK_TYPES,
    DeltaSnapshot,
    allowed_msgpack_modules,
    has_custom_ext_hook,
    send_from_args,
    set_ext_hook,
)
from .errors import InvalidWriteError, UnrevivableValueError
from .graph_types import MAIN, import_named, main_module_name
from .validation import pointer_part

if TYPE_CHECKING:
    from .redaction import Redactor

_OPT = ormsgpack.OPT_NON_STR_KEYS
# serde payload types a file may never make us load: unpickling runs code
REFUSED_SERDE_TYPES = frozenset({"pickle"})
# serde payload types that name no type to construct: decoded here, never by the serde
PLAIN_SERDE_TYPES = frozenset({"null", "bytes", "bytearray"})
# every payload type the saver loads (pickle only with unsafe_allow_pickle); anything else,
# LangGraph's legacy "json" above all (its reviver constructs objects without the
# allowlist), is refused before a serde sees it
LOADED_SERDE_TYPES = PLAIN_SERDE_TYPES | {"msgpack"}

# msgpack extension codes used by langgraph.checkpoint.serde.jsonplus
# LangGraph's msgpack extension codes (public constants of its jsonplus module)
EXT_SINGLE, EXT_POS, EXT_KW = EXT_CONSTRUCTOR_SINGLE_ARG, EXT_CONSTRUCTOR_POS_ARGS, EXT_CONSTRUCTOR_KW_ARGS
EXT_METHOD, EXT_PYD1, EXT_PYD2 = EXT_METHOD_SINGLE_ARG, EXT_PYDANTIC_V1, EXT_PYDANTIC_V2
EXT_NUMPY, EXT_DELTA = EXT_NUMPY_ARRAY, EXT_DELTA_SNAPSHOT
_ARG_KEY = {EXT_SINGLE: "$arg", EXT_POS: "$args", EXT_KW: "$kwargs"}


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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _is_name(v: Any) -> bool:
    return isinstance(v, str)


def to_tree(obj: Any) -> Any:
    """Unpacked msgpack (with ``_Ext`` markers) to a JSON tree."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is dict:
        for k in obj:
            if type(k) is not str or k[:1] == "$":
                return {"$map": [[to_tree(k), to_tree(v)] for k, v in obj.items()]}
        return {k: to_tree(v) for k, v in obj.items()}
    if t is list or t is tuple:  # non-string map keys come back as tuples
        return [to_tree(x) for x in obj]
    if t is _Ext:
        return _ext_to_tree(obj)
    if t is float:
        if math.isfinite(obj):
            return obj
        return {"$float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": _b64(bytes(obj))}
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
        if code in _ARG_KEY and len(p) == 3 and _is_name(p[0]) and _is_name(p[1]):
            arg = to_tree(p[2])
            if code == EXT_SINGLE and isinstance(arg, list) and _is_set_type(p[0], p[1]):
                arg = sorted(arg, key=member_order)  # iteration order follows PYTHONHASHSEED
            return {"$type": [p[0], p[1]], _ARG_KEY[code]: arg}
        if code == EXT_METHOD and len(p) == 4 and all(map(_is_name, (p[0], p[1], p[3]))):
            return {"$type": [p[0], p[1]], "$method": p[3], "$arg": to_tree(p[2])}
        if code == EXT_PYD1 and len(p) == 3 and _is_name(p[0]) and _is_name(p[1]):
            return {"$type": [p[0], p[1]], "$pydantic": 1, "$fields": to_tree(p[2])}
        if code == EXT_PYD2 and len(p) in (3, 4) and _is_name(p[0]) and _is_name(p[1]):
            node = {"$type": [p[0], p[1]], "$pydantic": 2, "$fields": to_tree(p[2])}
            if len(p) == 4 and _is_name(p[3]):
                node["$method"] = p[3]
                return node
            if len(p) == 3:
                return node
        if (
            code == EXT_NUMPY
            and len(p) == 4
            and _is_name(p[0])
            and _is_name(p[2])
            and isinstance(p[3], bytes)
        ):
            return {"$numpy": {"dtype": p[0], "shape": p[1], "order": p[2], "data": _b64(p[3])}}
    return {"$ext": code, "$data": _b64(ext.raw)}


def from_tree(tree: Any) -> Any:
    """JSON tree back to a structure ``ormsgpack.packb`` turns into the original bytes."""
    if isinstance(tree, list):
        return [from_tree(x) for x in tree]
    if not isinstance(tree, dict):
        return tree
    if not any(k.startswith("$") for k in tree):
        return {k: from_tree(v) for k, v in tree.items()}
    if "$type" in tree:
        mod, name = tree["$type"]
        if "$pydantic" in tree:
            code = EXT_PYD1 if tree["$pydantic"] == 1 else EXT_PYD2
            payload = [mod, name, from_tree(tree["$fields"])]
            if "$method" in tree:
                payload.append(tree["$method"])
        elif "$method" in tree:
            code = EXT_METHOD
            payload = [mod, name, from_tree(tree["$arg"]), tree["$method"]]
        else:
            code, key = next((c, k) for c, k in _ARG_KEY.items() if k in tree)
            payload = [mod, name, from_tree(tree[key])]
        return ormsgpack.Ext(code, ormsgpack.packb(payload, option=_OPT))
    if "$bytes" in tree:
        return base64.b64decode(tree["$bytes"], validate=True)
    if "$float" in tree:
        return float(tree["$float"])
    if "$map" in tree:
        return {_hashable(from_tree(k)): from_tree(v) for k, v in tree["$map"]}
    if "$numpy" in tree:
        n = tree["$numpy"]
        payload = [n["dtype"], n["shape"], n["order"], base64.b64decode(n["data"])]
        return ormsgpack.Ext(EXT_NUMPY, ormsgpack.packb(payload, option=_OPT))
    if "$delta_snapshot" in tree:
        inner = ormsgpack.packb(from_tree(tree["$delta_snapshot"]), option=_OPT)
        return ormsgpack.Ext(EXT_DELTA, inner)
    if "$ext" in tree:
        return ormsgpack.Ext(tree["$ext"], base64.b64decode(tree["$data"], validate=True))
    raise ValueError(f"unknown tag in {sorted(tree)}")


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    return key


def tree_to_msgpack(tree: Any) -> bytes:
    return ormsgpack.packb(_from_tree_bounded(tree), option=_OPT)


def _from_tree_bounded(tree: Any) -> Any:
    """``from_tree``, with a tree nested deeper than Python's stack (a hand-made file) as ValueError."""
    try:
        return from_tree(tree)
    except RecursionError:
        raise ValueError("value is nested too deeply to rebuild") from None


def msgpack_to_tree(data: bytes) -> Any:
    return to_tree(ormsgpack.unpackb(data, ext_hook=_ext_hook, option=_OPT))


EXT_MARK = "<msgpack ext>"
NUMPY_MARK = "<numpy array>"
DELTA_MARK = "<delta snapshot>"


def json_objects(tree: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object of a tree, outer before inner."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            stack.extend(node.values())


def named_types(tree: Any) -> list[tuple[str, ...]]:
    """Every (module, name[, method]) a tree asks the serde to construct."""
    found: list[tuple[str, ...]] = []
    for node in json_objects(tree):
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
    return found


ANY_NAME = "*"  # ("myapp.state", "*"): every class defined in myapp.state


def allows(allowed: Collection[tuple[str, ...]], module: str, name: str) -> bool:
    """The allowlist rule for a constructed type: listed by name, or its module by ``*``."""
    return (module, name) in allowed or (module, ANY_NAME) in allowed


def with_main_alias(allowed: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """``__main__`` types allowed under the main module's importable name too: that is the
    name they are written under (``rename_main``), so the writing program reads them back."""
    main = main_module_name()
    if main is None:
        return allowed
    return allowed | {(main, *key[1:]) for key in allowed if key[0] == MAIN}


def rename_main(data: bytes) -> bytes:
    """msgpack whose types named ``__main__.X`` are named by the main module's importable
    name (``graph_types.main_module_name``), so another program can read them; unchanged when
    that name cannot be told or no type is named so."""
    if b"__main__" not in data:
        return data
    main = main_module_name()
    if main is None:
        return data
    tree = msgpack_to_tree(data)
    found = False
    for node in json_objects(tree):
        kind = node.get("$type")
        if isinstance(kind, list) and kind and kind[0] == MAIN:
            kind[0], found = main, True
    return tree_to_msgpack(tree) if found else data


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
        args = (*_ARG_KEY.values(), "$fields")
        return {k: readable(v, revive) if k in args else v for k, v in tree.items()}
    if any(k.startswith("$") for k in tree):
        return tree
    return {k: readable(v, revive) for k, v in tree.items()}


class TypeSet(frozenset[tuple[str, ...]]):
    """The types a list built by appends names, with the file each was first found in: an
    error about a type names the file that holds it, not only the head of the chain."""

    origins: dict[tuple[str, ...], str]


def plain_value(tree: Any) -> Any:
    """A tree without constructed types, as fresh Python objects (no serde needed)."""
    return _from_tree_bounded(tree)


class ValueCodec:
    """Encodes values to nodes and decodes nodes, under the saver's own allowlist.

    The allowlist is LangGraph's safe types, plus ``allowlist`` (what the saver was given and
    learned from its graphs), plus an explicit set the serde was built with. It is checked on
    every payload whatever the serde: a serde built to allow every type (a bare
    ``JsonPlusSerializer()``, LangGraph's default outside strict mode, also the one inside
    ``EncryptedSerializer.from_pycryptodome_aes()``) does not widen it, because files come
    from pull requests. Encrypted payloads are decrypted here with the serde's cipher and
    checked like any other before its inner serde sees them; with an encrypting serde, a
    value stored in the clear is refused (``refuse_plaintext``). Pickle loads only with
    ``unsafe_allow_pickle``.

    ``redactor`` rewrites the text of every msgpack payload before any tree is built from
    it (redaction.py); an encrypted payload is not text and is left alone. With an
    ``EncryptedSerializer``, metadata (``tree``) goes through its inner serde: it stays
    readable and filterable, as in LangGraph's SQLite and Postgres savers.
    """

    def __init__(
        self,
        serde: SerializerProtocol,
        redactor: Redactor | None = None,
        *,
        allowlist: Collection[tuple[str, ...]] = (),
        unsafe_allow_pickle: bool = False,
        fix: Fix | None = None,
    ) -> None:
        self.serde = serde
        # how to allow a refused (module, name), for the error: the reader's own way
        self.fix: Fix = fix or python_fix
        self.redactor = redactor
        self.encrypts = isinstance(serde, EncryptedSerializer)
        self.unsafe_allow_pickle = unsafe_allow_pickle
        inner = serde.serde if isinstance(serde, EncryptedSerializer) else serde
        self._plain: SerializerProtocol = inner
        self._checks_allowlist = isinstance(inner, JsonPlusSerializer)
        allowed = allowed_msgpack_modules(inner)
        self._allowed: set[tuple[str, ...]] = set(SAFE_MSGPACK_TYPES) | {tuple(a) for a in allowlist}
        if isinstance(allowed, (set, frozenset)):  # an explicit list; True (allow all) is not one
            self._allowed |= {tuple(a) for a in allowed}
        self._allowed = with_main_alias(self._allowed)
        # what loads values: the serde, with LangGraph's lenient ext hook made strict
        self._loader: SerializerProtocol = strict_loader(inner, frozenset(self._allowed), False)

    @property
    def allowed(self) -> frozenset[tuple[str, ...]]:
        """Every (module, name) this codec lets the serde construct."""
        return frozenset(self._allowed)

    # -- encode -------------------------------------------------------
    def dumps(self, value: Any, kind: str, target: str, pointer: str) -> tuple[str, bytes]:
        """The serde's bytes for a value, or InvalidWriteError naming where it was going."""
        return self._dumps(self.serde, value, kind, target, pointer)

    def tree(self, value: Any, kind: str, target: str, pointer: str) -> Any:
        """A value as a readable JSON tree (metadata): never encrypted, always redacted."""
        type_, data = self._dumps(self._plain, value, kind, target, pointer)
        if type_ != "msgpack":
            raise InvalidWriteError(kind, target, pointer, f"must serialise as msgpack, not {type_}")
        return msgpack_to_tree(data)

    def _dumps(
        self, serde: SerializerProtocol, value: Any, kind: str, target: str, pointer: str
    ) -> tuple[str, bytes]:
        try:
            type_, data = serde.dumps_typed(value)
        except (TypeError, ValueError, ormsgpack.MsgpackEncodeError) as exc:
            problem = f"cannot serialise {type(value).__name__}: {exc}"
            raise InvalidWriteError(kind, target, pointer, problem) from exc
        base = type_.split("+", 1)[0]
        if base in REFUSED_SERDE_TYPES and not self.unsafe_allow_pickle:
            problem = (
                f"{type(value).__name__} only serialises as {type_}, which is never loaded back "
                "(unpickling a file runs code; RepoSaver(unsafe_allow_pickle=True) allows it)"
            )
            raise InvalidWriteError(kind, target, pointer, problem)
        if base not in LOADED_SERDE_TYPES and base not in REFUSED_SERDE_TYPES:
            problem = (
                f"{type(value).__name__} serialises as {type_}, which RepoSaver cannot check against "
                "the allowlist and so never loads back"
            )
            raise InvalidWriteError(kind, target, pointer, problem)
        if type_ == "msgpack":
            data = rename_main(data)
            if self.redactor is not None:
                data = self.redactor.redact_msgpack(data)
        return type_, data

    def encode(self, value: Any, kind: str, target: str, pointer: str) -> dict[str, Any]:
        type_, data = self.dumps(value, kind, target, pointer)
        if type_ == "msgpack":
            return {"serde": "msgpack", "json": msgpack_to_tree(data)}
        return {"serde": type_, "base64": _b64(data)}

    # -- decode -------------------------------------------------------
    @property
    def revives_plain_trees(self) -> bool:
        """True when a tree naming no types can skip the serde (JsonPlusSerializer only)."""
        return self._checks_allowlist

    def check_allowed(self, tree: Any, where: str) -> None:
        """Refuse, before any import, a tree naming a type outside the allowlist."""
        self.check_types(named_types(tree), where, lambda key: type_pointer(tree, key))

    def check_types(
        self, types: Any, where: str, locate: Callable[[tuple[str, ...]], str | None] | None = None
    ) -> None:
        """Refuse any named type outside the allowlist, whatever the serde would allow;
        ``locate`` tells where in its file a refused type is named."""
        origins = getattr(types, "origins", {})

        def at(key: tuple[str, ...]) -> str:
            origin = origins.get(key)
            return f"{where}, named in {origin}" if origin and origin not in where else where

        for key in types:
            if key[0] == EXT_MARK:
                raise UnrevivableValueError(
                    f"{at(key)}: unknown msgpack extension {key[1]} cannot be revived"
                )
            if len(key) == 3 and key not in SAFE_MSGPACK_METHODS:
                raise UnrevivableValueError(
                    f"{at(key)}: refusing to call {'.'.join(key)}: the method is not "
                    "in LangGraph's safe msgpack methods"
                )
        refused = sorted(self.refused_types(types))
        if refused:
            place = locate(refused[0]) if locate is not None else None
            raise UnrevivableValueError(
                f"{at(refused[0])}: refusing to construct {', '.join('.'.join(k) for k in refused)}: "
                "not in the msgpack allowlist"
                + (f" (named at {place})" if place else "")
                + f". {refusal_fix(refused, self.fix)}"
            )

    def refused_types(self, types: Collection[tuple[str, ...]]) -> list[tuple[str, ...]]:
        """The (module, name) of ``types`` this codec may not construct, in order."""
        named = (k for k in types if len(k) == 2 and k[0] not in (NUMPY_MARK, DELTA_MARK, EXT_MARK))
        return list(dict.fromkeys(k for k in named if not allows(self._allowed, k[0], k[1])))

    def refuse_plaintext(self, where: str) -> None:
        """With an encrypting serde every value is ciphertext: one in the clear was planted."""
        if self.encrypts:
            raise UnrevivableValueError(
                f"{where}: refusing a value stored in the clear: this saver's serde "
                "(EncryptedSerializer) encrypts every value, so it did not write this one"
            )

    def loads(
        self, typed: tuple[str, bytes], where: str, locate: Callable[[int], str | None] | None = None
    ) -> Any:
        """A stored payload as a value: decrypted here, its types checked, and only then the serde.

        A type that rejects its stored data (a hand edit removed a required field) raises
        UnrevivableValueError; ``locate`` turns the index of the extension value that failed
        into "file at pointer" for that message."""
        type_, data = typed
        base, _, cipher = type_.partition("+")
        if cipher:
            if not isinstance(self.serde, EncryptedSerializer):
                raise UnrevivableValueError(
                    f"{where}: the value is encrypted ({type_}): read it with "
                    "RepoSaver(serde=EncryptedSerializer...) and the key it was written with"
                )
            try:
                data = self.serde.cipher.decrypt(cipher, data)
            except Exception as exc:
                raise UnrevivableValueError(
                    f"{where}: cannot decrypt the {type_} value (written with another key?): {exc}"
                ) from exc
        else:
            self.refuse_plaintext(where)
        return self._load_plain(base, data, where, locate)

    def _load_plain(
        self, type_: str, data: bytes, where: str, locate: Callable[[int], str | None] | None = None
    ) -> Any:
        if type_ == "null":
            return None
        if type_ == "bytes":
            return data
        if type_ == "bytearray":
            return bytearray(data)
        if type_ == "msgpack":
            try:
                tree = msgpack_to_tree(data)
            except (ValueError, TypeError, RecursionError) as exc:
                raise UnrevivableValueError(f"{where}: not a msgpack payload: {exc}") from None
            self.check_allowed(tree, where)
            return self.loads_checked(data, where, locate)
        if type_ in REFUSED_SERDE_TYPES:
            if not self.unsafe_allow_pickle:
                raise UnrevivableValueError(
                    f"{where}: refusing to load a {type_} payload: it can run code "
                    "(only RepoSaver(unsafe_allow_pickle=True) loads one, for files you trust)"
                )
            return self._call(type_, data, where, locate)
        why = (
            "LangGraph's json reviver constructs objects without the allowlist"
            if type_ == "json"
            else "its types cannot be checked against the allowlist"
        )
        raise UnrevivableValueError(
            f"{where}: refusing to load a {type_} payload: {why}; RepoSaver writes and loads "
            f"only {', '.join(sorted(LOADED_SERDE_TYPES))}"
        )

    def loads_checked(
        self, data: bytes, where: str, locate: Callable[[int], str | None] | None = None
    ) -> Any:
        """msgpack whose every named type was already checked, through the (inner) serde."""
        return self._call("msgpack", data, where, locate)

    def _call(
        self, type_: str, data: bytes, where: str, locate: Callable[[int], str | None] | None = None
    ) -> Any:
        try:
            value, failed = run_strict(lambda: self._loader.loads_typed((type_, data)))
        except UnrevivableValueError:
            raise
        except Exception as exc:
            raise UnrevivableValueError(f"{where}: cannot revive value: {exc}") from exc
        if failed is not None:
            index, label, cause = failed
            place = locate(index) if locate is not None else None
            at = f"{place}: " if place else ""
            if isinstance(cause, NotImportableError):  # the file is fine: this program lacks the module
                raise UnrevivableValueError(
                    f"{where}: {at}{cause}: the type is allowed, but this program cannot import it "
                    "(run it where its module imports: from the project's folder, or with the "
                    "project installed)"
                ) from cause
            raise UnrevivableValueError(
                f"{where}: {at}{rejection(label, cause)}; a stored value must be one its type accepts "
                "(fix the file: docs/format.md, Editing files by hand)"
            ) from cause
        return value


# -- strict revival ------------------------------------------------------------------
# LangGraph's msgpack ext hook (jsonplus._create_msgpack_ext_hook) never fails: when a
# constructor rejects the stored data it returns the raw data instead (a dict, a list),
# and for pydantic models it falls back to ``model_construct``, which builds the model
# without validation (a hand edit that removes a ToolMessage's tool_call_id comes back as
# a ToolMessage without one). The hook below constructs the same way and fails instead,
# and records which extension value failed so the error can name the file and pointer.


class _Revival(threading.local):
    """This thread's running strict revival: extension values entered so far (in document
    order, outer before inner) and the first construction that failed."""

    def __init__(self) -> None:
        self.entered = 0
        self.failed: tuple[int, str, BaseException] | None = None


_REVIVAL = _Revival()


class NotRevived:
    """Stands for a value of a type ``check_revival`` does not construct (not LangGraph's)."""

    __slots__ = ()


_NOT_REVIVED = NotRevived()


def strict_ext_hook(
    allowed: frozenset[tuple[str, ...]] | set[tuple[str, ...]], allow_all: bool, *, others: bool = True
) -> Callable[[int, bytes], Any]:
    """An ext hook constructing what LangGraph's does, exactly as it does, but raising when
    a type rejects its data or a payload is not what its code says. ``others=False``: types
    outside ``allowed`` are not imported, they stand as ``NotRevived`` (for ``validate``)."""

    def unpack(data: bytes) -> Any:
        return ormsgpack.unpackb(data, ext_hook=hook, option=_OPT)

    def hook(code: int, data: bytes) -> Any:
        run = _REVIVAL
        index = run.entered
        run.entered += 1
        label = f"msgpack extension {code}"
        try:
            if code == EXT_DELTA:
                return DeltaSnapshot(unpack(data))
            payload = unpack(data)
            if not others and not _constructor_shape(code, payload):
                return _NOT_REVIVED  # numpy, unknown codes, odd payloads: not validate's to judge
            if code == EXT_NUMPY:
                return _numpy_array(payload)
            if code not in (EXT_SINGLE, EXT_POS, EXT_KW, EXT_METHOD, EXT_PYD1, EXT_PYD2):
                raise ValueError(f"unknown msgpack extension {code}")
            module, name, arg = payload[0], payload[1], payload[2]
            label = f"{module}.{name}"
            if code == EXT_METHOD:
                method = payload[3]
                label = f"{label}.{method}"
                if (module, name, method) not in SAFE_MSGPACK_METHODS:
                    if not others:
                        return _NOT_REVIVED
                    raise ValueError("the method is not in LangGraph's safe msgpack methods")
                return getattr(getattr(import_named(module), name), method)(arg)
            if not (allow_all or allows(allowed, module, name)):
                if not others:
                    return _NOT_REVIVED
                raise ValueError("not in the msgpack allowlist")
            cls = allowed_class(allowed, allow_all, module, name)
            if code == EXT_SINGLE:
                if isinstance(cls, type) and issubclass(cls, (set, frozenset)) and isinstance(arg, list):
                    # msgpack turned tuple members into lists; LangGraph's hook then fails and
                    # hands back the list: the set is what was stored, so rebuild its tuples
                    return cls(_hashable(member) for member in arg)
                return cls(arg)
            if code == EXT_POS:
                if (module, name) == ("langgraph.types", "Send"):
                    return send_from_args(arg)
                return cls(*arg)
            # keyword constructors, dataclasses, namedtuples, pydantic v1 and v2 models: the
            # class itself validates (no model_construct, no raw-dict fallback)
            return cls(**arg)
        except Exception as exc:
            if run.failed is None:  # the innermost failure; outer ones only pass it on
                run.failed = (index, label, exc)
            raise

    return hook


def _numpy_array(payload: Any) -> Any:
    import numpy as np

    dtype, shape, order, buf = payload
    return np.frombuffer(buf, dtype=np.dtype(dtype)).reshape(shape, order=order)


def _constructor_shape(code: int, payload: Any) -> bool:
    """True when an extension payload is (module, name, data[, method]) of a constructor code."""
    return (
        code in (EXT_SINGLE, EXT_POS, EXT_KW, EXT_METHOD, EXT_PYD1, EXT_PYD2)
        and isinstance(payload, list)
        and len(payload) >= (4 if code == EXT_METHOD else 3)
        and _is_name(payload[0])
        and _is_name(payload[1])
    )


class NotImportableError(Exception):
    """An allowed type whose module this program cannot import."""


def allowed_class(allowed: Collection[tuple[str, ...]], allow_all: bool, module: str, name: str) -> Any:
    """The class an allowed (module, name) names. Allowed only by ``module:*``, it must be a
    class defined in that module: not a function, nor a name the module imported."""
    try:
        home = import_named(module)
    except ImportError as exc:
        raise NotImportableError(f"cannot import {module}.{name} ({type(exc).__name__}: {exc})") from exc
    found = getattr(home, name)
    if allow_all or (module, name) in allowed:
        return found
    if not (isinstance(found, type) and found.__module__ == home.__name__):
        raise ValueError(f"{module}:* allows only the classes defined in {module}")
    return found


def strict_loader(serde: SerializerProtocol, allowed: frozenset[tuple[str, ...]], allow_all: bool) -> Any:
    """A copy of ``serde`` that loads msgpack through ``strict_ext_hook`` (an
    ``EncryptedSerializer`` still decrypts first). A serde of another kind, or one given its
    own ext hook, is returned as it is: reviving is then entirely its business."""
    if isinstance(serde, EncryptedSerializer):
        inner = strict_loader(serde.serde, allowed, allow_all)
        if inner is serde.serde:
            return serde
        encrypted = copy.copy(serde)
        encrypted.serde = inner
        return encrypted
    if not isinstance(serde, JsonPlusSerializer) or has_custom_ext_hook(serde):
        return serde
    plain = copy.copy(serde)
    set_ext_hook(plain, strict_ext_hook(allowed, allow_all))
    return plain


def run_strict(load: Callable[[], Any]) -> tuple[Any, tuple[int, str, BaseException] | None]:
    """Run a load under a fresh strict-revival record: (value, None), or (None, failure)
    when a construction failed; other errors propagate."""
    run = _REVIVAL
    saved = (run.entered, run.failed)
    run.entered, run.failed = 0, None
    try:
        return load(), None
    except Exception:
        failed = run.failed
        if failed is None:
            raise
        return None, failed
    finally:
        run.entered, run.failed = saved


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


# how to allow refused (module, name) types, in the words of whoever reads
Fix = Callable[[Sequence[tuple[str, ...]]], str]


def _pairs(keys: Sequence[tuple[str, ...]]) -> str:
    return ", ".join(f"({k[0]!r}, {k[1]!r})" for k in keys)


def python_fix(keys: Sequence[tuple[str, ...]]) -> str:
    """How a program allows types (the default ``ValueCodec.fix``)."""
    return f"To allow: RepoSaver(allowlist=[{_pairs(keys)}])"


def graph_fix(graph: str) -> Fix:
    """How a graph's read allows types its state does not name (a graph view's ``fix``)."""

    def fix(keys: Sequence[tuple[str, ...]]) -> str:
        return (
            f"The graph {graph!r} reading it does not name them in its state schemas or channels, "
            "the types its reads may construct (docs/types.md): name them there, or "
            f"RepoSaver(allowlist=[{_pairs(keys)}])"
        )

    return fix


def locate_type(entry: Any, key: tuple[str, ...]) -> str | None:
    """"file at pointer" of the first value naming type ``key`` in a ``store.ValueEntry``."""
    if entry.tree is None:
        return None
    index = type_index(entry.tree, key)
    return None if index is None else entry.locate(index)  # type: ignore[no-any-return]


def is_foreign(key: tuple[str, ...]) -> bool:
    """A name from Python itself (the standard library, builtins): never a type of a graph's
    state that LangGraph does not allow already, so a file naming one is not advised in."""
    return key[0].partition(".")[0] in sys.stdlib_module_names


def refusal_fix(keys: Sequence[tuple[str, ...]], fix: Fix) -> str:
    """What a refused type's error says to do: the reader's own fix for the types of the
    user's code; for names from the standard library (``os:system``) a warning instead of a
    fix, since a file naming one may be an attempt to run code; for a type of a script's
    ``__main__`` (written where its importable name could not be told) why only that
    script reads it."""
    foreign = [k for k in keys if is_foreign(k)]
    own = [k for k in keys if not is_foreign(k)]
    parts = []
    if foreign:
        parts.append(
            f"{', '.join('.'.join(k[:2]) for k in foreign)}: from Python's standard library, not "
            "a type of your graph's state; a file naming one may have been edited to run code "
            "when read: check it (git log -p) and do not allow these."
        )
    if any(k[0] == MAIN for k in own):
        parts.append(
            "A type named __main__ was written by a program run as a script whose importable module "
            "name could not be told (docs/types.md): run the writer as python -m package.module or "
            "from inside its project to record its real name; until then only a program whose main "
            "module defines it reads it."
        )
    if own:
        parts.append(fix(own))
    return " ".join(parts)


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
    return next((k for k in _ARG_KEY.values() if k in node), "$arg")


def _map_children(pointer: str, pairs: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for i, pair in enumerate(pairs if isinstance(pairs, list) else []):
        if isinstance(pair, list):
            out.extend((f"{pointer}/$map/{i}/{j}", x) for j, x in enumerate(pair))
    return out


def rejection(label: str, exc: BaseException) -> str:
    """What a failed construction says, on one line."""
    text = " ".join(str(exc).split())
    return f"{label} rejects the stored data ({type(exc).__name__}: {text})"


_SAFE_ONLY_HOOK = strict_ext_hook(frozenset(SAFE_MSGPACK_TYPES), False, others=False)


def check_revival(tree: Any) -> tuple[str, str] | None:
    """Construct the types of a tree that LangGraph itself ships (messages, datetimes,
    ``Send``, ...) strictly, importing nothing else: the first one that rejects its stored
    data, as (JSON pointer inside the tree, reason), or None. For ``validate``, which has no
    graph and so none of the graph's own types."""
    if not any(key[0] not in (NUMPY_MARK, DELTA_MARK, EXT_MARK) for key in named_types(tree)):
        return None
    try:  # what fails here fails the saver's read too
        data = tree_to_msgpack(tree)
        _, failed = run_strict(lambda: ormsgpack.unpackb(data, ext_hook=_SAFE_ONLY_HOOK, option=_OPT))
    except (ValueError, TypeError, KeyError, RecursionError, ormsgpack.MsgpackEncodeError) as bad:
        return "", f"value cannot be rebuilt: {bad}"
    if failed is None:
        return None
    index, label, cause = failed
    return ext_pointer(tree, index) or "", rejection(label, cause)

