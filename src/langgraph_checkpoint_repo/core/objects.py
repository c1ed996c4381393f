"""Shared subtrees: each message, and each long list of them, stored once per thread.

A conversation's messages show up in many places at once: channel values, pending writes,
the ``Send`` packets a tool-calling agent fans out (each carrying the whole state), the
``__pregel_tasks`` channel, and every subgraph namespace that receives the state. Format 3
stores each such subtree once, in ``objects/<sha256>.json`` of the thread, and every place
that holds it keeps a reference instead (git's object store: named by content, never
rewritten, so two branches that store the same message write the same file).

The rule is a pure function of the value, so the same value gives the same files wherever
and whenever it is written:

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
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from .errors import FileFormatError
from .jsonread import MAX_FILE_BYTES, MAX_JSON_CONTAINERS, MAX_JSON_VALUES
from .tree import json_objects

REF = "$ref"
ID = "$id"
CHUNKS = "$chunks"
SHARE_BYTES = 128
CHUNK_MIN = 16
CHUNK_MAX = 32
CUT = 0x20  # first byte of a digest below this ends a chunk: one item in eight
MAX_NESTING = 64  # references inside references; real values use fewer than ten
MAX_CONTAINERS = MAX_JSON_CONTAINERS  # of a whole expanded value, as of one file
MAX_VALUES = MAX_JSON_VALUES
MAX_TEXT = MAX_FILE_BYTES  # characters of every string and key: no more than one file holds


_DIGEST = re.compile(r"[0-9a-f]{64}")

#: what a read and validate say of a file named by its content that no longer holds it
EDITED = (
    "content does not match its sha256 name (edited by hand?): restore it (git checkout -- <file>) "
    "and make the change with `langgraph-repo edit THREAD`, which writes it as a new checkpoint"
)


def object_digest(tree: Any) -> str:
    """sha256 of a tree's compact, key-sorted JSON: the name of its object file."""
    return hashlib.sha256(orjson.dumps(tree, option=orjson.OPT_SORT_KEYS)).hexdigest()


def ref_of(tree: Any) -> str | None:
    """The digest a ``{"$ref": digest}`` (or ``{"$ref": digest, "$id": id}``) node names, else None."""
    if (
        isinstance(tree, dict)
        and isinstance(tree.get(REF), str)
        and (len(tree) == 1 or (len(tree) == 2 and isinstance(tree.get(ID), str)))
    ):
        return tree[REF]  # type: ignore[no-any-return]
    return None


