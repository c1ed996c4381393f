"""Shared subtrees: each message, and each long list of them, stored once per thread.

A conversation's messages show up in many places at once: channel values, pending writes,
the ``Send`` packets a tool-calling agent fans out (each carrying the whole state), the
``__pregel_tasks`` channel, and every subgraph namespace that receives the state. Format 3
stores each such subtree once, in ``objects/<sha256>.json`` of the thread, and every place
that holds it keeps a reference instead (git's object store: named by content, never
rewritten, so two branches that store the same message write the same file).

The rule is a function of the tree as the writer stores it: a message is named by its
content alone (the same conversation, the same names anywhere); in format 4 a tree that holds
references to objects elsewhere carries their ``$in``/``$ns``, so its name depends on them:

* a tagged object (a ``$type`` tree: a message, a ``Send``, a dataclass ...) whose compact
  JSON, once its own parts are shared, is at least ``SHARE_BYTES`` becomes
  ``{"$ref": digest}``;
* a list of at least ``CHUNK_MIN`` references becomes ``{"$chunks": [ref, ...]}``: cut into
  chunks after every item whose digest starts below ``CUT`` (and at ``CHUNK_MAX`` items),
  each chunk an object holding a list. A list that grows only changes its last chunk, so a
  long conversation passed whole (a ``Send``, a subgraph's input) costs a few small files,
  not a copy. A level of more than ``CHUNK_MIN`` chunks is chunked again (objects holding
  ``{"$chunks": [...]}``).

Reading puts them back (``Expander``): every object is checked against its name, a missing
one names the file that refers to it, and nesting and total size are bounded so a
hand-made file cannot loop or expand without end. The size is weighed (each object once,
by its expanded weight) before anything is built, and the writer applies the very same
rules (``weight_problem``, ``nesting_problem``) to what it stores: whatever a write accepts
reads back.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import orjson

from ..errors import FileFormatError
from ..jsonread import MAX_FILE_BYTES, MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, MAX_JSON_VALUES
from .markers import CHUNKS as CHUNKS
from .markers import ID as ID
from .markers import IN as IN
from .markers import NS as NS
from .markers import PAIR as PAIR
from .markers import REF as REF
from .markers import ROLE as ROLE
from .messages import Refusal, is_message_type, read_message
from .tree import json_objects, node_types

_REF_KEYS = frozenset({REF, ID, IN, NS})
# the types of a member ``Sharer`` has nothing to do with but count (exact: a subclass of
# str or list takes the member-by-member way, as before)
_PLAIN = frozenset({str, int, float, bool, type(None)})
SHARE_BYTES = 128
CHUNK_MIN = 16
CHUNK_MAX = 32
# format 4 chunks a list of references from this many, and cuts the chunk references again
# from this many: a list a turn writes in several places (a subgraph's input, its output, a
# Send that carries the conversation) is one small top there, its chunks held once
UPPER_MIN = 4
# format 4's chunks: a cut after one item in four, at most 8 items. A list that grows
# rewrites its last chunk each time it is written whole (a subgraph's input, a Send): small
# chunks keep that small
CHUNK_MAX_4 = 8
CUT_4 = 0x40
CUT = 0x20  # first byte of a digest below this ends a chunk: one item in eight
MAX_NESTING = 64  # references inside references; real values use fewer than ten
MAX_CONTAINERS = MAX_JSON_CONTAINERS  # of a whole expanded value, as of one file
MAX_VALUES = MAX_JSON_VALUES
MAX_TEXT = MAX_FILE_BYTES  # characters of every string and key: no more than one file holds


#: how many hex digits of its sha256 name an object format 4 writes (64 bits): an object is
#: found where its reference says (a file's own objects, a checkpoint's, ``objects/``), so the
#: name only tells the objects of a thread apart and catches an edit; format 3 used all 64
NAME_HEX = 16
_DIGEST = re.compile(r"[0-9a-f]{16}|[0-9a-f]{64}")

#: what a read and validate say of a file named by its content that no longer holds it
EDITED = (
    "content does not match its sha256 name (edited by hand?): restore it (git checkout -- <file>) "
    "and make the change with `langgraph-repo edit THREAD`, which writes it as a new checkpoint"
)


def object_digest(tree: Any) -> str:
    """sha256 of a tree's compact, key-sorted JSON (hex): an object's name is its first
    ``NAME_HEX`` digits (format 3: all of it)."""
    return hashlib.sha256(orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)).hexdigest()


def names_object(name: str, tree: Any) -> bool:
    """Whether ``name`` (16 or 64 hex digits) is the name of ``tree``: a hand edit is caught."""
    return bool(_DIGEST.fullmatch(name)) and object_digest(tree).startswith(name)


def ref_of(tree: Any) -> str | None:
    """The digest a reference node names (``{"$ref": digest}``, with ``$id`` and, in format 4,
    ``$in`` and ``$ns``), else None."""
    if isinstance(tree, dict) and isinstance(tree.get(REF), str) and tree.keys() <= _REF_KEYS:
        return tree[REF] if _ref_parts_ok(tree) else None
    return None


def message_ref_of(tree: Any) -> str | None:
    """The digest a message input node names (``{"$role": r, "$ref": digest}`` or
    ``{"$pair": r, "$ref": digest}``, format 4), else None."""
    if not isinstance(tree, dict) or not isinstance(tree.get(REF), str):
        return None
    tag = ROLE if ROLE in tree else PAIR if PAIR in tree else None
    if tag is None or not isinstance(tree[tag], str) or not tree.keys() <= _REF_KEYS | {tag}:
        return None
    return tree[REF] if _ref_parts_ok(tree) else None


def any_ref_of(tree: Any) -> str | None:
    """The digest of a reference or a message input node, else None."""
    got = ref_of(tree)
    return got if got is not None else message_ref_of(tree)


def _ref_parts_ok(tree: dict[str, Any]) -> bool:
    """``$id``, ``$in`` and ``$ns`` are strings where given, and ``$ns`` only with ``$in``."""
    if len(tree) == 1:  # {"$ref": digest}: most references
        return True
    if not isinstance(tree.get(ID, ""), str) or not isinstance(tree.get(IN, ""), str):
        return False
    return NS not in tree or (isinstance(tree[NS], str) and IN in tree)


def location_of(tree: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, checkpoint id) a reference names with ``$in``, else None."""
    cid = tree.get(IN)
    return (str(tree.get(NS, "")), str(cid)) if isinstance(cid, str) else None


