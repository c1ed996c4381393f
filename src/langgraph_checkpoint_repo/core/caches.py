"""In-process caches of what was read from a root, and the one rule they all follow.

So that every read sees every edit (by hand, by ``git pull``, by another process):

    A cached thing is reused only while every file it was derived from has the stat key
    it had when it was read (mtime_ns, ctime_ns, size, inode: ctime too, which tools
    that restore the mtime cannot set), and was settled then: last changed more than
    RACY_NS before it was read (the "racy git" rule; a file changed within that window
    can change again without changing its stat key). A file that was not settled has its
    bytes compared with the digest of the bytes it was derived from (what we wrote, or
    what we read and parsed) until it has settled.

Applied to:

* folder listings (``Listings``): a folder's names, and the ids and writes groups derived
  from them, against the folder's stat;
* parsed, validated documents (``DocCache``): against the file's stat;
* resolved values (``resolve.py``): against every file a value is built from, its own, a
  ``large/`` file and each link of its append chain (``Dep``: one lstat per file on a hit);
  a list a put appended is kept as a read would build it, under the same deps
  (``ValueResolver.keep_appended``: its own file's with the digest of the bytes written);
* decoded metadata for filters (``index.MetaCache``, ``ThreadStore.meta``): against its
  checkpoint file's stat (one lstat per checkpoint a filter scans);
* the list the next ``put`` appends to (the saver's ``_lists``): against the files of the
  chain it would append to; changed, the next value is written whole; and the chunks of its
  last whole copy and how it cut the list (``objects.Frame``), which the next whole copy
  refers to where they are: against every file holding one (one lstat per file); changed,
  each chunk is cut and looked up again;
* what reads across threads need of every thread (``roster.Roster``): a thread's namespaces
  against its folder's stat (and its ``ns/`` folder's), a namespace's ids against its
  checkpoints folder's, a parent link or metadata against its checkpoint file's, a row of
  ``threads`` against every file and folder it was made from.

A bounded cache (``LRU``) starts at ``CACHE_ENTRIES`` and grows by one each time an entry it
evicted is wanted again, so its bound follows the working set that is read again and again
(the files a list across thousands of threads returns), never falling off at a constant.

Relaxed in two places, both for files we have just written under the thread's lock, which
every cooperating writer takes, so nothing but a tool that ignores the lock (git) can
change them meanwhile:

* after our own write a folder's listing is brought up to date and trusted at once (it
  is listed again first if it was not trusted): a file such a tool adds in the same clock
  tick is seen at the folder's next change;
* ``_lists`` keeps the files a ``put`` wrote (its chain, and the file holding the chunks a
  whole copy introduced) by their stat key alone (checking their bytes on every later put
  would cost a read per recent file): an edit in the same clock tick
  that changes the list's length is refused on read (``base_length``), naming the file;
  one that keeps the length becomes the base the next put appends to.

"Every file it was derived from has its stat key" is asked at each use; inside one call that
writes nothing meanwhile (a ``get_tuple`` try, a ``put`` deciding its file: ``one_look``) each
file is asked once, and every check of the call takes that answer, one look at the files as
the call first found them (a change made during the call is seen by the next call, as one
made just after it would be). The call's own write, and all that follows it, asks afresh.

Listings, filter metadata, lineage and the roster are also kept on disk for the next process,
under the same rule (index.py); losing or damaging that derived index costs a re-read, nothing
else.

The checks (validate, fsck) set the rule aside on purpose, for the span of one thread's
check only: they read the root as one snapshot, each file once (snapshot.py), and drop all
of it when that check ends. No writer and no later read relies on what a snapshot read.
"""

from __future__ import annotations

import bisect
import operator
import os
import stat as stat_mod
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple, cast

import xxhash

from .errors import outside_refused, symlink_refused
from .format.canonical import dump_json
from .layout import is_temp_name

RACY_NS = 50_000_000  # a file changed within 50 ms of being read may change again unseen
COARSE_NS = 2_000_000_000  # the same, where timestamps are whole seconds (FAT: two)
CACHE_ENTRIES = 20_000  # where a bounded cache starts (LRU: it grows to what is read again)
KEPT_THREADS = 512  # threads whose reads a process keeps by default (RepoSaver(kept_threads=...))
KEPT_THREADS_MAX = 1 << 30  # the most it may be told to keep

StatKey = tuple[int, int, int, int]
# a file something was derived from: (path, its stat key then, the bytes_digest of its bytes when it
# was not yet settled, else None); a stat key of None means "cannot be checked: never reuse"
Dep = tuple[str, StatKey | None, bytes | None]


