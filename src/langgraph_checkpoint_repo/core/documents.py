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
import itertools
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .caches import (
    CACHE_ENTRIES,
    LRU,
    Dep,
    DocCache,
    Listing,
    Listings,
    StatKey,
    settled,
    stat_key,
    stat_key_of,
)
from .durable import ThreadLocks
from .errors import FileFormatError, LockTimeoutError, MissingReferenceError, RepoCheckpointError
from .format import fields
from .format.bookkeeping import MAX_DELTA_CHAIN, depth, materialize, normalize
from .format.canonical import digest_node
from .format.chains import Link, read_link, walk_chain
from .format.entries import ValueEntry
from .format.objects import names_object, object_ref
from .format.resolve import ValueResolver
from .format.validation import validate_read
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
from .removal import check_tree, files_in, remove_files, remove_tree, root_link_error
from .writing import Writer, prepare

# a fresh process records the lineage it read again when it had to read at least this many
LINEAGE_REREADS = 16
# later checkpoints read one by one to find a checkpoint's children, before its lineage is read
CHILDREN_SCAN = 8
# objects whose place a process remembers per thread, for writers to refer to (Documents.locate_object)
LOCATED_PER_THREAD = 200_000
# uuid6 ids, one a line: verbatim segments (no dot, no device name, short), checked in one match
_HEX_IDS = re.compile(r"(?:[0-9a-f-]{1,64}\n)*[0-9a-f-]{1,64}")
_log = logging.getLogger(__name__)
# the two kinds of file named by their content: how to compute the name from the document
_CONTENT_NAMED: dict[str, tuple[str, Callable[[dict[str, Any], str], bool]]] = {
    "object": (OBJECTS, lambda doc, name: names_object(name, doc["tree"])),
    "large_value": (LARGE, lambda doc, name: digest_node(doc["value"]) == name),
}


class PutDone(threading.Event):
    """Set when a put that offered objects is over; ``ok`` once its file is durable (a file
    under its name may be there without it: an older one, when the same checkpoint is put
    again)."""

    ok = False


