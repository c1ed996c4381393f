"""A lock file taken by every holder in this process at once, across processes with ``flock``.

Why not filelock here: a put or put_writes takes its thread's lock once, seven times a chat
turn, and filelock 4 spent about 165 µs of CPU on each take and release (resolving the path,
its registry, fork checks with ``getpid``): about 1.2 ms a turn, measured. Here a take is an
``open``, an ``flock`` and two stats, a release an ``flock`` and a ``close`` (nothing stays
open between holds: a saver dropped holds no file of its root). filelock stays where
``fcntl`` is missing.

Invariants:

* the lock is on the file that is at the path once it is taken: a lock file removed or
  replaced between our open and our flock (``git clean -X``, ``rm -r .cache``, another
  process) is opened again, so two processes never hold locks on two different files of one
  name;
* never through a symlink (``O_NOFOLLOW``), never truncating (a hard link is harmless, and
  refused before anyway: ``durable.check_lock_file``);
* a forked child holds nothing: it closes the descriptors it inherited without unlocking
  them (an ``flock`` belongs to the open file, which the parent shares), and takes its own.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: filelock does it there
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.01  # between two tries while another process holds the lock
_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_ALL: weakref.WeakSet[LockFile] = weakref.WeakSet()


class LockFile:
    """One lock file: the first holder of this process takes it, the last one lets it go."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._holders = 0
        self._mutex = threading.Lock()
        self._fallback: Any = None if fcntl is not None else _filelock(path)
        _ALL.add(self)

    def acquire(self, timeout: float) -> bool:
        """Hold the lock; False when ``timeout`` seconds pass first (another process holds it)."""
        deadline = time.monotonic() + timeout
        if not self._mutex.acquire(timeout=timeout):
            return False
        try:
            if self._holders == 0 and not self._take(deadline):
                return False
            self._holders += 1
            return True
        finally:
            self._mutex.release()

    def release(self) -> None:
        with self._mutex:
            self._holders -= 1
            if self._holders == 0:
                if self._fallback is not None:
                    self._fallback.release()
                elif self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    self._close()

    def __del__(self) -> None:
        self._close()

    def _take(self, deadline: float) -> bool:
        if self._fallback is not None:
            from filelock import Timeout

            try:
                self._fallback.acquire(timeout=max(deadline - time.monotonic(), 0.0))
            except Timeout:
                return False
            return True
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self._close()
                    return False
                time.sleep(POLL_SECONDS)
                continue
            if self._at_path(fd):
                return True
            fcntl.flock(fd, fcntl.LOCK_UN)  # locked a file no longer at the path: take the one there
            self._close()

    def _open(self) -> int:
        if self._fd is None:
            try:
                self._fd = os.open(self.path, _FLAGS, 0o644)
            except FileNotFoundError:  # its folder was removed meanwhile
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, _FLAGS, 0o644)
        return self._fd

    def _at_path(self, fd: int) -> bool:
        try:
            there = os.lstat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _forget(self) -> None:
        """In a forked child: close what was inherited, without unlocking the parent's lock."""
        self._mutex = threading.Lock()
        self._holders = 0
        self._close()


def _filelock(path: Path) -> Any:
    from filelock import FileLock

    return FileLock(str(path), thread_local=False)


def _after_fork() -> None:
    for lock in list(_ALL):
        lock._forget()


os.register_at_fork(after_in_child=_after_fork)
