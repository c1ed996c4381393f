"""Writing documents into a root: validated, placed, bounded, durable, never through a symlink.

Invariants:

* nothing is written that is invalid, lies where its names do not say, or is bigger than
  a read accepts (``prepare``): it could never be read back;
* batches are written in order, each durable before the next appears (the checkpoint file,
  the commit point, goes last; ``durable.write_batches``);
* every folder written to is checked to lie inside the root with no symlink on the way,
  on every write, before anything is created: a folder can be swapped for a symlink (by a
  checkout) while a saver lives;
* the root's ``.gitignore`` is written before the first lock file or data file, so git
  never picks up a lock file.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .caches import StatKey, folder_key
from .durable import TOO_DEEP, fsync_dir, make_dirs, too_deep, write_batches, write_files
from .errors import InvalidWriteError, RepoCheckpointError
from .format.canonical import dump_json
from .format.validation import validate_write
from .jsonread import SURROGATE_MESSAGE, lone_surrogate, write_problem
from .layout import CHECKPOINTS, GITIGNORE_TEXT, WRITES, Layout, place_problem
from .removal import root_link_error

# told of each file written: (its path, its folder's stat key just before the write)
Written = Callable[[Path, StatKey | None], None]
# the folders whose listings the store keeps (ids, writes groups: store._derived); the others
# (objects/, large/, values/) are found by name, so a write there keeps no listing current
LISTED = frozenset({CHECKPOINTS, WRITES})


def prepare(kind: str, doc: dict[str, Any], path: Path) -> tuple[Path, bytes]:
    """Validate, then serialise; nothing is written when the document is invalid, is not
    where its names say, holds a string that is not valid Unicode, or is bigger than a read
    accepts (it could never be read back)."""
    try:
        validate_write(doc, kind, str(path))
        misplaced = place_problem(path, kind, doc)
        if misplaced is not None:
            raise InvalidWriteError(kind, str(path), *misplaced)
        data = dump_json(doc)
    except (InvalidWriteError, TypeError, ValueError) as exc:
        # a lone surrogate (in an id, a task path ...) fails the schema check or the encoder;
        # name it where it is, as a read would (jsonread.lone_surrogate: one rule)
        bad = lone_surrogate(doc)
        if bad is not None:
            raise InvalidWriteError(kind, str(path), bad, SURROGATE_MESSAGE) from None
        if too_deep(exc):
            raise InvalidWriteError(kind, str(path), "/", TOO_DEEP) from None
        raise
    too_big = write_problem(data)
    if too_big is not None:
        raise InvalidWriteError(kind, str(path), "/", too_big)
    return path, data


class Writer:
    """Durable writes into one root, remembering which folders it has made."""

    def __init__(self, layout: Layout, durable: bool) -> None:
        self.layout = layout
        self.root = layout.root
        self.durable = durable
        # folders known to exist with their entry durable in their parent: made durable by a
        # round of one of this writer's writes (a folder found, even one another process
        # made a moment ago, is settled by the first write into it: ``_make_dirs``). By path:
        # one another process removes and makes again later is not told apart (an inode
        # number comes back on ext4): docs/reliability.md, Faults
        self._safe_dirs: set[Path] = set()
        self._gitignore_done = False
        # names a write of this process is still making durable (renamed, folder not yet fsynced)
        self._in_flight: Counter[Path] = Counter()
        self._settled = threading.Condition()

    def durable_exists(self, path: Path) -> bool:
        """Whether ``path`` is there for a referrer to rely on. A file found by ``exists``
        alone could be renamed by another write of this process (a put beside a put_writes)
        but not yet fsynced into its folder, and a referrer written on that strength could
        outlive it in a power loss: such a write is waited for first (it waits for nothing
        this caller holds: the caller has not started writing)."""
        if path in self._in_flight:  # one lookup in C: the wait is for the rare write beside
            with self._settled:
                self._settled.wait_for(lambda: self._in_flight[path] <= 0)
        return path.exists()

    def write(self, batches: list[list[tuple[Path, bytes]]], written: Written) -> None:
        """Write batches in order, each durable before the next appears (``write_batches``:
        every temp file written and fsynced first, then each batch renamed into place and its
        folders fsynced, one batch after another).

        Every folder of the call is checked once, before anything is created (folders on the
        way shared, ``Layout.first_off_the_way``); ``written`` is told only of files in the
        folders whose listings the store keeps (``LISTED``), so the others cost no stat."""
        self.ensure_gitignore()
        batches = [batch for batch in batches if batch]
        files = [path for batch in batches for path, _ in batch]
        folder_of = self.layout.folder_of  # one Path per folder, its hash made once
        folders = {folder_of(p) for p in files}
        self._check_all(folders)
        made: list[Path] = []
        try:
            before = self._write_made(batches, files, folders, made)
        except BaseException:
            self._remove_made(made)
            raise
        for i, path in enumerate(files):
            folder = folder_of(path)
            if folder in before:
                written(path, before[folder])
                if any(folder_of(p) == folder for p in files[i + 1 :]):
                    before[folder] = folder_key(folder)

    def _write_made(
        self,
        batches: list[list[tuple[Path, bytes]]],
        files: list[Path],
        folders: set[Path],
        made: list[Path],
    ) -> dict[Path, StatKey | None]:
        """Make the call's folders (``made`` gets those made), then write; the stat keys the
        listed folders had before."""
        try:
            unsettled = self._make_dirs(folders, made)
        except FileNotFoundError:
            # a folder on the way went meanwhile (a failed write beside this one removes the
            # folders it made): make them again
            self._safe_dirs.clear()
            unsettled = self._make_dirs(folders, made)
        before = {folder: folder_key(folder) for folder in folders if folder.name in LISTED}
        with self._settled:
            self._in_flight.update(files)
        try:
            self._write_batches(batches, folders, unsettled, made)
        finally:
            with self._settled:
                self._in_flight.subtract(files)
                for path in files:
                    if self._in_flight[path] <= 0:
                        self._in_flight.pop(path, None)
                self._settled.notify_all()
        return before

    def _write_batches(
        self,
        batches: list[list[tuple[Path, bytes]]],
        folders: set[Path],
        unsettled: list[Path],
        made: list[Path],
    ) -> None:
        """``write_batches``, the parents of the ``unsettled`` folders fsynced beside the temps;
        those folders are settled once it returns."""
        try:
            write_batches(batches, self.durable, {folder.parent: None for folder in unsettled})
        except FileNotFoundError:
            # a folder we had made was removed meanwhile (another process, git): make it again
            self._safe_dirs.clear()
            self._check_all(folders)
            unsettled = self._make_dirs(folders, made)
            write_batches(batches, self.durable, {folder.parent: None for folder in unsettled})
        self._safe_dirs.update(unsettled)

    def forget(self) -> None:
        """Check every folder again before the next write (something was removed)."""
        self._safe_dirs.clear()
        self._gitignore_done = False

    def _check_all(self, folders: set[Path]) -> None:
        """Refuse the write when any of its folders leads out of the root or through a symlink."""
        refused = self.layout.first_off_the_way(sorted(folders))
        if refused is not None:
            self._refuse(refused[0], refused[1][1])

    def _make_dirs(self, folders: set[Path], made: list[Path]) -> list[Path]:
        """Make the folders not known to exist (``made`` gets those made, outermost first), and
        check them again once made. Returns the folders whose entry this writer has not seen
        made durable: those made now (one settled before and removed since included), and
        those of the call and on the way up to the root not settled yet. Their parents are
        fsynced in the round that fsyncs the temp files, before anything is renamed into
        them: a new folder costs no round of its own (each was one before: a new thread's
        first put waited four times, now twice)."""
        unsettled: dict[Path, None] = {}
        root = self.root
        for folder in sorted(folders):
            if folder in self._safe_dirs:
                continue
            new = make_dirs(folder, root)
            made.extend(new)
            for again in new:  # made now, even if settled once (removed since): settled again
                self._safe_dirs.discard(again)
                unsettled[again] = None
            self.check_inside(folder)
            cur = folder
            while cur != root and cur not in self._safe_dirs and cur.parent != cur:
                unsettled[cur] = None
                cur = cur.parent
        return list(unsettled)

    def _remove_made(self, folders: list[Path]) -> None:
        """Remove the ``folders`` a failed write made (outermost first), innermost first, each
        only while it is empty and only with no symlink on its way (removal.py's rule): the
        root is left as the write found it (a folder another write has filled stays)."""
        for folder in reversed(folders):
            if self.layout.off_the_way(folder) is not None:
                continue
            try:  # from its parent opened without following a link swapped in since the check
                parent = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                os.rmdir(folder.name, dir_fd=parent)  # a link at its own name: ENOTDIR, kept
            except OSError:
                continue
            finally:
                os.close(parent)

    def check_inside(self, folder: Path) -> None:
        problem = self.layout.off_the_way(folder)
        if problem is not None:
            self._refuse(folder, problem[1])

    def _refuse(self, folder: Path, link: Path | None = None) -> None:
        if link is not None and link in self.layout.guarded:
            raise root_link_error(f"write through {folder}", link)
        raise RepoCheckpointError(f"refusing to write through {folder}: it leads outside {self.root}")

    def ensure_gitignore(self) -> None:
        if self._gitignore_done:
            return
        self.check_inside(self.root)  # not into a root that is a symlink (another project's)
        path = self.root / ".gitignore"
        if not path.exists():
            if not self.root.is_dir():
                self.root.mkdir(parents=True, exist_ok=True)
                if self.durable:
                    fsync_dir(self.root.parent)
            write_files([(path, GITIGNORE_TEXT.encode())], self.durable)
        self._gitignore_done = True
