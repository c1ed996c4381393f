"""The file store: reading and writing the documents of one root.

Knows the layout, validates every document on its way in and out, and keeps
derived, in-process caches under one rule, so every read sees every edit (by
hand, by ``git pull``, by another process):

    A cached thing is reused only while every file it was derived from has the
    stat key it had when it was read (mtime_ns, ctime_ns, size, inode: ctime
    too, which tools that restore the mtime cannot set), and was settled then:
    last changed more than RACY_NS before it was read (the "racy git" rule; a
    file changed within that window can change again without changing its
    stat key). A file that was not settled is parsed again on its next read,
    or, for our own writes, its bytes are compared with the digest of what we
    wrote.

Applied to each cache:

* ``_listings``: a folder's names (and the ids and writes groups derived from
  them) against the folder's stat;
* ``_docs``: a parsed, validated document against its file's stat;
* ``_values``: a resolved value against every file it is built from: its own,
  a ``large/`` file, and each link of an append chain (``ValueEntry.deps``,
  one lstat per file on a hit);
* ``meta``: decoded metadata for filters, against its checkpoint file's stat
  (one lstat per checkpoint a filter scans);
* the saver's ``_lists`` (what the next ``put`` appends to): against the
  files of the chain it would append to; changed, the next value is written
  whole.

Nothing here is persisted: restarting the process loses nothing.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import math
import os
import re
import shutil
import stat as stat_mod
import threading
import time
from collections import OrderedDict
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ormsgpack

from . import codec as codec_mod
from .durable import ThreadLocks, dump_json, ensure_dir, fsync_dir, write_files
from .errors import FileFormatError, InvalidWriteError, MissingReferenceError, RepoCheckpointError
from .layout import (
    CHECKPOINTS,
    GITIGNORE_TEXT,
    LARGE,
    NAMESPACES,
    THREADS,
    VALUES,
    Layout,
    decode_segment,
    encode_segment,
    is_hashed_segment,
    is_temp_name,
    is_verbatim,
    version_segment,
)
from .validation import validate_read, validate_write

RACY_NS = 50_000_000  # a listing taken within 50 ms of the folder's mtime is re-checked
MAX_FILE_BYTES = 256 * 1024 * 1024
# What one file may expand to once parsed (docs/format.md): every array and object costs
# 60-250 bytes of memory for the 2-3 bytes it takes in a file, so size alone does not bound
# a read. The saver refuses to write past these limits, so it never writes what it refuses.
MAX_JSON_CONTAINERS = 1_000_000  # arrays and objects
MAX_JSON_VALUES = 5_000_000  # values and keys of every kind, counted by the , : [ { that introduce them
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[{,:')  # all but quotes and , : [ {
_STRUCTURED_STRING = re.compile(rb'"[^"]+"')
_CACHE_ENTRIES = 20_000
# the longest append chain a read follows (RepoSaver's snapshot_every is at most this, so every
# chain it writes reads back); a longer or deeper one is a FileFormatError, never a recursion
MAX_APPEND_DEPTH = 1024

StatKey = tuple[int, int, int, int]
# a file something was derived from: (path, its stat key then, the sha256 of its bytes when it
# was not yet settled, else None); a stat key of None means "cannot be checked: never reuse"
Dep = tuple[str, StatKey | None, bytes | None]


def _stat_key(st: os.stat_result) -> StatKey:
    """What changes when a file is edited: ctime too, which tools that keep mtime cannot set."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


@dataclass
class ValueEntry:
    """A resolved value: its full JSON tree (or raw serde bytes) and the types it names."""

    empty: bool
    tree: Any = None  # full JSON tree, for values the serde wrote as msgpack
    raw: tuple[str, bytes] | None = None  # (serde type, bytes) for everything else
    types: frozenset[tuple[str, ...]] = frozenset()
    depth: int = 0  # append-chain depth: 0 for a full value
    where: str = ""
    base: ValueEntry | None = None  # for appends: the entry this one extends
    items: list[Any] | None = None  # for appends: the appended items
    # msgpack of this entry's own items (no array header): every item of a whole list, only
    # the appended ones of a link, so a chain holds each item's bytes once, not once per link
    _body: bytes | None = None
    file: str = ""  # the file holding this entry's own tree (an append's items)
    root: str = ""  # the JSON pointer of that tree in the file
    # every file the entry was derived from: its own first, then a large file, then the base
    # chain's (see Dep); the entry is reused only while all of them are unchanged
    deps: tuple[Dep, ...] = ()

    @property
    def checkable(self) -> bool:
        """True when every file it comes from can be checked for a change (see ``refresh``)."""
        return all(key is not None for _, key, _ in self.deps)

    def locate(self, index: int) -> str | None:
        """"file at pointer" of the ``index``-th extension value of the tree (the order
        ``codec.ext_pointer`` counts): for a rebuilt list, in the link of the chain holding it."""
        if self.tree is None:
            return None
        pointer = codec_mod.ext_pointer(self.tree, index)
        if pointer is None:
            return None
        entry = self
        while entry.base is not None and isinstance(entry.base.tree, list):
            head, _, rest = pointer[1:].partition("/")
            if int(head) >= len(entry.base.tree):
                pointer = f"/{int(head) - len(entry.base.tree)}" + (f"/{rest}" if rest else "")
                break
            entry = entry.base
        return f"{entry.file} at {entry.root}{pointer}" if entry.file else None

    def typed(self) -> tuple[str, bytes]:
        """What the serde's loads_typed takes; msgpack is rebuilt lazily and incrementally."""
        if self.raw is not None:
            return self.raw
        if isinstance(self.tree, list):
            return ("msgpack", msgpack_array_header(len(self.tree)) + self.list_body())
        return ("msgpack", _tree_bytes(self.tree, self.where))

    def list_body(self) -> bytes:
        """The msgpack of a list's items without the array header (appends reuse the base's).

        Iterative, not recursive: a chain as long as ``MAX_APPEND_DEPTH`` links is walked
        down to its whole list and joined back up without growing the stack.
        """
        parts: list[bytes] = []
        node: ValueEntry | None = self
        while node is not None:
            link = node.base is not None and node.items is not None
            if node._body is None:
                own: list[Any] = node.items if link and node.items is not None else node.tree
                node._body = _items_body(own, node.where)
            parts.append(node._body)
            node = node.base if link else None
        parts.reverse()
        return b"".join(parts)


