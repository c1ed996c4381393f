"""The files of one root, physically: validated reads, durable writes, removals, one cache rule.

Invariants:

* every document is validated against its schema and its place (``place_problem``) on its
  way out (``prepare``: nothing is written otherwise, nor anything a read would refuse) and
  on its way in (``read_doc``, through the bounds of jsonread.py);
* what is read is kept only under the one cache rule of caches.py, so every read sees every
  edit (by hand, by ``git pull``, by another process), except inside a ``Snapshot`` (the
  checks' cache policy: each file read once for one check, snapshot.py);
* no folder is made, listed or removed through a symlink (removal.py).

This layer knows file kinds and places, not what a checkpoint means: ids, lineage, values and
the format's references are the thread store's (threads.py) and the format's (format/).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from .caches import CACHE_ENTRIES, LRU, Dep, DocCache, Listing, Listings, StatKey, lstat, thread_of
from .durable import ThreadLocks
from .errors import FileFormatError, RepoCheckpointError, outside_refused
from .format.bookkeeping import normalize
from .format.canonical import digest_node
from .format.objects import names_object
from .format.validation import validate_read
from .index import load_listing, save_listing
from .jsonread import json_bytes, parse_strict
from .layout import LARGE, OBJECTS, VALUES, Layout, place_problem
from .removal import check_tree, files_in, remove_files, remove_tree, root_link_error
from .writing import LISTED, Writer, prepare

_log = logging.getLogger(__name__)
# the two kinds of file named by their content: how to compute the name from the document
_CONTENT_NAMED: dict[str, tuple[str, Callable[[dict[str, Any], str], bool]]] = {
    "object": (OBJECTS, lambda doc, name: names_object(name, doc["tree"])),
    "large_value": (LARGE, lambda doc, name: digest_node(doc["value"]) == name),
}
_NAMED_FOLDERS = frozenset(folder for folder, _ in _CONTENT_NAMED.values())
#: what a listing hears of a name just written: (folder, its listing, the name, the document)
OnAdded = Callable[[Path, Listing, str, "dict[str, Any] | None"], None]


class Snapshot:
    """The checks' cache policy: inside ``scope()`` each file is read, parsed and checked
    once and each folder's place checked once; when the outermost scope ends it is all
    forgotten (and the owner's ``on_change`` drops what it derived), so nothing read in a
    snapshot outlives it."""

    def __init__(self, on_change: Callable[[bool], None]) -> None:
        self.depth = 0
        self.read: dict[tuple[str, str], dict[str, Any]] = {}  # (file, kind) -> its document
        self.inside: dict[str, bool] = {}  # folder -> in the root with no symlink on the way
        # each file read, by its path's text: a reference to it is found without a Path made
        # per reference (the thread store's ValueResolver shares this dict)
        self.read_paths: dict[str, Path] = {}
        self._on_change = on_change  # called with True as a snapshot begins, False as it ends

    @property
    def active(self) -> bool:
        return self.depth > 0

    @contextmanager
    def scope(self) -> Iterator[None]:
        if not self.depth:
            self._forget()
            self._on_change(True)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth:
                self._forget()
                self._on_change(False)

    def _forget(self) -> None:
        self.read.clear()
        self.inside.clear()
        self.read_paths.clear()


class Files:
    """The documents under one root, read and written as files: what the thread store, the
    store's items and the checks of files go through."""

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
        by_thread = thread_of(self.layout.threads_dir)  # the group of a cached path (KeptThreads)
        self.docs = DocCache(group=by_thread)
        # a folder inside the root with no symlink on the way, each folder asked once a look
        self._inside: Callable[[Path], bool] = partial(self.layout.contains, lstat=lstat)
        self.listings = Listings(
            partial(load_listing, self.layout), partial(save_listing, self.layout), self._inside, by_thread
        )
        self.writer = Writer(self.layout, durable)
        self._intact = LRU(CACHE_ENTRIES, by_thread)  # path -> the parsed document found to match its name
        # content-named files this process wrote (prepared: valid, named by their content),
        # by stat key and, while not settled, the digest of the bytes written: ``intact``
        # without reading them back (the one cache rule)
        self._wrote_named = DocCache(group=by_thread)
        self.on_added: OnAdded = _nothing_added  # what derives from listings hears of new names
        self.snapshot: Snapshot | None = None  # the cache policy: None for the cache rule
        self._recording = threading.local()  # the files a read is derived from (``recording``)

    def thread_lock(self, thread_id: str, exclusive: bool = False) -> AbstractContextManager[None]:
        """The lock of one thread: shared by writers, ``exclusive`` for maintenance.

        The root's .gitignore comes first, so the lock file is never picked up by git.
        """
        self.writer.ensure_gitignore()
        lock_path = self.layout.lock_path(thread_id)
        self.writer.check_inside(self.layout.folder_of(lock_path))
        return self.locks.hold(lock_path, thread_id, exclusive)

    # -- reading ------------------------------------------------------------------
    def read_doc(self, path: Path, kind: str, inside: Callable[[Path], bool] | None = None) -> dict[str, Any]:
        """A validated document; errors name the file and the JSON pointer.

        ``inside``: how to tell that the file's folder lies in the root with no symlink on the
        way (default ``Layout.contains``; a walk of many files of one folder checks it once).
        Raises FileNotFoundError when there is no such file.
        """
        snap = self.snapshot
        if snap is not None and snap.active:
            key = (str(path), kind)
            got = snap.read.get(key)
            if got is None:
                got = snap.read[key] = self._read_doc(path, kind, inside or self._snapshot_contains)
                snap.read_paths[key[0]] = path
            return got
        doc = self._read_doc(path, kind, inside)
        deps = getattr(self._recording, "deps", None)
        if deps is not None:
            deps.append(self.docs.dep(path, doc))
        return doc

    @contextmanager
    def recording(self) -> Iterator[list[Dep]]:
        """Every file this thread reads meanwhile (``read_doc``), or takes as unchanged
        (``note_deps``), as a dep: what a value written down for the next process came from
        (bodyindex.py). Not nested: an inner scope records into the outer one's list."""
        deps = getattr(self._recording, "deps", None)
        if deps is not None:
            yield deps
            return
        self._recording.deps = deps = []
        try:
            yield deps
        finally:
            self._recording.deps = None

    def is_recording(self) -> bool:
        return getattr(self._recording, "deps", None) is not None

    def note_deps(self, deps: Iterable[Dep]) -> None:
        """Files a read took as unchanged without reading them (a kept line, a derived index)."""
        recorded = getattr(self._recording, "deps", None)
        if recorded is not None:
            recorded.extend(deps)

    def _read_doc(self, path: Path, kind: str, inside: Callable[[Path], bool] | None) -> dict[str, Any]:
        st = lstat(path)  # once per file inside a look (caches.one_look)
        inside = inside or self._inside
        kept = self.docs.fresh(path, st)
        if kept is not None:
            # a folder on the way swapped for a symlink to it leaves the file's own key as
            # kept: refused as a read of the file is (json_bytes), never served from memory
            if not inside(path.parent):
                raise outside_refused(path)
            return kept  # type: ignore[no-any-return]
        read_at = time.time_ns()
        raw = json_bytes(path, st, inside)
        doc = parse_strict(raw, str(path))
        validate_read(doc, kind, str(path))  # a document too deep to check is a FileFormatError too
        misplaced = place_problem(path, kind, doc)
        if misplaced is not None:
            raise FileFormatError(str(path), *misplaced)
        self.docs.keep(path, st, normalize(self.layout, doc), read_at, raw)
        return doc  # type: ignore[no-any-return]

    def _snapshot_contains(self, folder: Path) -> bool:
        assert self.snapshot is not None
        key = str(folder)
        got = self.snapshot.inside.get(key)
        if got is None:
            got = self.snapshot.inside[key] = self.layout.contains(folder)
        return got

    def intact(self, path: Path, kind: str) -> bool:
        """Whether a file named by its content (``objects/``, ``large/``) is there for a writer
        to refer to: durable (``Writer.durable_exists``) and holding what its name says. A
        planted or damaged file under the name is not: the caller writes it again, atomically,
        with the right bytes (known from the name's content), instead of making a checkpoint
        that refers to it and reads back never. Each file is parsed and hashed once while its
        stat (and, for a file just written, its bytes: the cache rule) stays the same; one
        this process wrote (``write``) is not read back at all while it is so."""
        if not self.writer.durable_exists(path):
            return False
        if self._wrote_named.doc(path) is not None:
            try:
                if self._wrote_named.fresh(path, os.lstat(path)) is not None:
                    return True
            except FileNotFoundError:
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
        if not _CONTENT_NAMED[kind][1](doc, path.name[: -len(".json")]):
            _log.warning("%s does not hold what its name says, not relied on", path)
            return False
        self._intact.put(path, doc)
        return True

    def load_unchecked(self, path: Path) -> Any:
        """A file's JSON, parsed as strictly as ``read_doc`` but not validated (for migrations)."""
        return parse_strict(json_bytes(path, os.lstat(path), self.layout.contains), str(path))

    def remember(self, path: Path, doc: dict[str, Any], data: bytes | None = None) -> None:
        """Keep what we just wrote (``data``: its bytes), so the next read need not parse it."""
        self.docs.remember(path, normalize(self.layout, doc), data)

    def drop_listing(self, folder: Path) -> None:
        """Forget a folder's listing, so the next call lists it again."""
        self.listings.drop(folder)

    # -- writing (writing.py) -------------------------------------------------------
    prepare = staticmethod(prepare)

    def write(
        self, batches: list[list[tuple[Path, bytes]]], docs: dict[Path, dict[str, Any]] | None = None
    ) -> None:
        """Write batches in order, each durable before the next; keep the listings current
        (``docs``: documents of the batches by path, as written, so that keeping them current
        need not read back what was just written)."""
        folder_of = self.layout.folder_of  # one Path per folder, its hash made once
        listed = {f for batch in batches for p, _ in batch if (f := folder_of(p)).name in LISTED}
        with self.listings.writing(listed):
            self.writer.write(batches, partial(self._written, docs or {}))
        for batch in batches:
            for path, data in batch:
                folder = folder_of(path)
                if folder.name in _NAMED_FOLDERS and folder.parent.parent == self.layout.threads_dir:
                    self._wrote_named.remember(path, True, data)

    def _written(self, docs: dict[Path, dict[str, Any]], path: Path, before: StatKey | None) -> None:
        folder = self.layout.folder_of(path)
        extend = partial(_call_on_added, self.on_added, folder, docs.get(path))
        self.listings.note_added(folder, path.name, before, extend)

    # -- forgetting and removing (removal.py) -----------------------------------------
    def forget_under(self, folder: Path) -> None:
        """Forget every file under ``folder`` (removed, replaced, or another process's)."""
        self.writer.forget()
        self.listings.drop_under(folder)
        self.docs.drop_under(folder)
        self._wrote_named.drop_under(folder)
        self._intact.drop_where(lambda p: p.is_relative_to(folder))

    def let_go(self, seg: str) -> None:
        """Drop what is kept of the files of one thread folder (its name) and of its folders:
        the process lets the thread go (caches.KeptThreads)."""
        self.listings.let_go(seg)
        self.docs.drop_group(seg)
        self._wrote_named.drop_group(seg)
        self._intact.drop_group(seg)

    def clear(self) -> None:
        """Forget every file read (a snapshot begins or ends)."""
        self.docs.clear()
        self._wrote_named.clear()
        with self._intact.lock:
            self._intact.clear()

    def remove_tree(self, folder: Path) -> None:
        """Remove a folder so readers never see it half-gone; refused if a symlink is in the way."""
        remove_tree(self.layout, folder, self.durable)

    def discard_files(self, paths: list[Path]) -> None:
        """Unlink files whose content is durable elsewhere (writes files a child checkpoint
        took): no fsync, a removal lost in a crash leaves a copy readers already dedupe."""
        remove_files(self.layout, paths, False)

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


def _nothing_added(folder: Path, cur: Listing, name: str, doc: dict[str, Any] | None) -> None:
    pass


def _call_on_added(hook: OnAdded, folder: Path, doc: dict[str, Any] | None, cur: Listing, name: str) -> None:
    hook(folder, cur, name, doc)
