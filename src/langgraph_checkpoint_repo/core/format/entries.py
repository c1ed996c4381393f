"""A resolved value (``ValueEntry``) and how one is built from a stored body.

Invariants:

* an entry records every file it was derived from (``deps``, its own first), so a cache
  reuses it only while all of them are unchanged (caches.py);
* an append entry shares its base: a chain holds each item's msgpack bytes once, not once
  per link, and its whole list is joined back up without recursion;
* an append is made only onto a base that holds exactly ``base_length`` items, else the
  error names the file whose list it is.
"""

from __future__ import annotations

import base64
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import ormsgpack

from ..caches import Dep
from ..errors import FileFormatError
from .chains import MAX_APPEND_DEPTH, too_long
from .markers import is_null_payload
from .messages import MESSAGE_TYPES, refusals
from .objects import weight_problem
from .packed import msgpack_array_header, msgpack_array_split
from .tree import TypeSet, alone_type, ext_pointer, msgpack_to_tree, named_types, tree_to_msgpack


@dataclass(kw_only=True)
class ValueEntry:
    """A resolved value: its full JSON tree (or raw serde bytes) and the types it names."""

    empty: bool
    # the full JSON tree of a whole value the serde wrote as msgpack; an append's is made from
    # its chain when asked (``tree``)
    whole: Any = None
    raw: tuple[str, bytes] | None = None  # (serde type, bytes) for everything else
    types: frozenset[tuple[str, ...]] = frozenset()
    depth: int = 0  # append-chain depth: 0 for a full value
    where: str = ""
    base: ValueEntry | None = None  # for appends: the entry this one extends
    items: list[Any] | None = None  # for appends: the appended items
    # msgpack of this entry's own items (no array header): every item of a whole list, only
    # the appended ones of a link, so a chain holds each item's bytes once, not once per link
    _body: bytes | None = None
    file: str = ""  # the file holding this entry's own tree (an append's items)
    root: str = ""  # the JSON pointer of that tree in the file
    # every file the entry was derived from: its own first, then a large file, then the base
    # chain's (see Dep); the entry is reused only while all of them are unchanged
    deps: tuple[Dep, ...] = ()
    # (arrays and objects, values, text) of ``tree`` (objects.weight_problem); None: not known
    weight: tuple[int, int, int] | None = None
    # the folders of ``deps``, asked about at each reuse (resolve.ValueResolver): made when
    # first asked, not once per reuse from every dep (a chain's are dozens of files, few folders)
    folders: tuple[Path, ...] | None = None
    # the folders of the files its thread's objects were taken from (resolve.ValueResolver:
    # the one set the thread's expansions add to): a message reused by its name is reused
    # only while the folder it came from is clear too
    homes: dict[str, Path] | None = None
    # taken, or built on a list taken, from the values index (bodyindex.py): its locations
    # are the line's, so an error reviving it is made again from the files (``rebuild``)
    derived: bool = False
    rebuild: Callable[[], ValueEntry] | None = None

    @property
    def tree(self) -> Any:
        """The full JSON tree. An append's is its chain's lists joined, made at each ask and
        not kept: every checkpoint of a long conversation keeps its entry, and one list of all
        the items in each held every item again per checkpoint (64 MB of pointers in the
        entries of a 1,000-turn thread)."""
        if self.base is None or self.items is None:
            return self.whole
        parts: list[list[Any]] = []
        node: ValueEntry = self
        while node.base is not None and node.items is not None:
            parts.append(node.items)
            node = node.base
        out = list(node.whole)
        for part in reversed(parts):
            out.extend(part)
        return out

    @property
    def is_list(self) -> bool:
        """Whether the value is a list (an append's always is), without making its tree."""
        return (self.base is not None and self.items is not None) or isinstance(self.whole, list)

    @property
    def count(self) -> int:
        """How many items a list value holds, without making its tree."""
        n, node = 0, self
        while node.base is not None and node.items is not None:
            n += len(node.items)
            node = node.base
        return n + node.own_count()

    def own_count(self) -> int:
        """The items of a whole list."""
        return len(self.whole)

    @property
    def checkable(self) -> bool:
        """True when every file it comes from can be checked for a change (see ``refresh``)."""
        return all(key is not None for _, key, _ in self.deps)

    def locate(self, index: int) -> str | None:
        """ "file at pointer" of the ``index``-th extension value of the tree (the order
        ``tree.ext_pointer`` counts): for a rebuilt list, in the link of the chain holding it."""
        if self.tree is None:
            return None
        pointer = ext_pointer(self.tree, index)
        if pointer is None:
            return None
        entry = self
        while entry.base is not None and entry.base.is_list:
            head, _, rest = pointer[1:].partition("/")
            below = entry.base.count
            if int(head) >= below:
                pointer = f"/{int(head) - below}" + (f"/{rest}" if rest else "")
                break
            entry = entry.base
        return f"{entry.file} at {entry.root}{pointer}" if entry.file else None

    def typed(self) -> tuple[str, bytes]:
        """What the serde's loads_typed takes; msgpack is rebuilt lazily and incrementally."""
        if self.raw is not None:
            return self.raw
        if self.is_list:
            return ("msgpack", msgpack_array_header(self.count) + self.list_body())
        self.check_messages(self.whole)
        return ("msgpack", _tree_bytes(self.whole, self.where))

    def check_messages(self, tree: Any) -> None:
        """Refuse (naming the file and pointer) a message LangChain would build as another
        message than every view shows (core/format/messages.py); one it refuses to build at all is
        left to the serde, whose strict read says why. ``tree``: this entry's own tree or
        items, checked before they are turned into msgpack (once per link of a list)."""
        if not self.types or not any(key[:2] in MESSAGE_TYPES for key in self.types):
            return
        found = refusals(tree, changes_only=True, alone=alone_type)
        if found:
            inner, refusal = found[0]
            raise FileFormatError(
                self.file or self.where,
                f"{self.root}{inner}",
                f"message refused: {refusal.text()}; the views show another message than the app "
                "would load (docs/format.md, Messages)",
            )

    def keep_body(self, body: bytes) -> None:
        """The msgpack of a whole list's items, made (and its messages checked) before: what
        ``list_body`` would make of ``whole``, which it makes again if this is let go."""
        self._body = body
        if len(body) >= BIG_BODY:
            KEPT_BODIES.used(self, len(body))

    def list_body(self) -> bytes:
        """The msgpack of a list's items without the array header (appends reuse the base's).

        Iterative, not recursive: a chain as long as ``MAX_APPEND_DEPTH`` links is walked
        down to its whole list and joined back up without growing the stack.
        """
        parts: list[bytes] = []
        node: ValueEntry | None = self
        while node is not None:
            link = node.base is not None and node.items is not None
            body = node._body
            if body is None:
                own: list[Any] = node.items if link and node.items is not None else node.whole
                node.check_messages(own)
                body = node._body = _items_body(own, node.where)
            if len(body) >= BIG_BODY:
                KEPT_BODIES.used(node, len(body))
            parts.append(body)
            node = node.base if link else None
        parts.reverse()
        return b"".join(parts)


