"""The file store: the documents of one root, found by id, validated both ways.

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

from .caches import CACHE_ENTRIES, LRU, DocCache, Listing, Listings, StatKey
from .chains import Link, read_link, walk_chain
from .durable import ThreadLocks, digest_node
from .entries import ValueEntry
from .errors import FileFormatError, RepoCheckpointError
from .index import MetaCache, load_listing, save_listing
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
from .objects import object_digest
from .removal import check_tree, files_in, remove_files, remove_tree, root_link_error
from .resolve import ValueResolver
from .validation import validate_read
from .writing import Writer, prepare

# uuid6 ids, one a line: verbatim segments (no dot, no device name, short), checked in one match
_HEX_IDS = re.compile(r"(?:[0-9a-f-]{1,64}\n)*[0-9a-f-]{1,64}")
_log = logging.getLogger(__name__)
# the two kinds of file named by their content: how to compute the name from the document
_CONTENT_NAMED = {
    "object": (OBJECTS, lambda doc: object_digest(doc["tree"])),
    "large_value": (LARGE, lambda doc: digest_node(doc["value"])),
}


class FileStore:
    """Documents under one root, with validation, caches and durable writes."""

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
    def read_doc(self, path: Path, kind: str) -> dict[str, Any]:
        """A validated document; errors name the file and the JSON pointer.

        Raises FileNotFoundError when there is no such file.
        """
        st = os.lstat(path)
        kept = self.docs.fresh(path, st)
        if kept is not None:
            return kept  # type: ignore[no-any-return]
        read_at = time.time_ns()
        doc = load_json(path, st, self.layout.contains)
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

    def cached_header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """``header``: kept for the scans that call it. A header is never reused without the
        one lstat that shows a hand edit (the cache rule, caches.py)."""
        return self.header(thread_id, checkpoint_ns, checkpoint_id)

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
        if key not in lst.derived:
            try:
                lst.derived[key] = derive(folder, lst.names)
            except FileFormatError:
                if not lst.from_index:
                    raise
                self.listings.drop(folder)  # the recorded names, not the folder: list it
                return self._derived(folder, key, derive)
        return lst.derived[key]

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
                ids.insert(pos, cid)

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
