"""Listing and removing the files of a root, never through a symlink.

Invariants: the saver never makes a symlink, so one below the root was planted or
committed and may lead anywhere. Every removal starts from ``files_in`` or is checked with
``refuse_links``/``check_tree`` first, so a symlink on the way (or as the file) refuses the
whole operation before anything is removed, and nothing outside the root is ever listed or
removed. A folder is removed by renaming it away first, so readers never see it half-gone.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .durable import fsync_dir
from .errors import RepoCheckpointError
from .layout import Layout, is_temp_name


def refuse_links(layout: Layout, path: Path, doing: str) -> None:
    """Raise unless ``path`` lies under the root with no symlink on the way (itself included)."""
    problem = layout.off_the_way(path)
    if problem is None:
        return
    what, where = problem
    if what == "outside":
        raise RepoCheckpointError(f"refusing to {doing}: {path} is outside the root {layout.root}")
    if what == "not plain":
        raise RepoCheckpointError(f"refusing to {doing}: {path} is not a plain path under {layout.root}")
    raise _link_error(doing, where, root=where in layout.guarded)


def check_tree(layout: Layout, folder: Path, doing: str) -> None:
    """``refuse_links`` for a folder and everything in it: run before a removal starts, so a
    symlink anywhere in a thread refuses the whole operation before any file is removed."""
    refuse_links(layout, folder, doing)
    stack = [folder]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                raise _link_error(doing, Path(entry.path))
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))


def files_in(layout: Layout, folder: Path) -> list[Path]:
    """The files of a layout folder, the listing every removal starts from: a symlinked
    folder on the way or a symlink in it is refused, never listed (so never removed)."""
    refuse_links(layout, folder, f"list {folder}")
    try:
        with os.scandir(folder) as it:
            entries = sorted((e for e in it if not is_temp_name(e.name)), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.is_symlink():
            raise _link_error(f"list {folder}", Path(entry.path))
    return [folder / e.name for e in entries]


def remove_tree(layout: Layout, folder: Path, durable: bool) -> None:
    """Remove a folder so readers never see it half-gone: rename it away, then delete.

    Refused, with nothing removed, when a symlink lies on the way from the root or
    anywhere inside the folder.
    """
    if not os.path.lexists(folder):
        return
    check_tree(layout, folder, f"remove {folder}")
    grave = folder.with_name(f".{folder.name}.deleted.{os.getpid()}.{time.time_ns()}.tmp")
    os.rename(folder, grave)
    if durable:
        fsync_dir(folder.parent)
    shutil.rmtree(grave)


def remove_files(layout: Layout, paths: list[Path], durable: bool) -> None:
    """Unlink files of the root; every path is checked before the first one goes, so a
    symlink on the way (or as the file) refuses the whole call and removes nothing."""
    for path in paths:
        refuse_links(layout, path, f"remove {path}")
    folders: set[Path] = set()
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        folders.add(path.parent)
    if durable:
        for folder in folders:
            fsync_dir(folder)


def _link_error(doing: str, link: Path, *, root: bool = False) -> RepoCheckpointError:
    if root:
        return root_link_error(doing, link)
    return RepoCheckpointError(
        f"refusing to {doing}: {link} is a symlink, which may lead outside the root; RepoSaver never makes "
        "one and never follows one "
        f"(if it should not be there, remove the link itself: rm {link})"
    )


def root_link_error(doing: str, link: Path) -> RepoCheckpointError:
    """The refusal of a root that is (or lies behind) a symlink: it may be another project's state."""
    try:
        target = f" (to {os.readlink(link)})"
    except OSError:
        target = ""
    return RepoCheckpointError(
        f"refusing to {doing}: the root's folder {link} is a symlink{target}, which may be another "
        "project's state; RepoSaver reads and writes only a root that is a real folder "
        f"(give the folder it points to, or remove the link: rm {link})"
    )
