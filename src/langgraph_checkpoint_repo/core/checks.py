"""Whole-root checks: validate and fsck.

``validate`` answers "can every stored state be read back as it was written": each file
against its schema, names against contents, and every reference (values, append bases,
large values, value files, the checkpoint a writes file belongs to, parents a
DeltaChannel needs) resolved. ``fsck`` looks for what is left over or derived (temp files,
orphaned writes, values and large values, the root's ``.gitignore``) and can remove or
rebuild only that.

Everything reads through ``ThreadStore`` (the same validation and refusal of symlinks,
duplicate keys, oversized files as the saver); nothing here writes except ``repair``.
Nothing here constructs a value: whether LangGraph's own types accept their stored data is
a check the caller may pass in (``Revival``, from serde.py), since it needs LangGraph.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .bodyindex import VALUES_SUFFIX, decode_values
from .durable import write_files
from .errors import FileFormatError, InstallationError, RepoCheckpointError
from .format import fields
from .format.canonical import digest_node
from .format.decode import checkpoint_record
from .format.messages import MESSAGE_TYPES, MESSAGES, refusals
from .format.needs import needed_files
from .format.objects import (
    EDITED,
    large_ref,
    location_of,
    names_object,
    ref_digest,
    types_and_refs,
    without_refs,
)
from .format.records import CheckpointRecord
from .format.tree import MARKS, plain_value, type_pointer
from .format.validation import pointer_part
from .index import index_files, index_problem, is_plain
from .items import KIND as ITEM_KIND
from .items import SUFFIX as ITEM_SUFFIX
from .items import item_path, stored_item, time_problems, utc_now
from .jsonread import MAX_FILE_BYTES
from .layout import (
    CACHE,
    CHECKPOINTS,
    GITIGNORE_TEXT,
    LARGE,
    NAMESPACES,
    NS_FOLDERS,
    OBJECTS,
    STORE,
    THREAD_FOLDERS,
    THREADS,
    VALUES,
    WRITES,
    Layout,
    data_names,
    decode_segment,
    encode_segment,
    hashed_thread_id,
    holds_state,
    is_hashed_segment,
    is_own_grave,
    is_own_temp_file,
    is_temp_name,
    value_file_kind,
)
from .masking import mask_secrets
from .redaction import DESCRIPTIONS, find_secrets
from .refchecks import checkpoint_refs, parent_cycles
from .roster import roster_of
from .sends import TASKS, send_problems
from .snapshot import check_threads
from .threads import ThreadStore
from .tracked import tracked_cache_files
from .typenames import never_constructed

Progress = Callable[[int], None]
# a stored tree walked once (``types_and_refs``): its pointer, the tree, the types it names
# and its reference nodes
_Walked = tuple[str, Any, list[tuple[str, ...]], list[dict[str, Any]]]
#: a stored tree -> (JSON pointer inside it, why) of the first value its type rejects, or None
Revival = Callable[[Any], "tuple[str, str] | None"]


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong, as one line: the file, the JSON pointer inside it, what is wrong."""

    path: str
    pointer: str
    message: str

    def line(self) -> str:
        return f"{self.path}: {self.pointer}: {self.message}"


def count_files(root: Path, folders: list[Path] | None = None) -> int:
    """How many files a check will look at (for a progress bar)."""
    total = 0
    for top in folders if folders is not None else [root / "threads", root / STORE]:
        for _, _, files in os.walk(top):
            total += len(files)
    return total


#: what validate says of a file or folder the layout does not define (a ``.gitattributes``
#: among the state's files changes what ``git archive`` and a checkout make of them)
NOT_IN_LAYOUT = (
    "not part of the layout (docs/format.md): RepoSaver never writes it; remove it (a hidden "
    "file such as .gitattributes here changes what git shows of the state)"
)


#: what validate says of a file under ``.cache/`` that git tracks (core/tracked.py)
TRACKED_CACHE = (
    "derived data committed to git: .cache/ is made on each machine and never taken from a "
    "commit; remove it from git (git rm --cached) and keep .cache/ ignored"
)