class Pending:
    """The objects of checkpoints this process is writing, once decided, until they are
    durable. LangGraph saves a thread's checkpoints, writes and subgraph checkpoints at once
    (``durability="async"``): a file that needs a message a concurrent put is about to hold
    refers to it there and waits for it, instead of holding the text a second time.

    The files of one thread are decided one at a time (``deciding``: from the first lookup
    of an object to the ``offer`` of those it will hold), each under a ticket drawn then: a
    lookup sees every object a file decided before it will hold, so two puts at once never
    both store one message, and only a later ticket waits for an earlier one, so no two
    wait for each other. Writing, the slow part, is not serialised."""

    def __init__(self, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._tickets = itertools.count(1)
        self._objects: dict[Path, dict[str, tuple[int, str, str, PutDone]]] = {}
        # per thread folder: the lock files are decided under, and how many hold or wait for it
        self._deciding: dict[Path, tuple[threading.Lock, int]] = {}

    @contextmanager
    def deciding(self, tdir: Path, thread_id: str) -> Iterator[int]:
        """Decide a file of the thread in ``tdir``, alone among this process's writers of it:
        its objects looked up, then offered (``offer``) before the next one looks. Yields the
        file's ticket. Nothing here waits for another write (that comes after, outside)."""
        with self._lock:
            lock, users = self._deciding.get(tdir, (threading.Lock(), 0))
            self._deciding[tdir] = (lock, users + 1)
        try:
            if not lock.acquire(timeout=self.timeout):
                raise LockTimeoutError(
                    f"could not decide a file of thread {thread_id!r} within {self.timeout}s: "
                    "another write of this process has been deciding one all that time"
                )
            try:
                yield next(self._tickets)
            finally:
                lock.release()
        finally:
            with self._lock:
                lock, users = self._deciding[tdir]
                if users == 1:
                    del self._deciding[tdir]
                else:
                    self._deciding[tdir] = (lock, users - 1)

    def writers(self, tdir: Path) -> int:
        """How many files of the thread in ``tdir`` are being decided or wait to be."""
        with self._lock:
            return self._deciding.get(tdir, (None, 0))[1]

    def offer(self, tdir: Path, names: list[str], ns: str, cid: str, ticket: int) -> PutDone:
        """A checkpoint about to be written will hold ``names``; the event is set once it is done."""
        done = PutDone()
        with self._lock:
            held = self._objects.setdefault(tdir, {})
            for name in names:
                held.setdefault(name, (ticket, ns, cid, done))
        return done

    def find(self, tdir: Path, name: str, ticket: int) -> tuple[str, str, PutDone] | None:
        """(namespace, checkpoint, its event) of an earlier put that will hold ``name``."""
        with self._lock:
            got = self._objects.get(tdir, {}).get(name)
        if got is None or got[0] >= ticket:
            return None
        return got[1], got[2], got[3]

    def withdraw(self, tdir: Path, done: PutDone, *, ok: bool) -> None:
        """The put of ``done`` is over: its file durable (``ok``) or not written."""
        with self._lock:
            held = self._objects.get(tdir, {})
            for name in [n for n, entry in held.items() if entry[3] is done]:
                del held[name]
            if not held:
                self._objects.pop(tdir, None)
        done.ok = ok
        done.set()


@dataclass(frozen=True)
class WritesRecord:
    """One ``put_writes`` call as stored: in a writes file (``pointer`` "") or in the child
    checkpoint that took it (``/parent_writes/<key>``); ``record`` has ``task_id``,
    ``task_path`` and ``writes``."""

    path: Path
    pointer: str
    record: dict[str, Any]


def writes_key(name: str) -> str:
    """The unique part of a writes file's name (``<checkpoint>~<key>.json``): the key its
    record keeps in the child checkpoint that takes it."""
    return name[name.rindex("~") + 1 : -len(".json")]


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
        self.values.implied_base = self.implied_base
        self.meta = MetaCache(self.layout)  # decoded metadata, for filters
        self._lineages: dict[Path, Lineage] = {}  # the last lineage read per folder
        self.writer = Writer(self.layout, durable)
        self._intact = LRU(CACHE_ENTRIES)  # path -> the parsed document found to match its name
        # checkpoint path -> (its parse, its parent's whole document, its whole document)
        self._full = LRU(CACHE_ENTRIES)
        # delta checkpoint path -> (its parse, the files of its line below, each settled
        # (root first), its whole document): checkpoint_doc checks their stat keys only
        self._chains = LRU(CACHE_ENTRIES)
        self.pending = Pending(lock_timeout)  # objects of checkpoints this process is writing

    def thread_lock(self, thread_id: str, exclusive: bool = False) -> AbstractContextManager[None]:
        """The lock of one thread: shared by writers, ``exclusive`` for maintenance.

        The root's .gitignore comes first, so the lock file is never picked up by git.
        """
        self.writer.ensure_gitignore()
        lock_path = self.layout.lock_path(thread_id)
        self.writer.check_inside(lock_path.parent)
        return self.locks.hold(lock_path, thread_id, exclusive)

    # -- documents ----------------------------------------------------------
    def read_doc(self, path: Path, kind: str, inside: Callable[[Path], bool] | None = None) -> dict[str, Any]:
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
        self.docs.keep(path, st, normalize(self.layout, doc), read_at)
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
        if not _CONTENT_NAMED[kind][1](doc, path.name[: -len(".json")]):
            _log.warning("%s does not hold what its name says, not relied on", path)
            return False
        self._intact.put(path, doc)
        return True

    def locate_object(
        self,
        thread_id: str,
        name: str,
        digest: str,
        *,
        ticket: int = 0,
        waits: dict[Any, Any] | None = None,
        not_in: tuple[str, str] | None = None,
    ) -> dict[str, str] | None:
        """The reference to an object a writer finds stored already (objects.Locate): with
        ``$in`` for a checkpoint that holds it (read or written by this process, there and
        whole), without for ``objects/`` (format 3 named it by its whole ``digest``), None when
        it is in neither (the file being written takes it). Never a writes file: those go
        once a child checkpoint has taken them. A checkpoint of this process that holds it
        and is being written (``Pending``, an earlier ``ticket`` than the caller's) counts:
        the caller waits for it (``waits``) before it writes its own file. ``not_in``: the
        checkpoint the caller is writing (put again, its file is replaced): never referred to.

        ``Pending`` is asked first: a put moves its objects from there to the places this
        process knows (``note_objects``) only once written, so one missing from ``Pending``
        here is found below; asked last, a put finishing in between would be in neither."""
        tdir = self.layout.thread_dir(thread_id)
        found = self.pending.find(tdir, name, ticket) if waits is not None else None
        if found is not None and found[:2] == not_in:
            found = None
        located = self.values.located.get(tdir, {})
        loc = located.get(name)
        if loc is not None and tuple(loc) != not_in:
            path = self.layout.checkpoint_in(tdir, *loc)
            if self.writer.durable_exists(path) and self._holds(path, name):
                return object_ref(name, (loc[0], loc[1]))
            located.pop(name, None)  # gone (prune) or changed: wherever it is stored next
        for held in (name, digest):
            if self.intact(self.layout.object_path(thread_id, held), "object"):
                return object_ref(held)
        if found is not None and waits is not None:
            ns, cid, done = found
            waits[done] = (ns, cid)
            return object_ref(name, (ns, cid))
        return None

    def await_pending(self, thread_id: str, waits: dict[Any, Any], *, again: bool = False) -> bool:
        """Wait until the checkpoints a file about to be written refers to for objects are
        durable (``locate_object``): a referent before its referrer. False when one was not
        written (its put failed, its objects withdrawn): the file is to be decided again
        (``again``), holding those objects itself; else that fails this write too, naming
        it. Either way before anything is written."""
        for done, (_ns, cid) in waits.items():
            # no timeout: an earlier put of this process, already past deciding and writing,
            # ends one way or the other (it waits only for earlier ones: no cycle); a slow one
            # is not a reason to fail this write (lock_timeout is for other processes' locks)
            done.wait()
            if not done.ok:  # not "a file is there": the same checkpoint may be put again
                if again:
                    return False
                raise RepoCheckpointError(
                    f"refusing to write a file of thread {thread_id!r} that refers to objects of "
                    f"checkpoint {cid}: that checkpoint's write, under way beside it, did not complete"
                )
        return True

    def _holds(self, path: Path, name: str) -> bool:
        """Whether the checkpoint at ``path`` holds the object ``name``, whole."""
        try:
            doc = self.read_doc(path, "checkpoint")
        except (FileNotFoundError, FileFormatError):
            return False
        tree = (doc.get("objects") or {}).get(name)
        if tree is None:
            return False
        key = (path, name)
        if self._intact.get(key) is tree:
            return True
        if not names_object(name, tree):
            return False
        self._intact.put(key, tree)
        return True

    def note_objects(self, thread_id: str, ns: str, cid: str, names: Iterator[str] | list[str]) -> None:
        """The objects a checkpoint just written holds (none of them stored before, as far as
        this process knew): later writes refer to them there."""
        located = self.values.located.setdefault(self.layout.thread_dir(thread_id), {})
        if len(located) > LOCATED_PER_THREAD:
            located.clear()  # found again on reads; only sharing with older files is lost
        for name in names:
            located[name] = (ns, cid)

    def load_unchecked(self, path: Path) -> Any:
        """A file's JSON, parsed as strictly as ``read_doc`` but not validated (for migrations)."""
        return load_json(path, os.lstat(path), self.layout.contains)

    def remember(self, path: Path, doc: dict[str, Any], data: bytes | None = None) -> None:
        """Keep what we just wrote (``data``: its bytes), so the next read need not parse it."""
        self.docs.remember(path, normalize(self.layout, doc), data)

    def header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """The checkpoint document whole (``checkpoint_doc``), names checked against its place.
        FileNotFoundError if absent."""
        path = self.layout.checkpoint_path(thread_id, checkpoint_ns, checkpoint_id)
        return self._named(path, self.checkpoint_doc(path), thread_id, checkpoint_ns, checkpoint_id)

    def _own_header(self, path: Path, thread_id: str, ns: str, cid: str) -> dict[str, Any]:
        """A checkpoint document as its own file holds it (a delta is not completed: what
        its parent line holds is not read), names checked against its place."""
        return self._named(path, self.read_doc(path, "checkpoint"), thread_id, ns, cid)

    @staticmethod
    def _named(
        path: Path, doc: dict[str, Any], thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> dict[str, Any]:
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

    def checkpoint_doc(self, path: Path) -> dict[str, Any]:
        """A checkpoint document whole, as every reader sees it: a delta (format 4,
        bookkeeping.py) applied to its parent's whole bookkeeping, the parent's own delta
        first, down to a whole document or the ``base`` file prune left for a removed parent.
        Each whole document is kept while every file of its line is unchanged (one lstat per
        file: a hand edit of any of them is seen). FileNotFoundError if the file is absent.

        The walk reads each file of the line (``read_doc``: its stat, and the bytes of one
        not yet settled) until it comes to a checkpoint whose line below was found settled
        (``_chains``): the stat keys of those files are compared then, without reading them
        again (the cache rule, caches.py, one lstat per file)."""
        raw = self.read_doc(path, "checkpoint")
        if not depth(raw):
            return raw
        links: list[tuple[Path, dict[str, Any]]] = []
        seen: set[Path] = set()
        here, cur = path, raw
        below: list[Dep] | None = None  # the files under ``full`` (root first), when known
        at_base = False  # the line ends at prune's base file: it holds only while the parent is absent
        while depth(cur):
            kept = self._kept_chain(here, cur, seen, len(links))
            if kept is not None:
                full, below = kept
                break
            if here in seen:  # the same words as every other walk of parents (refchecks, plans)
                raise FileFormatError(
                    str(links[-1][0]),
                    "/parent_checkpoint_id",
                    f"parent chain cycles back to checkpoint {cur['checkpoint_id']}",
                )
            if len(links) >= MAX_DELTA_CHAIN:
                raise FileFormatError(
                    str(path),
                    "/delta",
                    f"more than {len(links)} deltas back to a whole checkpoint: this release "
                    f"follows at most {MAX_DELTA_CHAIN}",
                )
            seen.add(here)
            links.append((here, cur))
            parent = cur["parent_checkpoint_id"]
            if not parent:
                raise FileFormatError(str(here), "/delta", "a delta needs the parent it changes")
            ppath = here.parent / f"{encode_segment(parent)}.json"
            try:
                here, cur = ppath, self.read_doc(ppath, "checkpoint")
                continue
            except FileNotFoundError:
                pass
            bpath = here.parent.parent / self.layout.base_rel(parent)
            try:
                here, cur, at_base = bpath, self.read_doc(bpath, "base"), True
            except FileNotFoundError:
                raise MissingReferenceError(
                    str(here),
                    "/parent_checkpoint_id",
                    f"holds only what changed since checkpoint {parent}, which is missing "
                    f"(and so is {bpath}, where prune keeps a removed parent's bookkeeping)",
                ) from None
            break
        if below is None:
            # a line ending at a base file is not kept: a stat key cannot tell that the parent
            # it stands for came back (git restore), which every later read must follow
            full, below = cur, [] if at_base else [self.docs.dep(here, cur)]
        for lpath, lraw in reversed(links):
            hit = self._full.get(lpath)
            if hit is not None and hit[0] is lraw and hit[1] is full:
                whole = hit[2]
            else:
                whole = materialize(lraw, full)
                self._full.put(lpath, (lraw, full, whole))
            if below and all(key is not None and digest is None for _, key, digest in below):
                self._chains.put(lpath, (lraw, tuple(below), whole))
            else:
                below = []  # a file below not settled: nothing above it is kept either
            if below:
                below.append(self.docs.dep(lpath, lraw))
            full = whole
        return full

    def _kept_chain(
        self, here: Path, cur: dict[str, Any], seen: set[Path], above: int
    ) -> tuple[dict[str, Any], list[Dep]] | None:
        """The whole document of the checkpoint at ``here`` (just read: ``cur``) when its line
        below was settled when it was kept and each of those files still has its stat key;
        with those files and its own. None: walk the line (and raise what it finds)."""
        kept = self._chains.get(here)
        if kept is None or kept[0] is not cur:
            return None
        lraw, deps, whole = kept
        if above + len(deps) > MAX_DELTA_CHAIN or here in seen:
            return None  # the walk names what is wrong
        above_paths = {str(p) for p in seen}
        for dep_path, key, _ in deps:
            if key != stat_key_of(dep_path) or dep_path in above_paths:
                return None
        return whole, [*deps, self.docs.dep(here, lraw)]

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
        """Writes files of one checkpoint, oldest first (only the files: ``writes_records``
        also has what its children took from them)."""
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

    def writes_records(self, thread_id: str, ns: str, cid: str) -> list[WritesRecord]:
        """The pending writes of one checkpoint as stored, oldest first: its writes files, and
        the records its children took from them (format 4: a checkpoint moves its parent's
        writes files into ``parent_writes`` once it is durable, and the files go). A record
        may be in both places while a child is written (one is kept), and a file removed
        while it is read is found in the child that took it (so the files are read last, and
        a file gone means: read again)."""
        for attempt in range(5):
            try:
                return self._writes_records(thread_id, ns, cid)
            except FileNotFoundError:
                if attempt == 4:
                    raise
                self.drop_listing(self.layout.writes_dir(thread_id, ns))
                self.drop_listing(self.layout.checkpoints_dir(thread_id, ns))
        return []  # never reached

    def children(self, thread_id: str, ns: str, cid: str) -> list[str]:
        """The checkpoints whose parent is ``cid`` and whose id is later (only those take its
        writes: ``RepoSaver.put``). A few later checkpoints are read one by one, so the latest
        is found lazily (``alist``); more, from the namespace's lineage."""
        ids = self.checkpoint_ids(thread_id, ns)
        later = ids[bisect.bisect_right(ids, cid) :]
        if not later:
            return []  # the latest (the usual put_writes and get_tuple): nothing to look up
        lst = self.listings.get(self.layout.checkpoints_dir(thread_id, ns))
        if len(later) > CHILDREN_SCAN or (lst is not None and "lineage" in lst.derived):
            return [c for c in self.lineage(thread_id, ns).children(cid) if c > cid]
        out = []
        for child in later:
            try:
                raw = self.read_doc(self.layout.checkpoint_path(thread_id, ns, child), "checkpoint")
            except FileNotFoundError:
                continue
            if raw["parent_checkpoint_id"] == cid:
                out.append(child)
        return out

    def _writes_records(self, thread_id: str, ns: str, cid: str) -> list[WritesRecord]:
        folder = self.layout.writes_dir(thread_id, ns)
        names = self._writes_names(folder, encode_segment(cid))
        found: dict[str, WritesRecord] = {}
        for child in self.children(thread_id, ns, cid):
            path = self.layout.checkpoint_path(thread_id, ns, child)
            try:
                doc = self.read_doc(path, "checkpoint")
            except FileNotFoundError:
                continue  # removed since it was listed (prune): its parent's writes went with it
            for key, record in fields.parent_writes(doc).items():
                found.setdefault(key, WritesRecord(path, fields.parent_write_pointer(key), record))
        for name in names:
            key = writes_key(name)
            if key in found:
                continue
            path = folder / name
            doc = self.read_doc(path, "writes")
            if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (thread_id, ns, cid):
                raise FileFormatError(str(path), "/checkpoint_id", "names do not match the file's place")
            found[key] = WritesRecord(path, "", doc)
        return [found[k] for k in sorted(found)]

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

    def _extend_derived(
        self, folder: Path, cur: Listing, name: str, written: dict[str, Any] | None = None
    ) -> None:
        """Add a name we just wrote to what was derived from its folder's listing
        (``written``: the document just written there, as stored, when the writer has it)."""
        ids = cur.derived.get("ids")
        if ids is not None and name.endswith(".json"):
            cid = self._id_of(folder, name)
            pos = bisect.bisect_left(ids, cid)
            if pos == len(ids) or ids[pos] != cid:
                # a new list, not an insert: a reader in another thread keeps the one it took
                cur.derived["ids"] = [*ids[:pos], cid, *ids[pos:]]
        lineage: Lineage | None = cur.derived.get("lineage")
        if lineage is not None and name.endswith(".json") and ids is not None:
            doc = written if written is not None else self.read_doc(folder / name, "checkpoint")
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
        """One checkpoint's link, from its own file (``doc``: as stored, a delta or whole);
        its parent's files are read only for a choice, which compares whole documents. An
        unreadable file is a link without a parent (validate names it; a read of it raises),
        a malformed or false choice no choice."""
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        try:
            doc = doc if doc is not None else self._own_header(path, thread_id, ns, cid)
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
            doc = self.header(thread_id, ns, cid)  # a choice is judged on whole documents
        except (FileFormatError, OSError):
            return Node(None, readable=False)
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
        return walk_chain(read, version, ref, partial(self.implied_base, channel))

    def implied_base(self, channel: str, link: Link) -> tuple[Any, str]:
        """(version, ref) of the list an append without ``base`` extends (format 4): the
        channel's value at the parent of the checkpoint holding it, read from the parent's
        whole document or from the base file prune left in its place. A parent whose own
        file gives both (it stored the channel: every link of an append chain does) is not
        completed from its line: a delta's own entries are its whole document's."""
        path = link.path
        parent = link.doc.get("parent_checkpoint_id") if isinstance(link.doc, dict) else None
        where = f"{link.pointer}/append"
        if not parent:
            raise FileFormatError(str(path), where, "appends to its parent's list, but names no parent")
        ppath = self.values.sibling(path, f"{encode_segment(parent)}.json")
        try:
            own = self.read_doc(ppath, "checkpoint")
            ref, versions = own["values"].get(channel), own["checkpoint"].get("channel_versions") or {}
            if ref is not None and channel in versions:
                return versions[channel], ref
            whole = self.checkpoint_doc(ppath)
        except FileNotFoundError:
            bpath = path.parent.parent / self.layout.base_rel(parent)
            try:
                whole = self.read_doc(bpath, "base")
            except FileNotFoundError:
                why = f"appends to the list of parent {parent}, which is missing (and so is {bpath})"
                raise MissingReferenceError(str(path), where, why) from None
        ref = whole["values"].get(channel)
        if ref is None:
            why = f"appends to the list of parent {parent}, which has none"
            raise MissingReferenceError(str(path), where, why)
        return whole["checkpoint"]["channel_versions"].get(channel), ref

    # -- writing (writing.py) ---------------------------------------------------------
    prepare = staticmethod(prepare)

    def write(
        self, batches: list[list[tuple[Path, bytes]]], docs: dict[Path, dict[str, Any]] | None = None
    ) -> None:
        """Write batches in order, each durable before the next; keep the listings current
        (``docs``: documents of the batches by path, as written, so that keeping them current
        need not read back what was just written)."""
        self.writer.write(batches, partial(self._written, docs or {}))

    def _written(self, docs: dict[Path, dict[str, Any]], path: Path, before: StatKey | None) -> None:
        extend = partial(self._extend_derived, path.parent, written=docs.get(path))
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
        # keys: a document's path, or (a checkpoint's path, an object it holds)
        self._intact.drop_where(lambda k: (k[0] if isinstance(k, tuple) else k).is_relative_to(tdir))
        self._full.drop_where(lambda p: p.is_relative_to(tdir))
        self._chains.drop_where(lambda p: p.is_relative_to(tdir))

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