def stat_key(st: os.stat_result) -> StatKey:
    """What changes when a file is edited: ctime too, which tools that keep mtime cannot set."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


#: ``stat_key`` in C, for ``map`` over many files' lstats
STAT_KEY_OF = operator.attrgetter("st_mtime_ns", "st_ctime_ns", "st_size", "st_ino")


def all_unchanged(paths: Iterable[str | bytes], flat_keys: tuple[int, ...]) -> bool:
    """Whether every file of ``paths`` has the stat key kept for it (``flat_keys``: the keys one
    after another, in the same order); False when any differs or is gone. One lstat each, and
    no Python per file: a warm filter across 10,000 threads asks it of every namespace."""
    try:
        return tuple(chain.from_iterable(map(STAT_KEY_OF, map(os.lstat, paths)))) == flat_keys
    except OSError:
        return False


def stat_key_of(path: str | Path) -> StatKey | None:
    """The stat key of a file (never through a symlink), None when it is gone."""
    try:
        return stat_key(lstat(path))
    except FileNotFoundError:
        return None


_CALL = threading.local()  # the lstats of the call under way on this thread (``one_look``)


@contextmanager
def one_look() -> Iterator[None]:
    """Inside, each file is ``lstat``-ed once (``lstat``): what a call checks and reads is one
    look at the files, as they were when first asked about. A read asked about the same
    checkpoint files two and three times (the line of deltas under a parent, then the append
    chain running through the same files; the chain again for each link it walks): a third of
    a chat turn's lstats. Only around what writes no file of the state (a read, a put deciding
    its file, a step of a ``list``): our own write changes what was looked at. The derived
    index under ``.cache/`` a read may save meanwhile is read and written without this memo.
    Nested, the outermost look is the one."""
    if getattr(_CALL, "stats", None) is not None:
        yield
        return
    _CALL.stats, _CALL.memo = {}, {}
    try:
        yield
    finally:
        _CALL.stats = _CALL.memo = None


def look_memo() -> dict[Any, Any] | None:
    """A dict that lasts as long as the look under way on this thread (``one_look``), None
    outside one: for answers that follow from the look's lstats alone (whether a folder lies
    in the root with no symlink on the way), worked out once a look."""
    return getattr(_CALL, "memo", None)


def lstat(path: str | Path) -> os.stat_result:
    """``os.lstat``, once per file inside ``one_look`` (a file found missing is asked again)."""
    stats: dict[str, os.stat_result] | None = getattr(_CALL, "stats", None)
    if stats is None:
        return os.lstat(path)
    key = os.fspath(path)
    st = stats.get(key)
    if st is None:
        st = stats[key] = os.lstat(path)
    return st


def folder_key(folder: Path) -> StatKey | None:
    """The stat key of a folder (its own: a symlink put in its place has another), None when
    it is gone."""
    try:
        return stat_key(os.lstat(folder))
    except FileNotFoundError:
        return None


def folder_stat(folder: str | Path) -> os.stat_result:
    """A folder's own stat, for a listing kept by its key: never through a symlink. The saver
    makes none below the root; a folder swapped for one is refused here as every read of a
    file through it is refused, where a stat that followed it would find the key it kept and
    go on serving what it read before the swap."""
    st = lstat(folder)  # once a look, as the folders on the way (Listings.get)
    if stat_mod.S_ISLNK(st.st_mode):
        raise symlink_refused(folder)
    return st


def settled(st: os.stat_result, read_at: int) -> bool:
    """Whether a file with stat ``st``, read at ``read_at`` (time_ns, taken before the read),
    was last changed long enough before to be trusted by its stat key from then on.

    A filesystem that keeps whole seconds (ext4 with small inodes, FAT, some network mounts)
    can change a file again within the same second without changing its key: an mtime on a
    whole second asks for two seconds, not RACY_NS."""
    coarse = st.st_mtime_ns % 1_000_000_000 == 0
    return read_at - st.st_mtime_ns > (COARSE_NS if coarse else RACY_NS)


def bytes_digest(data: bytes) -> bytes:
    """The digest that tells whether a file still holds the bytes we wrote (``file_digest``
    of it is compared with this). It names nothing and is never stored, so it need not be
    sha256: xxh3-128 is a pass at memory speed, where sha256 of a 1.5 MB ``large/`` file
    was a tenth of its first put (and of a 5 MB one, 4 ms). It only backs the stat key for
    the span of one clock tick (a file not yet settled), against an accidental edit."""
    return xxhash.xxh3_128_digest(data)


def file_digest(path: str | Path) -> bytes | None:
    """``bytes_digest`` of a file's bytes (never through a symlink), None when it cannot be
    read. Checked on every read of a file not yet settled: plain descriptor reads, no file
    object."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    digest = xxhash.xxh3_128()
    try:
        while block := os.read(fd, 1 << 20):  # in blocks: a file swapped in can be of any size
            digest.update(block)
    finally:
        os.close(fd)
    return digest.digest()