# ----------------------------------------------------------------------
# validate
# ----------------------------------------------------------------------
class Validator:
    """Checks thread folders; collects problems instead of stopping at the first.

    ``secrets``: also report every string that looks like an API key or token (the default
    redaction patterns), at its JSON pointer, without printing it.
    """

    def __init__(
        self,
        root: Path,
        progress: Progress | None = None,
        *,
        secrets: bool = True,
        revival: Revival | None = None,
        workers: int | None = None,
    ) -> None:
        """``revival``: also construct the types LangGraph ships (messages ...) as a read would
        (``serde.check_revival``); without it nothing is constructed or imported. ``workers``:
        processes ``run`` checks threads in (snapshot.check_threads; None: one per core for a
        big root)."""
        self.root = root
        self.workers = workers
        self.secrets = secrets
        self.revival = revival
        # the checks' cache policy: memoized inside ``snapshot()`` only (snapshot.py)
        self.store = ThreadStore(root, snapshots=True)
        self.layout = self.store.layout
        self.problems: list[Problem] = []
        self.orphan_writes: list[Problem] = []  # also in problems; fsck may remove these files
        self.bad_files: set[str] = set()
        self.files = 0
        self.checkpoints = 0
        self.items = 0  # store items (RepoStore)
        self.entry_memo: dict[tuple[Path, str, Any, str], bool | Exception] = {}
        # inside ``snapshot()``, what was found once that many files refer to, by thread folder
        # name: the checkpoint a reference names with $in and the objects it holds (None: no
        # file; False: it does not read, reported where that file is checked) or why it cannot
        # be named; whether objects/<digest>.json is a file
        self._held: dict[tuple[str, tuple[str, str]], tuple[Path, dict[str, Any] | bool | None] | str] = {}
        self._in_objects: dict[tuple[str, str], bool] = {}
        self._tdirs: dict[str, Path] = {}  # thread folder name -> its folder (_holder)
        self._threads_prefix = str(self.layout.threads_dir) + os.sep
        self._progress = progress

    def seen(self, n: int = 1) -> None:
        self.files += n
        if self._progress is not None:
            self._progress(n)

    def problem(self, path: Path | str, pointer: str, message: str) -> None:
        # a schema error may quote the bad value: never print a secret it holds
        self.problems.append(Problem(str(path), mask_secrets(pointer or "/"), mask_secrets(message)))

    def read(self, path: Path, kind: str) -> dict[str, Any] | None:
        self.seen()
        try:
            doc = self.store.files.read_doc(path, kind)
            if self.secrets:
                self._secrets(path, doc)
            trees = _stored_trees(doc)
            walked = [(pointer, tree, *types_and_refs(tree)) for pointer, tree in trees]  # one walk each
            self._named_types(path, walked)
            rejected = self._revivable(path, trees, self.revival) if self.revival is not None else set()
            self._messages(path, walked, rejected)
            self._object_refs(path, doc, walked)
            return doc
        except FileFormatError as exc:
            self.bad_files.add(exc.path)
            self.problem(exc.path, exc.pointer, problem_text(exc))
        except OSError as exc:
            self.bad_files.add(str(path))
            self.problem(path, "/", f"cannot read: {exc.strerror or exc}")
        return None

    def _named_types(self, path: Path, trees: list[_Walked]) -> None:
        """Every type a stored tree names that no reader constructs, whatever it allows: a name
        from Python itself outside LangGraph's safe types (``os.system``), a method outside
        LangGraph's safe methods, an unknown msgpack extension. A graph's own types are not
        judged here (validate has no graph). Nothing is imported. ``trees``: the document's
        (``_stored_trees``), each with what it names and refers to (``types_and_refs``)."""
        for pointer, tree, types, _ in trees:
            for key in dict.fromkeys(types):
                problem = never_constructed(key)
                if problem is not None:
                    at = type_pointer(tree, key) if len(key) >= 2 and key[0] not in MARKS else None
                    self.problem(path, pointer + (at or ""), problem)

    def _revivable(self, path: Path, trees: list[tuple[str, Any]], revival: Revival) -> set[str]:
        """Every stored tree whose LangGraph types (messages, datetimes, ``Send`` ...) reject
        their data, as the saver would find on reading it: one problem at the JSON pointer of
        the value. The graph's own types are not imported here (validate has no graph).
        Returns the pointers of the trees rejected."""
        rejected = set()
        for pointer, tree in trees:
            found = revival(without_refs(tree))
            if found is not None:
                self.problem(path, pointer + found[0], found[1])
                rejected.add(pointer)
        return rejected

    def _messages(self, path: Path, trees: list[_Walked], rejected: set[str]) -> None:
        """Every stored message LangChain would build other than the views show it, or not
        at all (core/format/messages.py): a problem at the refused field. A tree the revival check
        rejected already is not reported twice."""
        for pointer, tree, types, _ in trees:
            if pointer in rejected or not any(key[:2] in MESSAGE_TYPES for key in types):
                continue
            for inner, refusal in refusals(tree):
                self.problem(path, pointer + inner, f"message refused: {refusal.text()}")

    def _object_refs(self, path: Path, doc: dict[str, Any], trees: list[_Walked]) -> None:
        """Every object a stored tree refers to is where the reference says: the objects the
        file holds (format 4), those of the checkpoint ``$in`` names (or, when prune removed
        it, ``objects/``), else ``objects/``; each object's content is checked once, where it
        lies. The objects a file holds must match their names."""
        held = doc.get("objects") if doc.get("kind") in ("checkpoint", "writes") else None
        held = held if isinstance(held, dict) else {}
        for digest, tree in held.items():
            if not self.store.values.names(digest, tree):  # once per snapshot (resolve.py)
                self.bad_files.add(str(path))
                self.problem(path, f"/objects/{digest}", EDITED)
        tname: str | None = None  # the thread folder's name, found once a tree refers to an object
        for pointer, _, _, refs in trees:
            for node in refs:
                if tname is None:
                    spath = str(path)
                    if not spath.startswith(self._threads_prefix):
                        return
                    tname = spath[len(self._threads_prefix) :].split(os.sep, 1)[0]
                digest = ref_digest(node)
                loc = location_of(node)
                if loc is None and digest in held:
                    continue
                if loc is not None:
                    found = self._holder(tname, loc)
                    if isinstance(found, str):
                        self.problem(path, pointer, found)
                        continue
                    target, there = found
                    if there is False:
                        continue  # reported where that file is checked
                    if isinstance(there, dict):
                        if digest not in there:
                            why = f"refers to object {digest} in {target}, which does not hold it"
                            self.problem(path, pointer, why)
                        continue
                if not self._object_file_there(tname, digest):
                    tdir = self.layout.threads_dir / tname
                    missing = f"refers to object {digest}, which is missing from {tdir / OBJECTS}"
                    self.problem(path, pointer, missing)

    def _holder(self, tname: str, loc: tuple[str, str]) -> tuple[Path, dict[str, Any] | bool | None] | str:
        """The checkpoint file a reference's ``$in`` (``loc``) names in thread folder ``tname``
        and the objects it holds (None: no such file; False: it does not read, reported where
        it is checked), or why it cannot be named. Once a snapshot: many references name one."""
        got = self._held.get((tname, loc))
        if got is not None:
            return got
        tdir = self._tdirs.get(tname)
        if tdir is None:
            tdir = self._tdirs[tname] = self.layout.threads_dir / tname
        values = self.store.values
        try:
            target = values.checkpoint_in(tdir, *loc)
        except FileFormatError as exc:
            got = problem_text(exc)
        else:
            there: dict[str, Any] | bool | None = None
            # a file read in this snapshot is one (snapshot.py): no stat again
            if values.read_paths.get(str(target)) is target or target.is_file():
                try:
                    there = self.store.files.read_doc(target, "checkpoint").get("objects") or {}
                except (FileFormatError, OSError):
                    there = False
            got = (target, there)
        if self.store.in_snapshot:
            self._held[tname, loc] = got
        return got

    def _object_file_there(self, tname: str, digest: str) -> bool:
        """Whether ``objects/<digest>.json`` of thread folder ``tname`` is a file (once a snapshot)."""
        got = self._in_objects.get((tname, digest))
        if got is None:
            got = (self.layout.threads_dir / tname / OBJECTS / f"{digest}.json").is_file()
            if self.store.in_snapshot:
                self._in_objects[tname, digest] = got
        return got

    def _secrets(self, path: Path, doc: dict[str, Any]) -> None:
        for pointer, kind, masked in find_secrets(doc):
            self.problem(
                path,
                pointer,
                f"looks like {DESCRIPTIONS[kind]} ({masked}): redact it before it is committed "
                "(RepoSaver redacts new values by default; see docs/secrets.md)",
            )

    def reference(self, path: Path, pointer: str, check: Callable[[], object]) -> bool:
        """Run a reference check; report at the referring file unless the cause is already reported."""
        try:
            check()
        except FileFormatError as exc:
            if exc.path != str(path) and exc.path not in self.bad_files and Path(exc.path).is_file():
                # the cause is in that file (an append chain's base edited by hand): one line
                # there, naming it and its pointer, not one at every checkpoint built on it
                self.bad_files.add(exc.path)
                self.problem(exc.path, exc.pointer, problem_text(exc))
            elif exc.path not in self.bad_files:
                cause = problem_text(exc)
                if exc.path != str(path):
                    cause = f"{exc.path}: {exc.pointer}: {cause}"
                self.problem(path, pointer, cause)
            return False
        except OSError as exc:
            self.problem(path, pointer, f"cannot read: {exc.strerror or exc}")
            return False
        return True

    # -- walking ------------------------------------------------------------------
    def thread_folders(self) -> list[Path]:
        tdir = self.layout.threads_dir
        out = []
        for name in data_names(tdir):
            folder = tdir / name
            if folder.is_symlink() or not folder.is_dir():
                self.problem(folder, "/", "stray file in threads/ (expected one folder per thread)")
                continue
            out.append(folder)
        return out

    def run(self, folders: list[Path] | None = None) -> list[Problem]:
        """The thread folders given, or (None) every thread and every store item, and every
        entry among them that the layout does not define."""
        check_threads(self, self.thread_folders() if folders is None else folders, self.workers)
        if folders is None:
            self.store_items(self.layout.store_dir)
            found = _temp_findings(self.layout.root)
            for path in tracked_cache_files(self.layout.root):
                self.problem(path, "/", TRACKED_CACHE)
        else:
            found = [f for folder in folders for f in _thread_temp_findings(folder)]
        for f in found:
            if f.kind == "foreign":
                self.problem(f.path, "/", NOT_IN_LAYOUT)
        return sorted(set(self.problems))

    # -- the store (RepoStore's items, core/items.py) -------------------------------
    def store_items(self, top: Path) -> None:
        """Every item file under ``top`` (the store, or one of its namespace folders): each
        against its schema and its place; symlinks and stray files reported, never followed."""
        problem = self.layout.off_the_way(top)
        if problem is not None:
            self.problem(problem[1], "/", f"refusing to check the store through it ({problem[0]})")
            return
        stack = [top]
        while stack:
            folder = stack.pop()
            for name, kind in _entries(folder):
                path = folder / name
                if is_temp_name(name):
                    continue
                if kind == "link":
                    self.problem(path, "/", "is a symlink; the store never makes one and never follows one")
                elif kind == "dir" and "." in name:
                    self.problem(path, "/", "not a namespace folder (a namespace label holds no '.')")
                elif kind == "dir":
                    stack.append(path)
                elif kind == "file" and name.endswith(ITEM_SUFFIX):
                    self.item_file(path)
                else:
                    self.seen()
                    self.problem(path, "/", f"stray file in the store (items are <key>{ITEM_SUFFIX} files)")

    def item_file(self, path: Path) -> None:
        """One store item: its schema, names and place (exactly the path its namespace and
        key give), its times, secrets and the types its value names."""
        doc = self.read(path, ITEM_KIND)
        if doc is None:
            return
        self.items += 1
        want = item_path(self.layout, doc["namespace"], doc["key"])
        if want != path:
            self.problem(
                path,
                "/namespace",
                f"names namespace {tuple(doc['namespace'])!r} and key {doc['key']!r}, which live at {want}",
            )
            return
        try:
            item = stored_item(doc, path)
        except FileFormatError as exc:
            self.problem(exc.path, exc.pointer, problem_text(exc))
            return
        for pointer, why in time_problems(item, utc_now()):  # a forged time broke every later put
            self.problem(path, pointer, why)

    def thread(self, folder: Path) -> None:
        expected_tid = self._decoded(folder, "thread")
        namespaces: list[tuple[Path, str | None]] = [(folder, "")]
        for name in sorted(os.listdir(folder)):
            if name in (*THREAD_FOLDERS, NAMESPACES):
                self._layout_folder(folder / name)
            elif not is_temp_name(name):
                self.problem(folder / name, "/", "stray entry in a thread folder (not part of the layout)")
        nsroot = folder / NAMESPACES
        if nsroot.is_dir():
            for seg in sorted(os.listdir(nsroot)):
                if is_temp_name(seg):
                    continue
                if (nsroot / seg).is_symlink() or not (nsroot / seg).is_dir():
                    self.problem(nsroot / seg, "/", "stray entry in ns/ (expected one folder per namespace)")
                    continue
                namespaces.append((nsroot / seg, self._decoded(nsroot / seg, "namespace")))
        with self.snapshot():  # one per thread: nothing refers across threads
            self.large(folder)
            self.objects(folder)
            for ns_dir, expected_ns in namespaces:
                self.namespace(folder, ns_dir, expected_tid, expected_ns)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read the root as one snapshot (snapshot.py): each file read and checked once, what
        is made of it kept, until the outermost scope ends; then all that is dropped."""
        try:
            with self.store.snapshot():
                yield
        finally:
            if not self.store.in_snapshot:
                self.entry_memo.clear()
                self._held.clear()
                self._in_objects.clear()
                self._tdirs.clear()

    def _decoded(self, folder: Path, what: str) -> str | None:
        """The id a folder name stands for; None when it is a hash (read from the files)."""
        if is_hashed_segment(folder.name):
            return None
        try:
            return decode_segment(folder.name)
        except ValueError as exc:
            self.problem(folder, "/", f"not a {what} folder name this layout writes: {exc}")
            return None

    def _names_match(
        self, path: Path, doc: dict[str, Any], thread_folder: Path, ns_dir: Path, pointer_id: str
    ) -> bool:
        ok = True
        if encode_segment(doc["thread_id"]) != thread_folder.name:
            self.problem(path, "/thread_id", f"thread_id {doc['thread_id']!r} does not match its folder")
            ok = False
        ns_seg = "" if ns_dir == thread_folder else ns_dir.name
        if (encode_segment(doc["checkpoint_ns"]) if doc["checkpoint_ns"] else "") != ns_seg:
            self.problem(
                path, "/checkpoint_ns", f"checkpoint_ns {doc['checkpoint_ns']!r} does not match its folder"
            )
            ok = False
        return ok

    def namespace(self, thread_folder: Path, ns_dir: Path, tid: str | None, ns: str | None) -> None:
        for name in sorted(os.listdir(ns_dir)) if ns_dir != thread_folder else []:
            if name in NS_FOLDERS:
                self._layout_folder(ns_dir / name)
            elif not is_temp_name(name):
                self.problem(ns_dir / name, "/", "stray entry in a namespace folder (not part of the layout)")
        docs: dict[str, tuple[Path, dict[str, Any]]] = {}
        files = list(self._json_files(ns_dir / CHECKPOINTS))  # one listing: the run's snapshot
        for path in files:
            whole = self.checkpoint_file(path, thread_folder, ns_dir)
            if whole is not None:
                docs[whole["checkpoint_id"]] = (path, whole)
        present = {p.name[:-5] for p in files}
        for path, doc in docs.values():
            checkpoint_refs(self, ns_dir, path, doc, docs, present)
            new = fields.new_values(doc)
            if TASKS in new or (MESSAGES in new and TASKS in doc["values"]):  # either side changed
                self._sends(path, doc)
        parent_cycles(self, docs)
        for path in self._json_files(ns_dir / WRITES):
            self.writes(thread_folder, ns_dir, path, present)
        for path in self._json_files(ns_dir / VALUES):
            self.values_file(ns_dir, path)

    def checkpoint_file(self, path: Path, thread_folder: Path, ns_dir: Path) -> dict[str, Any] | None:
        """A checkpoint file read, counted and its names checked: its whole, or None where any of
        that fails (the problem said). Whole-root and per-file validate share it."""
        doc = self.read(path, "checkpoint")
        if doc is None:
            return None
        self.checkpoints += 1
        if not self.checkpoint_named(path, doc, thread_folder, ns_dir):
            return None
        return self.whole(path)

    def _sends(self, path: Path, doc: dict[str, Any]) -> None:
        """The ``Send`` packets of a checkpoint that changes them or its conversation run only
        the tool calls the conversation asks for (core/sends.py: an edit of the AI message that
        leaves the packets as they were is caught too); a value that does not read is reported
        where it is checked."""
        trees: dict[str, Any] = {}
        for channel in (TASKS, MESSAGES):
            if channel not in doc["values"]:
                continue  # no such channel here: no conversation asked for anything
            try:
                entry = self.store.channel_value(checkpoint_record(doc), channel)
            except (FileFormatError, OSError):
                return
            trees[channel] = None if entry.empty or entry.raw is not None else entry.tree
            if not trees.get(TASKS):
                return  # no packets, nothing runs: the messages need not be read
        changed = TASKS if TASKS in fields.new_values(doc) else MESSAGES
        for idx, why in send_problems(trees):
            self.problem(path, fields.new_value_pointer(changed), f"{TASKS} item {idx}: {why}")

    def values_file(self, ns_dir: Path, path: Path) -> None:
        """A file of values/: a ``base`` prune left (its schema is its check) or a value."""
        if value_file_kind(path) == "base":
            self.read(path, "base")
        else:
            self.value_file(ns_dir, path)

    def whole(self, path: Path) -> dict[str, Any] | None:
        """A checkpoint whole (a delta applied to its parent's bookkeeping, format 4), or None
        with a problem where its line breaks (a missing parent and no base file in its place)."""
        try:
            return self.store.docs.at(path)
        except FileFormatError as exc:
            if exc.path not in self.bad_files:
                self.problem(exc.path, exc.pointer, problem_text(exc))
            return None
        except OSError as exc:
            self.problem(path, "/", f"cannot read: {exc.strerror or exc}")
            return None

    def checkpoint_named(self, path: Path, doc: dict[str, Any], thread_folder: Path, ns_dir: Path) -> bool:
        """Its file name, thread and namespace folders match its ids (a problem for each that does not)."""
        cid = doc["checkpoint_id"]
        if encode_segment(cid) + ".json" != path.name:
            self.problem(path, "/checkpoint_id", f"checkpoint_id {cid!r} does not match the file name")
            return False
        return self._names_match(path, doc, thread_folder, ns_dir, "/checkpoint_id")

    def _layout_folder(self, path: Path) -> None:
        """A name the layout gives a folder: one that is a file (or a device, a socket) is a
        problem, and nothing is read under it (a symlink is judged where its files are read)."""
        mode = os.lstat(path).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            self.problem(path, "/", f"not a folder (the layout has the folder {path.name}/ here)")

    def _json_files(self, folder: Path) -> Iterator[Path]:
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):  # not a folder: _layout_folder says so
            return
        for name in names:
            if is_temp_name(name):
                continue
            if not name.endswith(".json"):
                self.seen()
                self.problem(folder / name, "/", "stray file (every file of the layout is .json)")
                continue
            yield folder / name

    def writes(self, thread_folder: Path, ns_dir: Path, path: Path, present: set[str]) -> None:
        doc = self.read(path, "writes")
        if doc is None:
            return
        owner = self.layout.writes_owner(path.name)
        if encode_segment(doc["checkpoint_id"]) != owner:
            self.problem(
                path, "/checkpoint_id", f"checkpoint_id {doc['checkpoint_id']!r} does not match the file name"
            )
            return
        if not self._names_match(path, doc, thread_folder, ns_dir, "/checkpoint_id"):
            return
        if owner not in present:
            orphan = Problem(
                str(path),
                "/checkpoint_id",
                f"writes of checkpoint {doc['checkpoint_id']}, which does not exist "
                "(orphaned: `langgraph-repo fsck --repair` removes it)",
            )
            self.problems.append(orphan)
            self.orphan_writes.append(orphan)
        for i, w in enumerate(doc["writes"]):
            node: dict[str, Any] = w["value"]
            if large_ref(node) is not None:
                self.reference(
                    path, f"/writes/{i}/value", partial(self.store.values.resolve_node, node, path)
                )

    def value_file(self, ns_dir: Path, path: Path) -> None:
        doc = self.read(path, "value")
        if doc is None:
            return
        rel = self.layout.value_rel(doc["channel"], doc["version"])
        if ns_dir / rel != path:
            self.problem(path, "/version", f"channel {doc['channel']!r} at {doc['version']} belongs in {rel}")
            return
        self.reference(
            path, "/", lambda: self.store.values.value_entry(ns_dir, doc["channel"], doc["version"], rel)
        )

    def large(self, thread_folder: Path) -> None:
        for path in self._json_files(thread_folder / LARGE):
            self.large_file(path)

    def objects(self, thread_folder: Path) -> None:
        for path in self._json_files(thread_folder / OBJECTS):
            self.object_file(path)

    def large_file(self, path: Path) -> None:
        self._named_by_content(path, "large_value", lambda doc, name: digest_node(doc["value"]) == name)

    def object_file(self, path: Path) -> None:
        self._named_by_content(path, "object", lambda doc, name: names_object(name, doc["tree"]))

    def _named_by_content(self, path: Path, kind: str, named: Callable[[dict[str, Any], str], bool]) -> None:
        """A file of ``large/`` or ``objects/``: its name is the sha256 of what it holds."""
        doc = self.read(path, kind)
        if doc is None:
            return
        if path.name != f"{doc['sha256']}.json":
            self.problem(path, "/sha256", "sha256 does not match the file name")
        elif not named(doc, doc["sha256"]):
            self.bad_files.add(str(path))
            self.problem(path, "/sha256", EDITED)


def _stored_trees(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """(JSON pointer, tree) of every readable value tree a document holds: each stored once,
    so an append chain's items are checked in the file that holds them."""
    out: list[tuple[str, Any]] = []
    kind = doc.get("kind")
    if kind == "checkpoint":
        out.append(("/metadata", doc.get("metadata")))
        for key, tree in (doc.get("checkpoint", {}).get("extra") or {}).items():
            out.append((f"/checkpoint/extra/{pointer_part(key)}", tree))
        for channel, body in fields.new_values(doc).items():
            _body_trees(out, fields.new_value_pointer(channel), body)
        for key, record in fields.parent_writes(doc).items():
            for i, w in enumerate(record.get("writes") or []):
                _body_trees(out, f"{fields.parent_write_pointer(key)}/writes/{i}", w)
        _held_trees(out, doc)
    elif kind in ("value", "large_value"):
        _body_trees(out, "", doc)
    elif kind == "writes":
        for i, w in enumerate(doc.get("writes") or []):
            _body_trees(out, f"/writes/{i}", w)
        _held_trees(out, doc)
    elif kind == "object":
        out.append(("/tree", doc.get("tree")))
    elif kind == ITEM_KIND:
        out.append(("/value", doc.get("value")))
    return out


def _body_trees(out: list[tuple[str, Any]], pointer: str, body: Any) -> None:
    """The trees of one value body at ``pointer`` (``_stored_trees``), added to ``out``."""
    if not isinstance(body, dict):
        return
    if isinstance(body.get("append"), dict) and isinstance(body["append"].get("items"), list):
        out.append((f"{pointer}/append/items", body["append"]["items"]))
    node = body.get("value")
    if isinstance(node, dict) and "json" in node:
        out.append((f"{pointer}/value/json", node["json"]))


def _held_trees(out: list[tuple[str, Any]], doc: dict[str, Any]) -> None:
    """The objects a file holds (format 4), added to ``out``."""
    for digest, tree in (doc.get("objects") or {}).items():
        out.append((f"/objects/{digest}", tree))


def problem_text(exc: FileFormatError) -> str:
    """The error's own words, without the path and pointer it starts with."""
    text = str(exc)
    prefix = f"{exc.path}: at {exc.pointer}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


# ----------------------------------------------------------------------
# fsck
# ----------------------------------------------------------------------
@dataclass
class Finding:
    """Something fsck found; ``repairable`` when it is derived or orphaned data."""

    # temp | orphan-writes | orphan-value | orphan-large | orphan-object | gitignore | empty-folder
    # | index | invalid | foreign
    kind: str
    path: str
    message: str
    repairable: bool
    thread_id: str | None = None
    repaired: bool = False


def fsck(store: ThreadStore, progress: Progress | None = None) -> list[Finding]:
    """Scan the root; report problems, never change anything (but the derived index, which
    any read may bring up to date: so it is judged first)."""
    root = store.root
    findings = _index_findings(store.layout)
    findings.extend(_gitignore_findings(root))
    findings.extend(_temp_findings(root))
    validator = Validator(root, progress, secrets=False)  # secrets are validate's, not fsck's
    folders = validator.thread_folders()
    for p in validator.problems:  # stray files in threads/: not ours to remove
        findings.append(Finding("invalid", p.path, p.message, False))
    for folder in folders:
        before = len(validator.problems)
        orphans_before = len(validator.orphan_writes)
        validator.thread(folder)
        orphans = validator.orphan_writes[orphans_before:]
        # each problem once: every checkpoint read through a broken file meets its problem
        others = list(dict.fromkeys(p for p in validator.problems[before:] if p not in orphans))
        tid = None if others else _thread_id_of(store, folder)
        for p in orphans:
            findings.append(
                Finding("orphan-writes", p.path, "writes of a checkpoint that does not exist", True, tid)
            )
        for p in others:
            findings.append(Finding("invalid", p.path, f"{p.pointer}: {p.message}", False))
        if others or tid is None:
            continue  # never decide what is orphaned from files that do not read
        try:  # nor through a symlink: listing a linked folder would judge files outside the root
            store.files.check_tree(folder, f"judge what is orphaned in {folder}")
        except RepoCheckpointError as exc:
            findings.append(Finding("invalid", str(folder), str(exc), False))
            continue
        findings.extend(_orphan_findings(store, tid))
        if _holds_nothing(folder):
            findings.append(Finding("empty-folder", str(folder), "thread folder without any file", True, tid))
    before = len(validator.problems)
    validator.store_items(root / STORE)
    for p in validator.problems[before:]:
        findings.append(Finding("invalid", p.path, f"{p.pointer}: {p.message}", False))
    for f in findings:
        if f.thread_id is None and f.repairable and f.kind != "gitignore":
            f.thread_id = _thread_of_path(store, Path(f.path))
    return findings


def _index_findings(layout: Layout) -> list[Finding]:
    """The derived index (index.py): derived, so every problem in it is repairable."""
    out = []
    for path in index_files(layout):
        if path.is_symlink():  # never the saver's: reported, never followed or removed
            out.append(_foreign(path))
            continue
        problem = index_problem(layout, path, {VALUES_SUFFIX: decode_values})
        if problem is not None:
            out.append(Finding("index", str(path), f"derived index: {problem}", True))
    return out


def rebuild_index(store: ThreadStore) -> None:
    """Index every namespace now: its listing, its checkpoints' metadata and parent links, and
    the roster of every thread (``fsck --repair``; only plain metadata is indexed, which is
    its own decoded value)."""
    for thread_id in store.thread_ids():
        store.forget_thread(thread_id)
        for ns in store.namespaces(thread_id):
            try:
                for cid in store.checkpoint_ids(thread_id, ns):
                    store.metadata(thread_id, ns, cid, _plain_metadata)
            except InstallationError:
                raise
            except (RepoCheckpointError, OSError):
                pass  # a file that does not read is fsck's "invalid" finding; the index can wait
            store.meta.persist()
    roster = roster_of(store)
    for facts in roster.threads():
        for space in facts.namespaces:
            try:
                roster.lineage(facts, space)
            except InstallationError:
                raise
            except (RepoCheckpointError, OSError):
                pass
    roster.persist(every=True)


def _gitignore_findings(root: Path) -> list[Finding]:
    """The root's ``.gitignore``: missing or stale (repairable), a symlink, or not the saver's."""
    findings: list[Finding] = []
    gitignore = root / ".gitignore"
    if gitignore.is_symlink():
        findings.append(
            Finding(
                "gitignore",
                str(gitignore),
                "is a symlink; RepoSaver writes a plain file here and never follows a link "
                "(remove the link, then --repair writes the file)",
                False,
            )
        )
    elif gitignore.exists() and not holds_state(root):
        # no threads/ and not the saver's .gitignore: a folder that is not a root (a repository
        # top given by mistake); its .gitignore is somebody else's
        findings.append(_foreign(gitignore))
    elif not gitignore.exists():
        findings.append(
            Finding("gitignore", str(gitignore), "missing (keeps .cache/ and temp files out of git)", True)
        )
    elif gitignore.stat().st_size > MAX_FILE_BYTES:  # not read, and never rewritten by repair
        findings.append(_foreign(gitignore))
    else:
        missing = _gitignore_lacks(gitignore.read_text(encoding="utf-8", errors="replace"))
        if missing:
            findings.append(Finding("gitignore", str(gitignore), f"stale: lacks {', '.join(missing)}", True))
    return findings


def _gitignore_lacks(text: str) -> list[str]:
    """The rules of the saver's ``.gitignore`` that ``text`` (a ``.gitignore``) lacks."""
    lines = text.splitlines()
    return [ln for ln in GITIGNORE_TEXT.splitlines() if ln and not ln.startswith("#") and ln not in lines]


def _plain_metadata(record: CheckpointRecord, path: Path) -> Any:
    """Stored metadata as its value when it names no type, else the tree: nothing is built."""
    tree = record.metadata
    return plain_value(tree) if is_plain(tree) else tree


def _thread_id_of(store: ThreadStore, folder: Path) -> str | None:
    if not is_hashed_segment(folder.name):
        return decode_segment(folder.name)
    return hashed_thread_id(folder, lambda path: store.files.read_doc(path, "checkpoint"))


def _thread_of_path(store: ThreadStore, path: Path) -> str | None:
    try:
        rel = path.relative_to(store.layout.threads_dir)
    except ValueError:
        return None
    if len(rel.parts) < 2:
        return None
    folder = store.layout.threads_dir / rel.parts[0]
    try:
        return _thread_id_of(store, folder)
    except (ValueError, FileFormatError, OSError):
        return None


def _temp_findings(root: Path) -> list[Finding]:
    """The saver's own leftovers, looked for only where the saver makes them.

    A temp file of an interrupted write (``.<file>.<12 hex>.tmp``, a regular file) in a folder
    the saver writes files to, and a folder of an interrupted delete
    (``.<thread>.deleted.<pid>.<ns>.tmp``) in ``threads/``. Anything else there that is hidden or
    ends in ``.tmp``, and anything at the top of the root that is not the saver's, is a
    ``foreign`` finding: reported, never removed. Symlinks are never followed.
    """
    out: list[Finding] = []
    for name, kind in _entries(root):
        path = root / name
        if name in (".gitignore", CACHE, THREADS) or (name == STORE and kind == "dir"):
            continue
        if kind == "file" and is_own_temp_file(name, ".gitignore"):
            out.append(_temp_file(path))
        else:
            out.append(_foreign(path))
    threads = root / THREADS
    for name, kind in _entries(threads):
        path = threads / name
        if kind == "dir" and is_own_grave(name):
            out.append(Finding("temp", str(path), "leftover temp folder (an interrupted delete)", True))
        elif is_temp_name(name):
            out.append(_foreign(path))
        elif kind == "dir":
            out.extend(_thread_temp_findings(path))
    out.extend(_store_temp_findings(root / STORE))
    return out


def _store_temp_findings(top: Path) -> list[Finding]:
    """The store's leftovers: temp files of interrupted writes and namespace folders left
    empty (a delete prunes them; a kill between the two leaves one), both repairable;
    anything else hidden or ``.tmp`` is foreign."""
    out: list[Finding] = []
    stack = [top]
    while stack:
        folder = stack.pop()
        for name, kind in _entries(folder):
            path = folder / name
            if kind == "file" and is_own_temp_file(name):
                out.append(_temp_file(path))
            elif is_temp_name(name):
                out.append(_foreign(path))
            elif kind == "dir" and _holds_nothing(path):
                out.append(Finding("empty-folder", str(path), "store folder without any item", True))
            elif kind == "dir":
                stack.append(path)
    return out


def _thread_temp_findings(tdir: Path) -> list[Finding]:
    out: list[Finding] = []
    for name, kind in _entries(tdir):
        path = tdir / name
        if kind == "dir" and name in THREAD_FOLDERS:
            out.extend(_data_temp_findings(path))
        elif kind == "dir" and name == NAMESPACES:
            for ns_name, ns_kind in _entries(path):
                if is_temp_name(ns_name):
                    out.append(_foreign(path / ns_name))
                elif ns_kind == "dir":
                    for sub, sub_kind in _entries(path / ns_name):
                        if sub_kind == "dir" and sub in NS_FOLDERS:
                            out.extend(_data_temp_findings(path / ns_name / sub))
                        elif is_temp_name(sub):
                            out.append(_foreign(path / ns_name / sub))
        elif is_temp_name(name):
            out.append(_foreign(path))
    return out


def _data_temp_findings(folder: Path) -> list[Finding]:
    out: list[Finding] = []
    for name, kind in _entries(folder):
        if kind == "file" and is_own_temp_file(name):
            out.append(_temp_file(folder / name))
        elif is_temp_name(name):
            out.append(_foreign(folder / name))
    return out


def _entries(folder: Path) -> list[tuple[str, str]]:
    """(name, file | dir | link | other) of a real folder, sorted; nothing for a missing or linked one."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        with os.scandir(folder) as it:
            entries = list(it)
    except FileNotFoundError:
        return []
    out = []
    for e in entries:
        if e.is_symlink():
            kind = "link"
        elif e.is_dir(follow_symlinks=False):
            kind = "dir"
        elif e.is_file(follow_symlinks=False):
            kind = "file"
        else:
            kind = "other"
        out.append((e.name, kind))
    return sorted(out)


def _temp_file(path: Path) -> Finding:
    return Finding("temp", str(path), "leftover temp file (an interrupted write)", True)


def _foreign(path: Path) -> Finding:
    return Finding("foreign", str(path), "not made by RepoSaver: reported, never removed", False)


def _holds_nothing(folder: Path) -> bool:
    """A thread folder with no file, link or hidden entry in it: only empty layout folders."""
    for here, dirs, files in os.walk(folder):
        if files or any(is_temp_name(d) or os.path.islink(os.path.join(here, d)) for d in dirs):
            return False
    return True


def _orphan_findings(store: ThreadStore, thread_id: str) -> list[Finding]:
    layout = store.layout
    need = needed_files(store, thread_id)
    out = []
    for _, ns_dir in store.namespace_folders(layout.thread_dir(thread_id)):
        for path in store.files.value_files(ns_dir):
            if path not in need.values:
                out.append(
                    Finding("orphan-value", str(path), "value file no checkpoint refers to", True, thread_id)
                )
    for path in store.files.files_in(layout.thread_dir(thread_id) / LARGE):
        if path.name[:-5] not in need.large:
            out.append(Finding("orphan-large", str(path), "large value nothing refers to", True, thread_id))
    for path in store.files.files_in(layout.thread_dir(thread_id) / OBJECTS):
        if path.name[:-5] not in need.objects:
            out.append(Finding("orphan-object", str(path), "object nothing refers to", True, thread_id))
    return out


_REJUDGED = ("orphan-value", "orphan-large", "orphan-object")


def repair(store: ThreadStore, findings: list[Finding]) -> None:
    """Remove or rebuild what the findings call repairable, each thread under its lock.

    What fsck found was judged without the lock, so every removal of a thread's file is
    judged again under it: an object, large or value file some file now refers to stays, and
    so does a writes file whose checkpoint has landed meanwhile (LangGraph's
    ``durability="async"`` saves a step's writes before its checkpoint)."""
    root = store.root
    by_thread: dict[str | None, list[Finding]] = {}
    for f in findings:
        if f.repairable:
            by_thread.setdefault(f.thread_id, []).append(f)
    for f in by_thread.pop(None, []):
        _repair_one(root, f)
        if f.kind == "temp" and Path(f.path).parent.is_relative_to(root / STORE):
            findings.extend(_left_empty(root, Path(f.path).parent, root / STORE, None))
    for tid, items in sorted(by_thread.items(), key=lambda kv: kv[0] or ""):
        assert tid is not None
        with store.thread_lock(tid, exclusive=True):
            # what is unneeded was judged without the lock: a put since then may have come to
            # rely on a file that was there (an object or large file is reused by its name)
            store.forget_thread(tid)
            # only a thread whose files all read has orphaned values judged (fsck never judges
            # them in one with an invalid file): a lost checkpoint's writes need no judging
            rejudge = any(f.kind in _REJUDGED for f in items)
            still = {g.path for g in _orphan_findings(store, tid)} if rejudge else set()
            for f in sorted(items, key=lambda f: (f.kind == "empty-folder", -len(f.path))):
                if f.kind in _REJUDGED and f.path not in still:
                    continue
                if f.kind == "orphan-writes" and _owner_exists(Path(f.path)):
                    continue
                _repair_one(root, f)
            # a thread that held only what was just removed (a run killed before its first
            # checkpoint) is left empty: removed now, not reported by the next fsck
            tdir = store.layout.thread_dir(tid)
            if tdir.is_dir() and not any(f.kind == "empty-folder" for f in items) and _holds_nothing(tdir):
                findings.extend(_left_empty(root, tdir, tdir.parent, tid))
        store.forget_thread(tid)
    if any(f.kind == "index" and f.repaired for f in findings):
        rebuild_index(store)


def _left_empty(root: Path, folder: Path, stop: Path, tid: str | None) -> list[Finding]:
    """``folder`` and the folders above it up to ``stop`` that the repair left without any
    entry, removed (only ever an empty folder), as repaired findings."""
    out = []
    while folder != stop and folder.is_relative_to(stop) and folder.is_dir() and _holds_nothing(folder):
        found = Finding("empty-folder", str(folder), "folder left without any file by the repair", True, tid)
        _repair_one(root, found)
        if folder.exists():
            break  # something arrived meanwhile
        out.append(found)
        folder = folder.parent
    return out


def _owner_exists(writes: Path) -> bool:
    """Whether the checkpoint a writes file belongs to (by its name) is there now."""
    owner = Layout.writes_owner(writes.name)
    return bool(owner) and os.path.lexists(writes.parent.parent / CHECKPOINTS / f"{owner}.json")


def _repair_one(root: Path, f: Finding) -> None:
    path = Path(f.path)
    if not Layout(root).contains(path):
        # removed or rewritten only where the saver writes: never through (or as) a symlink
        raise RepoCheckpointError(f"refusing to repair {path}: it is a symlink or lies behind one")
    if f.kind == "gitignore":
        if path.exists():
            if path.stat().st_size > MAX_FILE_BYTES:
                raise RepoCheckpointError(f"refusing to repair {path}: over {MAX_FILE_BYTES:,} bytes")
            text = path.read_text(encoding="utf-8")
            extra = _gitignore_lacks(text)
            new = text + ("" if text.endswith("\n") or not text else "\n") + "\n".join(extra) + "\n"
            write_files([(path, new.encode("utf-8"))])  # atomic, and refuses a symlink
        else:
            root.mkdir(parents=True, exist_ok=True)
            write_files([(path, GITIGNORE_TEXT.encode("utf-8"))])
    elif f.kind == "empty-folder":
        for here, _, _ in sorted(os.walk(path, topdown=False), key=lambda w: -len(w[0])):
            try:
                os.rmdir(here)  # only ever removes an empty folder
            except OSError:
                return  # something arrived meanwhile: not empty after all
    elif f.kind == "temp" and is_own_grave(path.name) and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # the only folder fsck removes whole: a delete's grave
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    f.repaired = True
