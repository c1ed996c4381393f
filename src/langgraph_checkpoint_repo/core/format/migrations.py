"""Explicit, step-by-step upgrades of files written by older format versions.

Readers accept exactly the current ``schema_version`` and never upgrade on read;
``langgraph-repo migrate`` is the only thing that rewrites a file in place. Each
step is a pure function from one file's JSON at version N to the same file at
N+1; steps chain, so a file from any older version reaches the current one.

A migration is safe to interrupt: every output is validated against the current
schemas before any file is replaced, then each file is replaced atomically (temp,
fsync, rename, folder fsync) under its thread's exclusive lock. A file is thus
either wholly old or wholly new, a rerun skips the new ones, and a second run of
a finished migration changes nothing.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..durable import write_files
from ..errors import FileFormatError, RepoCheckpointError, SchemaVersionError, symlink_refused
from ..items import ItemFiles
from ..layout import (
    CHECKPOINTS,
    LARGE,
    OBJECTS,
    VALUES,
    WRITES,
    data_names,
    decode_segment,
    hashed_thread_id,
    is_hashed_segment,
    is_temp_name,
    item_place_problem,
)
from ..threads import ThreadStore
from .canonical import dump_json
from .validation import SCHEMA_VERSION, check_version, validate_read

Doc = dict[str, Any]
Step = Callable[[Doc, str], Doc]


def v1_to_v2(doc: Doc, path: str) -> Doc:
    """Format 2 drops ``checkpoint.id``: it always repeated ``checkpoint_id``.

    Two copies of one id could disagree after a hand edit; the step refuses such a
    file rather than guess which copy is right.
    """
    out = copy.deepcopy(doc)
    out["schema_version"] = 2
    if out.get("kind") == "checkpoint" and isinstance(out.get("checkpoint"), dict):
        inner = out["checkpoint"]
        if "id" in inner and inner["id"] != out.get("checkpoint_id"):
            raise FileFormatError(
                path,
                "/checkpoint/id",
                f"{inner['id']!r} differs from checkpoint_id {out.get('checkpoint_id')!r}; "
                "fix one of them by hand, then migrate again",
            )
        inner.pop("id", None)
    return out


def v2_to_v3(doc: Doc, path: str) -> Doc:
    """Format 3 adds ``objects/`` (subtrees stored once per thread, ``$ref`` and ``$chunks``
    in trees). Everything format 2 wrote means the same in format 3, so the step only changes
    the version: values already on disk keep their inline copies, new writes share."""
    out = copy.deepcopy(doc)
    out["schema_version"] = 3
    return out


def v3_to_v4(doc: Doc, path: str) -> Doc:
    """Format 4 adds deltas (a checkpoint holding only what changed since its parent), a
    ``version`` for its new values, objects held in the file that introduced them, the
    parent's pending writes moved into a checkpoint, and message inputs stored as references
    to the message. Everything format 3 wrote means the same in format 4 (a whole checkpoint,
    objects in ``objects/``, writes in ``writes/``), so the step only changes the version:
    the tree reads back exactly as before, its versions included, and new writes are lean."""
    out = copy.deepcopy(doc)
    out["schema_version"] = 4
    return out


# STEPS[n] upgrades a file from version n to n + 1; one entry per released bump
STEPS: dict[int, Step] = {1: v1_to_v2, 2: v2_to_v3, 3: v3_to_v4}
OLDEST = min(STEPS) if STEPS else SCHEMA_VERSION


def upgrade(doc: Any, path: str) -> Doc | None:
    """The file at the current version, or None when it already is; never writes."""
    if not isinstance(doc, dict):
        raise FileFormatError(path, "/", "expected a JSON object")
    version = doc.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FileFormatError(path, "/schema_version", "missing or not an integer")
    if version == SCHEMA_VERSION:
        return None
    if version > SCHEMA_VERSION:
        check_version(doc, path)  # raises: written by a newer release
    if version < OLDEST:
        raise SchemaVersionError(
            path,
            "/schema_version",
            f"schema_version {version} is older than any version this release migrates",
        )
    out: Doc = doc
    for n in range(version, SCHEMA_VERSION):
        out = STEPS[n](out, path)
        if out.get("schema_version") != n + 1:
            raise RepoCheckpointError(f"migration step {n}->{n + 1} did not set schema_version ({path})")
    return out


@dataclass
class MigrationReport:
    """What a run found and did; ``changed`` lists files by path relative to the root."""

    root: Path
    dry_run: bool
    files: int = 0
    current: int = 0
    changed: list[str] = field(default_factory=list)
    from_versions: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "dry_run": self.dry_run,
            "schema_version": SCHEMA_VERSION,
            "files": self.files,
            "already_current": self.current,
            "migrated": len(self.changed),
            "from_versions": {str(k): v for k, v in sorted(self.from_versions.items())},
            "changed": self.changed,
        }


def _thread_id(store: ThreadStore, tdir: Path) -> str:
    seg = tdir.name
    if not is_hashed_segment(seg):
        try:
            return decode_segment(seg)
        except ValueError as exc:
            raise FileFormatError(str(tdir), "/", f"not a thread folder name: {exc}") from None
    tid = hashed_thread_id(tdir, store.files.load_unchecked)  # unchecked: older formats too
    if tid is None:
        raise FileFormatError(str(tdir), "/", "cannot tell which thread this folder holds")
    return tid


_FOLDER_KINDS = {
    CHECKPOINTS: "checkpoint",
    WRITES: "writes",
    VALUES: "value",
    LARGE: "large_value",
    OBJECTS: "object",
}


def _kind_of(path: Path) -> str:
    """The kind a file must be, from the folder it sits in (and in ``values/``, its name);
    a file elsewhere is not data."""
    if path.parent.name == VALUES and path.name.startswith("@"):
        return "base"
    kind = _FOLDER_KINDS.get(path.parent.name)
    if kind is None:
        raise FileFormatError(
            str(path), "/", "stray file (not in checkpoints/, writes/, values/, large/ or objects/)"
        )
    return kind


def _raise(exc: OSError) -> None:
    raise exc  # a folder that cannot be listed must stop the run, not be skipped


def _json_files(folder: Path) -> Iterator[Path]:
    """Every data file below a thread folder, in a fixed order; symlinks are refused."""
    for dirpath, dirnames, filenames in os.walk(folder, onerror=_raise, followlinks=False):
        here = Path(dirpath)
        for name in dirnames:
            if (here / name).is_symlink():
                raise symlink_refused(here / name)
        dirnames[:] = sorted(d for d in dirnames if not is_temp_name(d))
        for name in sorted(filenames):
            if name.endswith(".json") and not is_temp_name(name):
                yield here / name


def migrate_root(
    root: Path,
    *,
    dry_run: bool = False,
    durable: bool = True,
    lock_timeout: float = 60.0,
    progress: Callable[[int], None] | None = None,
) -> MigrationReport:
    """Upgrade every file under ``root`` to the current format version.

    Thread files and store items (``store/``). Two passes: the first upgrades and validates
    every file in memory and writes nothing, so one bad file stops the run before anything
    changed; the second upgrades each file again (a file changed in between is checked again,
    one removed in between is passed over) and replaces it atomically under its thread's (an
    item: its namespace's) lock. A second pass stopped half way (a lock not had in time) leaves
    each file wholly old or wholly new: run it again to finish.
    ``progress`` is called with the number of files done in each pass.
    """
    store = ThreadStore(root, durable=durable, lock_timeout=lock_timeout)
    run = _Migration(store, MigrationReport(root=root, dry_run=dry_run), progress, _thread_dirs(store))
    items = ItemFiles(store.files)
    item_paths = _item_paths(store)
    report = run.report
    for _ in run.each(1):
        pass
    # each stale item with the namespace its checked upgrade names (and its folders spell)
    pending = [
        (p, tuple(new["namespace"])) for p in item_paths if (new := run.upgraded(p, "item", 1)) is not None
    ]
    report.changed.sort()  # one order whatever the walk: threads/ and store/ as paths sort
    if dry_run or not report.changed:
        return report
    for path, new in run.each(2):
        write_files([(path, dump_json(new))], durable=durable)
    for path, namespace in pending:
        with items.lock(namespace):  # as RepoStore's writers do: read, then replace, alone
            again = run.upgraded(path, "item", 2)  # changed meanwhile: checked again, current or gone
            if again is not None:
                write_files([(path, dump_json(again))], durable=durable)
    return report


def _thread_dirs(store: ThreadStore) -> list[Path]:
    """The thread folders, each checked to be one: anything else in the threads folder stops
    the run before a file is read."""
    threads_dir = store.layout.threads_dir
    tdirs = [threads_dir / n for n in data_names(threads_dir)]
    for tdir in tdirs:
        if not tdir.is_dir() or tdir.is_symlink():
            raise FileFormatError(
                str(tdir), "/", "stray entry in the threads folder (not part of the layout)"
            )
    return tdirs


def _item_paths(store: ThreadStore) -> list[Path]:
    """The store items' files, in a fixed order; a store folder that is a symlink is refused."""
    folder = store.layout.store_dir
    if folder.is_symlink():
        raise symlink_refused(folder)
    return list(_json_files(folder)) if folder.is_dir() else []