class ChainGuard:
    """One walk down an append chain: refuses a file it has been through (a cycle) and a
    chain of more than ``MAX_APPEND_DEPTH`` links, so no walk loops or runs away.

    Every walker (read, validate, prune's rescue, garbage collection) takes one per value:
    ``enter`` each file before reading it, ``follow`` each append body before its base.
    """

    def __init__(self) -> None:
        self._seen: set[Path] = set()
        self._last: tuple[Path, str] | None = None  # the link whose base_ref is followed next
        self.links = 0

    def enter(self, path: Path) -> None:
        """About to read ``path``: a file this walk read before closes a cycle."""
        if path in self._seen:
            referrer, pointer = self._last if self._last is not None else (path, "")
            raise FileFormatError(
                str(referrer), f"{pointer}/append/base_ref", f"append chain cycles back to {path}"
            )
        self._seen.add(path)

    def follow(self, path: Path, pointer: str, append: dict[str, Any]) -> None:
        """About to follow the base of the append body at ``pointer`` in ``path``."""
        self.links += 1
        depth = append.get("depth")
        if isinstance(depth, int) and depth > MAX_APPEND_DEPTH:
            raise FileFormatError(
                str(path),
                f"{pointer}/append/depth",
                f"depth {depth} is over {MAX_APPEND_DEPTH}, the longest append chain this release reads",
            )
        if self.links > MAX_APPEND_DEPTH:
            raise FileFormatError(
                str(path),
                f"{pointer}/append",
                f"append chain is longer than {MAX_APPEND_DEPTH} links, the longest this release reads",
            )
        self._last = (path, pointer)


@dataclass
class Listing:
    """Sorted names of one folder, plus what was derived from them."""

    names: list[str]
    key: StatKey
    trusted: bool
    derived: dict[str, Any] = field(default_factory=dict)


