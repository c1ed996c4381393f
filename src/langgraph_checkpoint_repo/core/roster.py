"""The roster: what reads across threads need of every thread, under the one cache rule.

``RepoSaver.list`` with no thread and ``langgraph-repo threads`` visit every thread of a root.
Without the roster each call found every thread's namespaces and listed its folders again, and
a fresh process read every checkpoint's header for a filter and every later checkpoint of a
result to find its pending writes. The roster keeps, per thread folder:

* its thread id and namespaces, found under the thread folder's stat key (and its ``ns/``
  folder's, where it has one): adding or removing a namespace changes one of them;
* per namespace, its checkpoint ids, listed under its checkpoints folder's stat key; and for
  a namespace of fewer than ``MIN_NAMES`` checkpoints (a bigger one keeps its own ``.meta``
  and ``.lineage`` files, index.py) each checkpoint's plain metadata (what a filter matches
  on) and its parent link (which checkpoint took its pending writes, and the rule of which
  checkpoint continues), each under its checkpoint file's stat key, as ``MetaCache`` and the
  lineage keep them;
* a row of ``threads`` (the readmodel's, with the stat keys of every file it was derived from).

Checked on every use, so the files always win: one lstat per thread folder, one stat per
namespace's checkpoints folder (and per ``ns/`` folder), and, where a filter or the rule reads
what a file holds, one lstat per checkpoint file (an in-place edit changes no folder). What
changed is found again from the files. In process it lasts as long as its store (what it holds
grows with the threads of the root, no constant bound to fall off); on disk it is part of the
derived index (index.py: ``ROSTER_SHARDS`` files by a hash of the thread folder's name), written
back by a process that had to find ``REWRITE`` things again in one file's threads, never fsynced.

A thread read from a roster file stays as the file has it (index.py ``KeptThread``, plain
tuples the garbage collector stops tracking) while its folders' stat keys are the recorded
ones; it is made into objects (``ThreadFacts``) when it changed, when a result of a ``list``
needs its lineage, or for ``threads``. As objects, 10,000 threads were some 130,000 containers
that the collector went over three times in a fresh ``list(None, filter)``.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import weakref
from collections.abc import Iterable
from pathlib import Path

from .caches import StatKey, folder_key, folder_stat, settled, stat_key
from .index import (
    KEPT_NS,
    MIN_NAMES,
    ROSTER_SHARDS,
    KeptRows,
    KeptThread,
    NsFacts,
    ThreadFacts,
    kept_spaces,
    load_roster,
    load_roster_meta,
    ns_lineage,
    roster_shard,
    save_roster,
    seeded_rows,
    thread_facts,
)
from .layout import (
    CHECKPOINTS,
    NAMESPACES,
    decode_segment,
    hashed_thread_id,
    is_hashed_segment,
    is_temp_name,
    is_verbatim,
)
from .lineage import Lineage
from .threads import ThreadStore

#: things found again from the files (a thread's namespaces, a folder listed, a header or a
#: parent link read, a row of ``threads`` made) in one roster file's threads before it is rewritten
REWRITE = 16

_ROSTERS: weakref.WeakKeyDictionary[ThreadStore, Roster] = weakref.WeakKeyDictionary()
_ROSTERS_LOCK = threading.Lock()


def roster_of(store: ThreadStore) -> Roster:
    """The roster of a store (one per store, shared by every reader of it)."""
    with _ROSTERS_LOCK:
        got = _ROSTERS.get(store)
        if got is None:
            got = _ROSTERS[store] = Roster(store)
        return got


class Roster:
    """Every thread of a root as cross-thread reads need it, checked against the files."""

    def __init__(self, store: ThreadStore) -> None:
        # weakly: the roster lives as long as its store (``roster_of`` keys them weakly)
        self._store = weakref.ref(store)
        self.layout = store.layout
        # by thread folder name: the threads as the roster files keep them (None: not loaded),
        # until this process needs one as objects (``_facts``: found again, or asked for)
        self._kept: dict[str, KeptThread] | None = None
        self._facts: dict[str, ThreadFacts] = {}
        self._segs: list[str] = []  # the thread folders found by the last call
        self._dirty = [0] * ROSTER_SHARDS  # things found again since each file was written
        self._absent = [True] * ROSTER_SHARDS  # files absent or of no use when loaded
        # the same for the metadata files, loaded only for a filter (None: not loaded), and
        # what they keep of the threads still in ``_kept``
        self._meta_dirty = [0] * ROSTER_SHARDS
        self._meta_absent: list[bool] | None = None
        # by thread folder and namespace: a line can claim any thread id, only its folder is its own
        self._kept_meta: dict[tuple[str, str], KeptRows] = {}
        self._seeded: set[tuple[str, str]] = set()  # namespaces whose metadata went to store.meta
        # the kept threads all of whose namespaces are in ``_seeded``: by folder, the very tuple
        # (a thread found again is another), so a warm filter does not go through them again
        self._seeded_kept: dict[str, KeptThread] = {}
        self._by_ns: dict[tuple[str, str], str] = {}  # the thread folder of each namespace, by the last call
        self._lock = threading.RLock()
        self._head = str(self.layout.threads_dir) + os.sep  # a str per path: one lstat per thread

    @property
    def store(self) -> ThreadStore:
        store = self._store()
        assert store is not None, "a roster is used through its store"
        return store

    def threads(self, *, seed_meta: bool = False) -> list[ThreadFacts]:
        """Every thread of the root with its namespaces and their checkpoint ids, as the files
        are now. A stray entry in ``threads/`` raises as ``ThreadStore.thread_ids`` does.
        ``seed_meta``: the kept metadata goes to ``store.meta`` (for a codec that reads a plain
        tree as itself), where filters look it up."""
        with self._lock:
            out = []
            self._by_ns = {}
            for t in self._current(seed_meta):
                facts = t if isinstance(t, ThreadFacts) else self._materialized(t[0])
                if facts is not None:
                    out.append(facts)
                    for ns in facts.namespaces:
                        self._by_ns[(facts.tid, ns.ns)] = facts.seg
            return out

    def spaces(self, *, seed_meta: bool = False) -> list[tuple[str, str, tuple[str, ...]]]:
        """(thread id, namespace, checkpoint ids) of every namespace of ``threads``, without
        making a thread the roster files keep as the files are now into objects (``KeptThread``)."""
        with self._lock:
            out: list[tuple[str, str, tuple[str, ...]]] = []
            by_ns: dict[tuple[str, str], str] = {}
            for t in self._current(seed_meta):
                if isinstance(t, ThreadFacts):
                    for ns in t.namespaces:
                        out.append((t.tid, ns.ns, ns.ids))
                        by_ns[(t.tid, ns.ns)] = t.seg
                    continue
                seg, tid = t[0], t[1]
                for at in range(KEPT_NS, len(t), 5):  # ``kept_spaces`` without a tuple each
                    out.append((tid, t[at], t[at + 3]))
                    by_ns[(tid, t[at])] = seg
            self._by_ns = by_ns
            return out

    def _current(self, seed_meta: bool) -> list[ThreadFacts | KeptThread]:
        """Each thread as the files are now: kept as the roster file has it while its folders'
        stat keys are the recorded ones (``_holds``), else as objects, found again."""
        if self._kept is None:
            self._kept = {}
            for shard in range(ROSTER_SHARDS):
                got = load_roster(self.layout, shard)
                self._kept.update(got or {})
                self._absent[shard] = got is None  # written back at the first thing found
        lst = self.store.files.listings.get(self.layout.threads_dir)
        self._segs = list(lst.names) if lst is not None else []
        out: list[ThreadFacts | KeptThread] = []
        kept_threads, facts_of, holds = self._kept, self._facts, self._holds
        for seg in self._segs:
            kept = kept_threads.get(seg)
            if kept is not None:
                # each namespace's (checkpoints folder, its key), sliced in C: no list per thread
                folders = zip(kept[KEPT_NS + 4 :: 5], kept[KEPT_NS + 2 :: 5], strict=True)
                if holds(seg, kept[2], kept[3], folders):
                    out.append(kept)
                    continue
            else:
                cur = facts_of.get(seg)  # the checks of ``_thread`` and ``_list``, their way out
                if cur is not None and holds(
                    seg, cur.key, cur.ns_key, [(ns.folder, ns.key) for ns in cur.namespaces]
                ):
                    out.append(cur)
                    continue
            facts = self._thread(seg)
            if facts is None:
                continue
            for ns in facts.namespaces:
                self._list(facts, ns)
            out.append(facts)
        if seed_meta:
            self._seed_meta(out)
        return out

    def _holds(
        self,
        seg: str,
        key: StatKey | None,
        ns_key: StatKey | None,
        folders: Iterable[tuple[str, StatKey | None]],
    ) -> bool:
        """Whether a thread kept as a roster line has it or kept as objects is as the files are:
        its folder's lstat key (``key``), its ``ns/`` folder's and each namespace's checkpoints
        folder's stat key (``folders``: folder, key) are the recorded ones, the checks ``_thread``
        and ``_list`` make; if not, it is found again by them. A folder key recorded as None
        (never listed settled): never held; ``ns_key`` None: there was no ``ns/`` folder, and
        making one changes the thread folder's key."""
        try:
            st = os.lstat(self._head + seg)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != key:
            return False
        if ns_key is not None and folder_key(Path(self._head + seg, NAMESPACES)) != ns_key:
            return False
        for folder, folder_at in folders:
            try:
                st = os.lstat(folder)  # its own: a symlink put in its place differs (folder_stat)
            except OSError:
                return False  # gone, or not listed yet ("")
            if folder_at != (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino):
                return False  # changed, or never listed settled (None)
        return True

    def _materialized(self, seg: str, *, keep: bool = True) -> ThreadFacts | None:
        """A thread's facts as objects: this process's, else the kept ones made into objects
        (``keep``: and held as this process's from now on)."""
        facts = self._facts.get(seg)
        if facts is not None or not self._kept or seg not in self._kept:
            return facts
        facts = thread_facts(self._kept[seg])
        _with_rows(facts, self._kept_meta)
        if keep:
            self._facts[seg] = facts
            del self._kept[seg]
            self._seeded_kept.pop(seg, None)
            for ns in facts.namespaces:
                self._kept_meta.pop((seg, ns.ns), None)
        return facts

    def _seed_meta(self, threads: list[ThreadFacts | KeptThread]) -> None:
        """Give ``store.meta`` the metadata kept of each namespace it has not had yet."""
        if self._meta_absent is None:
            self._load_meta()
        seeded, seed, kept_meta = self._seeded, self.store.meta.seed, self._kept_meta
        done = self._seeded_kept
        for t in threads:
            if not isinstance(t, ThreadFacts):
                seg, tid = t[0], t[1]
                if done.get(seg) is t:
                    continue
                for ns, _nseg, _key, ids, folder in kept_spaces(t):
                    key = (tid, ns)
                    if key not in seeded:
                        seeded.add(key)
                        rows = kept_meta.get((seg, ns))
                        if rows is not None:  # its trees decoded only when a filter may match them
                            seed(tid, ns, seeded_rows(rows, folder, ids))
                done[seg] = t
                continue
            for space in t.namespaces:
                if (t.tid, space.ns) not in seeded:
                    seeded.add((t.tid, space.ns))
                    if space.meta_rows is not None:
                        seed(t.tid, space.ns, seeded_rows(space.meta_rows, space.folder, space.ids))
                    elif space.meta:
                        seed(t.tid, space.ns, space.meta)

    def _load_meta(self) -> None:
        """Read the metadata files, each namespace's rows to be decoded when first used."""
        self._meta_absent = [True] * ROSTER_SHARDS
        for shard in range(ROSTER_SHARDS):
            got = load_roster_meta(self.layout, shard)
            self._meta_absent[shard] = got is None
            for (seg, ns), rows in (got or {}).items():
                facts = self._facts.get(seg)
                kept = self._kept.get(seg) if self._kept else None
                if facts is not None:
                    _with_rows(facts, {(seg, ns): rows})
                elif kept is not None:
                    self._kept_meta[(seg, ns)] = rows

    def _thread(self, seg: str) -> ThreadFacts | None:
        """A thread folder's facts: kept ones while its folders' stat keys are unchanged."""
        tdir = self._head + seg
        read_at = time.time_ns()
        try:
            st = os.lstat(tdir)
        except FileNotFoundError:
            return None  # removed since its folder was listed
        if not stat.S_ISDIR(st.st_mode):
            self.store.thread_ids()  # raises, naming the stray entry, as every reader does
            return None
        cur = self._materialized(seg)
        if cur is not None and cur.key == stat_key(st) and self._ns_folder_unchanged(tdir, cur):
            return cur
        found = self._found(seg, Path(tdir), st, read_at, cur)
        if found is not None:
            self._facts[seg] = found
            if found.key is not None:  # kept: worth writing down (a hashed name never is)
                self._dirty[roster_shard(seg)] += 1
        return found

    @staticmethod
    def _ns_folder_unchanged(tdir: str, cur: ThreadFacts) -> bool:
        # no ns/ folder then: making one would have changed the thread folder's key
        return cur.ns_key is None or folder_key(Path(tdir, NAMESPACES)) == cur.ns_key

    def _found(
        self, seg: str, tdir: Path, st: os.stat_result, read_at: int, cur: ThreadFacts | None
    ) -> ThreadFacts | None:
        """A thread folder's id and namespaces found again from the files (the thread store's
        ways); the facts it kept of a namespace still there are checked by their own keys."""
        try:
            ns_st: os.stat_result | None = folder_stat(tdir / NAMESPACES)
        except FileNotFoundError:
            ns_st = None
        if is_hashed_segment(seg):
            tid = hashed_thread_id(tdir, lambda p: self.store.files.read_doc(p, "checkpoint"))
            if tid is None:
                return None
        else:
            try:
                tid = decode_segment(seg)
            except ValueError:
                self.store.thread_ids()  # raises, naming the folder
                return None
        before = {ns.ns: ns for ns in cur.namespaces} if cur is not None else {}
        namespaces = []
        for ns, folder in self.store.namespace_folders(tdir):
            nseg = "" if folder == tdir else folder.name
            kept = before.get(ns)
            namespaces.append(kept if kept is not None and kept.seg == nseg else NsFacts(ns, nseg))
        # read from the files (a hashed name) or not settled: found again next time
        trusted = (
            settled(st, read_at)
            and (ns_st is None or settled(ns_st, read_at))
            and not is_hashed_segment(seg)
            and not any(is_hashed_segment(ns.seg) for ns in namespaces)
        )
        key = stat_key(st) if trusted else None
        ns_key = stat_key(ns_st) if ns_st is not None else None
        if cur is None:
            return ThreadFacts(seg, tid, key, ns_key, namespaces)
        return ThreadFacts(seg, tid, key, ns_key, namespaces, cur.row, cur.row_line)

    def _list(self, facts: ThreadFacts, ns: NsFacts) -> None:
        """A namespace's checkpoint ids: kept ones while its checkpoints folder's stat key is
        unchanged, else listed (a listing taken within RACY_NS of the folder's last change is
        not kept: caches.settled)."""
        if not ns.folder:
            ns.folder = str(self.checkpoints_folder(facts, ns))
        folder = ns.folder
        read_at = time.time_ns()
        try:
            st = folder_stat(folder)
        except FileNotFoundError:
            ns.key, ns.ids = None, ()
            return
        key = stat_key(st)
        if ns.key == key:
            return
        try:
            names = [n for n in os.listdir(folder) if not is_temp_name(n)]
        except FileNotFoundError:
            ns.key, ns.ids = None, ()
            return
        stems = [n[:-5] for n in names if n.endswith(".json")]
        if len(stems) == len(names) and all(map(is_verbatim, stems)):  # the ids are the names
            ns.ids, ns.key = tuple(sorted(stems)), key if settled(st, read_at) else None
            self._dirty[roster_shard(facts.seg)] += ns.key is not None
        else:  # a name that is not its id (a hash, an escape), or a stray: the thread store's
            ns.ids, ns.key = tuple(self.store.checkpoint_ids(facts.tid, ns.ns)), None

    def checkpoints_folder(self, facts: ThreadFacts, ns: NsFacts) -> Path:
        tdir = self.layout.threads_dir / facts.seg
        return (tdir / NAMESPACES / ns.seg if ns.seg else tdir) / CHECKPOINTS

    def lineage(self, facts: ThreadFacts, ns: NsFacts) -> Lineage:
        """A namespace's lineage (``ThreadStore.lineage``), its kept links taken as known: only
        the checkpoints whose files changed are read."""
        with self._lock:
            if ns.key is not None:  # the store's lineage is kept with the folder's listing
                names = [f"{cid}.json" for cid in ns.ids]
                self.store.files.listings.offer(self.checkpoints_folder(facts, ns), ns.key, names)
            known_lineage = ns_lineage(ns)
            got = self.store.lineage_seeded(facts.tid, ns.ns, known_lineage)
            if got is not known_lineage:
                if len(ns.ids) < MIN_NAMES:
                    known = known_lineage.keys
                    self._dirty[roster_shard(facts.seg)] += sum(
                        1 for cid, key in got.keys.items() if known.get(cid) != key
                    )
                ns.lineage = got
            return got

    def checked_lineage(self, facts: ThreadFacts, ns: NsFacts) -> tuple[Lineage, bool]:
        """A namespace's lineage for a reader that needs nothing more of it (``threads``): the
        kept links when there is one for each checkpoint listed and its file's stat key is the
        recorded one (one lstat each, taken now: True), else ``lineage`` (False)."""
        known = ns_lineage(ns)
        if ns.key is not None and len(known.links) == len(ns.ids) and len(known.keys) == len(ns.ids):
            head = ns.folder + os.sep
            keys, links = known.keys, known.links
            for cid in ns.ids:
                if cid not in links or key_of(f"{head}{cid}.json") != keys.get(cid):
                    break
            else:
                return known, True
        return self.lineage(facts, ns), False

    def lineage_of(self, thread_id: str, ns: str) -> Lineage:
        """``lineage`` of a namespace the last call found (else the thread store's)."""
        with self._lock:
            seg = self._by_ns.get((thread_id, ns))
            facts = self._materialized(seg) if seg is not None else None
            for space in facts.namespaces if facts is not None else ():
                if space.ns == ns:
                    return self.lineage(facts, space)  # type: ignore[arg-type]
        return self.store.lineage(thread_id, ns)

    def set_row(self, facts: ThreadFacts, row: dict[str, object] | None) -> None:
        """Keep a row of ``threads`` made again (None: forget the kept one)."""
        with self._lock:
            facts.row, facts.row_line = row, None
            if row is not None:
                self._dirty[roster_shard(facts.seg)] += 1

    def persist(self, *, every: bool = False) -> None:
        """Write back each roster file whose threads had ``REWRITE`` things found again
        (``every``: each one, as ``fsck --repair`` rebuilds the index)."""
        with self._lock:
            if self._kept is None:
                return
            self._note_meta_reads()
            if not any(self._dirty) and not any(self._meta_dirty) and not every:
                return
            if self._meta_absent is None and (any(self._meta_dirty) or every):
                self._load_meta()  # what is kept of the threads this process did not filter
            by_shard: dict[int, list[str]] = {}
            for seg in self._segs:
                by_shard.setdefault(roster_shard(seg), []).append(seg)
            for shard in range(ROSTER_SHARDS):
                dirty = self._dirty[shard]
                if dirty >= REWRITE or (dirty and self._absent[shard]) or every:
                    self._dirty[shard], self._absent[shard] = 0, False
                    save_roster(self.layout, shard, self._shard_facts(by_shard.get(shard, [])))
            self._persist_meta(by_shard, every)

    def _shard_facts(self, segs: list[str]) -> list[ThreadFacts]:
        """The threads of ``segs`` as objects, the kept ones made so only for writing."""
        return [f for f in (self._materialized(seg, keep=False) for seg in segs) if f is not None]

    def _persist_meta(self, by_shard: dict[int, list[str]], every: bool) -> None:
        """Write back each metadata file whose threads had ``REWRITE`` headers read again."""
        for shard in range(ROSTER_SHARDS):
            dirty = self._meta_dirty[shard]
            absent = self._meta_absent is not None and self._meta_absent[shard]
            if dirty >= REWRITE or (dirty and absent) or every:
                self._meta_dirty[shard] = 0
                if self._meta_absent is not None:
                    self._meta_absent[shard] = False
                threads = [self._with_meta(f) for f in self._shard_facts(by_shard.get(shard, []))]
                save_roster(self.layout, shard, threads, metadata=True)

    def _note_meta_reads(self) -> None:
        """Count the headers filters read since the last look (``MetaCache.kept``)."""
        kept = self.store.meta.kept
        if not kept:
            return
        segs: dict[str, str] | None = (
            None  # by thread id, made only for a namespace the last call did not find
        )
        for (tid, ns), count in list(kept.items()):
            seg = self._by_ns.get((tid, ns))
            if seg is None:
                if segs is None:
                    segs = {f.tid: f.seg for f in self._facts.values()}
                    segs.update((t[1], t[0]) for t in (self._kept or {}).values())
                seg = segs.get(tid)
            if seg is not None:
                self._meta_dirty[roster_shard(seg)] += count
        kept.clear()

    def _with_meta(self, facts: ThreadFacts) -> ThreadFacts:
        """``facts`` with the metadata ``store.meta`` holds of its small namespaces (of the
        checkpoints still listed) in place of what was loaded."""
        for ns in facts.namespaces:
            if len(ns.ids) >= MIN_NAMES:
                continue
            held = self.store.meta.entries(facts.tid, ns.ns)
            if held:
                ids = set(ns.ids)
                ns.meta, ns.meta_rows = {cid: e for cid, e in held.items() if cid in ids}, None
        return facts


def _with_rows(facts: ThreadFacts, kept: dict[tuple[str, str], KeptRows]) -> None:
    """Give each namespace of ``facts`` that holds no metadata yet its rows in ``kept`` (by
    thread folder and namespace)."""
    for ns in facts.namespaces:
        rows = kept.get((facts.seg, ns.ns))
        if rows is not None and ns.meta_rows is None and not ns.meta:
            ns.meta_rows = rows


def key_of(path: str) -> StatKey | None:
    """The lstat key of a file or folder, None when it is gone."""
    try:
        return stat_key(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