class IndexedEntry(ValueEntry):
    """A whole list taken from the values index (core/bodyindex.py): its msgpack body kept,
    its tree (JSON) parsed only when asked. A fresh read revives the body and never looks at
    the tree; parsed there, its objects, with the messages revived, set off a full collection
    of the garbage collector (60 ms of a 1,000-turn read)."""

    def __init__(self, *, tree_json: bytes, items: int, sources: Any, **fields: Any) -> None:
        self._tree_json: bytes | None = tree_json
        self._items = items
        self._whole: Any = None
        # the files it was read from besides ``deps`` (the holders of its objects, the
        # records the walk read): checked when taken from the line, and carried into a line
        # written of a list built on it
        self.sources = sources
        super().__init__(**fields)
        self.derived = True

    @property  # type: ignore[override]
    def whole(self) -> Any:
        raw = self._tree_json
        if raw is not None:
            try:
                tree = orjson.loads(raw)
            except orjson.JSONDecodeError:
                tree = None
            if not isinstance(tree, list) or len(tree) != self._items:  # not what was written
                if self.rebuild is None:
                    raise FileFormatError(self.where, "/", "the values index holds a damaged list")
                tree = self.rebuild().tree
            self._whole, self._tree_json = tree, None
        return self._whole

    @whole.setter
    def whole(self, value: Any) -> None:
        self._whole = value

    @property
    def is_list(self) -> bool:
        return True

    def own_count(self) -> int:
        return self._items


