"""The documents of one root, found by id, validated both ways (``Documents``).

Invariants:

* every document is validated against its schema and its place (``place_problem``) on
  its way out (``prepare``: nothing is written otherwise, nor anything a read would
  refuse) and on its way in (``read_doc``, through the bounds of jsonread.py);
* what is read is kept only under the one cache rule of caches.py, so every read sees
  every edit (by hand, by ``git pull``, by another process);
* no folder is made, listed or removed through a symlink (removal.py).

Values and append chains are resolved in values.py; this class hands those calls on.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any

from . import fields
from .caches import CACHE_ENTRIES, LRU, DocCache, Listing, Listings, StatKey, settled, stat_key, stat_key_of
from .chains import Link, read_link, walk_chain
from .durable import ThreadLocks, digest_node
from .entries import ValueEntry
from .errors import FileFormatError, RepoCheckpointError
from .index import MIN_NAMES, MetaCache, is_plain, load_lineage, load_listing, save_lineage, save_listing
from .jsonread import load_json
from .layout import (
    CHECKPOINTS,
    LARGE,
    NAMESPACES,
    OBJECTS,
    VALUES,
    Layout,
    data_names,
    decode_segment,
    encode_segment,
    hashed_thread_id,
    is_hashed_segment,
    is_temp_name,
    is_verbatim,
    place_problem,
)
from .lineage import MERGED_CHANNEL, Lineage, Node, choice_of, choice_problem
from .objects import object_digest
from .removal import check_tree, files_in, remove_files, remove_tree, root_link_error
from .resolve import ValueResolver
from .validation import validate_read
from .writing import Writer, prepare

# a fresh process records the lineage it read again when it had to read at least this many
LINEAGE_REREADS = 16
# uuid6 ids, one a line: verbatim segments (no dot, no device name, short), checked in one match
_HEX_IDS = re.compile(r"(?:[0-9a-f-]{1,64}\n)*[0-9a-f-]{1,64}")
_log = logging.getLogger(__name__)
# the two kinds of file named by their content: how to compute the name from the document
_CONTENT_NAMED = {
    "object": (OBJECTS, lambda doc: object_digest(doc["tree"])),
    "large_value": (LARGE, lambda doc: digest_node(doc["value"])),
}


class Documents:
    """The documents under one root, with validation, caches and durable writes: what every
    reader and writer of the files (the saver, the command line, the checks) goes through."""

    def __init__(self, root: Path, *, durable: bool = True, lock_timeout: float = 60.0) -> None:
        if root.exists() and not root.is_dir():  # else the first write fails with a bare FileExistsError
            raise RepoCheckpointError(f"root {root} is not a folder: give a folder (it is made when missing)")
        self.layout = Layout(root)
        link = self.layout.root_link()
        if link is not None:  # checked again on every read, write and removal (Layout.off_the_way)
            raise root_link_error(f"use {root}", link)
        self.root = root
        self.durable = durable
        self.locks = ThreadLocks(lock_timeout)
        self.docs = DocCache()
        self.listings = Listings(partial(load_listing, self.layout), partial(save_listing, self.layout))
        self.values = ValueResolver(self.layout, self.read_doc, self.docs)
        self.meta = MetaCache(self.layout)  # decoded metadata, for filters
        self._lineages: dict[Path, Lineage] = {}  # the last lineage read per folder
        self.writer = Writer(self.layout, durable)
        self._intact = LRU(CACHE_ENTRIES)  # path -> the parsed document found to match its name

    def thread_lock(self, thread_id: str, exclusive: bool = False) -> AbstractContextManager[None]:
        """The lock of one thread: shared by writers, ``exclusive`` for maintenance.

        The root's .gitignore comes first, so the lock file is never picked up by git.
        """
        self.writer.ensure_gitignore()
        lock_path = self.layout.lock_path(thread_id)
        self.writer.check_inside(lock_path.parent)
        return self.locks.hold(lock_path, thread_id, exclusive)

    # -- documents ----------------------------------------------------------
    def read_doc(
        self, path: Path, kind: str, inside: Callable[[Path], bool] | None = None
    ) -> dict[str, Any]:
        """A validated document; errors name the file and the JSON pointer.

        ``inside``: how to tell that the file's folder lies in the root with no symlink on the
        way (default ``Layout.contains``; a walk of many files of one folder checks it once).
        Raises FileNotFoundError when there is no such file.
        """
        st = os.lstat(path)
        kept = self.docs.fresh(path, st)
        if kept is not None:
            return kept  # type: ignore[no-any-return]
        read_at = time.time_ns()
        doc = load_json(path, st, inside or self.layout.contains)
        validate_read(doc, kind, str(path))  # a document too deep to check is a FileFormatError too
        misplaced = place_problem(path, kind, doc)
        if misplaced is not None:
            raise FileFormatError(str(path), *misplaced)
        self.docs.keep(path, st, _with_own_refs(self.layout, doc), read_at)
        return doc  # type: ignore[no-any-return]

    def intact(self, path: Path, kind: str) -> bool:
        """Whether a file named by its content (``objects/``, ``large/``) is there for a writer
        to refer to: durable (``Writer.durable_exists``) and holding what its name says. A
        planted or damaged file under the name is not: the caller writes it again, atomically,
        with the right bytes (known from the name's content), instead of making a checkpoint
        that refers to it and reads back never. Each file is parsed and hashed once while its
        stat (and, for a file just written, its bytes: the cache rule) stays the same."""
        if not self.writer.durable_exists(path):
            return False
        try:
            doc = self.read_doc(path, kind)
        except FileNotFoundError:
            return False
        except FileFormatError as exc:
            _log.warning("%s is damaged, not relied on: %s", path, exc)
            return False
        if self._intact.get(path) is doc:  # the very parse found whole before, still fresh
            return True
        if _CONTENT_NAMED[kind][1](doc) != path.name[: -len(".json")]:
            _log.warning("%s does not hold what its name says, not relied on", path)
            return False
        self._intact.put(path, doc)
        return True

    def load_unchecked(self, path: Path) -> Any:
        """A file's JSON, parsed as strictly as ``read_doc`` but not validated (for migrations)."""
        return load_json(path, os.lstat(path), self.layout.contains)

    def remember(self, path: Path, doc: dict[str, Any], data: bytes | None = None) -> None:
        """Keep what we just wrote (``data``: its bytes), so the next read need not parse it."""
        self.docs.remember(path, _with_own_refs(self.layout, doc), data)

    def header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """The checkpoint document, names checked against its place. FileNotFoundError if absent."""
        path = self.layout.checkpoint_path(thread_id, checkpoint_ns, checkpoint_id)
        doc = self.read_doc(path, "checkpoint")
        if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
            thread_id,
            checkpoint_ns,
            checkpoint_id,
        ):
            raise FileFormatError(
                str(path),
                "/checkpoint_id",
                "thread_id, checkpoint_ns or checkpoint_id does not match the file's place",
            )
        return doc

    def metadata(
        self,
        thread_id: str,
        ns: str,
        cid: str,
        decode: Callable[[dict[str, Any], Path], Any],
        *,
        plain_ok: bool = True,
        fresh: bool = False,
    ) -> Any:
        """A checkpoint's metadata as ``decode(document, path)`` makes it, kept per checkpoint
        so filters scan thousands quickly (index.py: in process, and for a fresh process in
        the derived index): reused while its file's stat key is unchanged (one lstat), so a
        hand edit is seen. ``plain_ok``: a tree naming no type is its own decoded value (the
        index keeps only those). ``fresh``: what decides a removal reads the file, never a cache."""
        hit = None if fresh else self.meta.get(thread_id, ns, cid, plain_ok)
        if hit is not None:
            return hit
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        read_at = time.time_ns()  # the cache rule (caches.py): both taken before the read
        st = os.lstat(path)
        doc = self.header(thread_id, ns, cid)
        meta = decode(doc, path)
        tree = doc["metadata"] if plain_ok and is_plain(doc["metadata"]) else None
        kept = (str(path), stat_key(st), meta, tree) if settled(st, read_at) else None
        self.meta.keep(thread_id, ns, cid, kept)  # not settled: it may change again unseen
        return meta

    def writes_docs(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[tuple[Path, dict[str, Any]]]:
        """Writes files of one checkpoint, oldest first."""
        folder = self.layout.writes_dir(thread_id, checkpoint_ns)
        out = []
        for name in self._writes_names(folder, encode_segment(checkpoint_id)):
            path = folder / name
            doc = self.read_doc(path, "writes")
            if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
                thread_id,
                checkpoint_ns,
                checkpoint_id,
            ):
                raise FileFormatError(str(path), "/checkpoint_id", "names do not match the file's place")
            out.append((path, doc))
        return out

    # -- ids, from folder listings ------------------------------------------------
    def checkpoint_ids(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """Sorted checkpoint ids of one namespace (ids are time-ordered)."""
        folder = self.layout.checkpoints_dir(thread_id, checkpoint_ns)
        return self._derived(folder, "ids", self._ids) or []

    def _derived(self, folder: Path, key: str, derive: Callable[[Path, list[str]], Any]) -> Any:
        """What ``derive`` makes of a folder's names, kept with its listing (and brought up to
        date after our own writes, ``_extend_derived``); None when there is no such folder."""
        lst = self.listings.get(folder)
        if lst is None:
            return None
        got = lst.derived.get(key)
        if got is None:
            names = lst.names  # what this value is derived from (a write puts a new list in place)
            try:
                got = derive(folder, names)
            except FileFormatError:
                if not lst.from_index:
                    raise
                self.listings.drop(folder)  # the recorded names, not the folder: list it
                return self._derived(folder, key, derive)
            self.listings.keep_derived(lst, key, got, names)
        return got

    def _ids(self, folder: Path, names: list[str]) -> list[str]:
        stems = [n[:-5] for n in names if n.endswith(".json")]
        joined = "\n".join(stems)
        if _HEX_IDS.fullmatch(joined) or all(map(is_verbatim, stems)):
            return sorted(stems)  # the usual case (uuid6 ids): the stem is the id
        return sorted(self._id_of(folder, f"{stem}.json") for stem in stems)

    def _writes_names(self, folder: Path, owner: str) -> list[str]:
        """Names of the writes files of one checkpoint (encoded id ``owner``), in order: the
        sorted listing's range ``<owner>~...`` (``~`` is 0x7e), found by bisection, so a
        fresh process does not group thousands of names to find one checkpoint's few."""
        lst = self.listings.get(folder)
        if lst is None:
            return []
        names = lst.names
        lo = bisect.bisect_left(names, owner + "~")
        hi = bisect.bisect_left(names, owner + "\x7f", lo)
        return [n for n in names[lo:hi] if self.layout.writes_owner(n) == owner]

    def drop_listing(self, folder: Path) -> None:
        """Forget a folder's listing, so the next call lists it again."""
        self.listings.drop(folder)

    def _id_of(self, folder: Path, name: str) -> str:
        stem = name[:-5]
        if is_hashed_segment(stem):
            return str(self.read_doc(folder / name, "checkpoint")["checkpoint_id"])
        try:
            return decode_segment(stem)
        except ValueError as exc:
            raise FileFormatError(str(folder / name), "/", f"bad file name: {exc}") from None

    def _extend_derived(self, folder: Path, cur: Listing, name: str) -> None:
        """Add a name we just wrote to what was derived from its folder's listing."""
        ids = cur.derived.get("ids")
        if ids is not None and name.endswith(".json"):
            cid = self._id_of(folder, name)
            pos = bisect.bisect_left(ids, cid)
            if pos == len(ids) or ids[pos] != cid:
                # a new list, not an insert: a reader in another thread keeps the one it took
                cur.derived["ids"] = [*ids[:pos], cid, *ids[pos:]]
        lineage: Lineage | None = cur.derived.get("lineage")
        if lineage is not None and name.endswith(".json") and ids is not None:
            doc = self.read_doc(folder / name, "checkpoint")
            cid = str(doc["checkpoint_id"])
            lineage.add(cid, self._link(doc["thread_id"], doc["checkpoint_ns"], cid, doc))

    # -- which checkpoint continues (lineage.py) ----------------------------------
    def lineage(self, thread_id: str, checkpoint_ns: str) -> Lineage:
        """The parent links and valid choices of a namespace's checkpoints (lineage.py), kept
        with the folder's listing. Each checkpoint's link is read from its file once: a file
        whose stat key is the one recorded (in this process, or in the derived index for a
        fresh one) is not read again, so a fresh process reads only the checkpoints added
        since (docs/forks.md, "The rule")."""
        folder = self.layout.checkpoints_dir(thread_id, checkpoint_ns)
        lst = self.listings.get(folder)
        if lst is None:
            return Lineage()
        got: Lineage | None = lst.derived.get("lineage")
        if got is None:
            names = lst.names  # as in _derived: kept only if no write changed them meanwhile
            ids = self.checkpoint_ids(thread_id, checkpoint_ns)
            got = self._read_lineage(thread_id, checkpoint_ns, folder, ids)
            self.listings.keep_derived(lst, "lineage", got, names)
        return got

    def current(self, thread_id: str, checkpoint_ns: str) -> str | None:
        """The checkpoint that continues a namespace (lineage.py's rule), None when empty."""
        return self.lineage(thread_id, checkpoint_ns).current()

    def _read_lineage(self, thread_id: str, ns: str, folder: Path, ids: list[str]) -> Lineage:
        known = self._lineages.get(folder) or load_lineage(self.layout, folder)
        links: dict[str, Node] = {}
        keys: dict[str, tuple[int, int, int, int]] = {}
        read = 0
        prefix = str(folder) + os.sep  # a str per id, not a Path: this loop is one lstat per checkpoint
        for cid in ids:
            hit = known.keys.get(cid)
            name = prefix + encode_segment(cid) + ".json"
            if hit is not None and cid in known.links and stat_key_of(name) == hit:
                links[cid] = known.links[cid]
                keys[cid] = hit
                continue
            path = self.layout.checkpoint_path(thread_id, ns, cid)
            read_at = time.time_ns()
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue  # removed since it was listed
            links[cid] = self._link(thread_id, ns, cid)
            if settled(st, read_at):
                keys[cid] = stat_key(st)
            read += 1
        out = Lineage(links, keys)
        self._lineages[folder] = out
        if read >= LINEAGE_REREADS and len(ids) >= MIN_NAMES:
            save_lineage(self.layout, folder, out)
        return out

    def _merged_messages(self, ns: str, doc: dict[str, Any], parent: dict[str, Any]) -> tuple[Any, Any]:
        """The ``messages`` trees of a merge's kept head and of the merge (lineage.py)."""
        ns_dir = self.layout.ns_dir(doc["thread_id"], ns)

        def tree(d: dict[str, Any]) -> Any:
            ref = fields.value_refs(d).get(MERGED_CHANNEL)
            if ref is None:
                return None
            version = fields.channel_versions(d).get(MERGED_CHANNEL)
            entry = self.value_entry(ns_dir, MERGED_CHANNEL, version, ref)
            return None if entry.empty else entry.tree

        return tree(parent), tree(doc)

    def _link(self, thread_id: str, ns: str, cid: str, doc: dict[str, Any] | None = None) -> Node:
        """One checkpoint's link; an unreadable file is a link without a parent (validate
        names it; a read of it raises), a malformed or false choice no choice."""
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        try:
            doc = doc if doc is not None else self.header(thread_id, ns, cid)
        except (FileFormatError, OSError):
            return Node(None, readable=False)  # validate names it; reading it raises
        try:
            choice = choice_of(doc["metadata"], str(path))
        except FileFormatError as exc:
            return Node(fields.parent_id(doc), None, exc.detail)
        parent = fields.parent_id(doc)
        if choice is None:
            return Node(parent)
        try:
            parent_doc = self.header(thread_id, ns, choice.chose) if parent == choice.chose else None
            messages = self._merged_messages(ns, doc, parent_doc) if choice.merged and parent_doc else None
        except (FileNotFoundError, FileFormatError, OSError):
            parent_doc, messages = None, None
        problem = choice_problem(doc, choice, parent_doc, messages)
        return Node(parent, None if problem else choice, problem)

    def namespaces(self, thread_id: str) -> list[str]:
        return [ns for ns, _ in self.namespace_folders(self.layout.thread_dir(thread_id))]

    def namespace_folders(self, tdir: Path) -> list[tuple[str, Path]]:
        out: list[tuple[str, Path]] = []
        if (tdir / CHECKPOINTS).is_dir():
            out.append(("", tdir))
        nsroot = tdir / NAMESPACES
        for seg in data_names(nsroot):
            out.append((self._ns_name(nsroot / seg, seg), nsroot / seg))
        return out

    def _segment_name(self, folder: Path) -> str:
        """The id a thread or namespace folder stands for; FileFormatError for strays."""
        if folder.is_symlink() or not folder.is_dir():
            raise FileFormatError(str(folder), "/", "not a folder of the layout (stray file or symlink)")
        try:
            return decode_segment(folder.name)
        except ValueError as exc:
            raise FileFormatError(str(folder), "/", f"not a folder name this layout writes: {exc}") from None

    def _ns_name(self, folder: Path, seg: str) -> str:
        if not is_hashed_segment(seg):
            return self._segment_name(folder)
        for name in sorted(os.listdir(folder / CHECKPOINTS)):
            if not is_temp_name(name):
                return str(self.read_doc(folder / CHECKPOINTS / name, "checkpoint")["checkpoint_ns"])
        raise FileFormatError(str(folder), "/", "hashed namespace folder holds no checkpoint")

    def thread_ids(self) -> list[str]:
        tdir = self.layout.threads_dir
        out = []
        for seg in data_names(tdir):
            if not is_hashed_segment(seg):
                out.append(self._segment_name(tdir / seg))
                continue
            tid = hashed_thread_id(tdir / seg, lambda p: self.read_doc(p, "checkpoint"))
            if tid is not None:
                out.append(tid)
        return out

    # -- values (values.py) ---------------------------------------------------------
    def value_entry(self, ns_dir: Path, channel: str, version: Any, ref: str) -> ValueEntry:
        """The value of ``channel`` at ``version`` that ``ref`` points to (ValueResolver)."""
        return self.values.value_entry(ns_dir, channel, version, ref)

    def channel_value(self, doc: dict[str, Any], channel: str) -> ValueEntry:
        """The value of one channel of the checkpoint ``doc``. When another file it is read
        through does not read (a link of an append chain, an object), the error also names
        the checkpoint and thread that needed it and how to get it back: one damaged old file
        is otherwise a mystery to whoever reads the newest state."""
        thread_id, ns, cid = doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]
        ns_dir = self.layout.ns_dir(thread_id, ns)
        version = fields.channel_versions(doc).get(channel)
        try:
            return self.value_entry(ns_dir, channel, version, doc["values"][channel])
        except FileFormatError as exc:
            if Path(exc.path) == self.layout.checkpoint_path(thread_id, ns, cid):
                raise
            raise type(exc)(
                exc.path,
                exc.pointer,
                f"{exc.detail}; checkpoint {cid} of thread {thread_id!r} reads channel {channel!r} "
                "through this file: restore it from git (`langgraph-repo fsck` lists every file "
                "that does not read)",
            ) from exc

    def resolve_node(
        self, node: dict[str, Any], where: Path, pointer: str = ""
    ) -> tuple[dict[str, Any], Path]:
        """Follow a large-value reference: the node it stands for and the file holding it."""
        return self.values.resolve_node(node, where, pointer)


    def chain(self, ns_dir: Path, channel: str, version: Any, ref: str) -> Iterator[Link]:
        """The links of a value's append chain as the whole-root walkers read them
        (chains.read_link), each file entered in the walk's guard (chains.walk_chain)."""
        read = partial(read_link, self.read_doc, self.layout, ns_dir, channel)
        return walk_chain(read, version, ref)

    # -- writing (writing.py) ---------------------------------------------------------
    prepare = staticmethod(prepare)

    def write(self, batches: list[list[tuple[Path, bytes]]]) -> None:
        """Write batches in order, each durable before the next; keep the listings current."""
        self.writer.write(batches, self._written)

    def _written(self, path: Path, before: StatKey | None) -> None:
        extend = partial(self._extend_derived, path.parent)
        self.listings.note_added(path.parent, path.name, before, extend)

    # -- forgetting and removing (removal.py) -----------------------------------------
    def forget_thread(self, thread_id: str) -> None:
        self.writer.forget()
        tdir = self.layout.thread_dir(thread_id)
        self.meta.forget_thread(thread_id)
        self.listings.drop_under(tdir)
        self.docs.drop_under(tdir)
        self.values.drop_under(tdir)
        for folder in [f for f in list(self._lineages) if f.is_relative_to(tdir)]:
            self._lineages.pop(folder, None)
        self._intact.drop_where(lambda p: p.is_relative_to(tdir))

    def remove_tree(self, folder: Path) -> None:
        """Remove a folder so readers never see it half-gone; refused if a symlink is in the way."""
        remove_tree(self.layout, folder, self.durable)

    def remove_files(self, paths: list[Path]) -> None:
        """Unlink files of the root; a symlink on the way refuses the call before any goes."""
        remove_files(self.layout, paths, self.durable)

    def files_in(self, folder: Path) -> list[Path]:
        """The files of a layout folder; a symlink on the way or in it is refused."""
        return files_in(self.layout, folder)

    def value_files(self, ns_dir: Path) -> list[Path]:
        return files_in(self.layout, ns_dir / VALUES)

    def check_tree(self, folder: Path, doing: str) -> None:
        """Refuse (RepoCheckpointError) a symlink on the way to ``folder`` or anywhere in it."""
        check_tree(self.layout, folder, doing)


def _with_own_refs(layout: Layout, doc: Any) -> Any:
    """A checkpoint as every reader sees it: ``values`` names every channel, those whose value
    the file holds itself (``new_values``; format 3 does not repeat them) included."""
    if isinstance(doc, dict) and doc.get("kind") == "checkpoint" and doc.get("new_values"):
        own = layout.checkpoint_rel(doc["checkpoint_id"])
        for channel in doc["new_values"]:
            doc["values"].setdefault(channel, own)
    return doc
