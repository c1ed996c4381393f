"""How a JSON node is stored: shared subtrees to ``objects/``, a node still too big to
``large/``. One rule for every writer: a put (values.py) and prune's compaction (plans.py)
store a value the same way, so the same value becomes the same files."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..durable import json_size
from ..errors import InvalidWriteError
from ..files import Files
from .canonical import digest_node
from .objects import (
    REF,
    Convert,
    Cut,
    Frame,
    KnownChunk,
    Locate,
    Sharer,
    Weight,
    location_of,
    nesting_problem,
    ref_nodes,
    weight_problem,
)
from .validation import SCHEMA_VERSION
from .vouched import Vouching

Prepared = list[tuple[Path, bytes]]  # files validated and serialised, to write in one batch

#: the saver's default for ``large_value_bytes``; what prune uses for the values it compacts
LARGE_VALUE_BYTES = 8 * 1024


@dataclass
class Host:
    """What the file being written holds of its own (format 4): the objects it introduces,
    how to find the objects stored before (``locate``: a checkpoint's objects or ``objects/``)
    and the adapter's rule for message inputs (``convert``). One per file: a message two of
    its values hold is in it once."""

    locate: Locate | None = None
    convert: Convert | None = None
    objects: dict[str, Any] = field(default_factory=dict)
    ticket: int = 0  # when it was begun (ThreadStore.Pending)
    # checkpoints being written beside it whose objects it refers to: to wait for first
    waits: dict[Any, tuple[str, str]] = field(default_factory=dict)
    # the height of each item of the last list shared item by item (``shared_tree(items=True)``)
    item_heights: list[int] = field(default_factory=list)
    # the messages its values hold found not refused (``Sharer``: each is read once a file)
    checked: set[tuple[bytes, Any]] = field(default_factory=set)

    def adopt(
        self, store: Files, thread_id: str, new: dict[str, Any], large_value_bytes: int, large: Prepared
    ) -> None:
        """Take the objects a value introduced; one over ``large_value_bytes`` gets a file of
        its own in ``objects/`` instead (the file stays small), with what it refers to without
        ``$in`` (read from ``objects/`` then)."""
        apart = {d for d, tree in new.items() if json_size(tree) > large_value_bytes}
        todo = list(apart)
        while todo:
            held = todo.pop()
            for node in ref_nodes(new[held] if held in new else self.objects.get(held)):
                digest = node[REF]
                held_here = digest in new or digest in self.objects
                if location_of(node) is None and digest not in apart and held_here:
                    apart.add(digest)
                    todo.append(digest)
        for digest in apart:
            tree = new.get(digest, self.objects.get(digest))
            _object_file(store, thread_id, digest, tree, large)
        for digest, tree in new.items():
            if digest not in apart:
                self.objects[digest] = tree


def _object_file(store: Files, thread_id: str, name: str, tree: Any, large: Prepared) -> None:
    """``objects/<name>.json`` joins ``large`` unless it is there, whole, or on its way."""
    path = store.layout.object_path(thread_id, name)
    if any(p == path for p, _ in large) or store.intact(path, "object"):
        return
    doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": name, "tree": tree}
    large.append(store.prepare("object", doc, path))


def shared_tree(
    store: Files,
    thread_id: str,
    tree: Any,
    large: Prepared,
    where: tuple[str, str] | None = None,
    *,
    items: bool = False,
    host: Host | None = None,
    embed: bool = True,
) -> tuple[Any, Weight, dict[str, Any]]:
    """The tree with its shared subtrees replaced by references, the weight of the whole tree
    (what a reader expands), and the objects it introduces. With a ``host`` that ``embed``s,
    they are for the host to take (``Host.adopt``); else each gets its file in ``objects/``
    (joining ``large``, written before whatever refers to them).

    Refused (``InvalidWriteError``, nothing written) when a reader would refuse it: the
    same rules, ``weight_problem`` and ``nesting_problem``, hold on both sides."""
    sharer, out = _shared(thread_id, tree, where, items=items, host=host, embed=embed)
    weight = (sharer.containers, sharer.values, sharer.text)
    if host is None or not embed:
        _object_files(store, thread_id, sharer.objects, large)
        return out, weight, {}
    return out, weight, sharer.objects


def _shared(
    thread_id: str, tree: Any, where: tuple[str, str] | None, *, items: bool, host: Host | None, embed: bool
) -> tuple[Sharer, Any]:
    """One walk of the tree (``Sharer``), refused as a reader would refuse what it stores."""
    if host is not None:
        sharer = Sharer(host.locate, host.convert, host.objects if embed else None, host.checked)
    else:
        sharer = Sharer()
    out = sharer.share_items(tree) if items else sharer.share(tree)
    if host is not None:
        host.item_heights = sharer.item_heights
    weight = (sharer.containers, sharer.values, sharer.text)
    problem = weight_problem(weight) or nesting_problem(sharer.height)
    if problem is not None:  # each file would be small; the value read back would not be
        why = problem.replace("expands", "would expand").replace("objects refer", "objects would refer")
        target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
        raise InvalidWriteError("value", target, pointer, why)
    if sharer.refused is not None:  # a read refuses it (core/format/entries.py): never written
        target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
        why = f"a message the app would read back as another: {sharer.refused.text()}"
        raise InvalidWriteError("value", target, pointer, why)
    return sharer, out


def _strings_weighed(
    thread_id: str, tree: str | list[str], text: int, where: tuple[str, str] | None
) -> tuple[Weight, str | list[str]]:
    """A string, or a list of exact strings, of ``text`` characters: what the sharer makes of
    it (``Sharer._share``: nothing to share) and its weight, told without a pass over it (a
    50,000-item list's first put joined its strings again to count them), refused as
    ``_shared`` refuses a value too heavy. The list is the codec's copy, the one it checked
    and packed (``serde.packed_strings``), which nothing else holds: stored as it is, not
    copied again (the sharer copies a list because it may be the app's)."""
    weight = (1, 1 + len(tree), text) if type(tree) is list else (0, 1, text)
    problem = weight_problem(weight)
    if problem is not None:
        target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
        raise InvalidWriteError("value", target, pointer, problem.replace("expands", "would expand"))
    return weight, tree


def _surely_over(sharer: Sharer, limit: int) -> int:
    """A size past ``limit`` when the shared tree's compact JSON is surely longer, else 0 (the
    caller measures it). A tree that holds no reference (height 0: the sharer replaced
    nothing) is the tree it weighed, and its JSON holds every character of its strings and
    keys, each one byte at least: more characters than ``limit`` need no serialising to
    tell (a 50,000-item list's first put serialised it whole for its length, 0.5 ms; a 5 MB
    string's, more)."""
    return sharer.text if sharer.height == 0 and sharer.text > limit else 0


def _object_files(store: Files, thread_id: str, objects: dict[str, Any], large: Prepared) -> None:
    for digest, obj in objects.items():
        _object_file(store, thread_id, digest, obj, large)


class Stored(NamedTuple):
    """A node as stored (``stored_value``), the weight of its shared tree (None: no JSON tree),
    and, for a node in ``large/`` whose tree refers to no object, that file: the same bytes
    are stored the same way from any file of the thread (``LargeValues``)."""

    node: dict[str, Any]
    weight: Weight | None
    alone: Path | None = None


def chunked_list(
    host: Host,
    thread_id: str,
    refs: list[Any],
    heights: list[int],
    where: tuple[str, str] | None = None,
    known: Mapping[str, KnownChunk] | None = None,
    frame: Frame | None = None,
) -> tuple[Any, dict[str, Any], dict[str, KnownChunk], list[Cut]]:
    """A whole list made of items already shared, as ``shared_tree`` stores a list whose
    items came back as ``refs`` (``Sharer.chunk_refs``; ``known`` and ``frame``: the chunks
    of an earlier copy and how it cut the list): the list, the chunk objects it introduces,
    for the host to take, the chunks it looked at (``Sharer.chunked``) and how it was cut
    (``Sharer.cuts``). Refused as ``shared_tree`` refuses a list nested too deep."""
    sharer = Sharer(host.locate, host.convert, host.objects)
    out, height = sharer.chunk_refs(refs, heights, known, frame)
    problem = nesting_problem(height)
    if problem is not None:
        target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
        why = problem.replace("objects refer", "objects would refer")
        raise InvalidWriteError("value", target, pointer, why)
    return out, sharer.objects, sharer.chunked, sharer.cuts


def stored_node(
    store: Files,
    thread_id: str,
    node: dict[str, Any],
    large_value_bytes: int,
    large: Prepared,
    where: tuple[str, str] | None = None,
    host: Host | None = None,
) -> tuple[dict[str, Any], Weight | None]:
    """``stored_value``'s node and weight."""
    got = stored_value(store, thread_id, node, large_value_bytes, large, where, host)
    return got.node, got.weight


def stored_value(
    store: Files,
    thread_id: str,
    node: dict[str, Any],
    large_value_bytes: int,
    large: Prepared,
    where: tuple[str, str] | None = None,
    host: Host | None = None,
    strings: int | None = None,
) -> Stored:
    """A node as stored: its messages and long lists shared (format 4: into the ``host``
    file; without one, into ``objects/``), then, when still over ``large_value_bytes``, the
    node in a file named by its content hash (``{"large": digest}``), its objects in
    ``objects/`` (a ``large/`` file is shared by whoever refers to it). Also the weight of
    the shared tree (None for a node with no JSON tree). ``where``: (what is written, JSON
    pointer), for a refusal's message. ``strings``: the caller knows the tree to be a string
    or a list of exact strings, of so many characters (``_strings_weighed``).

    The tree is walked once: the references are the same whether its objects end up in the
    host file or in ``objects/`` (``Sharer.found`` has those the host held already)."""
    weight: Weight | None = None
    size: int | None = None
    refers = False
    if "json" in node and strings is not None:
        weight, shared = _strings_weighed(thread_id, node["json"], strings, where)
        node = {**node, "json": shared}
        if host is not None:
            host.item_heights = []  # as ``_shared`` leaves them: no item shared by itself
        size = strings if strings > large_value_bytes else json_size(node)  # as _surely_over
    elif "json" in node:
        sharer, shared = _shared(thread_id, node["json"], where, items=False, host=host, embed=True)
        weight = (sharer.containers, sharer.values, sharer.text)
        node = {**node, "json": shared}
        size = _surely_over(sharer, large_value_bytes) or json_size(node)
        if host is not None and size <= large_value_bytes:
            host.adopt(store, thread_id, sharer.objects, large_value_bytes, large)
            return Stored(node, weight)
        _object_files(store, thread_id, sharer.found, large)
        refers = sharer.height > 0
    if (json_size(node) if size is None else size) <= large_value_bytes:
        return Stored(node, weight)
    digest = digest_node(node)
    path = store.layout.large_path(thread_id, digest)
    if all(p != path for p, _ in large) and not store.intact(path, "large_value"):
        doc = {"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node}
        with Vouching(node["json"] if strings is not None and type(node["json"]) is list else None):
            large.append(store.prepare("large_value", doc, path))
    return Stored({"large": digest}, weight, None if refers else path)


class LargeValues:
    """The last few values stored in ``large/``, by their serialised bytes (a saver's, shared
    by its puts): LangGraph saves a step's writes and the checkpoint that holds them at once,
    so a channel's new value is most often the very value its ``put_writes`` has just stored.
    The ``put`` then refers to the same file without building, sharing and hashing the value
    again, while that file is intact (``Files.intact``: the one cache rule; else it is stored
    again as before). Only values whose tree refers to no object are kept: the same bytes then
    give the same tree, the same size and the same file wherever they are stored, so a value
    found here is stored exactly as it would be again (one with references may be shared
    otherwise from another file, and is stored again)."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[str, str, int, bytes], tuple[bytes, Stored]] = OrderedDict()
        self._lock = threading.Lock()

    def find(self, store: Files, thread_id: str, serde: str, data: bytes, large: Prepared) -> Stored | None:
        """What ``data`` (of the serde's type ``serde``) was stored as in the thread, if it is
        still there (or about to be: in ``large``)."""
        if type(data) is not bytes:
            return None  # a serde's bytearray is never kept
        with self._lock:
            kept = self._kept.get((thread_id, serde, len(data), data[:_KEY_BYTES]))
        if kept is None or kept[0] != data or kept[1].alone is None:
            return None
        path = kept[1].alone
        if any(p == path for p, _ in large) or store.intact(path, "large_value"):
            return kept[1]
        return None

    def keep(self, thread_id: str, serde: str, data: bytes, stored: Stored) -> None:
        """Remember a value stored alone in ``large/`` (others are not kept)."""
        if stored.alone is None or type(data) is not bytes:
            return
        key = (thread_id, serde, len(data), data[:_KEY_BYTES])
        with self._lock:
            self._kept[key] = (data, stored)
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def forget(self, thread_id: str) -> None:
        with self._lock:
            for key in [k for k in self._kept if k[0] == thread_id]:
                del self._kept[key]


_KEY_BYTES = 64  # a value's first bytes, with its length, find it among those kept