@dataclass
class _Migration:
    """One run of ``migrate_root``: what its two passes share (the files, the report the
    first pass fills, the progress callback, the thread folders found before it began)."""

    store: ThreadStore
    report: MigrationReport
    progress: Callable[[int], None] | None
    tdirs: list[Path]

    def locked(self, tdir: Path) -> AbstractContextManager[None]:
        """A thread's exclusive lock; a dry run writes nothing, not even a lock file."""
        if self.report.dry_run:
            return nullcontext()
        return self.store.thread_lock(_thread_id(self.store, tdir), exclusive=True)

    def each(self, pass_no: int) -> Iterator[tuple[Path, Doc]]:
        """Every thread file that needs upgrading, with its upgrade, a thread at a time under
        its lock (the second pass passes over a thread removed since the first)."""
        for tdir in self.tdirs:
            if pass_no == 2 and not tdir.is_dir():
                continue  # deleted since the first pass
            with self.locked(tdir):
                for path in _json_files(tdir):
                    new = self.upgraded(path, _kind_of(path), pass_no)
                    if new is not None:
                        yield path, new

    def upgraded(self, path: Path, kind: str, pass_no: int) -> Doc | None:
        """The file upgraded and checked, or None when it is current (or, in the second pass,
        gone since the first: removed meanwhile, nothing left to upgrade); the first pass counts."""
        try:
            doc = self.store.files.load_unchecked(path)
        except FileNotFoundError:
            if pass_no == 1:
                raise
            return None
        new = upgrade(doc, str(path))
        if pass_no == 1:
            self.count(path, doc, new)
        if new is not None:
            validate_read(new, kind, str(path))
            problem = item_place_problem(path, new) if kind == "item" else None
            if problem is not None:  # the namespace an item names is the lock taken for it
                raise FileFormatError(str(path), *problem)
        if self.progress is not None:
            self.progress(1)
        return new

    def count(self, path: Path, doc: Doc, new: Doc | None) -> None:
        """The first pass's tally of a file: current, or to change from its version."""
        report = self.report
        report.files += 1
        if new is None:
            report.current += 1
        else:
            old = doc["schema_version"]
            report.from_versions[old] = report.from_versions.get(old, 0) + 1
            report.changed.append(path.relative_to(report.root).as_posix())
