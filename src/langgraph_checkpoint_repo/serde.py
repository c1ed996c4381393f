"""How values are written and revived: LangGraph's serializer under the saver's policy.

The serializer (JsonPlusSerializer by default) turns a value into msgpack; core/format/tree.py
turns those bytes into a readable JSON tree and back, so whatever the serializer
round-trips, we round-trip. Reviving stays the serializer's job, under this module's
policy: before anything is handed to it, every type a tree names is checked against the
allowlist (core/typenames.py), so a hostile file fails with a clear error instead of
importing or calling anything; LangGraph's lenient ext hook is replaced by a strict one that
fails where a type rejects its stored data; pickle and LangGraph's legacy ``json`` payloads
are refused. This is the adapter the saver and the command line use to construct values.
"""

from __future__ import annotations

import copy
import importlib
import logging
import sys
import threading
from collections.abc import Callable, Collection, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ._compat import (
    DeltaSnapshot,
    allowed_msgpack_modules,
    has_custom_ext_hook,
    send_from_args,
    set_ext_hook,
)
from .core.errors import FileFormatError, InvalidWriteError, UnrevivableValueError
from .core.format.entries import ValueEntry
from .core.format.messages import refusals
from .core.format.packed import msgpack_array_split
from .core.format.tree import (
    CONSTRUCTOR_CODES,
    EXT_DELTA,
    EXT_MARK,
    EXT_METHOD,
    EXT_NUMPY,
    EXT_POS,
    EXT_SINGLE,
    MARKS,
    ext_pointer,
    hashable,
    is_name,
    json_objects,
    msgpack_to_tree,
    named_types,
    plain_value,
    tree_to_msgpack,
    type_index,
    type_pointer,
)
from .core.masking import safe_message
from .core.typenames import (
    MAIN,
    SAFE_METHODS,
    SAFE_TYPES,
    Fix,
    TypeKey,
    allows,
    main_module_name,
    python_fix,
    refusal_fix,
    refused_types,
    rejection,
    with_main_alias,
)

if TYPE_CHECKING:
    from .core.redaction import Redactor

_OPT = ormsgpack.OPT_NON_STR_KEYS  # as tree.py packs
# serde payload types a file may never make us load: unpickling runs code
REFUSED_SERDE_TYPES = frozenset({"pickle"})
#: a list this long or longer, of exact ``str`` only, or a ``str`` of ``TEXT_AT`` characters or
#: more, is packed by the codec itself when the serde is LangGraph's own ``JsonPlusSerializer``
#: (``packed_strings``)
STRINGS_AT = 1024
TEXT_AT = 64 * 1024
_EXACT = ormsgpack.OPT_NON_STR_KEYS | ormsgpack.OPT_PASSTHROUGH_SUBCLASS

_log = logging.getLogger(__name__)


def packed_strings(value: Any, least: int = STRINGS_AT) -> tuple[bytes, int, str | list[str]] | None:
    """The msgpack of a list of ``least`` or more exact ``str``, or of a long ``str``
    (``TEXT_AT``), holding no lone surrogate, the characters of its strings, and what was
    checked and packed: the string, or a copy of the list, else None. The bytes are what
    ``JsonPlusSerializer`` makes of it (its options change nothing for such strings:
    tests/test_big_values.py pins it), packed once so that its tree is known to be that copy
    (``ValueCodec.strings_of``). Before, the serde packed a list, then ``values.tree_of``
    packed it again to learn that (1.3 ms of a 50,000-item list's first put), and a 5 MB
    string was unpacked for its tree (3 ms). The copy is taken first: an app changing its
    list meanwhile (another thread) changes neither the bytes nor the tree stored, which are
    what was checked (``core/format/vouched.py`` relies on it). A ``str`` subclass
    (``OPT_PASSTHROUGH_SUBCLASS``) or a lone surrogate (the serde replaces it) is refused
    here and left to the serde; so is anything else (``join``: strings only)."""
    try:
        if type(value) is str and len(value) >= TEXT_AT:
            return ormsgpack.packb(value, option=_EXACT), len(value), value
        if type(value) is not list or len(value) < least:
            return None
        items = list(value)
        text = len("".join(items))  # every item a string (else: TypeError), in one pass in C
        return ormsgpack.packb(items, option=_EXACT), text, items
    except (TypeError, ormsgpack.MsgpackEncodeError):
        return None


