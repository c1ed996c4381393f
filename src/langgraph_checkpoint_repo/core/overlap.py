"""Storing a message once when puts of one thread overlap.

LangGraph saves a thread's checkpoints, writes and subgraph checkpoints at once
(``durability="async"``): a file that needs a message a concurrent put is about to hold refers
to it there and waits for it, instead of holding the text a second time. ``Pending`` keeps the
objects of files being written; ``Overlap`` answers a writer's "where is this object stored
already?" and makes it wait for what it refers to. The thread store (threads.py) owns one and
runs every put through it; nothing above it sees the protocol.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .caches import CACHE_ENTRIES, LRU, thread_of
from .errors import FileFormatError, LockTimeoutError, RepoCheckpointError
from .files import Files
from .format.objects import names_object, object_ref
from .format.resolve import LOCATED_PER_THREAD, ValueResolver


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


class Overlap:
    """Where a writer finds an object stored already, and the waits that makes."""

    def __init__(self, files: Files, values: ValueResolver, lock_timeout: float) -> None:
        self.files = files
        self.layout = files.layout
        self.values = values
        self.pending = Pending(lock_timeout)  # objects of checkpoints this process is writing
        # (checkpoint path, object) -> the tree found whole
        self._holding = LRU(CACHE_ENTRIES, thread_of(self.layout.threads_dir))

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
        located = self.values.located_in(tdir)
        loc = located.get(name)
        if loc is not None and tuple(loc) != not_in:
            path = self.layout.checkpoint_path(thread_id, *loc)  # made once per checkpoint
            if self.files.writer.durable_exists(path) and self._holds(path, name):
                return object_ref(name, (loc[0], loc[1]))
            located.pop(name, None)  # gone (prune) or changed: wherever it is stored next
        if os.path.lexists(self.layout.objects_dir(thread_id)):  # format 4 makes it rarely
            for held in (name, digest):
                if self.files.intact(self.layout.object_path(thread_id, held), "object"):
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
            doc = self.files.read_doc(path, "checkpoint")
        except (FileNotFoundError, FileFormatError):
            return False
        tree = (doc.get("objects") or {}).get(name)
        if tree is None:
            return False
        key = (path, name)
        if self._holding.get(key) is tree:
            return True
        if not names_object(name, tree):
            return False
        self._holding.put(key, tree)
        return True

    def note_objects(self, thread_id: str, ns: str, cid: str, names: Iterator[str] | list[str]) -> None:
        """The objects a checkpoint just written holds (none of them stored before, as far as
        this process knew): later writes refer to them there."""
        located = self.values.located.setdefault(self.layout.thread_dir(thread_id), {})
        if len(located) > LOCATED_PER_THREAD:
            located.clear()  # found again on reads; only sharing with older files is lost
        for name in names:
            located[name] = (ns, cid)

    def forget_under(self, tdir: Path) -> None:
        """Forget what was found whole in the thread folder ``tdir`` (it is removed or replaced)."""
        self._holding.drop_where(lambda k: k[0].is_relative_to(tdir))

    def let_go(self, seg: str) -> None:
        self._holding.drop_group(seg)

    def clear(self) -> None:
        with self._holding.lock:
            self._holding.clear()
