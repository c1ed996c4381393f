"""A check of the files reads the root as one snapshot (``ThreadStore``).

The saver's reads follow the cache rule of caches.py: whatever is kept is checked again
against the stat of every file it came from, on every use, so a reader sees every edit. A
check of the files (validate, fsck) reads each file to judge it and may rely on what it read
for the rest of that check instead. Inside ``snapshot()``:

* each file is lstat'ed, read, parsed and checked against its schema once (a file that does
  not read is read again each time, so every use reports it as the saver would);
* each folder's place (in the root, no symlink on the way) is checked once;
* a checkpoint's whole document (a delta on its parent's, bookkeeping.py) is made once, from
  its parent's whole when that is known: a line of deltas costs one ``materialize`` each;
* a resolved value is reused without checking the files it was built from again
  (``ValueResolver.trust_kept``), so an append chain is built once, link by link.

A file changed meanwhile may be judged as it was or as it is; every file is still judged.
When the outermost ``snapshot()`` ends, everything kept is dropped (memory, and the garbage
collector's work, stay at what one scope read: the checks open one per thread, since nothing
refers across threads) and reads follow the cache rule again, so nothing read in a snapshot
outlives it (a later lineage or listing index is never derived from it).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from .layout import CHECKPOINTS

# -- thread folders checked in worker processes ---------------------------------------
#: a whole-root check forks workers only from this many checkpoint files on: below it,
#: starting them costs more than they save (a fork and a pool take some 20-50 ms)
PARALLEL_FILES = 1500


class ThreadChecks(Protocol):
    """What ``check_threads`` needs of checks.py's ``Validator``."""

    problems: list[Any]
    orphan_writes: list[Any]
    bad_files: set[str]
    checkpoints: int
    files: int
    _progress: Callable[[int], None] | None

    def thread(self, folder: Path) -> None: ...

    def seen(self, n: int = 1) -> None: ...


def check_threads(v: ThreadChecks, folders: list[Path], workers: int | None = None) -> None:
    """``v.thread(folder)`` for each folder still a folder, in order, and what each found
    added to ``v``.

    Nothing refers across threads (each is one snapshot), so threads can be checked in
    forked worker processes, each adding what it found (problems, files, checkpoints) in
    folder order: the same lines, counts and exit code as one process. ``workers``: None for
    one per core when the root is big enough (``PARALLEL_FILES``), 1 for none. A thread whose
    worker fails is checked again here, so an unexpected error is raised as one process
    raises it."""
    count = _workers(folders, workers)
    if count < 2:
        for folder in folders:
            if folder.is_dir():
                v.thread(folder)
        return
    import multiprocessing  # only for a big root (validate FILE... never forks)

    global _FORKED
    ctx = multiprocessing.get_context("fork")
    with _FORKING:  # one run's workers at a time per process: they find it in _FORKED
        _FORKED = (v, folders)
        try:
            _in_workers(ctx, count, v, folders)
        finally:
            _FORKED = None


def _in_workers(ctx: Any, count: int, v: ThreadChecks, folders: list[Path]) -> None:
    """Each thread in a worker of a forked pool; what each found added in folder order. A
    worker that dies (killed, out of memory) breaks the pool, which says so at once (a
    ``multiprocessing.Pool`` would wait for its result for ever): the threads not yet added
    are then checked here."""
    from concurrent.futures import ProcessPoolExecutor  # only for a big root
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    with ProcessPoolExecutor(count, mp_context=ctx, initializer=_quiet) as pool:
        try:
            for found in pool.map(_check_one, range(len(folders))):
                _add(v, folders[done], found)
                done += 1
        except BrokenProcessPool:
            pass
    for folder in folders[done:]:
        if folder.is_dir():
            v.thread(folder)


def _add(v: ThreadChecks, folder: Path, found: Any) -> None:
    """What a worker found in one thread, added to ``v`` (None: it failed, checked here)."""
    if found is None:
        if folder.is_dir():
            v.thread(folder)
        return
    problems, orphans, bad, files, checkpoints = found
    v.problems.extend(problems)
    v.orphan_writes.extend(orphans)
    v.bad_files |= bad
    v.checkpoints += checkpoints
    v.seen(files)


_FORKED: tuple[ThreadChecks, list[Path]] | None = None  # what a forked worker checks
_FORKING = threading.Lock()


def _workers(folders: list[Path], asked: int | None) -> int:
    """How many processes check ``folders``: a fork is safe to rely on on Linux only (macOS
    system libraries may not survive one; Windows has none)."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if asked is not None:
        return min(asked, len(folders))
    if len(folders) < 2 or not sys.platform.startswith("linux"):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        return 1
    files = 0
    for folder in folders:
        try:
            files += len(os.listdir(folder / CHECKPOINTS))
        except OSError:
            pass  # reported when the thread is checked
        if files >= PARALLEL_FILES:
            return min(cores, len(folders))
    return 1


def _quiet() -> None:
    """A worker reports no progress itself (the parent does, a thread at a time): a progress
    bar's lock may have been held by another thread of the parent when it forked.

    Everything it inherited is frozen out of the cyclic collector's reach: each collection
    would rescan the parent's objects and copy every page it touched (a fifth of a
    whole-root validate). The worker is a process of ours that ends with the check; the
    caller's process and its collector settings are never touched."""
    assert _FORKED is not None
    _FORKED[0]._progress = None
    gc.freeze()


def _check_one(index: int) -> tuple[list[Any], list[Any], set[str], int, int] | None:
    """In a worker: check one thread folder; what it added (None: it failed, see above)."""
    assert _FORKED is not None
    v, folders = _FORKED
    problems, orphans, bad, files, checkpoints = (
        len(v.problems),
        len(v.orphan_writes),
        set(v.bad_files),
        v.files,
        v.checkpoints,
    )
    try:
        if folders[index].is_dir():
            v.thread(folders[index])
    except BaseException:  # checked again in the parent, which raises it as one process does
        return None
    return (
        v.problems[problems:],
        v.orphan_writes[orphans:],
        v.bad_files - bad,
        v.files - files,
        v.checkpoints - checkpoints,
    )