# serde payload types that name no type to construct: decoded here, never by the serde (null
# is written as the JSON it is, {"json": null}: core/format/tree.payload_node; bytes stay base64)
PLAIN_SERDE_TYPES = frozenset({"null", "bytes", "bytearray"})
# every payload type the saver loads (pickle only with unsafe_allow_pickle); anything else,
# LangGraph's legacy "json" above all (its reviver constructs objects without the
# allowlist), is refused before a serde sees it
LOADED_SERDE_TYPES = PLAIN_SERDE_TYPES | {"msgpack"}


def rename_main(data: bytes) -> bytes:
    """msgpack whose types named ``__main__.X`` are named by the main module's importable
    name (``typenames.main_module_name``), so another program can read them; unchanged when
    that name cannot be told or no type is named so."""
    if b"_" not in data or b"__main__" not in data:  # one byte first: memchr, for big values
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
        allowlist: Collection[TypeKey] = (),
        classes: Mapping[TypeKey, type] | None = None,
        unsafe_allow_pickle: bool = False,
        fix: Fix | None = None,
    ) -> None:
        """``classes``: allowed types known as class objects (a graph's own, from its schemas),
        constructed as they are, without importing: a class defined inside a function has no
        importable name."""
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
        self._allowed: set[TypeKey] = set(SAFE_TYPES) | {tuple(a) for a in allowlist}
        if isinstance(allowed, (set, frozenset)):  # an explicit list; True (allow all) is not one
            self._allowed |= {tuple(a) for a in allowed}
        self.classes: dict[TypeKey, type] = dict(classes or {})
        self._allowed |= set(self.classes)
        self._allowed = with_main_alias(self._allowed)
        # what loads values: the serde, with LangGraph's lenient ext hook made strict
        self._loader: SerializerProtocol = strict_loader(inner, frozenset(self._allowed), self.classes)
        # the last long list of strings (or string) this codec packed itself, its bytes as
        # returned, the characters of its strings and what was packed (``strings_of``);
        # replaced by the next, read by identity: safe across threads
        self._exact: tuple[Any, bytes, int, str | list[str]] | None = None
        # the last array the redactor returned, with its item count and items (``split_of``),
        # read by identity as ``_exact``
        self._split: tuple[bytes, tuple[int, bytes]] | None = None
        self._packs_strings = type(serde) is JsonPlusSerializer

    @property
    def allowed(self) -> frozenset[TypeKey]:
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
        tree = msgpack_to_tree(data)
        found = refusals(tree, changes_only=True) if b"langchain_core.messages" in data else []
        if found:  # values are checked as they are shared (core/format/storing.py); metadata, items here
            where, refusal = found[0]
            why = f"a message the app would read back as another: {refusal.text()}"
            raise InvalidWriteError(kind, target, pointer + where, why)
        return tree

    def strings_of(self, value: Any, data: bytes) -> tuple[str | list[str], int] | None:
        """When ``data`` is this very ``value``'s msgpack as ``packed_strings`` made it,
        unchanged since (nothing renamed, nothing redacted): its tree (the string, or the copy
        of the list that was checked and packed, which nothing else holds) and the characters
        of its strings (its weight's text); else None."""
        got = self._exact
        return (got[3], got[2]) if got is not None and got[0] is value and got[1] is data else None

    def split_of(self, data: bytes) -> tuple[int, bytes] | None:
        """``msgpack_array_split(data)``, taken from the redactor when ``data`` is the very
        array it returned last (it split it already; the items are a copy)."""
        got = self._split
        return got[1] if got is not None and got[0] is data else msgpack_array_split(data)

    def _dumps(
        self, serde: SerializerProtocol, value: Any, kind: str, target: str, pointer: str
    ) -> tuple[str, bytes]:
        strings = packed_strings(value) if serde is self.serde and self._packs_strings else None
        packed = strings[0] if strings is not None else None
        try:
            type_, data = ("msgpack", packed) if packed is not None else serde.dumps_typed(value)
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
                data, split = self.redactor.redact_msgpack_split(data)
                if split is not None:
                    self._split = (data, split)
        if strings is not None and data is packed:
            self._exact = (value, data, strings[1], strings[2])
        return type_, data

    # -- decode -------------------------------------------------------
    @property
    def revives_plain_trees(self) -> bool:
        """True when a tree naming no types can skip the serde (JsonPlusSerializer only)."""
        return self._checks_allowlist

    def check_allowed(self, tree: Any, where: str) -> None:
        """Refuse, before any import, a tree naming a type outside the allowlist."""
        self.check_types(named_types(tree), where, lambda key: type_pointer(tree, key))

    def check_types(
        self, types: Any, where: str, locate: Callable[[TypeKey], str | None] | None = None
    ) -> None:
        """Refuse any named type outside the allowlist, whatever the serde would allow;
        ``locate`` tells where in its file a refused type is named."""
        origins = getattr(types, "origins", {})

        def at(key: TypeKey) -> str:
            origin = origins.get(key)
            return f"{where}, named in {origin}" if origin and origin not in where else where

        for key in types:
            if key[0] == EXT_MARK:
                raise UnrevivableValueError(
                    f"{at(key)}: unknown msgpack extension {key[1]} cannot be revived"
                )
            if len(key) == 3 and key not in SAFE_METHODS:
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

    def refused_types(self, types: Collection[TypeKey]) -> list[TypeKey]:
        """The (module, name) of ``types`` this codec may not construct, in order."""
        return refused_types(self._allowed, types)

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
            found = refusals(tree, changes_only=True)
            if found:  # as a stored tree is (core/format/entries.py): the views cannot show another text
                pointer, refusal = found[0]
                raise UnrevivableValueError(f"{where}: at {pointer}: message refused: {refusal.text()}")
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

    def revive(self, entry: ValueEntry, where: str, *, readable: bool = False) -> Any:
        """A resolved value (core/format/entries.py) as a Python value, refusing (before any import)
        types outside the allowlist; ``where`` names it in errors.

        Every kind of stored payload passes these checks before the serde sees it: a JSON tree
        (``readable``: metadata, which is never encrypted) by the types it names, a base64
        payload by ``loads`` (decrypted, parsed and checked, or refused). A list taken from
        the values index that fails is made again from its files, whose error names the
        file and pointer (core/bodyindex.py)."""
        try:
            return self._revive(entry, where, readable)
        except UnrevivableValueError as exc:
            if entry.rebuild is None:
                raise
            failed = exc
        value = self._revive(entry.rebuild(), where, readable)  # raises what the files say
        _log.warning(  # as an error's text is: secrets masked, control characters escaped
            "%s: the list the values index held did not revive (%s); read from the files, and "
            "written down again",
            safe_message(where),
            safe_message(str(failed)),
        )
        return value

    def _revive(self, entry: ValueEntry, where: str, readable: bool) -> Any:
        if not readable and (entry.raw is None or "+" not in entry.raw[0]):
            self.refuse_plaintext(where)
        self.check_types(entry.types, where, lambda key: locate_type(entry, key))
        if entry.raw is not None:
            return self.loads(entry.raw, where, entry.locate)
        if not entry.is_list and entry.whole is None:  # None ({"json": null}): as "null" always was
            return None
        if not entry.types and self.revives_plain_trees:
            try:
                return plain_value(entry.tree)
            except (ValueError, TypeError, KeyError) as exc:
                raise UnrevivableValueError(f"{where}: malformed value: {exc}") from exc
        try:
            typed = entry.typed()
        except FileFormatError as exc:
            raise UnrevivableValueError(f"{where}: {exc}") from exc
        return self.loads_checked(typed[1], where, entry.locate)

    def revive_tree(self, tree: Any, where: str, file: str = "", root: str = "") -> Any:
        """A readable tree (metadata, checkpoint extras, a value shown): kept readable even
        when the serde encrypts. ``file`` and ``root`` (its pointer there) let an error name
        where inside it a type rejected its data."""
        entry = ValueEntry(empty=False, whole=tree, types=frozenset(named_types(tree)), where=where)
        entry.file, entry.root = file, root
        return self.revive(entry, where, readable=True)


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
    allowed: Collection[TypeKey], classes: Mapping[TypeKey, type], *, others: bool = True
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
            if code not in CONSTRUCTOR_CODES:
                raise ValueError(f"unknown msgpack extension {code}")
            module, name, arg = payload[0], payload[1], payload[2]
            label = f"{module}.{name}"
            if code == EXT_METHOD:
                method = payload[3]
                label = f"{label}.{method}"
                if (module, name, method) not in SAFE_METHODS:
                    if not others:
                        return _NOT_REVIVED
                    raise ValueError("the method is not in LangGraph's safe msgpack methods")
                return getattr(getattr(import_named(module), name), method)(arg)
            if not allows(allowed, module, name):
                if not others:
                    return _NOT_REVIVED
                raise ValueError("not in the msgpack allowlist")
            cls = classes.get((module, name)) or allowed_class(allowed, module, name)
            if code == EXT_SINGLE:
                if isinstance(cls, type) and issubclass(cls, (set, frozenset)) and isinstance(arg, list):
                    # msgpack turned tuple members into lists; LangGraph's hook then fails and
                    # hands back the list: the set is what was stored, so rebuild its tuples
                    return cls(hashable(member) for member in arg)
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
        code in CONSTRUCTOR_CODES
        and isinstance(payload, list)
        and len(payload) >= (4 if code == EXT_METHOD else 3)
        and is_name(payload[0])
        and is_name(payload[1])
    )


