"""``validate FILE...``: the checks of the files named, and of what they refer to, only.

pre-commit passes the files a commit adds or changes. Each is checked as whole-root
``validate`` checks it (schema, names against its place, secrets, types that must revive,
and what it refers to: values and their append chains, ``large/`` files and objects, resolved
the way the saver reads them; the checkpoint a writes file belongs to; a checkpoint's
parent), but no other file of its thread is read. What only a look at every file can find
(a removal that breaks a reference elsewhere, a cycle of parents, an orphaned writes file
whose checkpoint was deleted) is left to whole-thread ``validate`` (docs/cli.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .checks import Validator
from .layout import (
    CHECKPOINTS,
    LARGE,
    NAMESPACES,
    NS_FOLDERS,
    OBJECTS,
    THREAD_FOLDERS,
    VALUES,
    WRITES,
    Layout,
    decode_segment,
    is_temp_name,
)
from .refchecks import checkpoint_refs


@dataclass
class Targets:
    """What ``validate PATH...`` names: the whole root, thread folders, or single files."""

    whole: bool = False
    folders: list[Path] = field(default_factory=list)  # thread folders, checked whole
    files: list[Path] = field(default_factory=list)  # files under threads/, checked alone
    outside: list[str] = field(default_factory=list)  # as given: not under the root
    missing: list[str] = field(default_factory=list)  # as given: no such file or folder
    store: list[Path] = field(default_factory=list)  # under store/: item files, or folders of them


def targets(root: Path, paths: list[Path]) -> Targets:
    """Sort the paths given: a folder stands for the threads it holds (the root or
    ``threads/`` for all of them), a file for itself; a path under ``store/`` is a store item
    or a folder of them; other paths under the root (``.gitignore``, ``.cache/``) hold
    nothing to check."""
    layout = Layout(root)
    threads_dir, store_dir = layout.threads_dir.resolve(), layout.store_dir.resolve()
    root_res = root.resolve()
    found = Targets()
    folders: set[Path] = set()
    files: set[Path] = set()
    for given in paths:
        path = Path(os.path.abspath(given))
        real = path.parent.resolve() / path.name  # the file itself is not followed: a symlink stays one
        if real in (root_res, threads_dir):
            found.whole = True
            continue
        if real == store_dir or real.is_relative_to(store_dir):
            if not os.path.lexists(real):
                found.missing.append(str(given))
            else:
                found.store.append(layout.store_dir / real.relative_to(store_dir))  # as the root spells it
            continue
        try:
            rel = real.relative_to(threads_dir)
        except ValueError:
            try:
                real.relative_to(root_res)
            except ValueError:
                found.outside.append(str(given))
            continue
        if not os.path.lexists(real):
            found.missing.append(str(given))
        elif real.is_dir() and not real.is_symlink():
            folders.add(threads_dir / rel.parts[0])
        else:
            files.add(real)
    found.folders = sorted(folders)
    found.files = sorted(f for f in files if threads_dir / f.relative_to(threads_dir).parts[0] not in folders)
    return found


def check_store(v: Validator, paths: list[Path]) -> None:
    """Store items named one by one, or the folders holding them (each checked whole)."""
    for path in paths:
        if is_temp_name(path.name):
            continue
        if path.is_dir() and not path.is_symlink():
            v.store_items(path)
        elif path.name.endswith(".json"):
            v.item_file(path)
        else:
            v.seen()
            v.problem(path, "/", "stray file in the store (items are <key>.json files)")


def check_files(v: Validator, files: list[Path]) -> None:
    """Check each file alone (``Validator.problem`` collects what is wrong)."""
    with v.snapshot():  # the files named, and what they refer to, read once
        _check_files(v, files)


def _check_files(v: Validator, files: list[Path]) -> None:
    real_threads, threads_dir = v.layout.threads_dir.resolve(), v.layout.threads_dir
    for given in files:
        parts = given.relative_to(real_threads).parts
        path = threads_dir.joinpath(*parts)  # as the store names it: under the root as given
        thread_folder = threads_dir / parts[0]
        where = parts[1:]
        if len(where) == 4 and where[0] == NAMESPACES:
            ns_dir, where = thread_folder / NAMESPACES / where[1], where[2:]
        else:
            ns_dir = thread_folder
        if is_temp_name(path.name):
            continue  # never data (git ignores them); whole-root validate skips them too
        if (
            len(where) != 2
            or where[0] not in THREAD_FOLDERS
            or (ns_dir != thread_folder and where[0] not in NS_FOLDERS)
        ):
            v.seen()
            v.problem(
                path, "/", "not a file of the layout (threads/<thread>/[ns/<namespace>/]<kind>/<name>.json)"
            )
            continue
        if not path.name.endswith(".json"):
            v.seen()
            v.problem(path, "/", "stray file (every file of the layout is .json)")
            continue
        _check_file(v, thread_folder, ns_dir, where[0], path)


def _check_file(v: Validator, thread_folder: Path, ns_dir: Path, folder: str, path: Path) -> None:
    """One file of the layout, by the folder it lies in."""
    if folder == LARGE:
        v.large_file(path)
    elif folder == OBJECTS:
        v.object_file(path)
    elif folder == VALUES:
        v.values_file(ns_dir, path)
    else:
        present = _checkpoint_stems(ns_dir)
        if folder == WRITES:
            v.writes(thread_folder, ns_dir, path, present)
        else:
            _checkpoint(v, thread_folder, ns_dir, path, present)


def _checkpoint(v: Validator, thread_folder: Path, ns_dir: Path, path: Path, present: set[str]) -> None:
    """A checkpoint file: the checks of ``Validator.namespace`` for this one document, its
    parent judged against the checkpoint files present (none of them read)."""
    whole = v.checkpoint_file(path, thread_folder, ns_dir)
    if whole is not None:
        checkpoint_refs(v, ns_dir, path, whole, {}, present, oldest=_oldest(present))


def _checkpoint_stems(ns_dir: Path) -> set[str]:
    """The names (without ``.json``) of the checkpoint files of a namespace: a listing, no reads."""
    try:
        names = os.listdir(ns_dir / CHECKPOINTS)
    except FileNotFoundError:
        return set()
    return {n[:-5] for n in names if n.endswith(".json") and not is_temp_name(n)}


def _oldest(stems: set[str]) -> str | None:
    """The oldest checkpoint id among file stems (a hashed or malformed stem is left out:
    whole-thread validate reports it)."""
    ids = []
    for stem in stems:
        try:
            ids.append(decode_segment(stem))
        except ValueError:
            continue
    return min(ids, default=None)
