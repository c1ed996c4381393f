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

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .caches import StatKey, folder_key
from .durable import TOO_DEEP, ensure_dir, fsync_dir, too_deep, write_batches, write_files
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
        self._safe_dirs: set[Path] = set()  # folders known to exist
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
        self._make_dirs(folders)
        before = {folder: folder_key(folder) for folder in folders if folder.name in LISTED}
        with self._settled:
            self._in_flight.update(files)
        try:
            self._write_batches(batches, folders)
        finally:
            with self._settled:
                self._in_flight.subtract(files)
                for path in files:
                    if self._in_flight[path] <= 0:
                        self._in_flight.pop(path, None)
                self._settled.notify_all()
        for i, path in enumerate(files):
            folder = folder_of(path)
            if folder in before:
                written(path, before[folder])
                if any(folder_of(p) == folder for p in files[i + 1 :]):
                    before[folder] = folder_key(folder)

    def _write_batches(self, batches: list[list[tuple[Path, bytes]]], folders: set[Path]) -> None:
        try:
            write_batches(batches, self.durable)
        except FileNotFoundError:
            # a folder we had made was removed meanwhile (another process, git): make it again
            self._safe_dirs.clear()
            self._check_all(folders)
            self._make_dirs(folders)
            write_batches(batches, self.durable)

    def forget(self) -> None:
        """Check every folder again before the next write (something was removed)."""
        self._safe_dirs.clear()
        self._gitignore_done = False

    def _check_all(self, folders: set[Path]) -> None:
        """Refuse the write when any of its folders leads out of the root or through a symlink."""
        refused = self.layout.first_off_the_way(sorted(folders))
        if refused is not None:
            self._refuse(refused[0], refused[1][1])

    def _make_dirs(self, folders: set[Path]) -> None:
        """Make the folders not known to exist, and check them again once made."""
        for folder in sorted(folders):
            if folder not in self._safe_dirs:
                ensure_dir(folder, self.root, self.durable)
                self.check_inside(folder)
                self._safe_dirs.add(folder)

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
