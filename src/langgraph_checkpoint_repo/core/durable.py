"""Atomic, durable file writes and per-thread locks.

A file is written as a hidden temp file in its own folder, flushed, fsynced,
renamed over its final name with ``os.replace``, and then the folder is
fsynced so the rename itself survives a crash. A reader therefore sees either
no file or the whole file. Batches fsync each touched folder once.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from .errors import LockTimeoutError, RepoCheckpointError
from .jsonread import TOO_DEEP as _TOO_DEEP
from .lockfile import LockFile

#: what a write that orjson cannot encode for its depth is refused with (values.py, writing.py),
#: as a read refuses a file nested deeper (jsonread.MAX_JSON_DEPTH)
TOO_DEEP = _TOO_DEEP


def too_deep(exc: BaseException) -> bool:
    """Whether orjson refused a document for its depth (it raises a bare TypeError)."""
    return isinstance(exc, TypeError) and "Recursion limit" in str(exc)


def json_size(doc: Any) -> int:
    """Compact size of a document: the cheap measure for the large-value threshold."""
    return len(orjson.dumps(doc))


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(folder: Path, root: Path) -> list[Path]:
    """Create ``folder`` (inside ``root``) and its missing parents, nothing fsynced: the new
    folders, outermost first. Their entries become durable in the round that writes into
    them (``write_batches``' ``settle``), before anything is renamed into them."""
    if folder.is_dir():
        return []
    missing: list[Path] = []
    cur = folder
    while not cur.is_dir():
        missing.append(cur)
        if cur == root or cur.parent == cur:
            break
        cur = cur.parent
    made: list[Path] = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            if not path.is_dir() or path.is_symlink():
                raise RepoCheckpointError(f"{path} exists and is not a folder") from None
            continue
        made.append(path)
    return made


def _write_temp(path: Path, data: bytes) -> tuple[Path, int]:
    """A temp file beside ``path`` holding ``data``, still open (to be fsynced with others)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # O_EXCL and O_NOFOLLOW: never write through something planted at the temp name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp)
        raise
    return tmp, fd


def _unlink_quietly(path: Path) -> None:
    # only used to clean up after an error that is being raised anyway
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_files(files: Iterable[tuple[Path, bytes]], durable: bool = True) -> None:
    """Write several files atomically; return once all of them (and their names) are durable.

    Each file is atomic on its own; the batch is not. Callers order batches so
    that whatever refers to a file is written in a later batch.
    """
    write_batches([list(files)], durable)


# fsyncs of different files overlap: on a busy disk the kernel commits them together
_POOL_SIZE = 4
_pool: ThreadPoolExecutor | None = None
_pool_mutex = threading.Lock()


def _reset_pool() -> None:
    global _pool
    _pool = None  # a forked child has none of its parent's threads


os.register_at_fork(after_in_child=_reset_pool)


def _each_at_once(call: Callable[[Any], None], items: list[Any]) -> None:
    """``call`` on every item, side by side (this thread takes the first); every call is
    waited for, and the first error raised, as the very exception object it was."""
    global _pool
    if len(items) <= 1:
        for item in items:
            call(item)
        return
    with _pool_mutex:
        if _pool is None:
            _pool = ThreadPoolExecutor(_POOL_SIZE, thread_name_prefix="repo-fsync")
        pool = _pool
    futures = [pool.submit(call, item) for item in items[1:]]
    errors: list[BaseException] = []
    try:
        call(items[0])
    except BaseException as exc:
        errors.append(exc)
    for future in futures:
        failed = future.exception()
        if failed is not None:
            errors.append(failed)
    if errors:
        raise errors[0]


def write_batches(
    batches: list[list[tuple[Path, bytes]]], durable: bool = True, settle: Iterable[Path] = ()
) -> None:
    """Write batches of files; each batch's names are durable before the next batch's appear,
    and everything is durable when this returns.

    Every file of every batch is first written to its temp file and (``durable``) fsynced,
    side by side, and with them each folder of ``settle`` (the parents of folders a write has
    just made, or not yet seen durable: their entries); then, batch by batch, the temps are
    renamed into place and each folder renamed into is fsynced once (side by side), before
    the next batch is renamed. So a file is whole or absent, a name is renamed only into a
    folder whose own entry is durable, and whatever refers to a file (a later batch) appears
    only once that file's name is durable: the rule of one batch after another, in fewer
    rounds of waiting for the disk (a put with one object: three instead of four; the first
    put of a thread: two instead of four). On any error every temp file not yet renamed is
    removed and the error raised as it was.
    """
    temps: list[list[tuple[Path, Path]]] = [[] for _ in batches]
    done = 0  # temps renamed so far, over all batches in order
    try:
        for start in range(0, sum(map(len, batches)) or 1, _OPEN_AT_ONCE):
            _write_temps(batches, temps, start, durable, settle if start == 0 else ())
        for batch in temps:
            folders: dict[Path, None] = {}
            for tmp, path in batch:
                if _is_symlink(path):
                    raise RepoCheckpointError(f"refusing to replace symlink {path}")
                os.replace(tmp, path)
                done += 1
                folders[path.parent] = None
            if durable:
                _each_at_once(fsync_dir, list(folders))
    except BaseException:
        for tmp, _ in [t for batch in temps for t in batch][done:]:
            _unlink_quietly(tmp)
        raise


_OPEN_AT_ONCE = 64  # temp files open at once while their fsyncs run
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})  # pathlib's _ignore_error


def _is_symlink(path: Path) -> bool:
    """``path.is_symlink()``, for a name usually not there yet (a new checkpoint): pathlib
    raised and caught its error two frames up."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError as exc:
        if exc.errno in _NOT_THERE:
            return False
        raise


def _write_temps(
    batches: list[list[tuple[Path, bytes]]],
    temps: list[list[tuple[Path, Path]]],
    start: int,
    durable: bool,
    settle: Iterable[Path] = (),
) -> None:
    """Write the temp files of files ``start`` to ``start + _OPEN_AT_ONCE`` (counted over all
    batches), fsync them side by side with the folders of ``settle``, close them; ``temps``
    gets each as it is made."""
    opened: list[int] = []
    try:
        n = 0
        for batch, made in zip(batches, temps, strict=True):
            for path, data in batch:
                if start <= n < start + _OPEN_AT_ONCE:
                    tmp, fd = _write_temp(path, data)
                    opened.append(fd)
                    made.append((tmp, path))
                n += 1
        if durable:
            _each_at_once(_fsync_file_or_folder, [*opened, *settle])
    finally:
        for fd in opened:
            os.close(fd)


def _fsync_file_or_folder(what: int | Path) -> None:
    """``os.fsync`` of an open temp file, ``fsync_dir`` of a folder."""
    if isinstance(what, int):
        os.fsync(what)
    else:
        fsync_dir(what)


#: the calls ``_each_at_once`` runs that wait on the disk: each run is one round of waiting
#: (the bench and tests/test_ride.py count them)
FSYNC_CALLS = (os.fsync, fsync_dir, _fsync_file_or_folder)


class _SharedExclusive:
    """In-process gate of one thread: writers share it, maintenance takes it alone.

    Writers (put, put_writes) only add new, uniquely named files, so they may run
    side by side (LangGraph runs a step's put_writes beside the previous put);
    maintenance (delete, prune, copy) removes files and must run alone. The
    exclusive side is reentrant for the thread that holds it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, exclusive: bool, timeout: float | None = None) -> bool:
        """Take the gate; False when ``timeout`` seconds pass first (the lock's own timeout
        holds inside one process too, not only across processes)."""
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return True
            if exclusive:
                if not self._cond.wait_for(lambda: self._owner is None and not self._shared, timeout):
                    return False
                self._owner, self._depth = me, 1
            else:
                if not self._cond.wait_for(lambda: self._owner is None, timeout):
                    return False
                self._shared += 1
            return True

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if self._owner == threading.get_ident():
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
            else:
                self._shared -= 1
            self._cond.notify_all()


MAX_LOCK_TIMEOUT = 24 * 3600.0  # a day: longer, or negative, NaN or infinite, is a hang, not a timeout


def check_lock_timeout(timeout: Any) -> None:
    """A lock timeout that ends: a negative or infinite one would wait forever."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 <= timeout <= MAX_LOCK_TIMEOUT
    ):
        raise ValueError(
            f"lock_timeout={timeout!r}: expected a number of seconds from 0 to {MAX_LOCK_TIMEOUT:g} "
            "(a negative, NaN or infinite timeout would wait forever)"
        )


