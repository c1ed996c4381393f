"""The thread store: checkpoints by thread, namespace and id, over the files of one root.

It answers in the logical terms readers and the saver ask in (thread ids, namespaces,
checkpoint ids, lineage, a checkpoint's whole document and its values, a checkpoint's pending
writes) and runs every put through the protocol that stores a message once when puts overlap
(overlap.py). How a checkpoint is laid out in its files is the format's (format/); reading and
writing those files, under the one cache rule, is files.py's.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from .bodyindex import BodyIndex
from .caches import (
    KEPT_THREADS,
    STAT_KEY_OF,
    Grouped,
    KeptThreads,
    Listing,
    StatKey,
    one_look,
    settled,
    stat_key,
    thread_of,
)
from .errors import FileFormatError, LfsPointerError, MissingReferenceError, RepoCheckpointError
from .files import Files, Snapshot
from .format import fields
from .format.bookkeeping import compact
from .format.canonical import digest_node
from .format.chains import Link, read_link, walk_chain
from .format.decode import checkpoint_record, taken_writes, writes_record
from .format.encode import checkpoint_document, writes_document
from .format.entries import ValueEntry
from .format.objects import Convert, names_object
from .format.records import CheckpointRecord, TaskWrites
from .format.resolve import ValueResolver
from .format.storing import Host, Prepared
from .index import MIN_NAMES, LineageFiles, MetaCache, is_plain, load_lineage
from .layout import (
    CHECKPOINTS,
    LARGE,
    NAMESPACES,
    OBJECTS,
    data_names,
    decode_segment,
    encode_segment,
    hashed_thread_id,
    is_hashed_segment,
    is_temp_name,
    is_verbatim,
)
from .lineage import MERGED_CHANNEL, Lineage, Node, choice_of, choice_problem, is_deliberate
from .objindex import ObjectIndex
from .overlap import Overlap, PutDone
from .wholes import WholeDocs, writes_names

# a fresh process records the lineage it read again when it had to read at least this many
LINEAGE_REREADS = 16
# a writer records its lineage every this many checkpoints it wrote that settled since
LINEAGE_SAVE_EVERY = 64
# later checkpoints read one by one to find a checkpoint's children, before its lineage is read
CHILDREN_SCAN = 8
# uuid6 ids, one a line: verbatim segments (no dot, no device name, short), checked in one match
_T = TypeVar("_T")
_HEX_IDS = re.compile(r"(?:[0-9a-f-]{1,64}\n)*[0-9a-f-]{1,64}")
_log = logging.getLogger(__name__)


def _lstats(names: list[str]) -> list[os.stat_result] | None:
    """The lstat of every file of ``names``, in one call; None when one is gone (removed
    since it was listed: the caller goes file by file)."""
    try:
        return list(map(os.lstat, names))
    except FileNotFoundError:
        return None


def _unchanged_links(ids: list[str], now: list[StatKey | None], known: Lineage) -> Lineage | None:
    """The known links of ``ids`` when every one is known and its file's stat key as this
    read took it (``now``) is the recorded one, else None: the usual fresh read of a long
    thread, one lstat per checkpoint (the rule, docs/reliability.md) with no Python step per
    checkpoint around it (the keys and the comparisons are one call each over all of them)."""
    if now != list(map(known.keys.get, ids)):
        return None
    links = list(map(known.links.get, ids))
    if None in links:
        return None
    keys = cast(list[StatKey], now)
    return Lineage(dict(zip(ids, cast(list[Node], links), strict=True)), dict(zip(ids, keys, strict=True)))


# the two kinds of file named by their content: how to compute the name from the document
_CONTENT_NAMED: dict[str, tuple[str, Callable[[dict[str, Any], str], bool]]] = {
    "object": (OBJECTS, lambda doc, name: names_object(name, doc["tree"])),
    "large_value": (LARGE, lambda doc, name: digest_node(doc["value"]) == name),
}


@dataclass(frozen=True)
class WritesRecord:
    """One ``put_writes`` call as stored: in a writes file (``pointer`` "") or in the child
    checkpoint that took it (``/parent_writes/<key>``)."""

    path: Path
    pointer: str
    task: TaskWrites


#: a document as read from or written to a file (validated against its schema)
Document = dict[str, Any]


@dataclass(frozen=True)
class Staged:
    """A file decided, laid out and validated, to be written by ``ThreadStore.commit``."""

    thread_id: str
    host: Host
    batches: list[Prepared]  # large values and objects first, the file itself last
    file: tuple[Path, Document, bytes]  # the file, its document and its bytes
    held: tuple[str, str] | None  # a checkpoint's (namespace, id): its objects are offered to others
    done: PutDone | None


def writes_key(name: str) -> str:
    """The unique part of a writes file's name (``<checkpoint>~<key>.json``): the key its
    record keeps in the child checkpoint that takes it."""
    return name[name.rindex("~") + 1 : -len(".json")]


class ThreadStore:
    """The documents under one root, with validation, caches and durable writes: what every
    reader and writer of the files (the saver, the command line, the checks) goes through."""

    def __init__(
        self,
        root: Path,
        *,
        durable: bool = True,
        lock_timeout: float = 60.0,
        snapshots: bool = False,
        kept_threads: int = KEPT_THREADS,
    ) -> None:
        self.files = Files(root, durable=durable, lock_timeout=lock_timeout)
        self.layout = self.files.layout
        self.root = root
        self.values = ValueResolver(self.layout, self.files.read_doc, self.files.docs)
        self.values.implied_base = self.implied_base
        # where a thread's objects live, for a fresh process (objindex.py)
        self.objects = ObjectIndex(self.layout)
        self.values.find_object = self._find_object
        self.bodies = BodyIndex(self.layout)  # the lists reads rebuilt, for a fresh process
        self._observed = threading.local()  # the stat keys one read took (observing)
        self.meta = MetaCache(self.layout)  # decoded metadata, for filters
        self.meta.observed = self._observed  # a filter's keys serve the same read's lineage check
        # the last lineage read per folder, grouped by thread (let_go)
        self._lineages: dict[Path, Lineage] = Grouped(thread_of(self.layout.threads_dir))
        # per folder, the stat keys of settled links not yet in its index (merged when written)
        self._unsaved: dict[Path, dict[str, tuple[int, int, int, int]]] = Grouped(
            thread_of(self.layout.threads_dir)
        )
        self._lineage_files = LineageFiles(self.layout)  # a save appends what is new (index.py)
        self.docs = WholeDocs(self.files)  # whole checkpoint documents, deltas built up
        self._overlap = Overlap(self.files, self.values, lock_timeout)
        self.files.on_added = self._extend_derived
        # the threads whose reads this process keeps (caches.KeptThreads); what else keeps
        # something of a thread drops it too when told (the saver's lists)
        self.kept = KeptThreads(kept_threads)
        self.on_let_go: list[Callable[[str], None]] = []
        if snapshots:
            self.files.snapshot = Snapshot(self._snapshot_changed)
            self.values.read_paths = self.files.snapshot.read_paths
        else:  # the checks read every file anyway: they write no objects or values index
            self.values.read_holder = self.objects.read
            self.values.read_done = self.objects.flush
            self.values.bodies = self.bodies
            self.values.recording = self.files.recording
            self.values.observed = self._observed_keys

    @property
    def in_snapshot(self) -> bool:
        return self.files.snapshot is not None and self.files.snapshot.active

    def snapshot(self) -> AbstractContextManager[None]:
        """Read the root as one snapshot until the outermost scope ends, then forget it all
        (snapshot.py says why the checks read so). Nothing read before it began is relied on."""
        if self.files.snapshot is None:
            raise RuntimeError("this store was not made with snapshots=True")
        return self.files.snapshot.scope()

    def _snapshot_changed(self, begins: bool) -> None:
        self.files.clear()
        self.docs.clear()
        self.values.clear()
        self._overlap.clear()
        self.values.trust_kept = begins

    def thread_lock(self, thread_id: str, exclusive: bool = False) -> AbstractContextManager[None]:
        """The lock of one thread (files.Files.thread_lock)."""
        return self.files.thread_lock(thread_id, exclusive)

    def use(self, thread_id: str) -> None:
        """A thread is read or written now: the one used longest ago is let go when more
        than ``kept.size`` are kept (each method that reads or writes a thread's documents
        says so; the listings a read across threads takes are the roster's, and stay)."""
        for gone in self.kept.use(thread_id):
            self.let_go(gone)

    def let_go(self, thread_id: str) -> None:
        """Drop what the caches keep of one thread, but what reads across threads need of
        every thread (the metadata filters match on, the roster) and the index lines of files
        this process wrote that have not settled yet: read again from its files and the
        derived index when next asked, under the same rule as a fresh process. The folder's
        name is worked out, not looked up: a thread another call named (a folder an earlier
        version did not encode, which ``thread_dir`` refuses) is let go inside whatever later
        call lets it go, and its refusal belongs to its own reads."""
        tdir = self.layout.threads_dir / encode_segment(thread_id)
        self.files.let_go(tdir.name)
        self.docs.let_go(tdir.name)
        self.values.let_go(tdir)
        self._overlap.let_go(tdir.name)
        self.objects.let_go(tdir)
        self.bodies.let_go(tdir)
        cast(Grouped, self._lineages).drop_group(tdir.name)
        # the keys of settled links a lineage no longer kept would have written down: a fresh
        # read of the thread reads those headers instead (at most LINEAGE_SAVE_EVERY a folder)
        cast(Grouped, self._unsaved).drop_group(tdir.name)
        for hook in self.on_let_go:
            hook(thread_id)

    def get(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> CheckpointRecord:
        """One checkpoint, whole (a delta built up on its line), its names checked against
        its place. FileNotFoundError if absent."""
        self.use(thread_id)
        return checkpoint_record(self.docs.header(thread_id, checkpoint_ns, checkpoint_id))

    def get_parent(self, thread_id: str, ns: str, checkpoint_id: str) -> tuple[CheckpointRecord, int]:
        """``get``, and how many deltas its file is from a whole one: what a put needs of its
        parent to write itself as a delta on it (``stage_checkpoint``), from one read."""
        self.use(thread_id)
        doc, deltas = self.docs.header_depth(thread_id, ns, checkpoint_id)
        return checkpoint_record(doc), deltas

    def ancestors(
        self,
        thread_id: str,
        ns: str,
        cid: str,
        *,
        strict: bool = True,
        stop: Callable[[str], bool] | None = None,
    ) -> Iterator[CheckpointRecord]:
        """The parent of ``cid``, its parent, and so on: the one walk up a history. It ends at
        a checkpoint without a parent or one that is gone (pruned), and before reading a parent
        ``stop`` names (what the caller has, or must not read); a parent the walk has been
        through closes a cycle, which would walk for ever: a FileFormatError naming the file,
        or (``strict=False``: a view of a history that validate reports) the end of the walk."""
        try:
            record = self.get(thread_id, ns, cid)
        except FileNotFoundError:
            return
        walked = {cid}
        while record.parent_id is not None:
            parent = record.parent_id
            if parent in walked:
                if not strict:
                    return
                path = self.layout.checkpoint_path(thread_id, ns, record.checkpoint_id)
                why = f"parent chain cycles back to checkpoint {parent}"
                raise FileFormatError(str(path), "/parent_checkpoint_id", why)
            if stop is not None and stop(parent):
                return
            walked.add(parent)
            try:
                record = self.get(thread_id, ns, parent)
            except FileNotFoundError:
                return
            yield record

    def metadata(
        self,
        thread_id: str,
        ns: str,
        cid: str,
        decode: Callable[[CheckpointRecord, Path], Any],
        *,
        plain_ok: bool = True,
        fresh: bool = False,
    ) -> Any:
        """A checkpoint's metadata as ``decode(document, path)`` makes it, kept per checkpoint
        so filters scan thousands quickly (index.py: in process, and for a fresh process in
        the derived index): reused while its file's stat key is unchanged (one lstat), so a
        hand edit is seen. ``plain_ok``: a tree naming no type is its own decoded value (the
        index keeps only those). ``fresh``: what decides a removal reads the file, never a cache."""
        hit = None if fresh else self.meta.get(thread_id, ns, cid, plain_ok)
        if hit is not None:
            return hit
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        read_at = time.time_ns()  # the cache rule (caches.py): both taken before the read
        st = os.lstat(path)
        record = self.get(thread_id, ns, cid)
        meta = decode(record, path)
        tree = record.metadata if plain_ok and is_plain(record.metadata) else None
        kept = (str(path), stat_key(st), meta, tree) if settled(st, read_at) else None
        self.meta.keep(thread_id, ns, cid, kept)  # not settled: it may change again unseen
        observed = getattr(self._observed, "keys", None)
        if kept is not None and observed is not None:
            observed[kept[0]] = kept[1]  # as a kept entry's key: the read's lineage check takes it
        return meta

    def writes_records(self, thread_id: str, ns: str, cid: str) -> list[WritesRecord]:
        """The pending writes of one checkpoint as stored, oldest first: its writes files, and
        the records its children took from them (format 4: a checkpoint moves its parent's
        writes files into ``parent_writes`` once it is durable, and the files go). A record
        may be in both places while a child is written (one is kept), and a file removed
        while it is read is found in the child that took it (so the files are read last, and
        a file gone means: read again)."""
        self.use(thread_id)
        for attempt in range(5):
            try:
                return self._writes_records(thread_id, ns, cid)
            except FileNotFoundError:
                if attempt == 4:
                    raise
                self.files.drop_listing(self.layout.writes_dir(thread_id, ns))
                self.files.drop_listing(self.layout.checkpoints_dir(thread_id, ns))
        return []  # never reached

    def children(self, thread_id: str, ns: str, cid: str) -> list[str]:
        """The checkpoints whose parent is ``cid`` and whose id is later (only those take its
        writes: ``RepoSaver.put``). A few later checkpoints are read one by one, so the latest
        is found lazily (``alist``); more, from the namespace's lineage."""
        ids = self.checkpoint_ids(thread_id, ns)
        later = ids[bisect.bisect_right(ids, cid) :]
        if not later:
            return []  # the latest (the usual put_writes and get_tuple): nothing to look up
        lst = self.files.listings.get(self.layout.checkpoints_dir(thread_id, ns))
        if len(later) > CHILDREN_SCAN or (lst is not None and "lineage" in lst.derived):
            return [c for c in self.lineage(thread_id, ns).children(cid) if c > cid]
        out = []
        for child in later:
            try:
                raw = self.files.read_doc(self.layout.checkpoint_path(thread_id, ns, child), "checkpoint")
            except FileNotFoundError:
                continue
            if raw["parent_checkpoint_id"] == cid:
                out.append(child)
        return out

    def _writes_records(self, thread_id: str, ns: str, cid: str) -> list[WritesRecord]:
        folder = self.layout.writes_dir(thread_id, ns)
        names = writes_names(self.files, folder, encode_segment(cid))
        found: dict[str, WritesRecord] = {}
        for child in self.children(thread_id, ns, cid):
            path = self.layout.checkpoint_path(thread_id, ns, child)
            try:
                doc = self.files.read_doc(path, "checkpoint")
            except FileNotFoundError:
                continue  # removed since it was listed (prune): its parent's writes went with it
            for key, record in fields.parent_writes(doc).items():
                found.setdefault(
                    key,
                    WritesRecord(
                        path, fields.parent_write_pointer(key), taken_writes(record, thread_id, ns, cid)
                    ),
                )
        for name in names:
            key = writes_key(name)
            if key in found:
                continue
            path = folder / name
            doc = self.files.read_doc(path, "writes")
            if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (thread_id, ns, cid):
                raise FileFormatError(str(path), "/checkpoint_id", "names do not match the file's place")
            found[key] = WritesRecord(path, "", writes_record(doc))
        return [found[k] for k in sorted(found)]

    # -- writing: each file decided alone, written once what it refers to is durable --
    def deciding(self, thread_id: str) -> AbstractContextManager[int]:
        """Decide a file of ``thread_id`` alone among this process's writers of it (overlap.py);
        yields its ticket. Stage it (``stage_checkpoint``, ``stage_writes``) inside, commit after."""
        return self._overlap.pending.deciding(self.layout.thread_dir(thread_id), thread_id)

    def deciders(self, thread_id: str) -> int:
        """How many files of ``thread_id`` this process is deciding or waits to decide."""
        return self._overlap.pending.writers(self.layout.thread_dir(thread_id))

    def sharing(
        self,
        thread_id: str,
        ticket: int,
        replacing: tuple[str, str] | None = None,
        convert: Convert | None = None,
    ) -> Host:
        """What the file being decided holds of its own, and how it finds objects stored
        before: in ``objects/``, in a checkpoint written, or in one being written beside it
        (decided earlier: waited for at commit). Never the checkpoint it replaces."""
        host = Host(convert=convert, ticket=ticket)
        host.locate = partial(
            self._overlap.locate_object, thread_id, ticket=ticket, waits=host.waits, not_in=replacing
        )
        return host

    def stage_checkpoint(
        self,
        record: CheckpointRecord,
        host: Host,
        large: Prepared,
        parent: tuple[CheckpointRecord, int] | None = None,
    ) -> Staged:
        """Lay ``record`` out (a delta on its parent where the line allows: ``parent``, its
        whole document and depth when the caller read them already), validate it, and offer the objects it
        holds to the puts decided after it. A checkpoint put again keeps the objects of the
        file it replaces: later files may refer to them there."""
        thread_id, ns, cid = record.thread_id, record.checkpoint_ns, record.checkpoint_id
        self.use(thread_id)
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        replaced = self._replaced_objects(path)
        if replaced:  # (dataclasses.replace looks up every field: not for the usual new checkpoint)
            record = replace(record, objects={**replaced, **record.objects})
        doc = compact(checkpoint_document(record), *self._delta_base(thread_id, ns, record.parent_id, parent))
        prepared = self.files.prepare("checkpoint", doc, path)
        tdir = self.layout.thread_dir(thread_id)
        done = self._overlap.pending.offer(tdir, list(host.objects), ns, cid, host.ticket)
        return Staged(thread_id, host, [large, [prepared]], (path, doc, prepared[1]), (ns, cid), done)

    def stage_writes(self, record: TaskWrites, key: str, host: Host, large: Prepared) -> Staged:
        """Lay one task's writes out as a new writes file, named by ``key`` (time-ordered: the
        files of a checkpoint are read oldest first), and validate it (its objects are never
        referred to from elsewhere: the child checkpoint stores them again)."""
        self.use(record.thread_id)
        doc = writes_document(record)
        folder = self.layout.writes_dir(record.thread_id, record.checkpoint_ns)
        path = folder / self.layout.writes_name(record.checkpoint_id, key)
        prepared = self.files.prepare("writes", doc, path)
        return Staged(record.thread_id, host, [large, [prepared]], (path, doc, prepared[1]), None, None)

    def commit(self, staged: Staged, *, again: bool) -> bool:
        """Write a staged file once the files it refers to are durable: its large values and
        objects first, itself last. False, nothing written, when one of them failed and
        ``again``: the caller decides the file again, holding those objects itself."""
        written = False
        try:
            if not self._overlap.await_pending(staged.thread_id, staged.host.waits, again=again):
                return False
            path, doc, data = staged.file
            self.files.write(staged.batches, {path: doc} if staged.held else None)
            written = True
            self.files.remember(path, doc, data)
            if staged.held is not None:
                self._overlap.note_objects(staged.thread_id, *staged.held, list(staged.host.objects))
                tdir = self.layout.thread_dir(staged.thread_id)
                self._settled(self.objects.wrote(tdir, path, data, fields.held_objects(doc)))
        finally:
            if staged.done is not None:
                tdir = self.layout.thread_dir(staged.thread_id)
                self._overlap.pending.withdraw(tdir, staged.done, ok=written)
        return True

    def _settled(self, files: list[tuple[Path, tuple[int, int, int, int]]]) -> None:
        """Checkpoints this process wrote, settled since holding the bytes it wrote (objindex.py
        checked them): their stat keys go into their namespace's lineage, which is written down
        for a fresh process every LINEAGE_SAVE_EVERY of them. Without it a fresh process read
        every header a writer had added (a writer keeps its lineage in memory)."""
        by_folder: dict[Path, dict[str, tuple[int, int, int, int]]] = {}
        for path, key in files:
            by_folder.setdefault(self.layout.folder_of(path), {})[path.name[: -len(".json")]] = key
        for folder, keyed in by_folder.items():
            lineage = self._lineages.get(folder)
            if lineage is None:
                continue
            unsaved = self._unsaved.setdefault(folder, {})
            unsaved.update((cid, key) for cid, key in keyed.items() if cid in lineage.links)
            if len(unsaved) >= LINEAGE_SAVE_EVERY and len(lineage.links) >= MIN_NAMES:
                # one copy per LINEAGE_SAVE_EVERY puts, not per put (a reader may be saving it)
                lineage.keys = {**lineage.keys, **unsaved}
                self._lineage_files.save(folder, lineage, list(unsaved))
                unsaved.clear()

    def _replaced_objects(self, path: Path) -> dict[str, Any]:
        try:
            old = self.files.read_doc(path, "checkpoint")
        except FileNotFoundError:
            return {}
        except FileFormatError:
            return {}  # damaged: nothing in it could be read before either; validate names it
        return dict(old.get("objects") or {})

    def _delta_base(
        self, thread_id: str, ns: str, parent_id: str | None, whole: tuple[CheckpointRecord, int] | None
    ) -> tuple[CheckpointRecord | None, int]:
        """The parent a new checkpoint may be written as a delta on (its whole document) and
        how many deltas it is itself from a whole one; (None, 0): write it whole."""
        if not parent_id:
            return None, 0
        if whole is not None:
            return whole
        try:
            return self.get_parent(thread_id, ns, parent_id)
        except (FileNotFoundError, RepoCheckpointError):
            return None, 0  # not there, or not readable: a whole checkpoint needs neither

    # -- ids, from folder listings ------------------------------------------------
    def checkpoint_ids(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """Sorted checkpoint ids of one namespace (ids are time-ordered)."""
        folder = self.layout.checkpoints_dir(thread_id, checkpoint_ns)
        return self._derived(folder, "ids", self._ids) or []

    def _derived(self, folder: Path, key: str, derive: Callable[[Path, list[str]], Any]) -> Any:
        """What ``derive`` makes of a folder's names, kept with its listing (and brought up to
        date after our own writes, ``_extend_derived``); None when there is no such folder."""
        lst = self.files.listings.get(folder)
        if lst is None:
            return None
        got = lst.derived.get(key)
        if got is None:
            names = lst.names  # what this value is derived from (a write puts a new list in place)
            try:
                got = derive(folder, names)
            except FileFormatError:
                if not lst.from_index:
                    raise
                self.files.listings.drop(folder)  # the recorded names, not the folder: list it
                return self._derived(folder, key, derive)
            self.files.listings.keep_derived(lst, key, got, names)
        return got

    def _ids(self, folder: Path, names: list[str]) -> list[str]:
        stems = [n[:-5] for n in names if n.endswith(".json")]
        joined = "\n".join(stems)
        if _HEX_IDS.fullmatch(joined) or all(map(is_verbatim, stems)):
            return sorted(stems)  # the usual case (uuid6 ids): the stem is the id
        return sorted(self._id_of(folder, f"{stem}.json") for stem in stems)

    def _id_of(self, folder: Path, name: str) -> str:
        stem = name[:-5]
        if is_hashed_segment(stem):
            return str(self.files.read_doc(folder / name, "checkpoint")["checkpoint_id"])
        try:
            return decode_segment(stem)
        except ValueError as exc:
            raise FileFormatError(str(folder / name), "/", f"bad file name: {exc}") from None

    def _extend_derived(
        self, folder: Path, cur: Listing, name: str, written: dict[str, Any] | None = None
    ) -> None:
        """Add a name we just wrote to what was derived from its folder's listing
        (``written``: the document just written there, as stored, when the writer has it)."""
        ids = cur.derived.get("ids")
        if ids is not None and name.endswith(".json"):
            cid = self._id_of(folder, name)
            pos = bisect.bisect_left(ids, cid)
            if pos == len(ids) or ids[pos] != cid:
                # a new list, not an insert: a reader in another thread keeps the one it took
                cur.derived["ids"] = [*ids[:pos], cid, *ids[pos:]]
        lineage: Lineage | None = cur.derived.get("lineage")
        if lineage is not None and name.endswith(".json") and ids is not None:
            doc = written if written is not None else self.files.read_doc(folder / name, "checkpoint")
            cid = str(doc["checkpoint_id"])
            lineage.add(cid, self._link(doc["thread_id"], doc["checkpoint_ns"], cid, doc))

    # -- which checkpoint continues (lineage.py) ----------------------------------
    def lineage(self, thread_id: str, checkpoint_ns: str) -> Lineage:
        """The parent links and valid choices of a namespace's checkpoints (lineage.py), kept
        with the folder's listing. Each checkpoint's link is read from its file once: a file
        whose stat key is the one recorded (in this process, or in the derived index for a
        fresh one) is not read again, so a fresh process reads only the checkpoints added
        since (docs/forks.md, "The rule")."""
        self.use(thread_id)
        folder = self.layout.checkpoints_dir(thread_id, checkpoint_ns)
        lst = self.files.listings.get(folder)
        if lst is None:
            return Lineage()
        got: Lineage | None = lst.derived.get("lineage")
        if got is None:
            names = lst.names  # as in _derived: kept only if no write changed them meanwhile
            ids = self.checkpoint_ids(thread_id, checkpoint_ns)
            got = self._read_lineage(thread_id, checkpoint_ns, folder, ids)
            self.files.listings.keep_derived(lst, "lineage", got, names)
        return got

    def lineage_seeded(self, thread_id: str, checkpoint_ns: str, known: Lineage) -> Lineage:
        """``lineage``, taking ``known`` (the roster's, from the derived index: roster.py) as
        the links this process read before, when it has read none: each is still used only
        while its file's stat key is the recorded one, so only the others are read."""
        if known.keys:
            self._lineages.setdefault(self.layout.checkpoints_dir(thread_id, checkpoint_ns), known)
        return self.lineage(thread_id, checkpoint_ns)

    @contextmanager
    def observing(self) -> Iterator[None]:
        """One read (a ``get_tuple``): the stat keys its lineage check takes of checkpoint
        files are compared by the objects index in the same read, instead of an lstat of each
        holder again (the holders of a chat's messages are its checkpoints). Per thread of the
        process; a read inside a read uses the outer one's."""
        if getattr(self._observed, "keys", None) is not None:
            yield
            return
        self._observed.keys = {}
        try:
            yield
        finally:
            self._observed.keys = None

    def observing_each(self, items: Iterator[_T]) -> Iterator[_T]:
        """``items``, each step observed (``observing``) from its start to the item it gives,
        each file and folder asked about once in it (``caches.one_look``, as a ``get_tuple``),
        and nothing held across a yield, where the caller may wait any time (``list``)."""
        try:
            while True:
                with self.observing(), one_look():
                    try:
                        item = next(items)
                    except StopIteration:
                        return
                yield item
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def _observed_keys(self) -> dict[str, StatKey] | None:
        return getattr(self._observed, "keys", None)  # type: ignore[no-any-return]

    def _find_object(self, tdir: Path, name: str, holder: str, seen: dict[str, Any]) -> Any | None:
        """``ObjectIndex.find``, with the stat keys this read took already (``observing``); a
        holder taken as unchanged is one more file the read came from (``Files.recording``)."""
        got = self.objects.find(tdir, name, holder, seen, getattr(self._observed, "keys", None))
        if got is not None and self.files.is_recording():
            self.files.note_deps(((holder, self.objects.key_of(tdir, holder), None),))
        return got

    def current(self, thread_id: str, checkpoint_ns: str) -> str | None:
        """The checkpoint that continues a namespace (lineage.py's rule), None when empty."""
        return self.lineage(thread_id, checkpoint_ns).current()

    def _read_lineage(self, thread_id: str, ns: str, folder: Path, ids: list[str]) -> Lineage:
        """Each checkpoint's link: the known one (this process's last, or the derived index's)
        while its file's stat key is the recorded one, else read from the file. The stat keys
        taken are noted for the rest of the read (``observing``: the objects index compares
        a holder's with them instead of an lstat of its own)."""
        known = self._lineages.get(folder) or load_lineage(self.layout, folder)
        observed: dict[str, StatKey] | None = getattr(self._observed, "keys", None)
        prefix = str(folder) + os.sep  # a str per id, not a Path: this is one lstat per checkpoint
        # the usual ids (uuid6) are their own file names: no encode_segment call per id
        segments = ids if _HEX_IDS.fullmatch("\n".join(ids)) else [encode_segment(c) for c in ids]
        names = [prefix + segment + ".json" for segment in segments]
        read_at = time.time_ns()  # before the lstats: a file read below is settled as of then
        # the files this read has not observed yet (a filter's checks took some), all at once
        gaps = [name for name in names if name not in observed] if observed else names
        stats = _lstats(gaps)
        taken = dict(zip(gaps, stats, strict=True)) if stats is not None else {}
        out = None
        if stats is not None:
            now_of = dict(zip(gaps, map(STAT_KEY_OF, stats), strict=True))
            if observed:
                now_of.update(observed)
            now = list(map(now_of.get, names))
            out = _unchanged_links(ids, now, known)
        if out is not None:
            read = 0
            if observed is not None:
                observed.update(zip(names, out.keys.values(), strict=True))
        else:
            out, read = self._links_by_keys(thread_id, ns, (ids, names, taken), known, observed, read_at)
        self._lineages[folder] = out
        if read >= LINEAGE_REREADS and len(ids) >= MIN_NAMES:
            self._lineage_files.save(folder, out)
        return out

    def _links_by_keys(
        self,
        thread_id: str,
        ns: str,
        files: tuple[list[str], list[str], dict[str, os.stat_result]],
        known: Lineage,
        observed: dict[str, StatKey] | None,
        read_at: int,
    ) -> tuple[Lineage, int]:
        """``_read_lineage`` checkpoint by checkpoint (some link is not known or some file
        changed, or this read observed keys already): the lineage and how many files were
        read. ``files``: the ids, their files and the lstats taken already (after ``read_at``),
        by file; a key observed in this read is compared instead of an lstat."""
        ids, names, taken = files
        links: dict[str, Node] = {}
        keys: dict[str, tuple[int, int, int, int]] = {}
        read = 0
        known_keys, known_links = known.keys, known.links
        for cid, name in zip(ids, names, strict=True):
            hit = known_keys.get(cid)
            if hit is not None and observed is not None and observed.get(name) == hit and cid in known_links:
                links[cid] = known_links[cid]  # its key as this read took it (a filter's)
                keys[cid] = hit
                continue
            st, at = taken.get(name), read_at
            try:
                if st is None:
                    at = time.time_ns()
                    st = os.lstat(name)
            except FileNotFoundError:
                continue  # removed since it was listed
            if hit is not None and cid in known_links and stat_key(st) == hit:
                links[cid] = known_links[cid]
                keys[cid] = hit
                if observed is not None:
                    observed[name] = hit
                continue
            links[cid] = self._link(thread_id, ns, cid)
            if settled(st, at):
                keys[cid] = stat_key(st)
                if observed is not None:
                    observed[name] = keys[cid]
            read += 1
        return Lineage(links, keys), read

    def _merged_messages(self, ns: str, doc: dict[str, Any], parent: dict[str, Any]) -> tuple[Any, Any]:
        """The ``messages`` trees of a merge's kept head and of the merge (lineage.py)."""
        ns_dir = self.layout.ns_dir(doc["thread_id"], ns)

        def tree(d: dict[str, Any]) -> Any:
            ref = fields.value_refs(d).get(MERGED_CHANNEL)
            if ref is None:
                return None
            version = fields.channel_versions(d).get(MERGED_CHANNEL)
            entry = self.values.value_entry(ns_dir, MERGED_CHANNEL, version, ref)
            return None if entry.empty else entry.tree

        return tree(parent), tree(doc)

    def _link(self, thread_id: str, ns: str, cid: str, doc: dict[str, Any] | None = None) -> Node:
        """One checkpoint's link, from its own file (``doc``: as stored, a delta or whole);
        its parent's files are read only for a choice, which compares whole documents. An
        unreadable file is a link without a parent (validate names it; a read of it raises),
        a malformed or false choice no choice."""
        path = self.layout.checkpoint_path(thread_id, ns, cid)
        try:
            doc = doc if doc is not None else self.docs.own(path, thread_id, ns, cid)
        except (FileFormatError, OSError):
            return Node(None, readable=False)  # validate names it; reading it raises
        deliberate = is_deliberate(doc["metadata"])
        try:
            choice = choice_of(doc["metadata"], str(path))
        except FileFormatError as exc:
            return Node(fields.parent_id(doc), None, exc.detail, deliberate=deliberate)
        parent = fields.parent_id(doc)
        if choice is None:
            return Node(parent, deliberate=deliberate)
        try:
            doc = self.docs.header(thread_id, ns, cid)  # a choice is judged on whole documents
        except (FileFormatError, OSError):
            return Node(None, readable=False)
        try:
            parent_doc = self.docs.header(thread_id, ns, choice.chose) if parent == choice.chose else None
            messages = self._merged_messages(ns, doc, parent_doc) if choice.merged and parent_doc else None
        except (FileNotFoundError, FileFormatError, OSError):
            parent_doc, messages = None, None
        problem = choice_problem(doc, choice, parent_doc, messages)
        return Node(parent, None if problem else choice, problem, deliberate=deliberate)

    def namespaces(self, thread_id: str) -> list[str]:
        return [ns for ns, _ in self.namespace_folders(self.layout.thread_dir(thread_id))]

    def namespace_folders(self, tdir: Path) -> list[tuple[str, Path]]:
        out: list[tuple[str, Path]] = []
        if (tdir / CHECKPOINTS).is_dir():
            out.append(("", tdir))
        nsroot = tdir / NAMESPACES
        for seg in data_names(nsroot):
            out.append((self._ns_name(nsroot / seg, seg), nsroot / seg))
        return out

    def _segment_name(self, folder: Path) -> str:
        """The id a thread or namespace folder stands for; FileFormatError for strays."""
        if folder.is_symlink() or not folder.is_dir():
            raise FileFormatError(str(folder), "/", "not a folder of the layout (stray file or symlink)")
        try:
            return decode_segment(folder.name)
        except ValueError as exc:
            raise FileFormatError(str(folder), "/", f"not a folder name this layout writes: {exc}") from None

    def _ns_name(self, folder: Path, seg: str) -> str:
        if not is_hashed_segment(seg):
            return self._segment_name(folder)
        for name in sorted(os.listdir(folder / CHECKPOINTS)):
            if not is_temp_name(name):
                return str(self.files.read_doc(folder / CHECKPOINTS / name, "checkpoint")["checkpoint_ns"])
        raise FileFormatError(str(folder), "/", "hashed namespace folder holds no checkpoint")

    def thread_ids(self) -> list[str]:
        tdir = self.layout.threads_dir
        out = []
        for seg in data_names(tdir):
            if not is_hashed_segment(seg):
                out.append(self._segment_name(tdir / seg))
                continue
            tid = hashed_thread_id(tdir / seg, lambda p: self.files.read_doc(p, "checkpoint"))
            if tid is not None:
                out.append(tid)
        return out

    # -- values (values.py) ---------------------------------------------------------
    def channel_value(self, record: CheckpointRecord, channel: str, *, note: bool = False) -> ValueEntry:
        """The value of one channel of a checkpoint. When another file it is read
        through does not read (a link of an append chain, an object), the error also names
        the checkpoint and thread that needed it and how to get it back: one damaged old file
        is otherwise a mystery to whoever reads the newest state. ``note``: a list rebuilt
        from many links is written down for the next process (bodyindex.py; the latest state)."""
        thread_id, ns, cid = record.thread_id, record.checkpoint_ns, record.checkpoint_id
        self.use(thread_id)
        ns_dir = self.layout.ns_dir(thread_id, ns)
        version = record.channel_versions.get(channel)
        try:
            return self.values.value_entry(ns_dir, channel, version, record.values[channel], note=note)
        except FileFormatError as exc:
            if Path(exc.path) == self.layout.checkpoint_path(thread_id, ns, cid):
                raise
            how = (
                ""  # not damaged: its detail says how to fetch it
                if isinstance(exc, LfsPointerError)
                else ": restore it from git (`langgraph-repo fsck` lists every file that does not read)"
            )
            raise exc.restated(
                f"{exc.detail}; checkpoint {cid} of thread {thread_id!r} reads channel {channel!r} "
                f"through this file{how}"
            ) from exc

    def chain(self, ns_dir: Path, channel: str, version: Any, ref: str) -> Iterator[Link]:
        """The links of a value's append chain as the whole-root walkers read them
        (chains.read_link), each file entered in the walk's guard (chains.walk_chain)."""
        read = partial(read_link, self.files.read_doc, self.layout, ns_dir, channel)
        return walk_chain(read, version, ref, partial(self.implied_base, channel))

    def implied_base(self, channel: str, link: Link) -> tuple[Any, str]:
        """(version, ref) of the list an append without ``base`` extends (format 4): the
        channel's value at the parent of the checkpoint holding it, read from the parent's
        whole document or from the base file prune left in its place. A parent whose own
        file gives both (it stored the channel: every link of an append chain does) is not
        completed from its line: a delta's own entries are its whole document's."""
        path = link.path
        parent = link.doc.get("parent_checkpoint_id") if isinstance(link.doc, dict) else None
        where = f"{link.pointer}/append"
        if not parent:
            raise FileFormatError(str(path), where, "appends to its parent's list, but names no parent")
        ppath = self.values.sibling(path, f"{encode_segment(parent)}.json")
        try:
            own = self.files.read_doc(ppath, "checkpoint")
            ref, versions = own["values"].get(channel), own["checkpoint"].get("channel_versions") or {}
            if ref is not None and channel in versions:
                return versions[channel], ref
            whole = self.docs.at(ppath)
        except FileNotFoundError:
            bpath = path.parent.parent / self.layout.base_rel(parent)
            try:
                whole = self.files.read_doc(bpath, "base")
            except FileNotFoundError:
                why = f"appends to the list of parent {parent}, which is missing (and so is {bpath})"
                raise MissingReferenceError(str(path), where, why) from None
        ref = whole["values"].get(channel)
        if ref is None:
            why = f"appends to the list of parent {parent}, which has none"
            raise MissingReferenceError(str(path), where, why)
        return whole["checkpoint"]["channel_versions"].get(channel), ref

    # -- forgetting and removing (removal.py) -----------------------------------------
    def forget_thread(self, thread_id: str) -> None:
        """Forget everything read of one thread (it was removed, replaced or copied over)."""
        tdir = self.layout.thread_dir(thread_id)
        self.kept.forget(thread_id)
        self.files.forget_under(tdir)
        self.meta.forget_thread(thread_id)
        self.values.drop_under(tdir)
        for folder in [f for f in list(self._lineages) if f.is_relative_to(tdir)]:
            self._lineages.pop(folder, None)
        self._overlap.forget_under(tdir)
        self.docs.forget_under(tdir)
        self.objects.forget(tdir)
        self.bodies.forget(tdir)
        for folder in [f for f in list(self._unsaved) if f.is_relative_to(tdir)]:
            self._unsaved.pop(folder, None)
        self._lineage_files.forget_under(tdir)