class LRU(OrderedDict[Any, Any]):
    """A bounded cache shared by threads: lookups are single dict operations, changes lock."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()

    def put(self, key: Any, value: Any) -> None:
        with self.lock:
            self[key] = value
            self.move_to_end(key)
            if len(self) > self.size:
                self.popitem(last=False)

    def drop_where(self, doomed: Any) -> None:
        with self.lock:
            for key in [k for k in self if doomed(k)]:
                del self[key]


class FileStore:
    """Documents under one root, with validation, caches and durable writes."""

    def __init__(self, root: Path, *, durable: bool = True, lock_timeout: float = 60.0) -> None:
        self.layout = Layout(root)
        self.root = root
        self.durable = durable
        self.locks = ThreadLocks(lock_timeout)
        self._docs: LRU = LRU(_CACHE_ENTRIES)
        self._values: LRU = LRU(_CACHE_ENTRIES)
        self._listings: dict[Path, Listing] = {}
        # decoded metadata, for filters: (file, stat key, metadata) per checkpoint id
        self.meta: dict[tuple[str, str], dict[str, tuple[str, StatKey, Any]]] = {}
        self._mutex = threading.RLock()
        self._safe_dirs: set[Path] = set()  # folders known to exist
        self._gitignore_done = False

    # -- locking ----------------------------------------------------------
    def thread_lock(self, thread_id: str, exclusive: bool = False) -> AbstractContextManager[None]:
        """The lock of one thread: shared by writers, ``exclusive`` for maintenance.

        The root's .gitignore comes first, so the lock file is never picked up by git.
        """
        self._ensure_gitignore()
        lock_path = self.layout.lock_path(thread_id)
        self._check_inside(lock_path.parent)
        return self.locks.hold(lock_path, thread_id, exclusive)

    # -- documents ----------------------------------------------------------
    def read_doc(self, path: Path, kind: str) -> dict[str, Any]:
        """A validated document; errors name the file and the JSON pointer.

        Raises FileNotFoundError when there is no such file.
        """
        st = os.lstat(path)
        key = _stat_key(st)
        hit = self._docs.get(path)
        if hit is not None and hit[0] == key:
            if hit[2]:
                return hit[1]  # type: ignore[no-any-return]
            checked_at = time.time_ns()
            if len(hit) > 3 and file_digest(path) == hit[3]:
                # written within RACY_NS (by us): the stat cannot show a change made in the same
                # clock tick, the bytes can; once settled, the stat alone is enough
                if checked_at - st.st_mtime_ns > RACY_NS:
                    self._docs.put(path, (key, hit[1], True))
                return hit[1]  # type: ignore[no-any-return]
        doc = self._load_json(path, st)
        validate_read(doc, kind, str(path))  # a document too deep to check is a FileFormatError too
        misplaced = place_problem(path, kind, doc)
        if misplaced is not None:
            raise FileFormatError(str(path), *misplaced)
        # a file changed within RACY_NS of being read may change again with the same stat
        self._docs.put(path, (key, doc, time.time_ns() - st.st_mtime_ns > RACY_NS))
        return doc  # type: ignore[no-any-return]

    def load_unchecked(self, path: Path) -> Any:
        """A file's JSON, parsed as strictly as ``read_doc`` but not validated (for migrations)."""
        return self._load_json(path, os.lstat(path))

    def _load_json(self, path: Path, st: os.stat_result) -> Any:
        if stat_mod.S_ISLNK(st.st_mode):
            raise FileFormatError(str(path), "/", "is a symlink; refusing to follow it")
        if not stat_mod.S_ISREG(st.st_mode):
            raise FileFormatError(str(path), "/", "is not a regular file")
        if not self.layout.contains(path.parent):
            raise FileFormatError(str(path), "/", "resolves outside the root")
        if st.st_size > MAX_FILE_BYTES:
            raise FileFormatError(str(path), "/", f"file is {st.st_size} bytes, over the limit")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read()
        if len(raw) > MAX_FILE_BYTES:  # grown since the stat
            raise FileFormatError(str(path), "/", f"file is over {MAX_FILE_BYTES} bytes, over the limit")
        too_big = json_bounds_problem(raw)
        if too_big is not None:  # before parsing: the count is cheap, the parse is what costs memory
            raise FileFormatError(str(path), "/", too_big)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileFormatError(str(path), "/", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        try:
            return json.loads(
                text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants, parse_float=_finite
            )
        except json.JSONDecodeError as exc:
            raise FileFormatError(
                str(path), "/", f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
            ) from None
        except RecursionError:
            raise FileFormatError(str(path), "/", "invalid JSON: nested too deeply to parse") from None
        except ValueError as exc:  # e.g. an integer literal over Python's 4300-digit limit
            raise FileFormatError(str(path), "/", f"invalid JSON: {exc}") from None
        except _DuplicateKey as exc:
            raise FileFormatError(str(path), "/", f"duplicate key {exc.args[0]!r}") from None
        except _BadConstant as exc:
            raise FileFormatError(str(path), "/", f"{exc.args[0]} is not valid JSON") from None

    # -- listings -----------------------------------------------------------
    def listing(self, folder: Path) -> Listing | None:
        """Names in ``folder`` (temp files left out), fresh against the folder's stat."""
        try:
            st = os.stat(folder)
        except FileNotFoundError:
            self._listings.pop(folder, None)
            return None
        key = _stat_key(st)
        cur = self._listings.get(folder)
        if cur is not None and cur.trusted and cur.key == key:
            return cur
        listed_at = time.time_ns()
        try:
            names = sorted(n for n in os.listdir(folder) if not is_temp_name(n))
        except FileNotFoundError:  # removed since the stat (delete in another process)
            self._listings.pop(folder, None)
            return None
        cur = Listing(names, key, listed_at - st.st_mtime_ns > RACY_NS)
        self._listings[folder] = cur
        return cur

    def drop_listing(self, folder: Path) -> None:
        """Forget a folder's listing, so the next call lists it again."""
        self._listings.pop(folder, None)

    def note_added(self, folder: Path, name: str, before: StatKey | None) -> None:
        """After our own write, under the thread lock: keep the listing current.

        ``before`` is the folder's stat just before our write. If it still matches
        the listing, ours is the only change and the name is added; otherwise (or
        when there is no listing yet) the folder is listed now. No other process
        can add files meanwhile (they take the same lock file), so that listing is
        complete and is trusted from here on.
        """
        with self._mutex:
            cur = self._listings.get(folder)
            try:
                st = os.stat(folder)
            except FileNotFoundError:
                self._listings.pop(folder, None)
                return
            if cur is None or not cur.trusted or before != cur.key:
                names = sorted(n for n in os.listdir(folder) if not is_temp_name(n))
                self._listings[folder] = Listing(names, _stat_key(st), True)
                return
            pos = bisect.bisect_left(cur.names, name)
            if pos == len(cur.names) or cur.names[pos] != name:
                cur.names.insert(pos, name)
                self._extend_derived(folder, cur, name)
            cur.key = _stat_key(st)

    def _extend_derived(self, folder: Path, cur: Listing, name: str) -> None:
        ids = cur.derived.get("ids")
        if ids is not None and name.endswith(".json"):
            cid = self._id_of(folder, name)
            pos = bisect.bisect_left(ids, cid)
            if pos == len(ids) or ids[pos] != cid:
                ids.insert(pos, cid)
        groups = cur.derived.get("groups")
        if groups is not None:
            bisect.insort(groups.setdefault(self.layout.writes_owner(name), []), name)

    def checkpoint_ids(self, thread_id: str, checkpoint_ns: str) -> list[str]:
        """Sorted checkpoint ids of one namespace (ids are time-ordered)."""
        folder = self.layout.checkpoints_dir(thread_id, checkpoint_ns)
        lst = self.listing(folder)
        if lst is None:
            return []
        ids = lst.derived.get("ids")
        if ids is None:
            stems = [n[:-5] for n in lst.names if n.endswith(".json")]
            if all(map(is_verbatim, stems)):  # the usual case (uuid6 ids): the stem is the id
                ids = sorted(stems)
            else:
                ids = sorted(self._id_of(folder, f"{stem}.json") for stem in stems)
            lst.derived["ids"] = ids
        return ids  # type: ignore[no-any-return]

    def _id_of(self, folder: Path, name: str) -> str:
        stem = name[:-5]
        if is_hashed_segment(stem):
            return str(self.read_doc(folder / name, "checkpoint")["checkpoint_id"])
        try:
            return decode_segment(stem)
        except ValueError as exc:
            raise FileFormatError(str(folder / name), "/", f"bad file name: {exc}") from None

    def header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """The checkpoint document, names checked against its place. FileNotFoundError if absent."""
        path = self.layout.checkpoint_path(thread_id, checkpoint_ns, checkpoint_id)
        doc = self.read_doc(path, "checkpoint")
        if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
            thread_id,
            checkpoint_ns,
            checkpoint_id,
        ):
            raise FileFormatError(
                str(path),
                "/checkpoint_id",
                "thread_id, checkpoint_ns or checkpoint_id does not match the file's place",
            )
        return doc

    def cached_header(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
        """``header``: kept for the scans that call it. A header is never reused without the
        one lstat that shows a hand edit (the cache rule in the module docstring)."""
        return self.header(thread_id, checkpoint_ns, checkpoint_id)

    def writes_docs(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[tuple[Path, dict[str, Any]]]:
        """Writes files of one checkpoint, oldest first."""
        folder = self.layout.writes_dir(thread_id, checkpoint_ns)
        lst = self.listing(folder)
        if lst is None:
            return []
        groups = lst.derived.get("groups")
        if groups is None:
            groups = {}
            for name in lst.names:
                groups.setdefault(self.layout.writes_owner(name), []).append(name)
            lst.derived["groups"] = groups
        out = []
        for name in groups.get(encode_segment(checkpoint_id), ()):
            path = folder / name
            doc = self.read_doc(path, "writes")
            if (doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"]) != (
                thread_id,
                checkpoint_ns,
                checkpoint_id,
            ):
                raise FileFormatError(str(path), "/checkpoint_id", "names do not match the file's place")
            out.append((path, doc))
        return out

    def namespaces(self, thread_id: str) -> list[str]:
        return [ns for ns, _ in self.namespace_folders(self.layout.thread_dir(thread_id))]

    def namespace_folders(self, tdir: Path) -> list[tuple[str, Path]]:
        out: list[tuple[str, Path]] = []
        if (tdir / CHECKPOINTS).is_dir():
            out.append(("", tdir))
        nsroot = tdir / NAMESPACES
        if nsroot.is_dir():
            for seg in sorted(os.listdir(nsroot)):
                if not is_temp_name(seg):
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
                return str(self.read_doc(folder / CHECKPOINTS / name, "checkpoint")["checkpoint_ns"])
        raise FileFormatError(str(folder), "/", "hashed namespace folder holds no checkpoint")

    def thread_ids(self) -> list[str]:
        tdir = self.layout.threads_dir
        if not tdir.is_dir():
            return []
        out = []
        for seg in sorted(os.listdir(tdir)):
            if is_temp_name(seg):
                continue
            if not is_hashed_segment(seg):
                out.append(self._segment_name(tdir / seg))
                continue
            for _, folder in self.namespace_folders(tdir / seg):
                names = sorted(n for n in os.listdir(folder / CHECKPOINTS) if not is_temp_name(n))
                if names:
                    out.append(str(self.read_doc(folder / CHECKPOINTS / names[0], "checkpoint")["thread_id"]))
                    break
        return out

    # -- values ---------------------------------------------------------------
    def value_entry(self, ns_dir: Path, channel: str, version: Any, ref: str) -> ValueEntry:
        """The value of ``channel`` at ``version``: inline in the checkpoint ``ref`` names,
        or in its value file (where prune moves values whose checkpoint it removes).

        An append chain is resolved without recursion: walk down to a whole value (or a
        link resolved before, still unchanged on disk), then build the links back up from
        it. The walk refuses a cycle and a chain over ``MAX_APPEND_DEPTH`` links with a
        FileFormatError naming the file, so a long chain reads in a fresh process and a
        hostile one cannot loop. Each entry records every file it was built from (``deps``)
        and is reused only while all of them are unchanged (the cache rule above).
        """
        guard = ChainGuard()
        links: list[tuple[Path, str, dict[str, Any], StatKey, Dep]] = []
        while True:
            path, st, ref = self._value_file(ns_dir, channel, version, ref)
            guard.enter(path)
            hit = self._values.get((path, channel))
            if hit is not None:
                deps = refresh(hit[1].deps, st)
                if deps is not None:
                    hit[1].deps = deps
                    entry: ValueEntry = hit[1]
                    break
            found = self._value_body(ns_dir, channel, version, ref, path)
            if found is None:  # removed since the lstat (prune): its values were rescued
                ref = self.layout.value_rel(channel, version)
                continue
            body, pointer, doc = found
            own = self.dep(path, doc)
            if "append" not in body:
                entry = self._entry_from_body(ns_dir, channel, body, path, pointer)
                self._keep_value(path, channel, _stat_key(st), entry, own)
                break
            guard.follow(path, pointer, body["append"])
            links.append((path, pointer, body, _stat_key(st), own))
            version, ref = body["append"]["base"], body["append"]["base_ref"]
        for path, pointer, body, stat_key, own in reversed(links):
            entry = self._entry_from_body(ns_dir, channel, body, path, pointer, entry)
            self._keep_value(path, channel, stat_key, entry, own)
        return entry

    def _keep_value(self, path: Path, channel: str, key: StatKey, entry: ValueEntry, own: Dep) -> None:
        entry.deps = (own, *entry.deps)
        if entry.checkable:
            self._values.put((path, channel), (key, entry, True))

    def _value_file(
        self, ns_dir: Path, channel: str, version: Any, ref: str
    ) -> tuple[Path, os.stat_result, str]:
        """Where one value lives (path, its stat, the ref that found it): the checkpoint
        ``ref`` names, or the value file that took its place when prune removed it."""
        path = ns_dir / ref
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if not ref.startswith(CHECKPOINTS + "/"):
                raise MissingReferenceError(
                    str(path), "/", f"value of channel {channel!r} is missing"
                ) from None
            missing = path
            ref = self.layout.value_rel(channel, version)
            path = ns_dir / ref
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                raise MissingReferenceError(
                    str(missing),
                    "/",
                    f"value of channel {channel!r} at {version}: this checkpoint is missing and so is {path}",
                ) from None
        return path, st, ref

    def _value_body(
        self, ns_dir: Path, channel: str, version: Any, ref: str, path: Path
    ) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
        """The value body in ``path``, its JSON pointer there and the document holding it;
        None when the checkpoint was removed since it was found (prune rescued its values)."""
        if ref.startswith(CHECKPOINTS + "/"):
            try:
                doc = self.read_doc(path, "checkpoint")
            except FileNotFoundError:
                return None
            body = doc.get("new_values", {}).get(channel)
            if body is None or doc["checkpoint"]["channel_versions"].get(channel) != version:
                raise MissingReferenceError(
                    str(path), f"/new_values/{channel}", f"holds no value of channel {channel!r} at {version}"
                )
            return body, f"/new_values/{channel}", doc
        doc = self.read_doc(path, "value")
        if (
            doc["channel"] != channel
            or doc["version"] != version
            or ns_dir / self.layout.value_rel(channel, version) != path
        ):
            raise FileFormatError(str(path), "/version", f"expected channel {channel!r} at {version}")
        return doc, "", doc

    def dep(self, path: Path, doc: Any) -> Dep:
        """How to tell later whether ``path`` still holds ``doc`` (its cached parse): the stat key
        it was read with, plus its bytes' digest when it was not yet settled (our own writes)."""
        cached = self._docs.get(path)  # may have been dropped or replaced by another thread meanwhile
        if cached is None or cached[1] is not doc:
            return (str(path), None, None)
        if cached[2]:
            return (str(path), cached[0], None)
        if len(cached) > 3:
            return (str(path), cached[0], cached[3])
        return (str(path), None, None)  # racy, read from someone else's write: re-read next time

    def _entry_from_body(
        self,
        ns_dir: Path,
        channel: str,
        body: dict[str, Any],
        path: Path,
        pointer: str,
        base: ValueEntry | None = None,
    ) -> ValueEntry:
        """One value from its body; an append body extends ``base``, its resolved base value."""
        where = f"{path}{' at ' + pointer if pointer else ''}"
        if body.get("empty"):
            return ValueEntry(empty=True, where=where, file=str(path), root=pointer)
        if "append" in body:
            return self._append_entry(channel, body["append"], path, pointer, where, base)
        node, holder = self.resolve_node(body["value"], path, pointer)
        entry = self.entry_from_node(node, where if holder == path else f"{holder}, referenced from {where}")
        entry.file = str(holder)
        entry.root = f"{pointer}/value/json" if holder == path else "/value/json"
        if holder != path:  # a large value: its file is one more this entry comes from
            cached = self._docs.get(holder)
            ldoc = cached[1] if cached is not None and cached[1]["value"] is node else None
            entry.deps = (self.dep(holder, ldoc),)
        return entry

    def _append_entry(
        self,
        channel: str,
        app: dict[str, Any],
        path: Path,
        pointer: str,
        where: str,
        base: ValueEntry | None,
    ) -> ValueEntry:
        """A list stored as the items appended onto ``base``; a base that no longer holds what
        the append was made on names the file whose list it is (edited, or the wrong link)."""
        referrer = f"{path} at {pointer}/append"
        if base is None:
            raise FileFormatError(str(path), f"{pointer}/append/base", "base was not resolved")
        if base.empty or not isinstance(base.tree, list):
            raise FileFormatError(
                base.file or str(path),
                base.root or f"{pointer}/append/base",
                f"is not a list value, but {referrer} appends to it",
            )
        if len(base.tree) != app["base_length"]:
            raise FileFormatError(
                base.file or str(path),
                base.root or f"{pointer}/append/base_length",
                f"the list of channel {channel!r} at {app['base']} holds {len(base.tree)} items "
                f"(rebuilt from its append chain), but {referrer}/base_length says "
                f"{app['base_length']}: an item removed or added by hand? Put it back "
                "(docs/format.md, Editing files by hand)",
            )
        if base.depth + 1 > MAX_APPEND_DEPTH:
            raise FileFormatError(
                str(path),
                f"{pointer}/append",
                f"append chain is longer than {MAX_APPEND_DEPTH} links, the longest this release reads",
            )
        items = app["items"]
        item_types = codec_mod.named_types(items)
        types = codec_mod.TypeSet(base.types | frozenset(item_types))
        types.origins = dict.fromkeys(base.types, base.where)
        types.origins.update(getattr(base.types, "origins", {}))
        types.origins.update((t, where) for t in item_types if t not in types.origins)
        entry = ValueEntry(False, base.tree + items, None, types, base.depth + 1, where, base, items)
        entry.file, entry.root = str(path), f"{pointer}/append/items"
        entry.deps = base.deps
        return entry

    def resolve_node(
        self, node: dict[str, Any], where: Path, pointer: str = ""
    ) -> tuple[dict[str, Any], Path]:
        """Follow a large-value reference: the node it stands for and the file holding it."""
        if "large" not in node:
            return node, where
        digest = node["large"]
        rel = where.relative_to(self.layout.threads_dir)
        lpath = self.layout.threads_dir / rel.parts[0] / LARGE / f"{digest}.json"
        try:
            ldoc = self.read_doc(lpath, "large_value")
        except FileNotFoundError:
            raise MissingReferenceError(
                str(where), f"{pointer}/value/large", f"large value {lpath} is missing"
            ) from None
        if ldoc["sha256"] != digest or digest_node(ldoc["value"]) != digest:
            raise FileFormatError(str(lpath), "/sha256", "content does not match its sha256 name")
        return ldoc["value"], lpath

    @staticmethod
    def entry_from_node(node: dict[str, Any], where: str) -> ValueEntry:
        if "json" in node:
            tree = node["json"]
            return ValueEntry(False, tree, None, frozenset(codec_mod.named_types(tree)), 0, where)
        raw = (node["serde"], base64.b64decode(node["base64"], validate=True))
        types: frozenset[tuple[str, ...]] = frozenset()
        if raw[0] == "msgpack":  # never written so (msgpack is stored as json), but the schema allows it:
            try:  # check the types it names against the allowlist like any other tree
                types = frozenset(codec_mod.named_types(codec_mod.msgpack_to_tree(raw[1])))
            except (ValueError, TypeError, RecursionError):
                pass  # not msgpack: the serde fails on it the same way, and that error is reported
        return ValueEntry(False, None, raw, types, 0, where)

    # -- writing ---------------------------------------------------------------
    def prepare(self, kind: str, doc: dict[str, Any], path: Path) -> tuple[Path, bytes]:
        """Validate, then serialise; nothing is written when the document is invalid, is not
        where its names say, or is bigger than a read accepts (it could never be read back)."""
        validate_write(doc, kind, str(path))
        misplaced = place_problem(path, kind, doc)
        if misplaced is not None:
            raise InvalidWriteError(kind, str(path), *misplaced)
        data = dump_json(doc)
        too_big = json_bounds_problem(data)
        if too_big is None and len(data) > MAX_FILE_BYTES:
            too_big = f"would be {len(data)} bytes; a read accepts at most {MAX_FILE_BYTES}"
        if too_big is not None:
            raise InvalidWriteError(kind, str(path), "/", too_big)
        return path, data

    def write(self, batches: list[list[tuple[Path, bytes]]]) -> None:
        """Write batches in order; each is durable before the next starts."""
        self._ensure_gitignore()
        for batch in batches:
            if not batch:
                continue
            self._prepare_dirs(batch)
            before = {folder: self._folder_key(folder) for folder in {p.parent for p, _ in batch}}
            try:
                write_files(batch, self.durable)
            except FileNotFoundError:
                # a folder we had made was removed meanwhile (another process, git): make it again
                self._safe_dirs.clear()
                self._prepare_dirs(batch)
                write_files(batch, self.durable)
            for path, _ in batch:
                self.note_added(path.parent, path.name, before[path.parent])
                before[path.parent] = self._folder_key(path.parent)

    @staticmethod
    def _folder_key(folder: Path) -> StatKey | None:
        try:
            return _stat_key(os.stat(folder))
        except FileNotFoundError:
            return None

    def _prepare_dirs(self, batch: list[tuple[Path, bytes]]) -> None:
        """Make the folders, never through a symlink that leads out of the root.

        Checked on every write, before anything is created: a folder can be
        swapped for a symlink (by a checkout) while this saver lives.
        """
        for folder in {p.parent for p, _ in batch}:
            self._check_inside(folder)
            if folder not in self._safe_dirs:
                ensure_dir(folder, self.root, self.durable)
                self._check_inside(folder)
                self._safe_dirs.add(folder)

    def _check_inside(self, folder: Path) -> None:
        if not self.layout.contains(folder):
            raise RepoCheckpointError(f"refusing to write through {folder}: it leads outside {self.root}")

    def _ensure_gitignore(self) -> None:
        if self._gitignore_done:
            return
        path = self.root / ".gitignore"
        if not path.exists():
            if not self.root.is_dir():
                self.root.mkdir(parents=True, exist_ok=True)
                if self.durable:
                    fsync_dir(self.root.parent)
            write_files([(path, GITIGNORE_TEXT.encode())], self.durable)
        self._gitignore_done = True

    def remember(self, path: Path, doc: dict[str, Any], data: bytes | None = None) -> None:
        """Seed the document cache with what we just wrote (``data``: its bytes). It was written
        within RACY_NS, so the digest of its bytes goes with it: a later read compares bytes
        (cheap) instead of parsing, and still sees an edit made in the same clock tick."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        settled = time.time_ns() - st.st_mtime_ns > RACY_NS
        digest = hashlib.sha256(dump_json(doc) if data is None else data).digest()
        self._docs.put(path, (_stat_key(st), doc, settled, digest))

    def forget_thread(self, thread_id: str) -> None:
        self._safe_dirs.clear()
        self._gitignore_done = False
        tdir = self.layout.thread_dir(thread_id)
        # list(...) copies a dict's keys in one step under the GIL, so other threads
        # filling the caches meanwhile cannot break the iteration
        for key in [k for k in list(self.meta) if k[0] == thread_id]:
            self.meta.pop(key, None)
        for folder in [f for f in list(self._listings) if _is_under(f, tdir)]:
            self._listings.pop(folder, None)
        self._docs.drop_where(lambda p: _is_under(p, tdir))
        self._values.drop_where(lambda k: _is_under(k[0], tdir))

    def remove_tree(self, folder: Path) -> None:
        """Remove a folder so readers never see it half-gone: rename it away, then delete.

        Refused, with nothing removed, when a symlink lies on the way from the root or
        anywhere inside the folder (the saver never makes one; see ``check_tree``).
        """
        if not os.path.lexists(folder):
            return
        self.check_tree(folder, f"remove {folder}")
        grave = folder.with_name(f".{folder.name}.deleted.{os.getpid()}.{time.time_ns()}.tmp")
        os.rename(folder, grave)
        if self.durable:
            fsync_dir(folder.parent)
        shutil.rmtree(grave)

    def remove_files(self, paths: list[Path]) -> None:
        """Unlink files of the root; every path is checked before the first one goes, so a
        symlink on the way (or as the file) refuses the whole call and removes nothing."""
        for path in paths:
            self.refuse_links(path, f"remove {path}")
        folders: set[Path] = set()
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            folders.add(path.parent)
        if self.durable:
            for folder in folders:
                fsync_dir(folder)

    def files_in(self, folder: Path) -> list[Path]:
        """The files of a layout folder, the listing every removal starts from: a symlinked
        folder on the way or a symlink in it is refused, never listed (so never removed)."""
        self.refuse_links(folder, f"list {folder}")
        try:
            with os.scandir(folder) as it:
                entries = sorted((e for e in it if not is_temp_name(e.name)), key=lambda e: e.name)
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.is_symlink():
                raise _link_error(f"list {folder}", Path(entry.path))
        return [folder / e.name for e in entries]

    def value_files(self, ns_dir: Path) -> list[Path]:
        return self.files_in(ns_dir / VALUES)

    def refuse_links(self, path: Path, doing: str) -> None:
        """Raise unless ``path`` lies under the root with no symlink on the way (itself included).

        The saver never makes a symlink, so one in the root was planted or committed and
        may lead anywhere: removing or listing through it could reach files outside the root.
        """
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            raise RepoCheckpointError(
                f"refusing to {doing}: {path} is outside the root {self.root}"
            ) from None
        current = self.root
        for part in parts:
            if part in ("..", "."):
                raise RepoCheckpointError(
                    f"refusing to {doing}: {path} is not a plain path under {self.root}"
                )
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                return
            if stat_mod.S_ISLNK(mode):
                raise _link_error(doing, current)

    def check_tree(self, folder: Path, doing: str) -> None:
        """``refuse_links`` for a folder and everything in it: run before a removal starts, so a
        symlink anywhere in a thread refuses the whole operation before any file is removed."""
        self.refuse_links(folder, doing)
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


def _link_error(doing: str, link: Path) -> RepoCheckpointError:
    return RepoCheckpointError(
        f"refusing to {doing}: {link} is a symlink, which may lead outside the root; RepoSaver never makes "
        "one and never follows one "
        f"(if it should not be there, remove the link itself: rm {link})"
    )


class _DuplicateKey(Exception):
    pass


class _BadConstant(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constants(name: str) -> Any:
    raise _BadConstant(name)


def _finite(text: str) -> float:
    """A JSON number; one too large for a float (1e999) would silently become inf."""
    value = float(text)
    if math.isinf(value):
        raise _BadConstant(f"{text} (out of range, would read as {value})")
    return value


def json_bounds_problem(raw: bytes) -> str | None:
    """Why a file's JSON would expand past what one file may hold, or None.

    Counted on the bytes: every array and object starts with ``[`` or ``{``, and every
    value or key after the first follows one of ``[ { , :``. Counting those characters is
    an upper bound that costs a few milliseconds per 100 MB; only when it is over a limit
    are the characters inside strings (which do not count) taken off for the exact count.
    """
    containers = raw.count(b"[") + raw.count(b"{")
    values = 1 + containers + raw.count(b",") + raw.count(b":")
    if containers <= MAX_JSON_CONTAINERS and values <= MAX_JSON_VALUES:
        return None
    # the exact count, in bounded memory: drop escaped backslashes and quotes (so every quote
    # left opens or closes a string), keep only quotes and , : [ {, then drop the strings that
    # hold none of those; the strings left, each holding one, are at most MAX_JSON_VALUES
    bare = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    strings = bare.count(b'"') // 2
    if strings > MAX_JSON_VALUES:
        return _over_values(strings)
    bare = bare.replace(b'""', b"")
    for match in _STRUCTURED_STRING.finditer(bare):
        start, end = match.span()
        inner = bare.count(b"[", start, end) + bare.count(b"{", start, end)
        containers -= inner
        values -= inner + bare.count(b",", start, end) + bare.count(b":", start, end)
    if containers > MAX_JSON_CONTAINERS:
        return (
            f"holds {containers:,} JSON arrays and objects; one file may hold at most "
            f"{MAX_JSON_CONTAINERS:,} (refused before parsing, to bound memory)"
        )
    if values > MAX_JSON_VALUES:
        return _over_values(values)
    return None


def _over_values(count: int) -> str:
    return (
        f"holds at least {count:,} JSON values and keys; one file may hold at most "
        f"{MAX_JSON_VALUES:,} (refused before parsing, to bound memory)"
    )


def place_problem(path: Path, kind: str, doc: dict[str, Any]) -> tuple[str, str] | None:
    """(pointer, message) when a valid document's names disagree with where it lies.

    Compared on the path's own segments (never resolved), so it holds however the root is
    spelled. A writes file's checkpoint id is matched to its name where writes are looked
    up by that name (``writes_docs``, validate).
    """
    if kind == "value":
        want = f"{VALUES}/{encode_segment(doc['channel'])}@{version_segment(doc['version'])}.json"
        if f"{path.parent.name}/{path.name}" != want:
            return "/version", f"channel {doc['channel']!r} at {doc['version']!r} belongs in {want}"
        return None
    if kind == "large_value":
        if path.parent.name != LARGE or path.name != f"{doc['sha256']}.json":
            return "/sha256", "sha256 does not match the file name"
        return None
    if kind == "checkpoint" and path.name != encode_segment(doc["checkpoint_id"]) + ".json":
        return "/checkpoint_id", f"checkpoint_id {doc['checkpoint_id']!r} does not match the file name"
    ns, ns_dir = doc["checkpoint_ns"], path.parent.parent
    if ns:
        tdir = ns_dir.parent.parent
        ns_ok = ns_dir.name == encode_segment(ns) and ns_dir.parent.name == NAMESPACES
    else:
        tdir, ns_ok = ns_dir, True
    if not ns_ok or tdir.parent.name != THREADS:
        return "/checkpoint_ns", f"checkpoint_ns {ns!r} does not match its folder"
    if tdir.name != encode_segment(doc["thread_id"]):
        return "/thread_id", f"thread_id {doc['thread_id']!r} does not match its folder"
    return None


def _tree_bytes(tree: Any, where: str) -> bytes:
    try:
        return codec_mod.tree_to_msgpack(tree)
    except (ValueError, TypeError, KeyError, ormsgpack.MsgpackEncodeError) as exc:
        raise FileFormatError(where, "/", f"value cannot be rebuilt: {exc}") from None


def _items_body(items: list[Any], where: str) -> bytes:
    packed = _tree_bytes(items, where)
    split = msgpack_array_split(packed)
    assert split is not None
    return split[1]


def msgpack_array_split(data: bytes) -> tuple[int, bytes] | None:
    """Item count and items of a msgpack array (None when ``data`` is not one)."""
    if not data:
        return None
    t = data[0]
    if 0x90 <= t <= 0x9F:
        return t & 0x0F, data[1:]
    if t == 0xDC:
        return int.from_bytes(data[1:3], "big"), data[3:]
    if t == 0xDD:
        return int.from_bytes(data[1:5], "big"), data[5:]
    return None


def msgpack_array_header(count: int) -> bytes:
    if count < 16:
        return bytes([0x90 | count])
    if count < 0x10000:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


def digest_node(node: Any) -> str:
    return hashlib.sha256(dump_json(node)).hexdigest()


def stat_key_of(path: str | Path) -> StatKey | None:
    """The stat key of a file, None when it is gone."""
    try:
        return _stat_key(os.lstat(path))
    except FileNotFoundError:
        return None


def file_digest(path: str | Path) -> bytes | None:
    """sha256 of a file's bytes (never through a symlink), None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return hashlib.sha256(fh.read()).digest()


def refresh(deps: tuple[Dep, ...], first: os.stat_result | None = None) -> tuple[Dep, ...] | None:
    """``deps`` when every file still is what something was derived from (the same stat key
    and, for a file that was not settled then, the same bytes), else None. A digest is dropped
    once its file has settled: from then on a change shows in the stat, so later checks cost
    one lstat per file. ``first``: the first file's stat, when the caller has just taken it."""
    out: list[Dep] | None = None
    for i, (path, key, digest) in enumerate(deps):
        if key is None:
            return None
        if i == 0 and first is not None:
            st = first
        else:
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                return None
        if _stat_key(st) != key:
            return None
        if digest is not None:
            checked_at = time.time_ns()
            if file_digest(path) != digest:
                return None
            if checked_at - st.st_mtime_ns > RACY_NS:
                out = list(deps) if out is None else out
                out[i] = (path, key, None)
    return deps if out is None else tuple(out)


def _is_under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True