def check_lock_file(lock_path: Path, thread_id: str, what: str = "thread") -> None:
    """Refuse a lock file that is not a plain file: the saver only ever makes regular ones.

    A symlink planted at the lock's name would have the lock open whatever it points to; a
    hard link shares its file with another name; a FIFO or device would hang or misbehave.
    Checked on every acquire, as every other path is, since a checkout can plant one at any
    time; the lock file is also opened with O_NOFOLLOW (lockfile.py), which closes the window
    after this check for symlinks.
    """
    try:
        st = os.lstat(lock_path)
    except FileNotFoundError:
        return  # made by the lock (lockfile.py), as a regular file
    if stat.S_ISLNK(st.st_mode):
        raise RepoCheckpointError(
            f"refusing to lock {what} {thread_id!r}: its lock file {lock_path} is a symlink "
            "(lock files are never symlinks; remove it)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise RepoCheckpointError(
            f"refusing to lock {what} {thread_id!r}: its lock file {lock_path} is not a regular file "
            "(remove it)"
        )
    if st.st_nlink > 1:
        raise RepoCheckpointError(
            f"refusing to lock {what} {thread_id!r}: its lock file {lock_path} is a hard link "
            f"shared with {st.st_nlink - 1} other name(s) (lock files are never linked; remove it)"
        )


