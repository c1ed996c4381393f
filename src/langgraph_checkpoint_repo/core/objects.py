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
hand-made file cannot loop or expand without end.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from .entries import large_ref
from .errors import FileFormatError
from .jsonread import MAX_JSON_CONTAINERS, MAX_JSON_VALUES
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
        self.containers = self.values = 0  # of the trees shared, whole: what a reader expands

    def share(self, tree: Any) -> Any:
        """The tree with its shared parts replaced (a new tree; the input is not changed)."""
        self.values += 1
        if isinstance(tree, list):
            self.containers += 1
            items = [self.share(x) for x in tree]
            if len(items) >= CHUNK_MIN and all(ref_of(x) is not None for x in items):
                return self._chunked(items)
            return items
        if isinstance(tree, dict):
            self.containers += 1
            self.values += len(tree)
            out = {k: self.share(v) for k, v in tree.items()}
            if "$type" in out:
                anon, ident = _without_id(out)
                data = orjson.dumps(anon, option=orjson.OPT_SORT_KEYS)
                if len(data) >= SHARE_BYTES:
                    ref = self._store(anon, hashlib.sha256(data).hexdigest())
                    return ref if ident is None else {**ref, ID: ident}
            return out
        return tree

    def share_items(self, items: list[Any]) -> list[Any]:
        """Each item shared, the list itself kept whole (an append's ``items``)."""
        self.containers += 1
        self.values += 1
        return [self.share(x) for x in items]

    def _store(self, tree: Any, digest: str | None = None) -> dict[str, str]:
        digest = digest or object_digest(tree)
        self.objects.setdefault(digest, tree)
        return {REF: digest}

    def _chunked(self, refs: list[Any]) -> dict[str, Any]:
        level, upper = refs, False
        while True:
            chunks: list[list[Any]] = [[]]
            for r in level:
                chunks[-1].append(r)
                if len(chunks[-1]) >= CHUNK_MAX or int(r[REF][:2], 16) < CUT:
                    chunks.append([])
            level = [self._store({CHUNKS: c} if upper else c) for c in chunks if c]
            upper = True
            if len(level) < CHUNK_MIN:
                return {CHUNKS: level}


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


Weight = tuple[int, int]  # (arrays and objects, values of any kind) a tree expands to


def weight_problem(weight: Weight) -> str | None:
    """Why a value of this expanded size is refused, on write and on read alike, else None:
    the limits one file has (jsonread), so a value never becomes bigger through objects/."""
    containers, values = weight
    if containers > MAX_CONTAINERS:
        return f"expands to over {MAX_CONTAINERS:,} arrays and objects through objects/"
    if values > MAX_VALUES:
        return f"expands to over {MAX_VALUES:,} values through objects/"
    return None


def tree_weight(tree: Any) -> Weight:
    """(arrays and objects, values) of a tree as it is, without following references."""
    containers = values = 0
    stack = [tree]
    while stack:
        node = stack.pop()
        values += 1
        if isinstance(node, list):
            containers += 1
            stack.extend(node)
        elif isinstance(node, dict):
            containers += 1
            stack.extend(node.values())
    return containers, values


class Expander:
    """Puts shared subtrees back into a tree, for one file's value at a time."""

    def __init__(
        self, load: LoadObject, path: str, pointer: str, done: dict[str, tuple[Any, Weight]] | None = None
    ) -> None:
        self._load = load
        self._path, self._pointer = path, pointer or "/"  # where the value is read from, for errors
        # digest -> (expanded tree, weight); may be kept across calls for one thread: an
        # object never changes under its name, so what was checked once stays true
        self._done: dict[str, tuple[Any, Weight]] = {} if done is None else done

    def expand(self, tree: Any) -> Any:
        out, weight = self._expand(tree, 0)
        problem = weight_problem(weight)
        if problem is not None:
            raise self._error(problem)
        return out

    def _expand(self, tree: Any, nesting: int) -> tuple[Any, Weight]:
        if isinstance(tree, list):
            items, c, v, same = [], 1, 1, True
            for x in tree:
                item, (wc, wv) = self._expand(x, nesting)
                items.append(item)
                same = same and item is x
                c, v = c + wc, v + wv
            return (tree if same else items), (c, v)  # nothing shared below: no copy
        if not isinstance(tree, dict):
            return tree, (0, 1)
        digest = ref_of(tree)
        if digest is not None:
            found, weight = self._object(digest, nesting)
            if ID in tree:
                fields = found.get("$fields") if isinstance(found, dict) else None
                if not isinstance(fields, dict) or "id" not in fields:
                    raise self._error(f"$id given, but object {digest} is not a model with an id field")
                found = {**found, "$fields": {**fields, "id": tree[ID]}}
            return found, weight
        if CHUNKS in tree and len(tree) == 1:
            return self._chunks(tree[CHUNKS], nesting)
        out, c, v, same = {}, 1, 1, True
        for k, val in tree.items():
            out[k], (wc, wv) = self._expand(val, nesting)
            same = same and out[k] is val
            c, v = c + wc, v + wv + 1  # the key counts, as in a file
        return (tree if same else out), (c, v)

    def _object(self, digest: str, nesting: int) -> tuple[Any, Weight]:
        done = self._done.get(digest)
        if done is not None:
            return done  # its weight counts again in the parent: each use is a copy once revived
        if not _DIGEST.fullmatch(digest):
            raise self._error(f"{digest!r} is not a sha256 digest")
        if nesting >= MAX_NESTING:
            raise self._error(f"objects refer to objects more than {MAX_NESTING} levels deep")
        done = self._expand(self._load(digest), nesting + 1)
        problem = weight_problem(done[1])
        if problem is not None:  # stop a blow-up at the first object that is too big
            raise self._error(problem)
        self._done[digest] = done
        return done

    def _chunks(self, refs: Any, nesting: int) -> tuple[list[Any], Weight]:
        if not isinstance(refs, list):
            raise self._error("$chunks is not a list of references")
        out: list[Any] = []
        c = v = 1
        for r in refs:
            digest = ref_of(r)
            if digest is None:
                raise self._error("$chunks holds something other than a reference")
            part, (wc, wv) = self._object(digest, nesting)
            if not isinstance(part, list):
                raise self._error(f"chunk object {digest} is not a list")
            out.extend(part)
            c, v = c + wc - 1, v + wv - 1  # the chunk's own list is not a list of the value
        return out, (c, v)

    def _error(self, message: str) -> FileFormatError:
        return FileFormatError(self._path, self._pointer, message)


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