def refresh(
    deps: tuple[Dep, ...],
    first: os.stat_result | None = None,
    settle: Callable[[str, StatKey, bytes], None] | None = None,
) -> tuple[Dep, ...] | None:
    """``deps`` when every file still is what something was derived from (the same stat key
    and, for a file that was not settled then, the same bytes), else None. A digest is dropped
    once its file has settled: from then on a change shows in the stat, so later checks cost
    one lstat per file. ``first``: the first file's stat, when the caller has just taken it;
    ``settle``: told of each file found settled with its bytes (``DocCache.settle``)."""
    out: list[Dep] | None = None
    # a file named twice (a link's own, the next link's parent) is read for its digest once
    digested: set[tuple[str, bytes]] = set()
    for i, (path, key, digest) in enumerate(deps):
        if key is None:
            return None
        if i == 0 and first is not None:
            st = first
        else:
            try:
                st = lstat(path)
            except FileNotFoundError:
                return None
        if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != key:
            return None
        if digest is not None:
            checked_at = time.time_ns()
            if (path, digest) not in digested and file_digest(path) != digest:
                return None
            digested.add((path, digest))
            if settled(st, checked_at):
                out = list(deps) if out is None else out
                out[i] = (path, key, None)
                if settle is not None:
                    settle(path, key, digest)
    return deps if out is None else tuple(out)


GHOSTS = 4  # keys of evicted entries an LRU remembers, per entry it holds


class Members:
    """Which keys of a cache each group holds (``thread_of``: a thread folder), so that one
    group's entries go at once; the caller's lock guards it."""

    def __init__(self, group: Callable[[Any], str | None] | None) -> None:
        self._group = group
        self._held: dict[str, set[Any]] = {}

    def join(self, key: Any) -> None:
        group = self._group(key) if self._group is not None else None
        if group is not None:
            self._held.setdefault(group, set()).add(key)

    def leave(self, key: Any) -> None:
        group = self._group(key) if self._group is not None else None
        held = self._held.get(group) if group is not None else None
        if held is not None:
            held.discard(key)
            if not held:
                del self._held[group]  # type: ignore[arg-type]

    def take(self, group: str) -> set[Any]:
        """The keys of ``group``, forgotten here."""
        return self._held.pop(group, set())

    def clear(self) -> None:
        self._held.clear()


class LRU(OrderedDict[Any, Any]):
    """A cache shared by threads: lookups are single dict operations, changes lock.

    Its bound follows what it serves: ``size`` is where it starts, and each time an entry it
    evicted is put back (a read a bigger cache would have spared: it remembers the keys of
    the last ``GHOSTS * size`` entries it evicted, not their values) it holds one more. So a
    working set read again and again (every checkpoint of a list across ten thousand
    threads) ends up held whole instead of every read evicting the entry the next one needs
    (the cliff of a fixed bound under a cyclic scan), while a single pass over more than
    ``size`` entries grows it not at all.

    ``group``: the thread folder a key belongs to (``thread_of``), or None; the entries of one
    thread go at once (``drop_group``) when the saver lets the thread go (``KeptThreads``)."""

    def __init__(self, size: int, group: Callable[[Any], str | None] | None = None) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()
        self._ghosts: OrderedDict[Any, None] = OrderedDict()
        self._members = Members(group)

    def put(self, key: Any, value: Any) -> None:
        with self.lock:
            if key not in self:
                if self._ghosts.pop(key, 0) is None:
                    self.size += 1  # evicted, and wanted again
                self._members.join(key)
            self[key] = value
            self.move_to_end(key)
            if len(self) > self.size:
                evicted, _ = self.popitem(last=False)
                self._members.leave(evicted)
                self._ghosts[evicted] = None
                if len(self._ghosts) > GHOSTS * self.size:
                    self._ghosts.popitem(last=False)

    def drop_where(self, doomed: Callable[[Any], bool]) -> None:
        with self.lock:
            for key in [k for k in self if doomed(k)]:
                del self[key]
                self._members.leave(key)
            for key in [k for k in self._ghosts if doomed(k)]:
                del self._ghosts[key]

    def drop_group(self, group: str) -> None:
        """Let go of every entry of one group (a thread folder), without a scan of the rest.
        Its ghosts stay: wanted again, the thread is wanted again."""
        with self.lock:
            for key in self._members.take(group):
                self.pop(key, None)

    def clear(self) -> None:
        super().clear()
        self._ghosts.clear()
        self._members.clear()