class NotImportableError(Exception):
    """An allowed type whose module this program cannot import."""


def import_named(module: str) -> ModuleType:
    """``importlib.import_module``, except that the main module's importable name is the
    running ``__main__`` when nothing imported it under that name: importing the script again
    would run it a second time and make second copies of its classes."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    if module == main_module_name() and MAIN in sys.modules:
        return sys.modules[MAIN]
    return importlib.import_module(module)


def allowed_class(allowed: Collection[TypeKey], module: str, name: str) -> Any:
    """The class an allowed (module, name) names. Allowed only by ``module:*``, it must be a
    class defined in that module: not a function, nor a name the module imported."""
    try:
        home = import_named(module)
    except ImportError as exc:
        raise NotImportableError(f"cannot import {module}.{name} ({type(exc).__name__}: {exc})") from exc
    found = getattr(home, name)
    if (module, name) in allowed:
        return found
    if not (isinstance(found, type) and found.__module__ == home.__name__):
        raise ValueError(f"{module}:* allows only the classes defined in {module}")
    return found


def strict_loader(
    serde: SerializerProtocol, allowed: frozenset[TypeKey], classes: Mapping[TypeKey, type]
) -> Any:
    """A copy of ``serde`` that loads msgpack through ``strict_ext_hook`` (an
    ``EncryptedSerializer`` still decrypts first). A serde of another kind, or one given its
    own ext hook, is returned as it is: reviving is then entirely its business."""
    if isinstance(serde, EncryptedSerializer):
        inner = strict_loader(serde.serde, allowed, classes)
        if inner is serde.serde:
            return serde
        encrypted = copy.copy(serde)
        encrypted.serde = inner
        return encrypted
    if not isinstance(serde, JsonPlusSerializer) or has_custom_ext_hook(serde):
        return serde
    plain = copy.copy(serde)
    set_ext_hook(plain, strict_ext_hook(allowed, classes))
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


def locate_type(entry: Any, key: TypeKey) -> str | None:
    """ "file at pointer" of the first value naming type ``key`` in a ``store.ValueEntry``."""
    if entry.tree is None:
        return None
    index = type_index(entry.tree, key)
    return None if index is None else entry.locate(index)  # type: ignore[no-any-return]


_SAFE_ONLY_HOOK = strict_ext_hook(SAFE_TYPES, {}, others=False)


def check_revival(tree: Any) -> tuple[str, str] | None:
    """Construct the types of a tree that LangGraph itself ships (messages, datetimes,
    ``Send``, ...) strictly, importing nothing else: the first one that rejects its stored
    data, as (JSON pointer inside the tree, reason), or None. For ``validate``, which has no
    graph and so none of the graph's own types."""
    if not any(key[0] not in MARKS for key in named_types(tree)):
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


def reader_codec(allowlist: Collection[TypeKey] = (), fix: Fix | None = None) -> ValueCodec:
    """The codec a reader without a graph revives with (the command line's show, diff,
    render): LangGraph's default serde under the strict policy, LangGraph's safe types plus
    ``allowlist``; ``fix`` tells how to allow a refused type."""
    return ValueCodec(JsonPlusSerializer(), allowlist=allowlist, fix=fix)