def object_ref(name: str, where: tuple[str, str] | None = None) -> dict[str, str]:
    """A reference to the object ``name``: in ``objects/`` when ``where`` is None, else held
    by that checkpoint (namespace, id) of the thread."""
    return {REF: name} if where is None else {REF: name, **location_ref(*where)}


def input_tag(role: str, pair: bool) -> dict[str, str]:
    """What a reference to a message input keeps of the input besides the message: its role,
    and whether it was a ``[role, content]`` pair or a ``{"role", "content"}`` object."""
    return {PAIR: role} if pair else {ROLE: role}


def is_pair_tag(tag: Mapping[str, str]) -> bool:
    return PAIR in tag


def ref_digest(node: Mapping[str, Any]) -> str:
    """The object name a reference node (one ``ref_nodes`` yields) names."""
    return str(node[REF])


def location_ref(ns: str, cid: str) -> dict[str, str]:
    """The keys a reference carries to name the checkpoint whose objects hold it."""
    return {IN: cid, NS: ns} if ns else {IN: cid}


def _without_id(tree: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A model with a string ``id`` field (a message) as shared: id null, the id apart.

    ``add_messages`` gives an id to a message that has none, so the node's write holds the
    message without an id and the channel the same message with one; stored apart from its
    id, both are one object (and a reference carries the id as ``$id``)."""
    fields = tree.get("$fields")
    if isinstance(fields, dict) and isinstance(fields.get("id"), str):
        return {**tree, "$fields": {**fields, "id": None}}, fields["id"]
    return tree, None


#: (name, whole sha256) -> the reference to an object where a writer finds it stored already:
#: with ``$in`` (a checkpoint's objects) or without (``objects/``, maybe under format 3's
#: 64-digit name); None when it is not stored (the file being written takes it)
Locate = Callable[[str, str], "dict[str, str] | None"]
#: a chunk of a list as a sharer stored it (``Sharer.chunked``): its tree, the reference to
#: it, its height
KnownChunk = tuple[Any, dict[str, str], int]
#: a node -> (its tag, the message it is the input form of) when it is a message input that
#: expands back exactly (``{"$role": "user"}``, ``{"$pair": "user"}``), else None
Convert = Callable[[Any], "tuple[dict[str, str], Any] | None"]


class Cut(NamedTuple):
    """One level of a list's chunks (the items' chunks, the chunks of those ...), in order:
    each chunk's key, its reference, its height and where it ends among the level's entries
    (the index after its last). ``settled``: how many leading chunks are referred to as a
    later file refers to them (``Sharer.cuts``: those taken from a ``Frame``)."""

    keys: list[str]
    refs: list[dict[str, str]]
    heights: list[int]
    ends: list[int]
    settled: int


class Frame(NamedTuple):
    """How a whole copy of a list was cut: the items it cut, the first ``settled`` of them as
    a later file refers to them, and each level's chunks, as a later file refers to them.
    Where a chunk ends depends on the entries up to its end alone, so a later copy of a list
    that starts with those items has the same chunks up to the last one that ends among
    them, at every level (``Sharer.chunk_refs``)."""

    items: list[Any]
    settled: int
    levels: tuple[Cut, ...]


def _text_of_strings(items: list[Any]) -> int | None:
    """The characters of ``items`` when every one is a string (``_share`` weighs each so, a
    ``str`` subclass too), else None: joined in one pass in C, which stops at the first item
    that is not a string, where ``set(map(type))`` then ``sum(map(len))`` took two."""
    if not items or type(items[0]) is not str:
        return None
    try:
        return len("".join(items))
    except TypeError:
        return None


class Sharer:
    """Replaces shared subtrees by references, collecting the objects to store.

    Format 4 keeps the objects in the file that introduces them: ``locate`` says which are
    stored already (their references name where), ``held`` which this file holds already;
    without ``locate`` (format 3's way, still used for ``large/`` values) every object goes
    to ``objects/``. ``convert`` (the adapter's, it knows LangChain) turns a message input
    (a ``{"role", "content"}`` dict, a ``[role, text]`` pair) into a reference to the message
    the channel will hold, so its text is stored once."""

    def __init__(
        self,
        locate: Locate | None = None,
        convert: Convert | None = None,
        held: Mapping[str, Any] | None = None,
        checked: set[tuple[bytes, Any]] | None = None,
    ) -> None:
        self.objects: dict[str, Any] = {}  # digest -> tree, in the order found
        # every object the trees use that is stored nowhere yet, in the order found: the new
        # ones and those ``held`` (a node too big for its file has them all in ``objects/``)
        self.found: dict[str, Any] = {}
        # of the trees shared, whole: what a reader expands (``weight_problem``)
        self.containers = self.values = self.text = 0
        self.height = 0  # objects inside objects, on the longest path (``nesting_problem``)
        self._heights: dict[str, int] = {}  # digest -> its height
        self.item_heights: list[int] = []  # of each item ``share_items`` shared, in order
        self._locate = locate
        self._convert = convert
        self._held: Mapping[str, Any] = held if held is not None else {}
        # chunks of a list stored before (``chunk_refs``' ``known``), and every chunk this
        # sharer's ``chunk_refs`` made or reused: its key -> (tree, reference, height)
        self._known: Mapping[str, KnownChunk] = {}
        self.chunked: dict[str, KnownChunk] = {}
        # each level of the list ``chunk_refs`` cut last (those a frame gave first, the rest
        # as this file refers to them)
        self.cuts: list[Cut] = []
        # the first message a read would refuse (core/format/messages.py): the writer refuses it
        self.refused: Refusal | None = None
        # messages found not refused, by their bytes without the id and the id (``checked``:
        # the file's, ``Host.checked``): the step's write holds the message the channel appends
        self._checked: set[tuple[bytes, Any]] = checked if checked is not None else set()

    def share(self, tree: Any) -> Any:
        """The tree with its shared parts replaced (a new tree; the input is not changed)."""
        out, height = self._share(tree)
        self.height = max(self.height, height)
        return out

    def _share(self, tree: Any) -> tuple[Any, int]:
        if self._convert is not None and isinstance(tree, dict | list) and tree:
            got = self._convert(tree)
            if got is not None:
                return self._message_input(tree, *got)
        self.values += 1
        if isinstance(tree, str):
            self.text += len(tree)
            return tree, 0
        if isinstance(tree, list):
            self.containers += 1
            text = _text_of_strings(tree)
            if text is not None:  # strings only: nothing to share, weighed in one pass in C
                self.values += len(tree)
                self.text += text
                return list(tree), 0
            kinds = set(map(type, tree))
            if kinds <= _PLAIN:  # nothing in it to share: counted in C
                self._count_plain(tree, kinds)
                return list(tree), 0
            items, height = [], 0
            for x in tree:
                item, h = self._share(x)
                items.append(item)
                height = max(height, h)
            least = UPPER_MIN if self._locate is not None else CHUNK_MIN
            if len(items) >= least and all(ref_of(x) is not None for x in items):
                return self._chunked(items)
            return items, height
        if isinstance(tree, dict):
            self.containers += 1
            self.values += len(tree)
            self.text += sum(map(len, tree))
            out, height = {}, 0
            kinds = set(map(type, tree.values()))
            if kinds <= _PLAIN:
                self._count_plain(list(tree.values()), kinds)
                out = dict(tree)
            else:
                for k, v in tree.items():
                    out[k], h = self._share(v)
                    height = max(height, h)
            if "$type" in out:
                anon, ident = _without_id(out)
                data = orjson.dumps(anon, option=orjson.OPT_SORT_KEYS)
                if self.refused is None and is_message_type(out) and (data, ident) not in self._checked:
                    read = read_message(out)  # once per message and id a file holds
                    if isinstance(read, Refusal) and read.changes:
                        self.refused = read
                    else:
                        self._checked.add((data, ident))
                if len(data) >= SHARE_BYTES:
                    ref = self._store(anon, height + 1, hashlib.sha256(data).hexdigest())
                    return (ref if ident is None else {**ref, ID: ident}), height + 1
            return out, height
        return tree, 0

    def _count_plain(self, members: list[Any], kinds: set[type]) -> None:
        """Weigh scalars (of the types ``kinds``) as ``_share`` weighs each: a value each, a
        string its characters."""
        self.values += len(members)
        if kinds == {str}:
            self.text += sum(map(len, members))
        elif str in kinds:
            self.text += sum(len(x) for x in members if type(x) is str)

    def _message_input(self, tree: Any, tag: dict[str, str], message: Any) -> tuple[Any, int]:
        """A message input as a reference to its message: weighed as the input it expands to."""
        containers, values, text = tree_weight(tree)
        saved = self.containers + containers, self.values + values, self.text + text
        out, height = self._share(message)
        self.containers, self.values, self.text = saved
        if ref_of(out) is None:  # a message smaller than SHARE_BYTES: stored all the same
            anon, ident = _without_id(out)
            out = self._store(anon, height + 1)
            if ident is not None:
                out[ID] = ident
            height += 1
        return {**tag, **out}, height

    def share_items(self, items: list[Any]) -> list[Any]:
        """Each item shared, the list itself kept whole (an append's ``items``); the height
        of each (``item_heights``), for ``chunk_refs`` to chunk them later as ``share`` would."""
        self.containers += 1
        self.values += 1
        out = []
        for x in items:
            shared, height = self._share(x)
            self.height = max(self.height, height)
            self.item_heights.append(height)
            out.append(shared)
        return out

    def chunk_refs(
        self,
        refs: list[Any],
        heights: list[int],
        known: Mapping[str, KnownChunk] | None = None,
        frame: Frame | None = None,
    ) -> tuple[Any, int]:
        """A whole list made of items already shared (``share_items``, this write's or an
        earlier one's), with their heights: chunked exactly as ``share`` chunks a list whose
        items came back as these references, so only its chunks are looked up, not each item
        again. ``known``: the chunks of an earlier copy of the list (``chunked``, each as a
        later file refers to it, its file unchanged): one with the same tree is referred to
        there without being hashed and looked up again. ``frame``: how that copy cut the list
        (its chunks in ``known``): when the list starts with its settled items, the chunks
        that end among them are taken as they are and only the rest is cut, so a copy of a
        long list costs what its new items changed. The list and its height."""
        self._known = known or {}
        if frame is not None and not _starts_with(refs, frame):
            frame = None
        start = frame.settled if frame is not None else 0  # the items before: references
        names = [ref_of(ref) for ref in refs[start:]]
        least = UPPER_MIN if self._locate is not None else CHUNK_MIN
        out: Any
        if len(refs) >= least and None not in names:
            out, height = self._chunked(refs, heights, frame)
        else:
            out, height = list(refs), max(heights, default=0)
        self.height = max(self.height, height)
        return out, height

    def _store(self, tree: Any, height: int, digest: str | None = None) -> dict[str, str]:
        digest = digest or object_digest(tree)
        name = digest[:NAME_HEX]
        if name in self.objects or name in self._held:
            self._heights[name] = height
            self.found.setdefault(name, tree)
            return {REF: name}
        where = self._locate(name, digest) if self._locate is not None else None
        if where is not None:
            self._heights[where[REF]] = height
            return where
        self._heights[name] = height
        self.objects[name] = self.found[name] = tree
        return {REF: name}

    def _chunked(
        self, refs: list[Any], heights: list[int] | None = None, frame: Frame | None = None
    ) -> tuple[dict[str, Any], int]:
        """Cut after an item whose key's first byte is below the cut. An item's key is what it
        holds, wherever that is stored: a message's digest; a chunk's, the digest of its items'
        keys. (A chunk's own name covers the ``$in`` of its items, which can differ from run to
        run: which checkpoint of a turn stored a message first; cut by names, the same
        conversation was chunked differently each time.) An item that itself holds references
        (a ``Send`` carrying messages) is named with their ``$in``: its cut is not stable.
        ``heights``: the items' (else known already); ``frame``: how an earlier copy of the
        list, whose first ``frame.settled`` items these start with, was cut (``chunk_refs``):
        at each level, its chunks that end among entries that are the same are taken whole
        (its last chunk never: the list's end may have ended it), the rest is cut."""
        level, keys, upper = refs, None, False
        stable = frame.settled if frame is not None else 0  # leading entries the frame's too
        olds = frame.levels if frame is not None else ()
        self.cuts = []
        while True:
            old = olds[len(self.cuts)] if len(self.cuts) < len(olds) else None
            taken = self._taken(old, stable) if old is not None else 0
            start = old.ends[taken - 1] if old is not None and taken else 0
            if heights is not None:
                for r, h in zip(level[start:], heights[start:], strict=True):
                    self._heights[r[REF]] = h
            tail = [r[REF][:NAME_HEX] for r in level[start:]] if keys is None else keys[start:]
            made = self._cut(
                level[start:] if not upper else [dict(r) for r in level[start:]], tail, start, upper
            )
            if old is not None:
                made = Cut(
                    old.keys[:taken] + made.keys,
                    old.refs[:taken] + made.refs,
                    old.heights[:taken] + made.heights,
                    old.ends[:taken] + made.ends,
                    taken,
                )
            self.cuts.append(made)
            stable = min(taken, old.settled) if old is not None else 0
            level, keys, heights, upper = made.refs, made.keys, made.heights, True
            if len(level) < (UPPER_MIN if self._locate is not None else CHUNK_MIN):
                return {CHUNKS: [dict(r) for r in level]}, max(heights)

    def _taken(self, old: Cut, stable: int) -> int:
        """How many of ``old``'s leading chunks are taken as they are: those that end among the
        ``stable`` entries (never its last), up to the first this file holds already (stored
        here, as ``_chunk`` stores it)."""
        taken = bisect_right(old.ends, stable, 0, len(old.ends) - 1)
        if self.objects or self._held:
            for j in range(taken):
                name = old.refs[j][REF]
                if name in self.objects or name in self._held:
                    return j
        return taken

    def _cut(self, entries: list[Any], keys: list[str], start: int, upper: bool) -> Cut:
        """``entries`` (a level's, from its index ``start``) cut into chunks, each stored or
        found (``_chunk``)."""
        lean = self._locate is not None  # format 4: smaller chunks, a turn rewrites less
        most, cut = (CHUNK_MAX_4, CUT_4) if lean else (CHUNK_MAX, CUT)
        chunks: list[list[Any]] = [[]]
        chunk_keys: list[list[str]] = [[]]
        ends: list[int] = []
        for i, (r, key) in enumerate(zip(entries, keys, strict=True), start + 1):
            chunks[-1].append(r)
            chunk_keys[-1].append(key)
            if len(chunks[-1]) >= most or int(key[:2], 16) < cut:
                ends.append(i)
                chunks.append([])
                chunk_keys.append([])
        if chunks[-1]:
            ends.append(start + len(entries))
        made_keys = [hashlib.sha256(" ".join(k).encode()).hexdigest() for k in chunk_keys if k]
        filled = [({CHUNKS: c} if upper else c) for c in chunks if c]
        done = [self._chunk(c, key) for c, key in zip(filled, made_keys, strict=True)]
        return Cut(made_keys, [r for r, _ in done], [h for _, h in done], ends, 0)

    def _chunk(self, tree: Any, key: str) -> tuple[dict[str, str], int]:
        """One chunk stored (``_store``), or referred to where an earlier copy of the list
        found it (``known``: the same tree, so the same name and place), and noted in
        ``chunked``; with its height."""
        hit = self._known.get(key)
        if hit is not None and hit[0] == tree:  # the same tree: the same object, of its height
            name = hit[1][REF]
            if name not in self.objects and name not in self._held:
                self._heights[name] = hit[2]
                self.chunked[key] = hit
                return dict(hit[1]), hit[2]
        members = tree[CHUNKS] if isinstance(tree, dict) else tree
        height = 1 + max(self._heights[r[REF]] for r in members)
        ref = self._store(tree, height)
        self.chunked[key] = (tree, ref, height)
        return ref, height


def _starts_with(refs: list[Any], frame: Frame) -> bool:
    """Whether ``refs`` starts with the frame's settled items (compared in C: the same
    objects, when the list was built on the copy that made the frame)."""
    n = frame.settled
    return len(refs) >= n and refs[:n] == frame.items[:n]


def refs_in(tree: Any) -> Iterator[str]:
    """Every digest a tree refers to directly (not through the objects it names)."""
    for node in ref_nodes(tree):
        yield node[REF]


def named_from(item: Any, held: Mapping[str, Any], ns: str, cid: str) -> Any | None:
    """An item a file just stored, as a later file refers to it: a reference to an object the
    file holds (``held``) gets the file's ``$in``; one elsewhere, or an item that is no
    reference and holds none, stays as it is. None for an item that holds references but
    is none itself (not taken apart: a later file shares it again)."""
    name = ref_of(item)
    if name is None:
        return None if any(True for _ in ref_nodes(item)) else item
    if IN not in item and name in held:
        return {**item, **location_ref(ns, cid)}
    return item


def ref_nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every reference node of a tree (references and message inputs), not through objects,
    outer before inner (``json_objects``' order; one walk, every file's trees take it)."""
    for node in json_objects(tree):
        if REF in node and any_ref_of(node) is not None:
            yield node


def types_and_refs(tree: Any) -> tuple[list[tuple[str, ...]], list[dict[str, Any]]]:
    """``(tree.named_types(tree), list(ref_nodes(tree)))`` in one walk: validate asks both of
    every stored tree of every file."""
    found: list[tuple[str, ...]] = []
    refs: list[dict[str, Any]] = []
    stack = [tree]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        if isinstance(node, list):
            push(node)
        elif isinstance(node, dict):
            if "$type" in node or "$ext" in node or "$numpy" in node or "$delta_snapshot" in node:
                node_types(node, found)
            if REF in node and any_ref_of(node) is not None:
                refs.append(node)
            push(node.values())
    return found, refs


def without_refs(tree: Any) -> Any:
    """The tree with every reference (``$ref``, ``$chunks``, message inputs) as null: what
    validate checks in one file, each object being checked where it is held."""
    if isinstance(tree, list):
        return [without_refs(x) for x in tree]
    if isinstance(tree, dict):
        if any_ref_of(tree) is not None or (CHUNKS in tree and len(tree) == 1):
            return None
        return {k: without_refs(v) for k, v in tree.items()}
    return tree


#: (digest, the reference node, the file holding the reference) -> (the object's tree, checked
#: against its name, and the file holding it: its own references are read from there)
LoadObject = Callable[[str, "dict[str, Any]", str], "tuple[Any, str]"]


# (arrays and objects, values of any kind, characters of every string and key) a tree expands to
Weight = tuple[int, int, int]
# what an Expander keeps of an object: its expanded tree, weight, height (objects on the
# longest path through it, itself included), whether it expands to a list, and its depth
# (levels of arrays and objects once expanded: ``depth_problem``)
Known = tuple[Any, Weight, int, bool, int]


def weight_problem(weight: Weight) -> str | None:
    """Why a value of this expanded size is refused, on write and on read alike, else None:
    the limits one file has (jsonread), so a value never becomes bigger through objects/,
    counted in values and in text (one 4 MiB string named 5,000 times is 20 GiB)."""
    containers, values, text = weight
    if containers > MAX_CONTAINERS:
        return f"expands to over {MAX_CONTAINERS:,} arrays and objects through objects/"
    if values > MAX_VALUES:
        return f"expands to over {MAX_VALUES:,} values through objects/"
    if text > MAX_TEXT:
        return f"expands to over {MAX_TEXT:,} characters of text through objects/"
    return None


def nesting_problem(levels: int) -> str | None:
    """Why objects nested ``levels`` deep (references inside referenced objects) are refused,
    on write and on read alike, else None."""
    if levels > MAX_NESTING:
        return f"objects refer to objects more than {MAX_NESTING} levels deep"
    return None


def depth_problem(depth: int) -> str | None:
    """Why a value that expands ``depth`` levels of arrays and objects deep is refused, else
    None: a file holds at most ``MAX_JSON_DEPTH`` (jsonread), so every reader can serialise any
    one file's tree again (hash it, compare it, diff it); through objects/ a value could nest
    one file's depth inside another's, and a reader's ``orjson.dumps`` would fail on it."""
    if depth > MAX_JSON_DEPTH:
        return (
            f"expands to more than {MAX_JSON_DEPTH} levels of nesting through objects/ "
            f"(JSON is written at most {MAX_JSON_DEPTH} levels deep)"
        )
    return None


def _over(weight: Weight, depth: int) -> bool:
    """Whether ``weight_problem`` or ``depth_problem`` has something to say (one comparison
    each, no call: the expander asks it of every object it loads)."""
    return (
        weight[0] > MAX_CONTAINERS or weight[1] > MAX_VALUES or weight[2] > MAX_TEXT or depth > MAX_JSON_DEPTH
    )


def tree_depth(tree: Any) -> int:
    """Levels of arrays and objects of a tree as it is (0 for a string, number ...)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > deepest:
            deepest = level
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return deepest


def plain_weight(tree: Any) -> tuple[Weight, int] | None:
    """(weight, depth) of a tree none of whose objects has a ``$ref`` or ``$chunks`` key, as
    ``Expander._weigh`` gives them for it (``tree_weight``, ``tree_depth``), in one walk a
    level at a time, no call per node; None for a tree with such a key (it may refer to
    objects: ``_weigh`` weighs it)."""
    containers = values = text = depth = 0
    level = [tree]
    while level:
        below: list[Any] = []
        nested = False
        values += len(level)
        for node in level:
            kind = type(node)  # one call a node, not up to three isinstance calls
            if kind not in _JSON_TYPES:
                kind = _json_kind(node)
            if kind is str:
                text += len(node)
            elif kind is dict:
                if REF in node or CHUNKS in node:
                    return None
                containers += 1
                values += len(node)
                text += sum(map(len, node))
                below.extend(node.values())
                nested = True
            elif kind is list:
                containers += 1
                below.extend(node)
                nested = True
        depth += nested
        level = below
    return (containers, values, text), depth


_JSON_TYPES = frozenset({str, dict, list, type(None), bool, int, float})
"""The types a parsed JSON tree holds exactly (``plain_weight`` dispatches on them)."""


def _json_kind(node: Any) -> type:
    """``str``, ``dict`` or ``list`` for a node of a subclass of one (as ``isinstance`` reads
    it, in that order), else its own type (a scalar)."""
    for kind in (str, dict, list):
        if isinstance(node, kind):
            return kind
    return type(node)


def tree_weight(tree: Any) -> Weight:
    """The weight of a tree as it is, without following references."""
    containers = values = text = 0
    stack = [tree]
    while stack:
        node = stack.pop()
        values += 1
        if isinstance(node, str):
            text += len(node)
        elif isinstance(node, list):
            containers += 1
            stack.extend(node)
        elif isinstance(node, dict):
            containers += 1
            values += len(node)
            text += sum(map(len, node))
            stack.extend(node.values())
    return containers, values, text


class Expander:
    """Puts shared subtrees back into a tree, for one file's value at a time.

    Two passes: ``_weigh`` loads and checks every object the tree reaches (each once, its
    weight kept per digest) and adds up what the value would expand to; only a value within
    the bounds is then built (``_build``), so no hand-made tree is materialised to be refused.
    An object is found where its reference says (``LoadObject``): the file holding the
    reference (or, for a reference inside an object, the file holding that object), the
    checkpoint ``$in`` names, or ``objects/``.
    """

    def __init__(
        self, load: LoadObject, path: str, pointer: str, done: dict[str, Known] | None = None
    ) -> None:
        self._load = load
        self._path, self._pointer = path, pointer or "/"  # where the value is read from, for errors
        # digest -> what was expanded of it; may be kept across calls for one thread: an
        # object never changes under its name, so what was checked once stays true
        self._done: dict[str, Known] = {} if done is None else done
        self._stored: dict[str, Any] = {}  # digest -> its tree as stored, loaded by _weigh
        # digest -> weight, height, expands to a list, depth
        self._weights: dict[str, tuple[Weight, int, bool, int]] = {}
        self.weight: Weight = (0, 0, 0)  # of the tree last expanded (an append chain adds them up)

    def expand(self, tree: Any) -> Any:
        try:
            weight, height, depth = self._weigh(tree, 0, self._path)
            problem = weight_problem(weight) or depth_problem(depth)
            if problem is not None:
                raise self._error(problem)
            self.weight = weight
            return self._build(tree) if height else tree  # height 0: nothing shared below
        except RecursionError:
            raise self._error("nested too deeply to expand") from None

    # -- weighing: nothing is built -------------------------------------------------
    def _weigh(self, tree: Any, nesting: int, holder: str) -> tuple[Weight, int, int]:
        """(weight, height, depth) of a tree once expanded, ``nesting`` objects deep, held in
        ``holder``. Height 0: the tree refers to no object, so it expands to itself (``_build``
        is skipped). Depth: its levels of arrays and objects once expanded."""
        if isinstance(tree, str):
            return (0, 1, len(tree)), 0, 0
        if isinstance(tree, list):
            c = v = 1
            t = h = d = 0
            for x in tree:
                if isinstance(x, str):
                    v, t = v + 1, t + len(x)
                elif isinstance(x, dict | list):
                    (wc, wv, wt), wh, wd = self._weigh(x, nesting, holder)
                    c, v, t = c + wc, v + wv, t + wt
                    if wh > h:
                        h = wh
                    if wd > d:
                        d = wd
                else:
                    v += 1
            return (c, v, t), h, d + 1
        if not isinstance(tree, dict):
            return (0, 1, 0), 0, 0
        if REF in tree:  # a reference or a message input (both hold $ref), else a plain object
            digest = ref_of(tree)
            if digest is not None:
                (wc, wv, wt), height, _, depth = self._object(digest, tree, nesting, holder)
                ident = tree.get(ID)
                return (wc, wv, wt + (len(ident) if isinstance(ident, str) else 0)), height, depth
            digest = message_ref_of(tree)
            if digest is not None:
                height = self._object(digest, tree, nesting, holder)[1]
                content = self._content(digest, tree)
                return _input_weight(tree, tree_weight(content)), height, 1 + tree_depth(content)
        elif CHUNKS in tree and len(tree) == 1:
            return self._weigh_chunks(tree[CHUNKS], nesting, holder)
        c = v = 1
        t = h = d = 0
        for k, val in tree.items():
            t += len(k)  # the key counts, as in a file
            if isinstance(val, str):
                v, t = v + 2, t + len(val)
            elif isinstance(val, dict | list):
                (wc, wv, wt), wh, wd = self._weigh(val, nesting, holder)
                c, v, t = c + wc, v + wv + 1, t + wt
                if wh > h:
                    h = wh
                if wd > d:
                    d = wd
            else:
                v += 2
        return (c, v, t), h, d + 1

    def _weigh_chunks(self, refs: Any, nesting: int, holder: str) -> tuple[Weight, int, int]:
        if not isinstance(refs, list):
            raise self._error("$chunks is not a list of references")
        c = v = 1
        t = h = 0
        d = 1  # the chunks' lists make one list: as deep as the deepest chunk
        for r in refs:
            digest = ref_of(r)
            if digest is None or ID in r:
                raise self._error("$chunks holds something other than a reference")
            (wc, wv, wt), wh, is_list, wd = self._object(digest, r, nesting, holder)
            if not is_list:
                raise self._error(f"chunk object {digest} is not a list")
            # the chunk's own list is not a list of the value
            c, v, t, h, d = c + wc - 1, v + wv - 1, t + wt, max(h, wh), max(d, wd)
        return (c, v, t), h, d

    def _object(
        self, digest: str, node: dict[str, Any], nesting: int, holder: str
    ) -> tuple[Weight, int, bool, int]:
        """An object's (weight, height, expands to a list, depth) when used ``nesting`` deep."""
        got = self._weights.get(digest)
        if got is None:
            known = self._done.get(digest)
            if known is not None:
                got = known[1], known[2], known[3], known[4]
            else:
                if not _DIGEST.fullmatch(digest):
                    raise self._error(f"{digest!r} is not a sha256 digest")
                if nesting + 1 > MAX_NESTING:  # before loading: a loop of references ends here
                    raise self._error(str(nesting_problem(nesting + 1)))
                stored, found = self._load(digest, node, holder)
                self._stored[digest] = stored
                plain = plain_weight(stored)
                if plain is not None:  # refers to no object (a message): weighed in one walk
                    (weight, depth), inner, is_list = plain, 0, isinstance(stored, list)
                else:
                    weight, inner, depth = self._weigh(stored, nesting + 1, found)
                    is_list = self._is_list(stored, nesting + 1, found)
                if _over(weight, depth):  # stop a blow-up at the first object that is too big
                    raise self._error(str(weight_problem(weight) or depth_problem(depth)))
                got = weight, inner + 1, is_list, depth
            self._weights[digest] = got
        # each use counts its weight again in the parent: it is a copy once revived
        if nesting + got[1] > MAX_NESTING:
            raise self._error(str(nesting_problem(nesting + got[1])))
        return got

    def _is_list(self, stored: Any, nesting: int, holder: str) -> bool:
        """Whether a stored tree (already weighed) expands to a list."""
        if isinstance(stored, list):
            return True
        if not isinstance(stored, dict):
            return False
        digest = ref_of(stored)
        if digest is not None:
            return self._object(digest, stored, nesting, holder)[2]
        if message_ref_of(stored) is not None:
            return PAIR in stored
        return CHUNKS in stored and len(stored) == 1

    def _content(self, digest: str, node: dict[str, Any]) -> Any:
        """The content of the message a message input node names (the object is weighed and
        within bounds already, so building it is safe)."""
        found = self._built(digest)
        fields = found.get("$fields") if isinstance(found, dict) else None
        if not isinstance(fields, dict) or "content" not in fields:
            raise self._error(f"object {digest} is not a message with a content field")
        if PAIR in node and ID in node:
            raise self._error("a $pair message input has no id ($id)")
        return fields["content"]

    # -- building: only once the weight is known to be within bounds -------------------
    def _build(self, tree: Any) -> Any:
        if isinstance(tree, list):
            items, same = [], True
            for x in tree:
                item = self._build(x)
                items.append(item)
                same = same and item is x
            return tree if same else items  # nothing shared below: no copy
        if not isinstance(tree, dict):
            return tree
        digest = ref_of(tree) if REF in tree else None
        if digest is not None:
            found = self._built(digest)
            if ID in tree:
                fields = found.get("$fields") if isinstance(found, dict) else None
                if not isinstance(fields, dict) or "id" not in fields:
                    raise self._error(f"$id given, but object {digest} is not a model with an id field")
                found = {**found, "$fields": {**fields, "id": tree[ID]}}
            return found
        digest = message_ref_of(tree) if REF in tree else None
        if digest is not None:
            content = self._content(digest, tree)
            if PAIR in tree:
                return [tree[PAIR], content]
            out = {"content": content, "role": tree[ROLE]}
            if ID in tree:
                out["id"] = tree[ID]
            return dict(sorted(out.items()))
        if CHUNKS in tree and len(tree) == 1:
            out_list: list[Any] = []
            for r in tree[CHUNKS]:
                out_list.extend(self._built(r[REF]))
            return out_list
        built, same = {}, True
        for k, val in tree.items():
            built[k] = self._build(val)
            same = same and built[k] is val
        return tree if same else built

    def _built(self, digest: str) -> Any:
        known = self._done.get(digest)
        if known is None:
            weight, height, is_list, depth = self._weights[digest]
            stored = self._stored[digest]
            # height 1: the object refers to no other, so it expands to itself
            tree = self._build(stored) if height > 1 else stored
            known = self._done[digest] = (tree, weight, height, is_list, depth)
        return known[0]

    def _error(self, message: str) -> FileFormatError:
        return FileFormatError(self._path, self._pointer, message)


def _input_weight(node: dict[str, Any], content: Weight) -> Weight:
    """What a message input node expands to weighs (as ``tree_weight`` of the dict or pair
    the writer was given): its content's weight and its own keys and strings."""
    c, v, t = content
    if PAIR in node:
        return c + 1, v + 2, t + len(node[PAIR])
    c, v, t = c + 1, v + 1 + 1 + (1 + 1), t + len("content") + len("role") + len(node[ROLE])
    if ID in node:
        v, t = v + 2, t + len("id") + len(node[ID])
    return c, v, t


def large_ref(node: Any) -> str | None:
    """The ``large/`` digest a value node stands for (``{"large": digest}``), else None:
    the one reader of that shape (checks, resolve and the writer's bookkeeping use it)."""
    if isinstance(node, dict) and "large" in node:
        return str(node["large"])
    return None


def large_digest(body: Mapping[str, Any]) -> str | None:
    """The large file a value body or a write entry refers to (``{"value": {"large": digest}}``)."""
    return large_ref(body.get("value"))


def large_in(body: Mapping[str, Any], used: set[str]) -> None:
    """Collect the large-value digest a value body or a write entry refers to."""
    digest = large_digest(body)
    if digest is not None:
        used.add(digest)


def objects_in(body: Mapping[str, Any], used: set[str]) -> None:
    """Collect the object digests a value body, a write entry or a large value refers to
    directly (``$ref`` in its tree or its appended items)."""
    node = body.get("value")
    if isinstance(node, dict) and "json" in node:
        used.update(refs_in(node["json"]))
    app = body.get("append")
    if isinstance(app, dict):
        used.update(refs_in(app.get("items")))