def thread_of(threads_dir: Path) -> Callable[[Any], str | None]:
    """The group of a cache key: the name of the thread folder its path (the key, or its first
    item) lies in under ``threads_dir``, None for a path elsewhere."""
    head = str(threads_dir) + os.sep
    start = len(head)

    def group(key: Any) -> str | None:
        text = str(key[0] if type(key) is tuple else key)
        if not text.startswith(head):
            return None
        end = text.find(os.sep, start)
        return text[start:] if end < 0 else text[start:end]

    return group


class Grouped(dict[Any, Any]):
    """A dict whose keys are grouped (``thread_of``): the entries of one group go at once
    (``drop_group``). Lookups are a dict's, without a lock; every change takes the dict's own
    lock, so a let-go in another thread never comes between a change and the note of its
    group (a ``setdefault`` then read back its key after the let-go had dropped it: KeyError
    in a put, found by helper 60)."""

    def __init__(self, group: Callable[[Any], str | None] | None) -> None:
        super().__init__()
        self._members = Members(group)
        self._lock = threading.Lock()

    def __setitem__(self, key: Any, value: Any) -> None:
        with self._lock:
            super().__setitem__(key, value)
            self._members.join(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            got = super().setdefault(key, default)
            self._members.join(key)
            return got

    def pop(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            got = super().pop(key, default)
            self._members.leave(key)
            return got

    def drop_group(self, group: str) -> None:
        with self._lock:
            for key in self._members.take(group):
                super().pop(key, None)

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self._members.clear()


class KeptThreads:
    """The threads whose reads and writes a process keeps in its caches: the ``size`` used
    last. A server answers for thousands of threads over a day, and what it kept of each
    (parsed files, resolved values, the messages by name: some 600 KB for a thread of 12
    turns) stayed until the process ended, so its memory grew with every thread it had ever
    answered for. ``use`` says which thread to let go, if any: its caches drop what they hold
    of it (``ThreadStore.let_go``), and it is read from its files (and the derived index) the
    next time, under the same rule as a fresh process."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._used: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def use(self, thread: str) -> list[str]:
        """Note that ``thread`` (its folder's name) is used now; the threads to let go."""
        with self._lock:
            used = self._used
            if thread in used:
                used.move_to_end(thread)
                return []
            used[thread] = None
            gone = []
            while len(used) > self.size:
                gone.append(used.popitem(last=False)[0])
            return gone

    def forget(self, thread: str) -> None:
        with self._lock:
            self._used.pop(thread, None)


class _Doc(NamedTuple):
    key: StatKey
    doc: Any
    settled: bool
    digest: bytes | None = None  # of the bytes written or read, while not settled


class DocCache:
    """Parsed, validated documents by path, each against its file's stat key."""

    def __init__(self, size: int = CACHE_ENTRIES, group: Callable[[Any], str | None] | None = None) -> None:
        self._lru = LRU(size, group)

    def fresh(self, path: Path, st: os.stat_result) -> Any | None:
        """The document kept for ``path`` if the file (``st``: its lstat) still holds it."""
        hit: _Doc | None = self._lru.get(path)
        if hit is None or hit.key != stat_key(st):
            return None
        if hit.settled:
            return hit.doc
        checked_at = time.time_ns()
        if hit.digest is None or file_digest(path) != hit.digest:
            return None
        # changed within RACY_NS of its read: the stat cannot show a change made in the same clock
        # tick, the bytes can; once settled, the stat alone is enough
        if settled(st, checked_at):
            self._lru.put(path, _Doc(hit.key, hit.doc, True))
        return hit.doc

    def settle(self, path: str, key: StatKey, digest: bytes) -> None:
        """``path`` was found settled, with the stat key ``key``, to hold the bytes of ``digest``
        (a kept value's check, ``refresh``): a parse of ours kept from those very bytes is
        settled too, so the next read takes the stat alone (the check ``fresh`` makes, made once)."""
        file = Path(path)
        hit: _Doc | None = self._lru.get(file)
        if hit is not None and not hit.settled and hit.key == key and hit.digest == digest:
            self._lru.put(file, _Doc(hit.key, hit.doc, True))

    def keep(self, path: Path, st: os.stat_result, doc: Any, read_at: int, data: bytes) -> None:
        """Keep a document just read from ``path`` (``st`` and ``read_at`` taken before reading;
        ``data``: the bytes it was parsed from). A file not yet settled keeps the digest of
        those bytes, as our own writes do: what is derived from it can be checked later (a
        list read just after another process wrote it is appended to, not written whole
        again because its stat key alone could not be trusted then)."""
        ok = settled(st, read_at)
        self._lru.put(path, _Doc(stat_key(st), doc, ok, None if ok else bytes_digest(data)))

    def remember(self, path: Path, doc: Any, data: bytes | None = None) -> None:
        """Keep what we just wrote (``data``: its bytes). It was written within RACY_NS, so the
        digest of its bytes goes with it: a later read compares bytes (cheap) instead of
        parsing, and still sees an edit made in the same clock tick."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        digest = bytes_digest(dump_json(doc) if data is None else data)
        self._lru.put(path, _Doc(stat_key(st), doc, settled(st, time.time_ns()), digest))

    def doc(self, path: Path) -> Any | None:
        """The document kept for ``path``, unchecked (to tell whether a parse came from it)."""
        hit: _Doc | None = self._lru.get(path)
        return None if hit is None else hit.doc

    def dep(self, path: Path, doc: Any) -> Dep:
        """How to tell later whether ``path`` still holds ``doc`` (its kept parse): the stat key
        it was read with, plus its bytes' digest when it was not yet settled."""
        hit: _Doc | None = self._lru.get(path)  # may have been dropped or replaced meanwhile
        if hit is None or hit.doc is not doc:
            return (str(path), None, None)
        if hit.settled:
            return (str(path), hit.key, None)
        if hit.digest is not None:
            return (str(path), hit.key, hit.digest)
        return (str(path), None, None)  # not settled and no digest: never reused

    def drop_under(self, folder: Path) -> None:
        self._lru.drop_where(lambda p: p.is_relative_to(folder))

    def drop_group(self, group: str) -> None:
        self._lru.drop_group(group)

    def clear(self) -> None:
        """Forget every document (a run of the checks is done with a thread: snapshot.py)."""
        with self._lru.lock:
            self._lru.clear()


@dataclass
class Listing:
    """Sorted names of one folder, plus what was derived from them."""

    names: list[str]
    key: StatKey
    trusted: bool
    derived: dict[str, Any] = field(default_factory=dict)
    from_index: bool = False  # read from the derived index (index.py), not listed


class Listings:
    """Folder listings (temp names left out), each against its folder's stat key."""

    def __init__(
        self,
        load: Callable[[Path, StatKey], list[str] | None] | None = None,
        save: Callable[[Path, StatKey, list[str]], None] | None = None,
        inside: Callable[[Path], bool] | None = None,
        group: Callable[[Any], str | None] | None = None,
    ) -> None:
        self._by_folder: dict[Path, Listing] = Grouped(group)  # grouped by thread (``let_go``)
        # whether a folder lies in the root with no symlink on the way (Layout.contains): a
        # kept listing, and the files kept by their own keys, would outlive a folder on the
        # way swapped for a link to it, where every fresh read refuses the link
        self._inside = inside
        self._mutex = threading.RLock()
        # the derived index (index.py): listings another process took, under the same rule;
        # not for a folder whose listing a reader found wrong (``drop``) until it is listed again
        self._load, self._save = load, save
        self._distrusted: set[Path] = set()
        # folders a write of this process is changing now (``writing``): their temp files and
        # renames change the folder's stat many times, and a listing taken meanwhile is not kept
        self._writing: dict[Path, int] = {}

    @contextmanager
    def writing(self, folders: Iterable[Path]) -> Iterator[None]:
        """While a write of this process changes ``folders``: a reader's listing of one of them
        is used once, not kept. Kept, it would replace the listing the write brings up to date
        (``note_added``) and the write would have to list the folder again, losing what was
        derived from it (the lineage: one lstat per checkpoint to derive it again)."""
        folders = list(folders)
        with self._mutex:
            for folder in folders:
                self._writing[folder] = self._writing.get(folder, 0) + 1
        try:
            yield
        finally:
            with self._mutex:
                for folder in folders:
                    left = self._writing[folder] - 1
                    if left:
                        self._writing[folder] = left
                    else:
                        del self._writing[folder]

    def get(self, folder: Path) -> Listing | None:
        """Names in ``folder``, fresh against the folder's stat; None when it is gone."""
        try:
            st = folder_stat(folder)
        except FileNotFoundError:
            self._by_folder.pop(folder, None)
            return None
        if self._inside is not None and not self._inside(folder.parent):
            raise outside_refused(folder)
        key = stat_key(st)
        cur = self._by_folder.get(folder)
        if cur is not None and cur.trusted and cur.key == key:
            return cur
        # the index only when this process has no listing of the folder as it is now: a listing
        # of the same key that was not yet settled is refreshed by listing, not by another read
        new_key = (cur is None or cur.key != key) and folder not in self._distrusted
        names = self._load(folder, key) if self._load is not None and new_key else None
        if names is not None:  # recorded settled, and the folder has not changed since
            cur = self._by_folder[folder] = Listing(names, key, True, from_index=True)
            return cur
        listed_at = time.time_ns()
        try:
            names = sorted(n for n in os.listdir(folder) if not is_temp_name(n))
        except FileNotFoundError:  # removed since the stat (delete in another process)
            self._by_folder.pop(folder, None)
            return None
        cur = Listing(names, key, settled(st, listed_at))
        if folder in self._writing:
            return cur  # taken while our own write changes the folder: used once, not kept
        self._by_folder[folder] = cur
        if cur.trusted and self._save is not None:
            self._save(folder, key, names)
            self._distrusted.discard(folder)
        return cur

    def keep_derived(self, lst: Listing, key: str, value: Any, names: list[str]) -> None:
        """Keep what was derived from ``names`` with ``lst``, unless a write of this process
        changed its names meanwhile (``note_added`` puts a new list in place, under the same
        mutex, and brings up to date only what was derived before it): kept then, the value
        would miss that write for as long as the listing lasts."""
        with self._mutex:
            if lst.names is names:
                lst.derived[key] = value

    def offer(self, folder: Path, key: StatKey, names: list[str]) -> None:
        """A settled listing of ``folder`` another reader of the derived index keeps (the
        roster, roster.py), taken as a ``load`` of it would be: only while the folder's stat
        key is ``key``, and only when this process holds no listing of its own."""
        with self._mutex:
            if folder not in self._by_folder and folder not in self._distrusted:
                self._by_folder[folder] = Listing(names, key, True, from_index=True)

    def drop(self, folder: Path) -> None:
        """Forget a folder's listing, so the next call lists it again (not from the index)."""
        self._by_folder.pop(folder, None)
        self._distrusted.add(folder)

    def let_go(self, group: str) -> None:
        """Drop the listings of one thread's folders (caches.KeptThreads): a folder's names,
        and what was derived from them (ids, the lineage: an object per checkpoint)."""
        with self._mutex:
            cast(Grouped, self._by_folder).drop_group(group)

    def drop_under(self, folder: Path) -> None:
        # list(...) copies a dict's keys in one step under the GIL, so other threads filling
        # the cache meanwhile cannot break the iteration
        for key in [f for f in list(self._by_folder) if f.is_relative_to(folder)]:
            self._by_folder.pop(key, None)

    def note_added(
        self, folder: Path, name: str, before: StatKey | None, extend: Callable[[Listing, str], None]
    ) -> None:
        """After our own write, under the thread lock: keep the listing current.

        ``before`` is the folder's stat just before our write. If it still matches the
        listing, ours is the only change: the name is added (``extend`` adds it to what was
        derived). Otherwise, or when there is no listing yet, the folder is listed now. No
        cooperating process can add files meanwhile (they take the same lock file), so that
        listing is trusted from here on (the first relaxation of the rule above).
        """
        with self._mutex:
            cur = self._by_folder.get(folder)
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                self._by_folder.pop(folder, None)
                return
            if cur is None or not cur.trusted or before != cur.key:
                names = sorted(n for n in os.listdir(folder) if not is_temp_name(n))
                self._by_folder[folder] = Listing(names, stat_key(st), True)
                return
            pos = bisect.bisect_left(cur.names, name)
            if pos == len(cur.names) or cur.names[pos] != name:
                # what was derived first, the names last: a reader that takes the new names
                # finds what was derived from them (keep_derived judges by the names it took)
                extend(cur, name)
                cur.names = [*cur.names[:pos], name, *cur.names[pos:]]  # readers keep theirs
            cur.key = stat_key(st)