def _without_id(tree: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A model with a string ``id`` field (a message) as shared: id null, the id apart.

    ``add_messages`` gives an id to a message that has none, so the node's write holds the
    message without an id and the channel the same message with one; stored apart from its
    id, both are one object (and a reference carries the id as ``$id``)."""
    fields = tree.get("$fields")
    if isinstance(fields, dict) and isinstance(fields.get("id"), str):
        return {**tree, "$fields": {**fields, "id": None}}, fields["id"]
    return tree, None


class Sharer:
    """Replaces shared subtrees by references, collecting the objects to store."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}  # digest -> tree, in the order found
        # of the trees shared, whole: what a reader expands (``weight_problem``)
        self.containers = self.values = self.text = 0
        self.height = 0  # objects inside objects, on the longest path (``nesting_problem``)
        self._heights: dict[str, int] = {}  # digest -> its height

    def share(self, tree: Any) -> Any:
        """The tree with its shared parts replaced (a new tree; the input is not changed)."""
        out, height = self._share(tree)
        self.height = max(self.height, height)
        return out

    def _share(self, tree: Any) -> tuple[Any, int]:
        self.values += 1
        if isinstance(tree, str):
            self.text += len(tree)
            return tree, 0
        if isinstance(tree, list):
            self.containers += 1
            items, height = [], 0
            for x in tree:
                item, h = self._share(x)
                items.append(item)
                height = max(height, h)
            if len(items) >= CHUNK_MIN and all(ref_of(x) is not None for x in items):
                return self._chunked(items)
            return items, height
        if isinstance(tree, dict):
            self.containers += 1
            self.values += len(tree)
            self.text += sum(map(len, tree))
            out, height = {}, 0
            for k, v in tree.items():
                out[k], h = self._share(v)
                height = max(height, h)
            if "$type" in out:
                anon, ident = _without_id(out)
                data = orjson.dumps(anon, option=orjson.OPT_SORT_KEYS)
                if len(data) >= SHARE_BYTES:
                    ref = self._store(anon, height + 1, hashlib.sha256(data).hexdigest())
                    return (ref if ident is None else {**ref, ID: ident}), height + 1
            return out, height
        return tree, 0

    def share_items(self, items: list[Any]) -> list[Any]:
        """Each item shared, the list itself kept whole (an append's ``items``)."""
        self.containers += 1
        self.values += 1
        return [self.share(x) for x in items]

    def _store(self, tree: Any, height: int, digest: str | None = None) -> dict[str, str]:
        digest = digest or object_digest(tree)
        self.objects.setdefault(digest, tree)
        self._heights[digest] = height
        return {REF: digest}

    def _chunked(self, refs: list[Any]) -> tuple[dict[str, Any], int]:
        level, upper = refs, False
        while True:
            chunks: list[list[Any]] = [[]]
            for r in level:
                chunks[-1].append(r)
                if len(chunks[-1]) >= CHUNK_MAX or int(r[REF][:2], 16) < CUT:
                    chunks.append([])
            level = [
                self._store({CHUNKS: c} if upper else c, 1 + max(self._heights[r[REF]] for r in c))
                for c in chunks
                if c
            ]
            upper = True
            if len(level) < CHUNK_MIN:
                return {CHUNKS: level}, max(self._heights[r[REF]] for r in level)


def refs_in(tree: Any) -> Iterator[str]:
    """Every digest a tree refers to directly (not through the objects it names)."""
    for node in json_objects(tree):
        digest = ref_of(node)
        if digest is not None:
            yield digest


def without_refs(tree: Any) -> Any:
    """The tree with every reference (``$ref``, ``$chunks``) as null: what validate checks in
    one file, each object being checked in its own file."""
    if isinstance(tree, list):
        return [without_refs(x) for x in tree]
    if isinstance(tree, dict):
        if ref_of(tree) is not None or (CHUNKS in tree and len(tree) == 1):
            return None
        return {k: without_refs(v) for k, v in tree.items()}
    return tree


LoadObject = Callable[[str], Any]  # digest -> the object's tree, checked against its name


# (arrays and objects, values of any kind, characters of every string and key) a tree expands to
Weight = tuple[int, int, int]
# what an Expander keeps of an object: its expanded tree, weight, height (objects on the
# longest path through it, itself included) and whether it expands to a list
Known = tuple[Any, Weight, int, bool]


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
        self._weights: dict[str, tuple[Weight, int, bool]] = {}  # digest -> weight, height, list?
        self.weight: Weight = (0, 0, 0)  # of the tree last expanded (an append chain adds them up)

    def expand(self, tree: Any) -> Any:
        try:
            weight, _ = self._weigh(tree, 0)
            problem = weight_problem(weight)
            if problem is not None:
                raise self._error(problem)
            self.weight = weight
            return self._build(tree)
        except RecursionError:
            raise self._error("nested too deeply to expand") from None

    # -- weighing: nothing is built -------------------------------------------------
    def _weigh(self, tree: Any, nesting: int) -> tuple[Weight, int]:
        """(weight, height) of a tree once expanded, ``nesting`` objects deep."""
        if isinstance(tree, str):
            return (0, 1, len(tree)), 0
        if isinstance(tree, list):
            c = v = 1
            t = h = 0
            for x in tree:
                (wc, wv, wt), wh = self._weigh(x, nesting)
                c, v, t, h = c + wc, v + wv, t + wt, max(h, wh)
            return (c, v, t), h
        if not isinstance(tree, dict):
            return (0, 1, 0), 0
        digest = ref_of(tree)
        if digest is not None:
            (wc, wv, wt), height, _ = self._object(digest, nesting)
            ident = tree.get(ID)
            return (wc, wv, wt + (len(ident) if isinstance(ident, str) else 0)), height
        if CHUNKS in tree and len(tree) == 1:
            return self._weigh_chunks(tree[CHUNKS], nesting)
        c = v = 1
        t = h = 0
        for k, val in tree.items():
            (wc, wv, wt), wh = self._weigh(val, nesting)
            c, v, t, h = c + wc, v + wv + 1, t + wt + len(k), max(h, wh)  # the key counts, as in a file
        return (c, v, t), h

    def _weigh_chunks(self, refs: Any, nesting: int) -> tuple[Weight, int]:
        if not isinstance(refs, list):
            raise self._error("$chunks is not a list of references")
        c = v = 1
        t = h = 0
        for r in refs:
            digest = ref_of(r)
            if digest is None:
                raise self._error("$chunks holds something other than a reference")
            (wc, wv, wt), wh, is_list = self._object(digest, nesting)
            if not is_list:
                raise self._error(f"chunk object {digest} is not a list")
            # the chunk's own list is not a list of the value
            c, v, t, h = c + wc - 1, v + wv - 1, t + wt, max(h, wh)
        return (c, v, t), h

    def _object(self, digest: str, nesting: int) -> tuple[Weight, int, bool]:
        """An object's (weight, height, expands to a list) when used ``nesting`` deep."""
        got = self._weights.get(digest)
        if got is None:
            known = self._done.get(digest)
            if known is not None:
                got = known[1], known[2], known[3]
            else:
                if not _DIGEST.fullmatch(digest):
                    raise self._error(f"{digest!r} is not a sha256 digest")
                too_deep = nesting_problem(nesting + 1)
                if too_deep is not None:  # before loading: a loop of references ends here
                    raise self._error(too_deep)
                stored = self._stored[digest] = self._load(digest)
                weight, inner = self._weigh(stored, nesting + 1)
                problem = weight_problem(weight)
                if problem is not None:  # stop a blow-up at the first object that is too big
                    raise self._error(problem)
                got = weight, inner + 1, self._is_list(stored, nesting + 1)
            self._weights[digest] = got
        # each use counts its weight again in the parent: it is a copy once revived
        too_deep = nesting_problem(nesting + got[1])
        if too_deep is not None:
            raise self._error(too_deep)
        return got

    def _is_list(self, stored: Any, nesting: int) -> bool:
        """Whether a stored tree (already weighed) expands to a list."""
        if isinstance(stored, list):
            return True
        if not isinstance(stored, dict):
            return False
        digest = ref_of(stored)
        if digest is not None:
            return self._object(digest, nesting)[2]
        return CHUNKS in stored and len(stored) == 1

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
        digest = ref_of(tree)
        if digest is not None:
            found = self._built(digest)
            if ID in tree:
                fields = found.get("$fields") if isinstance(found, dict) else None
                if not isinstance(fields, dict) or "id" not in fields:
                    raise self._error(f"$id given, but object {digest} is not a model with an id field")
                found = {**found, "$fields": {**fields, "id": tree[ID]}}
            return found
        if CHUNKS in tree and len(tree) == 1:
            out: list[Any] = []
            for r in tree[CHUNKS]:
                out.extend(self._built(r[REF]))
            return out
        built, same = {}, True
        for k, val in tree.items():
            built[k] = self._build(val)
            same = same and built[k] is val
        return tree if same else built

    def _built(self, digest: str) -> Any:
        known = self._done.get(digest)
        if known is None:
            weight, height, is_list = self._weights[digest]
            known = self._done[digest] = (self._build(self._stored[digest]), weight, height, is_list)
        return known[0]

    def _error(self, message: str) -> FileFormatError:
        return FileFormatError(self._path, self._pointer, message)


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