#: the most bytes of big list bodies (a whole list's msgpack, the base of an append chain)
#: the entries of one process keep: every whole copy of a long conversation (one every
#: ``snapshot_every`` turns) is some checkpoint's kept entry, and each kept its own body, so
#: a 1,000-turn thread held 30 MB of them and a 3,000-turn one would hold nine times that.
#: Past it, the least recently used let theirs go; one asked again is made (and checked)
#: again, about 30 ms for 4,000 messages. The latest chain of up to this many bytes of active
#: conversations is never made again.
WHOLE_BODY_BYTES = 64 * 1024 * 1024
BIG_BODY = 64 * 1024  # a body this big counts against it; smaller ones stay with their entry


class KeptBodies:
    """The entries keeping a big body, least recently used first, within ``budget`` bytes.

    Held weakly: an entry the caches let go takes its body with it."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.total = 0
        self._held: OrderedDict[int, tuple[weakref.ref[ValueEntry], int]] = OrderedDict()
        self._lock = threading.RLock()  # a weakref callback may run while the lock is held

    def used(self, entry: ValueEntry, size: int) -> None:
        key = id(entry)
        with self._lock:
            got = self._held.get(key)
            if got is not None and got[0]() is entry:
                self._held.move_to_end(key)
                return
            if got is not None:  # an entry gone whose id is taken again
                self.total -= got[1]
            self._held[key] = (weakref.ref(entry, partial(self._gone, key)), size)
            self.total += size
            while self.total > self.budget and len(self._held) > 1:
                _, (ref, n) = self._held.popitem(last=False)
                self.total -= n
                old = ref()
                if old is not None:
                    old._body = None

    def _gone(self, key: int, ref: weakref.ref[ValueEntry]) -> None:
        with self._lock:
            got = self._held.get(key)
            if got is not None and got[0] is ref:
                del self._held[key]
                self.total -= got[1]


KEPT_BODIES = KeptBodies(WHOLE_BODY_BYTES)


def entry_from_node(node: dict[str, Any], where: str, *, typed: bool = True) -> ValueEntry:
    """The entry of a stored value node (``json`` tree, or ``serde`` + ``base64``).
    ``typed=False``: without the types it names (the checks judge those in the stored
    trees, and only ask whether a value resolves). None in its older spelling
    (``{"serde": "null", "base64": ""}``) is the entry of ``{"json": null}``: every reader
    and view sees one value whichever release wrote it."""
    if "json" in node:
        tree = node["json"]
        types = frozenset(named_types(tree) if typed else ())
        return ValueEntry(empty=False, whole=tree, types=types, where=where)
    if is_null_payload(node):  # the older spelling of {"json": null}
        return ValueEntry(empty=False, whole=None, where=where)
    raw = (node["serde"], base64.b64decode(node["base64"], validate=True))
    types = frozenset()
    if raw[0] == "msgpack":  # never written so (msgpack is stored as json), but the schema allows it:
        try:  # check the types it names against the allowlist like any other tree
            types = frozenset(named_types(msgpack_to_tree(raw[1])))
        except (ValueError, TypeError, RecursionError):
            pass  # not msgpack: the serde fails on it the same way, and that error is reported
    return ValueEntry(empty=False, raw=raw, types=types, where=where)


def append_entry(
    channel: str,
    app: dict[str, Any],
    path: Path,
    pointer: str,
    where: str,
    base: ValueEntry | None,
    items_weight: tuple[int, int, int] | None = None,
    *,
    typed: bool = True,
) -> ValueEntry:
    """A list stored as the items appended onto ``base``; a base that no longer holds what
    the append was made on names the file whose list it is (edited, or the wrong link).

    The whole list is bounded like any one value (``objects.weight_problem``): each link may
    name the same big objects again, so 1,024 small files could otherwise rebuild a value of
    a thousand times what one value may be; the writer refuses the append that would pass it."""
    base = _append_base(channel, app, path, pointer, base)
    items = app["items"]
    types = _appended_types(base, items, where) if typed else TypeSet()
    weight = appended_weight(base.weight, items_weight)
    problem = weight_problem(weight) if weight is not None else None
    if problem is not None:
        why = f"the list rebuilt from its append chain {problem}"
        raise FileFormatError(str(path), f"{pointer}/append", why)
    entry = ValueEntry(
        empty=False,
        types=types,
        depth=base.depth + 1,
        where=where,
        base=base,
        items=items,
        file=str(path),
        root=f"{pointer}/append/items",
        deps=base.deps,
        weight=weight,
        derived=base.derived,
    )
    return entry


def _append_base(
    channel: str, app: dict[str, Any], path: Path, pointer: str, base: ValueEntry | None
) -> ValueEntry:
    """``base``, when an append may be made onto it: resolved, a list of exactly the length
    the append was made on, and not the end of a chain already as long as one may be; else
    the error names the file whose list it is."""
    referrer = f"{path} at {pointer}/append"
    if base is None:
        raise FileFormatError(str(path), f"{pointer}/append/base", "base was not resolved")
    if base.empty or not base.is_list:
        raise FileFormatError(
            base.file or str(path),
            base.root or f"{pointer}/append/base",
            f"is not a list value, but {referrer} appends to it",
        )
    held = base.count
    if held != app["base_length"]:
        raise FileFormatError(
            base.file or str(path),
            base.root or f"{pointer}/append/base_length",
            f"the list of channel {channel!r} at {app.get('base', base.where)} holds {held} items "
            f"(rebuilt from its append chain), but {referrer}/base_length says "
            f"{app['base_length']}: an item removed or added by hand? Put it back "
            "(docs/format.md, Editing files by hand)",
        )
    if base.depth + 1 > MAX_APPEND_DEPTH:
        raise too_long(path, pointer)
    return base


def _appended_types(base: ValueEntry, items: Any, where: str) -> TypeSet:
    """The types the appended list names: its base's and its items', each with where it was
    first named (the base's own origins kept), so a refusal names the file that brought it
    (as ``entry_from_node`` does for a whole value)."""
    item_types = named_types(items)
    types = TypeSet(base.types | frozenset(item_types))
    types.origins = dict.fromkeys(base.types, base.where)
    types.origins.update(getattr(base.types, "origins", {}))
    types.origins.update((t, where) for t in item_types if t not in types.origins)
    return types


def appended_weight(
    base: tuple[int, int, int] | None, items: tuple[int, int, int] | None
) -> tuple[int, int, int] | None:
    """The weight of a list with ``items`` (the weight of the appended list) appended onto a
    list of weight ``base``: the appended list itself is no part of the value."""
    if base is None or items is None:
        return None
    return base[0] + items[0] - 1, base[1] + items[1] - 1, base[2] + items[2]


def _tree_bytes(tree: Any, where: str) -> bytes:
    try:
        return tree_to_msgpack(tree)
    except (ValueError, TypeError, KeyError, ormsgpack.MsgpackEncodeError) as exc:
        raise FileFormatError(where, "/", f"value cannot be rebuilt: {exc}") from None


def _items_body(items: list[Any], where: str) -> bytes:
    packed = _tree_bytes(items, where)
    split = msgpack_array_split(packed)
    assert split is not None
    return split[1]