IDLE_LOCKS = 32  # locks kept after their last user left (ThreadLocks)


class ThreadLocks:
    """Per-thread locks: a lock file (lockfile.py) across processes, a gate inside one.

    Across processes every writer of a thread serialises on the lock file. Inside
    a process the file lock is held once for all the writers running at the same
    time (``LockFile`` counts its holders across threads).
    """

    def __init__(self, timeout: float) -> None:
        check_lock_timeout(timeout)
        self.timeout = timeout
        # per lock file: its file lock, its in-process gate and how many callers hold or wait
        # for it; dropped when the last one leaves, so a long-lived saver over many threads
        # keeps no lock (nor open file) per thread it ever wrote
        self._held: dict[Path, tuple[LockFile, _SharedExclusive, int]] = {}
        # the few last let go of, kept for the next put of the same thread (no new lock, no
        # mkdir of the lock folder per call); an idle lock holds no open file
        self._idle: OrderedDict[Path, tuple[LockFile, _SharedExclusive]] = OrderedDict()
        self._mutex = threading.Lock()

    def __len__(self) -> int:
        """How many threads' locks are in use now."""
        return len(self._held)

    @property
    def kept(self) -> int:
        """How many lock objects are kept, in use or idle: never more than the threads in use
        plus ``IDLE_LOCKS``, however many threads a saver ever wrote."""
        return len(self._held) + len(self._idle)

    @contextmanager
    def hold(
        self, lock_path: Path, thread_id: str, exclusive: bool = False, what: str = "thread"
    ) -> Iterator[None]:
        """Hold the lock of one thread (``what``: what the lock guards, for its errors: the
        store locks a namespace the same way)."""
        with self._mutex:
            held = self._held.get(lock_path)
            if held is None:
                idle = self._idle.pop(lock_path, None)
                if idle is None:
                    lock_path.parent.mkdir(parents=True, exist_ok=True)
                    idle = (LockFile(lock_path), _SharedExclusive())
                held = (*idle, 0)
            lock, gate, users = held
            self._held[lock_path] = (lock, gate, users + 1)
        try:
            with self._holding(lock, gate, lock_path, thread_id, exclusive, what):
                yield
        finally:
            with self._mutex:
                lock, gate, users = self._held[lock_path]
                if users == 1:
                    del self._held[lock_path]
                    self._idle[lock_path] = (lock, gate)
                    if len(self._idle) > IDLE_LOCKS:
                        self._idle.popitem(last=False)
                else:
                    self._held[lock_path] = (lock, gate, users - 1)

    @contextmanager
    def _holding(
        self,
        lock: LockFile,
        gate: _SharedExclusive,
        lock_path: Path,
        thread_id: str,
        exclusive: bool,
        what: str = "thread",
    ) -> Iterator[None]:
        if not gate.acquire(exclusive, self.timeout):
            raise LockTimeoutError(
                f"could not lock {what} {thread_id!r} within {self.timeout}s "
                f"({lock_path}); another thread of this process is using it"
            )
        try:
            check_lock_file(lock_path, thread_id, what)
            if not lock.acquire(self.timeout):
                raise LockTimeoutError(
                    f"could not lock {what} {thread_id!r} within {self.timeout}s "
                    f"({lock_path}); another process is writing to it"
                )
            try:
                yield
            finally:
                lock.release()
        finally:
            gate.release(exclusive)
