"""The derived index under ``.cache/index/``: what a fresh process would otherwise list or read.

A new process (a CLI call, a serverless handler, a notebook restart) starts with empty
in-process caches (caches.py), so its first ``get_tuple`` lists a folder of thousands of
names and its first filtered ``list`` reads every checkpoint header. The index keeps the
results of that work on disk, for the next process, under the same rule as the in-process
caches, so the files always win:

* ``<folder>.list``: a folder's names. Used only while the folder's stat key (mtime, ctime,
  size, inode) is the one recorded, and written only for a listing that was settled (taken
  more than ``RACY_NS`` after the folder last changed). A file added or removed by
  ``git pull``, another process or a hand edit changes the folder's key, so the folder is
  listed again.
* ``<folder>.items``: the store items of a namespace folder (RepoStore), for a fresh process's
  search: each entry used only while its item file's stat key is the one recorded, and
  validated against the item schema again before it is used.
* ``<folder>.meta``: the metadata of a namespace's checkpoints, for filters. Each entry is
  used only while its checkpoint file's stat key is the one recorded (one lstat, as in
  process), so a hand edit is seen on the next call. Only plain JSON metadata (no ``$``
  keys: nothing for the serde to construct) is kept, so an entry is data, never a type.

Files are written atomically (temp file, rename) but not fsynced: losing or damaging one
costs a re-read, never state. A pull request can commit any of them, so each is bounded
before it is decoded: no bigger than a file of the root (``MAX_FILE_BYTES``), a listing's
names counted and its folder's stat key compared before the names are split, a metadata
file's arrays and values counted on its bytes before it is parsed (``json_bounds_problem``).
Anything unexpected in one (unknown version, another folder's name, a bad checksum, a
wrong shape) makes it ignored and rewritten. ``.cache/`` is in the root's ``.gitignore``;
fsck reports a damaged or orphaned index file and ``fsck --repair``
removes the index so the next reads rebuild it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import orjson

from .caches import StatKey, stat_key
from .jsonread import MAX_FILE_BYTES, MAX_JSON_VALUES, json_bounds_problem, read_bounded
from .layout import CHECKPOINTS, NAMESPACES, THREADS, Layout, is_temp_name
from .lineage import Choice, Lineage, Node
from .metaview import MetaView, stale

_log = logging.getLogger(__name__)

INDEX_VERSION = 1
INDEX = "index"
MIN_NAMES = 64  # smaller folders list quickly: not worth a file
LIST_SUFFIX = ".list"
META_SUFFIX = ".meta"

# a JSON key (a string followed by a colon) that starts with "$", written plainly or escaped
_DOLLAR_KEY = re.compile(rb'"(?:\$|\\u0024)(?:[^"\\]|\\.)*"\s*:', re.IGNORECASE)


def _names_a_type(data: bytes) -> bool:
    """Whether ``data`` holds a JSON key starting with ``$``. Such a key needs a ``$`` or an
    escape's backslash; bytes with neither (nearly every index file) skip the pattern, which
    took a tenth of a fresh list across 3,000 threads."""
    return (b"$" in data or b"\\" in data) and _DOLLAR_KEY.search(data) is not None


MetaEntry = tuple[str, StatKey, Any, Any]
"""A checkpoint's metadata in process: (file, stat key, decoded metadata, plain tree or None)."""


def index_dir(layout: Layout) -> Path:
    return layout.cache_dir / INDEX


def index_path(layout: Layout, folder: Path, suffix: str) -> Path | None:
    """Where ``folder``'s index lives (its path below the root, mirrored), None outside the root."""
    try:
        rel = folder.relative_to(layout.root)
    except ValueError:
        return None
    return index_dir(layout) / rel.parent / (rel.name + suffix)


def _header(kind: str, rel: str, **fields: Any) -> dict[str, Any]:
    return {"index_version": INDEX_VERSION, "kind": kind, "folder": rel, **fields}


def _rel(layout: Layout, folder: Path) -> str:
    return folder.relative_to(layout.root).as_posix()


def _inside(layout: Layout, folder: Path) -> bool:
    """``layout.contains``, with a file where a folder of the path should be as False."""
    try:
        return layout.contains(folder)
    except OSError:
        return False


def read_index_file(layout: Layout, path: Path) -> bytes | None:
    """An index file's bytes, or None when it is absent or not a plain file inside the root."""
    if not _inside(layout, path.parent):
        return None
    try:  # never through a symlink, never blocking on a FIFO
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:  # a folder, a device, too big
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as fh:
            data = read_bounded(fh, st.st_size)
        return data if len(data) <= MAX_FILE_BYTES else None  # grown since the stat
    except OSError as exc:  # an unreadable index is no index: the files are read instead
        _log.info("derived index not read from %s: %s", path, exc)
        return None


def write_index_file(layout: Layout, path: Path, data: bytes) -> StatKey | None:
    """Atomically, without fsync (a cache). A root that cannot take it (read-only, full, a
    symlink in the way) is logged and left alone: the index only saves time, and a read
    must not fail for want of it. The file's stat key once written (None: not written)."""
    folder = path.parent
    if not _inside(layout, folder):
        _log.info("derived index not written: %s leads outside the root", folder)
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        _log.info("derived index not written to %s: %s", path, exc)
        return None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return stat_key(os.lstat(path))
    except BaseException as exc:
        with _quiet():
            os.unlink(tmp)
        if not isinstance(exc, OSError):
            raise
        _log.info("derived index not written to %s: %s", path, exc)  # full, or a folder in the way
        return None


def remove_index_file(layout: Layout, path: Path | None) -> None:
    """Remove an index file that holds a thread's messages (the thread is gone), never
    through a symlink on the way; a link there goes itself, its target stays."""
    if path is None or layout.off_the_way(path.parent) is not None:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        _log.info("derived index not removed from %s: %s", path, exc)


def append_index_file(layout: Layout, path: Path, data: bytes, key: StatKey) -> StatKey | None:
    """``data`` appended to an index file while it still has the stat key ``key`` (the one
    this process left it with: a plain file, inside the root) and stays within
    ``MAX_FILE_BYTES``; its new stat key, or None when nothing was appended (the caller
    writes it whole). Not atomic: a reader that sees a torn append ignores the file."""
    if not _inside(layout, path.parent):
        return None
    try:
        if stat_key(os.lstat(path)) != key:
            return None
        fd = os.open(
            path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat_key(st) != key or not stat.S_ISREG(st.st_mode) or st.st_size + len(data) > MAX_FILE_BYTES:
            return None
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return stat_key(os.fstat(fd))
    except OSError as exc:
        _log.info("derived index not appended to %s: %s", path, exc)
        return None
    finally:
        os.close(fd)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


# -- listings ---------------------------------------------------------------------------
def encode_listing(layout: Layout, folder: Path, key: StatKey, names: list[str]) -> bytes:
    body = "\n".join(names).encode("utf-8")
    head = _header("listing", _rel(layout, folder), key=list(key), count=len(names), crc32=zlib.crc32(body))
    return json.dumps(head, separators=(",", ":")).encode() + b"\n" + body


_MAX_HEAD = 4096  # a listing's first line: index version, kind, folder, key, count, crc


def _first_line(data: bytes, kind: str, layout: Layout, folder: Path) -> tuple[dict[str, Any], bytes] | None:
    """An index file's head (its first line, parsed alone) when it is one of ``kind`` for
    ``folder``, and its body when the head's ``crc32`` matches it; None otherwise."""
    head_end = data.find(b"\n", 0, _MAX_HEAD)
    if head_end < 0:
        return None
    try:
        head = json.loads(data[:head_end])
    except ValueError:
        return None
    if not _is_head(head, kind, layout, folder):
        return None
    body = data[head_end + 1 :]
    return (head, body) if head.get("crc32") == zlib.crc32(body) else None


def _listing_head(layout: Layout, folder: Path, data: bytes) -> tuple[dict[str, Any], bytes] | None:
    """A listing file's head (its first line) and its body, or None: the head is read
    alone, so the folder's stat key is compared before any name is decoded."""
    found = _first_line(data, "listing", layout, folder)
    if found is None:
        return None
    head = found[0]
    if (
        not _is_key(head.get("key"))
        or type(head.get("count")) is not int
        or not 0 <= head["count"] <= MAX_JSON_VALUES
    ):
        return None
    return found


def decode_listing(layout: Layout, folder: Path, data: bytes) -> tuple[StatKey, list[str]] | None:
    """(folder key, names) of a listing file, or None when anything in it is off."""
    found = _listing_head(layout, folder, data)
    if found is None:
        return None
    head, body = found
    if (body.count(b"\n") + 1 if body else 0) != head["count"]:  # counted before anything is split
        return None
    try:
        names = body.decode("utf-8").split("\n") if body else []
    except UnicodeDecodeError:
        return None
    if len(names) != head.get("count") or b"/" in body or b"\x00" in body:
        return None
    # no hidden or empty name (the listing leaves them out), in order (readers bisect it)
    if body.startswith(b".") or b"\n." in body or b"\n\n" in body or body.endswith(b"\n"):
        return None
    if names != sorted(names):
        return None
    return tuple(head["key"]), names  # type: ignore[return-value]


def _is_head(head: Any, kind: str, layout: Layout, folder: Path) -> bool:
    """An index file's head of this index version, kind and folder (anything else is ignored)."""
    return (
        isinstance(head, dict)
        and head.get("index_version") == INDEX_VERSION
        and head.get("kind") == kind
        and head.get("folder") == _rel(layout, folder)
    )


def _is_key(key: Any) -> bool:
    # four integers (a stat key); spelled out: a roster decodes two of them per thread
    return (
        type(key) is list
        and len(key) == 4
        and type(key[0]) is int
        and type(key[1]) is int
        and type(key[2]) is int
        and type(key[3]) is int
    )


def load_listing(layout: Layout, folder: Path, key: StatKey) -> list[str] | None:
    """The names recorded for ``folder`` when its stat key is still ``key``, else None."""
    path = index_path(layout, folder, LIST_SUFFIX)
    data = read_index_file(layout, path) if path is not None else None
    found = _listing_head(layout, folder, data) if data is not None else None
    if found is None or tuple(found[0]["key"]) != key:  # the key first: decode only what is used
        return None
    got = decode_listing(layout, folder, data) if data is not None else None
    if got is None or got[0] != key:
        return None
    return got[1]


def save_listing(layout: Layout, folder: Path, key: StatKey, names: list[str]) -> None:
    """Record a settled listing of a folder big enough to be worth it."""
    path = index_path(layout, folder, LIST_SUFFIX)
    if path is not None and len(names) >= MIN_NAMES:
        write_index_file(layout, path, encode_listing(layout, folder, key, names))


# -- metadata ---------------------------------------------------------------------------
def is_plain(tree: Any) -> bool:
    """No ``$`` key anywhere: the tree is its own decoded value (codec.from_tree copies it)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(k.startswith("$") for k in node):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def encode_meta(layout: Layout, folder: Path, entries: dict[str, MetaEntry]) -> bytes | None:
    rows = meta_rows(entries)
    if len(rows) < MIN_NAMES:
        return None
    head = _header("meta", _rel(layout, folder), entries=rows)
    return json.dumps(head, separators=(",", ":"), allow_nan=False).encode("utf-8")


def decode_meta(layout: Layout, folder: Path, data: bytes) -> dict[str, MetaEntry] | None:
    """Entries of a metadata file by checkpoint id, or None when anything in it is off.

    A key starting with ``$`` anywhere (a tree that is not plain: the writer keeps none) makes
    it all ignored."""
    if _names_a_type(data) or json_bounds_problem(data) is not None:  # bounded before parsing
        return None
    try:
        doc = orjson.loads(data)
    except ValueError:
        return None
    if not _is_head(doc, "meta", layout, folder) or not isinstance(doc.get("entries"), list):
        return None
    return meta_from_rows(folder, doc["entries"])


def meta_rows(entries: dict[str, MetaEntry]) -> list[list[Any]]:
    """The rows a metadata file keeps: a checkpoint's id, its file's stat key and its plain
    metadata tree, for each checkpoint whose file is named by its id (none naming a type)."""
    rows = []
    for cid, (file, key, _meta, tree) in sorted(entries.items()):
        if tree is not None and os.path.basename(file) == cid + ".json":
            rows.append([cid, *key, tree])
    return rows


def meta_from_rows(folder: Path | str, rows: Any) -> dict[str, MetaEntry] | None:
    """Entries by checkpoint id of ``meta_rows``' rows (checkpoints of ``folder``), or None when
    anything in them is off."""
    if type(rows) is not list:
        return None
    base = str(folder)
    out: dict[str, MetaEntry] = {}
    for row in rows:  # checked by hand, not by a schema: thousands of rows per load
        if type(row) is not list or len(row) != 6:
            return None
        cid, mtime, ctime, size, inode, tree = row
        if type(cid) is not str or type(tree) is not dict or not cid or cid[0] == ".":
            return None
        if not type(mtime) is type(ctime) is type(size) is type(inode) is int:
            return None
        if "/" in cid or "\\" in cid:
            return None
        out[cid] = (f"{base}/{cid}.json", (mtime, ctime, size, inode), tree, tree)
    return out


def load_meta(layout: Layout, folder: Path) -> dict[str, MetaEntry]:
    path = index_path(layout, folder, META_SUFFIX)
    data = read_index_file(layout, path) if path is not None else None
    if data is None:
        return {}
    return decode_meta(layout, folder, data) or {}


def save_meta(layout: Layout, folder: Path, entries: dict[str, MetaEntry]) -> None:
    path = index_path(layout, folder, META_SUFFIX)
    try:
        data = encode_meta(layout, folder, entries) if path is not None else None
    except (ValueError, RecursionError) as exc:  # a tree no file could hold (a forged index)
        _log.info("derived index not written for %s: %s", folder, exc)
        return
    if path is not None and data is not None:
        write_index_file(layout, path, data)


# -- objects (objindex.py: where a thread's objects live, with their trees) ------------------
# "~" starts no thread folder's name but a hashed one's (layout.py): "<thread>~objects" is
# never the index folder of another thread ("t.objects" is a thread name)
OBJECTS_SUFFIX = "~objects"
OBJECTS_HEADER = b'{"index_version":1,"kind":"objects"}\n'

ObjectEntry = tuple[str, StatKey, Any]  # holder (its path's text), its stat key, the object's tree


def encode_line(rel: str, key: StatKey, objects: dict[str, Any]) -> bytes:
    """One holder's line: ``<crc32> [file below the thread folder, stat key, {name: tree}]``."""
    body = orjson.dumps([rel, list(key), objects])
    return b"%08x %s\n" % (zlib.crc32(body), body)


def decode_lines(tdir: Path, data: bytes) -> dict[str, ObjectEntry] | None:
    """The entries of an objects file (later lines win), None when it is not one. A line
    whose checksum fails (torn by a crash, damaged, forged carelessly) or whose shape is
    not an entry's is skipped. (fsck and the tests: a read decodes a holder's line only
    when it is asked for one of its objects, ``holder_lines`` and ``decode_holder``.)"""
    lines = holder_lines(tdir, data)
    if lines is None:
        return None
    out: list[tuple[int, str, StatKey, dict[str, Any]]] = []
    for holder, found in lines.items():
        for at, rel, line in found:
            got = decode_holder(rel, line)
            if got is not None:
                out.append((at, holder, *got))
    out.sort(key=lambda x: x[0])
    return {name: (holder, key, tree) for _, holder, key, objects in out for name, tree in objects.items()}


#: an objects file's lines by the holder each names (its path's text): (line number, the
#: holder's name below the thread folder, the line)
HolderLines = dict[str, list[tuple[int, str, bytes]]]


def holder_lines(tdir: Path, data: bytes) -> HolderLines | None:
    """An objects file's lines by the holder each names, none decoded (a line's holder is
    read off its first bytes), in the file's order; None when the data is not an objects
    file. What a read takes from a line is decoded and checked when it is asked for
    (``decode_holder``), so a fresh process parses only the lines of the holders it uses
    (and of each, its last line that decodes: earlier lines for it are dead)."""
    if not data.startswith(OBJECTS_HEADER):
        return None
    out: HolderLines = {}
    top = f"{tdir}{os.sep}"
    for at, line in enumerate(data[len(OBJECTS_HEADER) :].split(b"\n")):
        rel = _line_rel(line)
        if rel is None or "\\" in rel:
            continue
        parts = rel.split("/")
        if not 1 < len(parts) <= 4 or "" in parts or "." in parts or ".." in parts:
            continue
        # os.path.join(tdir, *parts), without a call: no part is empty or holds a separator
        holder = top + (rel if os.sep == "/" else os.sep.join(parts))
        out.setdefault(holder, []).append((at, rel, line))
    return out


def _line_rel(line: bytes) -> str | None:
    """The holder a line names (``<crc32> ["<file>", ...``), unchecked; None for a line that
    starts otherwise. A name holding an escape is read by parsing the line (never written:
    the names of holders are path segments)."""
    if line[8:11] != b' ["':
        return None
    end = line.find(b'"', 11)
    rel = line[11:end] if end > 0 else b"\\"
    if b"\\" not in rel:
        try:
            return rel.decode()
        except UnicodeDecodeError:
            return None
    try:
        got = orjson.loads(line[9:])
    except orjson.JSONDecodeError:
        return None
    return got[0] if isinstance(got, list) and got and isinstance(got[0], str) else None


def decode_holder(rel: str, line: bytes) -> tuple[StatKey, dict[str, Any]] | None:
    """(stat key, {name: tree}) of one line of the holder ``rel`` (below the thread folder,
    as ``holder_lines`` read it off the line), None when its checksum fails or its shape is
    not an entry's."""
    crc, body = line[:8], line[9:]
    try:
        if int(crc, 16) != zlib.crc32(body):
            return None
        got, key, objects = orjson.loads(body)
    except (ValueError, TypeError):
        return None
    if got != rel or not (
        isinstance(key, list)
        and len(key) == 4
        and type(key[0]) is int
        and type(key[1]) is int
        and type(key[2]) is int
        and type(key[3]) is int
        and isinstance(objects, dict)
    ):
        return None
    return (key[0], key[1], key[2], key[3]), objects


def _decode_objects(layout: Layout, tdir: Path, data: bytes) -> dict[str, ObjectEntry] | None:
    return decode_lines(tdir, data)


# -- fsck -------------------------------------------------------------------------------
def index_files(layout: Layout) -> Iterator[Path]:
    """Every file under the index folder, temp files included, without following symlinks."""
    top = index_dir(layout)
    if not _inside(layout, top) or not top.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            yield Path(dirpath) / name


Decoder = Callable[[Layout, Path, bytes], Any]
"""An index file's decoder: (layout, the folder it indexes, its bytes) -> what it holds, None
when it holds nothing usable."""


def index_problem(layout: Layout, path: Path, more: Mapping[str, Decoder] | None = None) -> str | None:
    """Why a file under the index folder is of no use (damaged, its folder gone, not an
    index file at all), or None. Every such file is derived: removing it loses nothing.
    ``more``: the decoders of index files kept by modules over this one, by suffix."""
    roster = _ROSTER_NAME.fullmatch(path.name)
    if roster is not None and path.parent == index_dir(layout):
        return _roster_problem(layout, path, int(roster.group(1), 16), roster.group(2) == "roster")
    decoders: dict[str, Decoder] = {
        LIST_SUFFIX: decode_listing,
        META_SUFFIX: decode_meta,
        LINEAGE_SUFFIX: decode_lineage,
        ITEMS_SUFFIX: decode_items,
        OBJECTS_SUFFIX: _decode_objects,
        **(more or {}),
    }
    suffix = next((s for s in decoders if path.name.endswith(s)), None)
    if suffix is None or path.name.startswith("."):
        return "not an index file (a leftover temp file?)"
    rel = path.relative_to(index_dir(layout))
    folder = layout.root / rel.parent / path.name[: -len(suffix)]
    if not folder.is_dir():
        return f"index of {folder}, which does not exist"
    data = read_index_file(layout, path)
    decoded = decoders[suffix](layout, folder, data) if data is not None else None
    if decoded is None:
        return "damaged, or of another index version"
    if suffix == LIST_SUFFIX and _disagrees(folder, decoded):  # type: ignore[arg-type]
        return "names files its folder does not hold (or misses some), though the folder is unchanged"
    return None


def _roster_problem(layout: Layout, path: Path, shard: int, facts: bool) -> str | None:
    """Why a roster file (``facts``: of the threads' facts, else of their metadata) is of no use."""
    data = read_index_file(layout, path)
    if data is not None:
        if facts and decode_roster(layout, shard, data, strict=True) is not None:
            return None
        if not facts and decode_roster_meta(layout, shard, data, strict=True) is not None:
            return None
    return "damaged, or of another index version"


def _disagrees(folder: Path, listing: tuple[StatKey, list[str]]) -> bool:
    """A listing whose folder still has the recorded key must name what the folder holds."""
    try:
        st = os.lstat(folder)
        names = sorted(n for n in os.listdir(folder) if not is_temp_name(n))
    except OSError:
        return False
    key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
    return key == listing[0] and names != listing[1]


def _unchanged(hit: MetaEntry | None, observing: Any = None) -> Any | None:
    """The metadata kept in ``hit`` while its file's stat key is the one recorded (one lstat);
    the key is noted for the read under way (``observing``: MetaCache.observed)."""
    if hit is None:
        return None
    try:
        st = os.lstat(hit[0])
    except OSError:
        return None
    if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino) != hit[1]:
        return None
    observed = getattr(observing, "keys", None)
    if observed is not None:
        observed[hit[0]] = hit[1]  # the key just compared: the read's lineage check takes it
    return hit[2]


class MetaCache:
    """Decoded metadata of checkpoints, for filters: kept in process per namespace, seeded
    from the derived index in a fresh process, and written back after a scan that had to
    read many headers. Every entry is reused only while its file's stat key is unchanged."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._by_ns: dict[tuple[str, str], dict[str, MetaEntry] | SeededRows] = {}
        # each namespace's entries laid out for filters (metaview.py), and how often they
        # changed: a view is used only while its version is the namespace's
        self._views: dict[tuple[str, str], MetaView] = {}
        self._versions: dict[tuple[str, str], int] = {}
        self._read: dict[tuple[str, str], int] = {}  # headers read since last written
        self.kept: dict[tuple[str, str], int] = {}  # headers read since the roster last looked
        # where the read under way notes the stat keys it took (ThreadStore.observing): an
        # object whose ``keys`` is a dict while a read is under way in this thread, else None
        self.observed: Any = None

    def get(self, thread_id: str, ns: str, cid: str, from_disk: bool) -> Any | None:
        """The kept metadata of a checkpoint whose file is unchanged, else None.
        ``from_disk``: a plain tree is its own decoded value for this saver's codec."""
        return _unchanged(self._kept(thread_id, ns, from_disk).get(cid), self.observed)

    def _kept(self, thread_id: str, ns: str, from_disk: bool) -> dict[str, MetaEntry]:
        """What is kept for a namespace; nothing yet: what the derived index holds (``from_disk``:
        a plain tree is its own decoded value for this saver's codec)."""
        per_ns = self._decoded((thread_id, ns))
        if per_ns is None:
            folder = self.layout.checkpoints_dir(thread_id, ns)
            per_ns = load_meta(self.layout, folder) if from_disk else {}
            self._by_ns[(thread_id, ns)] = per_ns
        return per_ns

    def _decoded(self, key: tuple[str, str]) -> dict[str, MetaEntry] | None:
        """What is kept for a namespace, its roster trees decoded now if they were not."""
        per_ns = self._by_ns.get(key)
        if isinstance(per_ns, tuple):
            cids, keys, line, at, folder, _paths = per_ns
            per_ns = self._by_ns[key] = KeptMeta(cids, keys, line, at, folder).decoded() or {}
        return per_ns

    def matches(self, thread_id: str, ns: str, cid: str, wanted: list[tuple[str, Any]]) -> bool | None:
        """Whether the kept metadata of an unchanged file has every (key, value) of
        ``wanted``; None when nothing is kept for it or the file changed (the caller reads
        it). ``get`` and the test in one call: a filter over thousands of checkpoints
        spends its time in this loop, one lstat each (docs/performance.md says why that
        lstat stays)."""
        per_ns = self._decoded((thread_id, ns))
        meta = _unchanged(per_ns.get(cid), self.observed) if per_ns is not None else None
        if meta is None:
            return None
        for key, value in wanted:
            if meta.get(key) != value:
                return False
        return True

    def matching(
        self,
        thread_id: str,
        ns: str,
        cids: Sequence[str],
        wanted: list[tuple[str, Any]],
        needles: list[bytes] | None = None,
        from_disk: bool = False,
        note: bool = False,
    ) -> tuple[list[str], list[str]]:
        """``matches`` for many checkpoints of one namespace: (those whose kept metadata has
        every (key, value) of ``wanted``, those with nothing kept or a changed file). One
        lstat per checkpoint, in one loop: a filter spends its time here. ``from_disk``: as
        ``get``, for a namespace nothing is kept of yet; ``note``: the stat keys taken go to
        the read under way (``observed``), as ``matches`` notes them."""
        key = (thread_id, ns)
        kept = self._by_ns.get(key)
        if type(kept) is tuple:
            if needles is None:
                needles = meta_needles(wanted)
            if not may_match(kept[2], needles):
                # the trees not decoded: none kept matches, so only the files whose stat key
                # is not the one kept may (one lstat each, of the file the listing names)
                return [], stale(cids, kept[0], kept[5], kept[1])
        view = self._views.get(key)
        if view is None or view.source is not kept or view.version != self._versions.get(key, 0):
            view = self._view(key, self._kept(thread_id, ns, from_disk))
        return view.matching(cids, wanted, getattr(self.observed, "keys", None) if note else None)

    def matching_all(
        self,
        groups: Sequence[tuple[str, str, Sequence[str]]],
        wanted: list[tuple[str, Any]],
        needles: list[bytes],
        from_disk: bool = False,
        note: bool = False,
    ) -> list[tuple[str, str, list[str], list[str]]]:
        """``matching`` of each (thread, namespace, ids) of ``groups``, as (thread, namespace,
        matched, stale) for those with either. One loop: across 10,000 threads nearly every
        namespace is ruled out (by its roster line's trees, or by the index of its laid-out
        entries in a process that read them itself) and found unchanged (``stale``,
        ``MetaView.changed``: one comparison in C), and a call per namespace was a tenth of
        the filter."""
        out: list[tuple[str, str, list[str], list[str]]] = []
        by_ns, views, versions = self._by_ns, self._views, self._versions
        for thread_id, ns, cids in groups:
            key = (thread_id, ns)
            kept = by_ns.get(key)
            view = views.get(key) if not note else None
            found: tuple[list[str], list[str]]
            if (
                view is not None
                and view.source is kept
                and view.version == versions.get(key, 0)
                and (cids is view.cids or cids == view.cids)
                and view.candidates(wanted) == set()
            ):  # laid out as the listing is, and its index (made) rules every entry out
                found = [], view.changed()
            elif type(kept) is tuple and not may_match(kept[2], needles):
                found = [], stale(cids, kept[0], kept[5], kept[1])  # none kept matches: the changed may
            else:
                found = self.matching(thread_id, ns, cids, wanted, needles, from_disk, note)
            if found[0] or found[1]:
                out.append((thread_id, ns, *found))
        return out

    def _view(self, key: tuple[str, str], per_ns: dict[str, MetaEntry]) -> MetaView:
        """The namespace's entries laid out (metaview.py), made again after any change (``keep``
        counts them; the entries replaced by others show as another dict)."""
        version = self._versions.get(key, 0)
        view = self._views.get(key)
        if view is None or view.version != version or view.source is not per_ns:
            # list(...) copies the items in one step under the GIL; an entry kept meanwhile
            # counts a change after it is in, so this view is made again at the next use
            view = self._views[key] = MetaView(version, per_ns, list(per_ns.items()))
        return view

    def keep(self, thread_id: str, ns: str, cid: str, entry: MetaEntry | None) -> None:
        """Keep a settled entry (None: forget the checkpoint's, it may change again unseen)."""
        per_ns = self._decoded((thread_id, ns))
        if per_ns is None:
            per_ns = self._by_ns[(thread_id, ns)] = {}
        old = per_ns.get(cid)
        if entry is None:
            if old is None:
                return  # nothing kept, nothing forgotten: the views stay as they are
            per_ns.pop(cid, None)
        elif old is None or old[:2] != entry[:2]:  # the same file and stat key: the same metadata
            per_ns[cid] = entry
        else:
            return
        # after the change: a view made from the entries before it is older than this
        self._versions[(thread_id, ns)] = self._versions.get((thread_id, ns), 0) + 1
        if entry is None:
            return
        self._read[(thread_id, ns)] = self._read.get((thread_id, ns), 0) + 1
        self.kept[(thread_id, ns)] = self.kept.get((thread_id, ns), 0) + 1

    def seed(self, thread_id: str, ns: str, kept: SeededRows | dict[str, MetaEntry]) -> None:
        """Take a namespace's kept metadata from the roster (roster.py: plain trees, each
        still checked against its file's stat key on use; decoded when first used), unless
        this process holds its own."""
        self._by_ns.setdefault((thread_id, ns), dict(kept) if isinstance(kept, dict) else kept)

    def entries(self, thread_id: str, ns: str) -> dict[str, MetaEntry]:
        """What is kept for a namespace (for the roster to write down)."""
        return self._decoded((thread_id, ns)) or {}

    def persist(self) -> None:
        """Write the index of every namespace whose scan read many headers."""
        for key, count in list(self._read.items()):
            if count >= MIN_NAMES:
                save_meta(self.layout, self.layout.checkpoints_dir(*key), self._decoded(key) or {})
            self._read.pop(key, None)

    def forget_thread(self, thread_id: str) -> None:
        # list(...) copies a dict's keys in one step under the GIL, so other threads
        # filling the cache meanwhile cannot break the iteration
        for key in [k for k in list(self._by_ns) if k[0] == thread_id]:
            self._by_ns.pop(key, None)
            self._read.pop(key, None)
            self._views.pop(key, None)


# -- lineage (which checkpoint continues) -------------------------------------------------
LINEAGE_SUFFIX = ".lineage"


def lineage_rows(lineage: Lineage, cids: Iterable[str] | None = None) -> list[list[Any]]:
    """One row per checkpoint whose file was settled when read (of ``cids`` only, when
    given): id, its stat key, parent, the valid choice it records, why a recorded one is not
    valid, and whether LangGraph started its line on purpose (``Node.deliberate``)."""
    rows = []
    for cid in sorted(lineage.keys) if cids is None else cids:
        link, key = lineage.links.get(cid), lineage.keys.get(cid)
        if link is None or key is None or not link.readable:
            continue
        choice = {"chose": link.choice.chose, "over": list(link.choice.over)} if link.choice else None
        rows.append([cid, *key, link.parent, choice, link.problem, link.deliberate])
    return rows


def lineage_segment(layout: Layout, folder: Path, rows: list[list[Any]]) -> bytes:
    """A head line (the rows' count, crc32 and length in bytes) and one line per row (as
    compact JSON). A file is one such segment or more, each appended after a newline; a
    later row of a checkpoint replaces an earlier one."""
    body = b"\n".join(map(orjson.dumps, rows))
    head = _header("lineage", _rel(layout, folder), count=len(rows), crc32=zlib.crc32(body), bytes=len(body))
    return orjson.dumps(head) + b"\n" + body


def encode_lineage(layout: Layout, folder: Path, lineage: Lineage) -> bytes:
    """The whole lineage as one segment (``lineage_segment``)."""
    return lineage_segment(layout, folder, lineage_rows(lineage))


def decode_lineage(layout: Layout, folder: Path, data: bytes) -> Lineage | None:
    bodies = _lineage_bodies(layout, folder, data)
    if bodies is None:
        return None
    joined = b"\n".join(body for body in bodies if body)
    try:
        # one parse of all rows (a row is a JSON array on its own line, so none holds a newline)
        rows = orjson.loads(b"[" + joined.replace(b"\n", b",") + b"]") if joined else []
    except orjson.JSONDecodeError:
        return None
    if len(rows) != joined.count(b"\n") + (1 if joined else 0):
        return None
    return lineage_from_rows(rows)


def _lineage_bodies(layout: Layout, folder: Path, data: bytes) -> list[bytes] | None:
    """The rows (bytes) of each segment of a lineage file, each checked against its head
    (folder, count, crc32, length), or None when any is off: a torn append, a forged or
    foreign segment, a file of another version make the whole file ignored (and rewritten).
    A head without a length (written before segments) takes the rest of the file."""
    bodies: list[bytes] = []
    at = 0
    while True:
        head_end = data.find(b"\n", at, at + _MAX_HEAD)
        if head_end < 0:
            return None
        try:
            head = json.loads(data[at:head_end])
        except ValueError:
            return None
        if not _is_head(head, "lineage", layout, folder):
            return None
        size, start = head.get("bytes", len(data) - head_end - 1), head_end + 1
        if type(size) is not int or not 0 <= size <= len(data) - start:
            return None
        body, end = data[start : start + size], start + size
        count = head.get("count")
        if type(count) is not int or count != (body.count(b"\n") + 1 if body else 0):
            return None
        if head.get("crc32") != zlib.crc32(body):
            return None
        bodies.append(body)
        if end == len(data):
            return bodies
        if data[end : end + 1] != b"\n":
            return None
        at = end + 1


def lineage_from_rows(rows: Any) -> Lineage | None:
    """The lineage ``lineage_rows``' rows make (each entry still to be checked against its
    file's stat key by whoever uses it), or None when anything in them is off. The rows are
    taken apart column by column, each column checked in one call (a fresh read of a deep
    thread decodes a row per checkpoint: 5,000 at 5,000 checkpoints)."""
    if type(rows) is not list:
        return None
    if not rows:
        return Lineage({}, {})
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {9}:
        return None  # (a row of eight, before Node.deliberate: the index is made again)
    cids, mtimes, ctimes, sizes, inos, parents, choices, problems, deliberate = zip(*rows, strict=True)
    if not (
        set(map(type, cids)) == {str}
        and set(map(type, mtimes)) == set(map(type, ctimes)) == set(map(type, sizes)) == {int}
        and set(map(type, inos)) == {int}
        and set(map(type, parents)) <= {str, type(None)}
        and set(map(type, deliberate)) == {bool}
    ):
        return None
    keys = dict(zip(cids, zip(mtimes, ctimes, sizes, inos, strict=True), strict=True))
    if set(map(type, choices)) == set(map(type, problems)) == {type(None)}:  # no choice recorded
        # a Node (a named tuple) made as the tuple it is: one C call a row, no __new__ frame
        plain = zip(parents, repeat(None), repeat(None), repeat(True), deliberate)
        return Lineage(dict(zip(cids, map(tuple.__new__, repeat(Node), plain), strict=True)), keys)
    links: dict[str, Node] = {}
    for cid, parent, choice, problem, chosen in zip(
        cids, parents, choices, problems, deliberate, strict=True
    ):
        if choice is None and problem is None:
            links[cid] = Node(parent, deliberate=chosen)
        else:
            link = _link_of_row(parent, choice, problem, chosen)
            if link is None:
                return None
            links[cid] = link
    return Lineage(links, keys)


def _link_of_row(parent: str | None, choice: Any, problem: Any, deliberate: bool) -> Node | None:
    """A row's link when it records a choice or a problem; None when either is malformed."""
    if not (problem is None or isinstance(problem, str)):
        return None
    if choice is None:
        return Node(parent, None, problem, deliberate=deliberate)
    if not (
        isinstance(choice, dict)
        and isinstance(choice.get("chose"), str)
        and isinstance(choice.get("over"), list)
        and all(isinstance(i, str) for i in choice["over"])
    ):
        return None
    return Node(parent, Choice(choice["chose"], tuple(choice["over"])), problem, deliberate=deliberate)


def load_lineage(layout: Layout, folder: Path) -> Lineage:
    """The lineage recorded for ``folder`` (each entry still to be checked against its file's
    stat key by the caller); empty when there is none or it is damaged."""
    path = index_path(layout, folder, LINEAGE_SUFFIX)
    data = read_index_file(layout, path) if path is not None else None
    got = decode_lineage(layout, folder, data) if data is not None else None
    return got if got is not None else Lineage()


def save_lineage(layout: Layout, folder: Path, lineage: Lineage) -> None:
    path = index_path(layout, folder, LINEAGE_SUFFIX)
    if path is not None:
        write_index_file(layout, path, encode_lineage(layout, folder, lineage))


class LineageFiles:
    """A writer's lineage index files: a save appends the links settled since the last one
    (a segment: O(new links), where writing the whole index again cost about 3 us a link,
    28-36 ms every 64 puts of a 5,000-checkpoint thread) while the file is still the one this
    process last wrote (its stat key, taken after writing); anything else, or a file holding
    twice the rows it needs, is written whole, atomically. Either way the file stays derived:
    a reader checks every segment and every entry as before."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._written: dict[Path, tuple[StatKey, int]] = {}  # folder -> (file's key, rows in it)

    def save(self, folder: Path, lineage: Lineage, added: Iterable[str] | None = None) -> None:
        """Write ``folder``'s lineage down: only the rows of ``added`` when they can be appended."""
        path = index_path(self.layout, folder, LINEAGE_SUFFIX)
        if path is None:
            return
        kept = self._written.pop(folder, None)
        if added is not None and kept is not None:
            rows = lineage_rows(lineage, sorted(added))
            if not rows:
                self._written[folder] = kept
                return
            if kept[1] + len(rows) <= 2 * len(lineage.keys):
                data = b"\n" + lineage_segment(self.layout, folder, rows)
                key = append_index_file(self.layout, path, data, kept[0])
                if key is not None:
                    self._written[folder] = (key, kept[1] + len(rows))
                    return
        rows = lineage_rows(lineage)
        key = write_index_file(self.layout, path, lineage_segment(self.layout, folder, rows))
        if key is not None:
            self._written[folder] = (key, len(rows))

    def forget_under(self, folder: Path) -> None:
        for kept in [f for f in self._written if f.is_relative_to(folder)]:
            del self._written[kept]


# -- store items (RepoStore) ------------------------------------------------------------
ITEMS_SUFFIX = ".items"
ItemEntry = tuple[StatKey, dict[str, Any]]
"""A store item file's stat key when it was read (settled), and its document."""


def encode_items(layout: Layout, folder: Path, entries: dict[str, ItemEntry]) -> bytes | None:
    rows = [[name, *key, doc] for name, (key, doc) in sorted(entries.items())]
    if len(rows) < MIN_NAMES:
        return None
    return orjson.dumps(_header("items", _rel(layout, folder), entries=rows))


def decode_items(layout: Layout, folder: Path, data: bytes) -> dict[str, ItemEntry] | None:
    """Entries of an items file by file name, or None when anything in it is off (each
    document is still to be validated by whoever uses it)."""
    if json_bounds_problem(data) is not None:  # bounded before parsing
        return None
    try:
        doc = orjson.loads(data)
    except ValueError:
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("index_version") != INDEX_VERSION
        or doc.get("kind") != "items"
        or doc.get("folder") != _rel(layout, folder)
        or not isinstance(doc.get("entries"), list)
    ):
        return None
    out: dict[str, ItemEntry] = {}
    for row in doc["entries"]:
        if type(row) is not list or len(row) != 6 or type(row[5]) is not dict:
            return None
        name = row[0]
        if type(name) is not str or not name.endswith(".json") or name[0] == ".":
            return None
        if "/" in name or "\\" in name:
            return None
        if not _is_key(row[1:5]):
            return None
        out[name] = (tuple(row[1:5]), row[5])  # type: ignore[assignment]
    return out


def load_items(layout: Layout, folder: Path) -> dict[str, ItemEntry]:
    path = index_path(layout, folder, ITEMS_SUFFIX)
    data = read_index_file(layout, path) if path is not None else None
    return (decode_items(layout, folder, data) if data is not None else None) or {}


def save_items(layout: Layout, folder: Path, entries: dict[str, ItemEntry]) -> None:
    path = index_path(layout, folder, ITEMS_SUFFIX)
    try:
        data = encode_items(layout, folder, entries) if path is not None else None
    except (TypeError, ValueError) as exc:  # an integer orjson cannot write: no index, a re-read
        _log.info("derived index not written for %s: %s", folder, exc)
        return
    if path is not None and data is not None:
        write_index_file(layout, path, data)


# -- the roster: what cross-thread reads need of every thread (roster.py) -------------------
ROSTER_SUFFIX = ".roster"
ROSTER_META_SUFFIX = ".metadata"  # the checkpoints' metadata, apart: only a filter reads it
ROSTER_SHARDS = 16  # files, by a hash of the thread's folder name: a rewrite is of one only
_ROSTER_NAME = re.compile(r"threads\.([0-9a-f])\.(roster|metadata)")
_ROSTER_FIELDS = {"seg", "id", "key", "ns_key", "ns"}
_NS_FIELDS = {"ns", "seg", "key", "ids"}
_META_FIELDS = {"seg", "ns"}


@dataclass
class NsFacts:
    """One namespace of a thread, as cross-thread reads need it; every part is checked
    against the files before it is used (roster.py)."""

    ns: str
    seg: str  # its folder under ``ns/`` ("" for the root namespace, in the thread folder)
    key: StatKey | None = None  # its checkpoints folder's stat key when ``ids`` were listed
    ids: tuple[str, ...] = ()
    meta: dict[str, MetaEntry] = field(default_factory=dict)  # plain metadata, per file key
    lineage: Lineage = field(default_factory=Lineage)  # parent links, per file key
    folder: str = ""  # its checkpoints folder (the roster's, as it first checks it)
    # ``meta`` and ``lineage`` as a roster file holds them, decoded on first use (``KeptRows``,
    # ``ns_lineage``): a call that needs one part of a thousand threads decodes only that
    meta_rows: KeptRows | None = None
    lineage_rows: KeptLineage | None = None


# A thread as a roster file keeps it, in plain tuples of strings, numbers and bytes until this
# process needs it as objects (``thread_facts``). The garbage collector stops tracking a tuple
# once what it holds is untracked, at a pass that may see the tuple before what it holds: two
# levels of tuples are left by the next pass, before a full pass could see them. A fresh list
# across 10,000 threads kept some 13 containers a thread as objects, and the collector's three
# full passes over them were a quarter of the call.
KeptNs = tuple[str, str, "StatKey | None", tuple[str, ...], str]
"""A namespace: (namespace, ``NsFacts.seg``, its checkpoints folder's stat key, its checkpoint
ids, its checkpoints folder)."""
KeptThread = tuple[Any, ...]
"""A thread folder: (its name, the thread id, its stat key, its ``ns/`` folder's, the line of
its namespaces' parent links, the line of its row of ``threads``), then the five fields of
each of its namespaces (``KeptNs``) one after another (``kept_spaces``)."""
KEPT_NS = 6  # where a kept thread's namespaces start


def kept_spaces(kept: KeptThread) -> list[KeptNs]:
    """A kept thread's namespaces."""
    return [kept[at : at + 5] for at in range(KEPT_NS, len(kept), 5)]  # type: ignore[misc]


def thread_facts(kept: KeptThread) -> ThreadFacts:
    """A kept thread as objects (its parent links and row still undecoded)."""
    seg, tid, key, ns_key, links, row_line = kept[:KEPT_NS]
    namespaces = [
        NsFacts(ns, nseg, nkey, ids, folder=folder, lineage_rows=KeptLineage(links, at))
        for at, (ns, nseg, nkey, ids, folder) in enumerate(kept_spaces(kept))
    ]
    return ThreadFacts(seg, tid, key, ns_key, namespaces, row_line=row_line)


def ns_lineage(ns: NsFacts) -> Lineage:
    """A namespace's kept parent links; rows of a roster file that are off are none."""
    if ns.lineage_rows is not None:
        kept, ns.lineage_rows = ns.lineage_rows, None
        ns.lineage = lineage_from_rows(kept.rows() or []) or Lineage()
    return ns.lineage


def kept_lineage_rows(ns: NsFacts) -> Any:
    """A namespace's parent links as a roster file's rows (each still to be checked against
    its file): as read when never decoded, else made from what is kept."""
    if ns.lineage_rows is not None:
        return ns.lineage_rows.rows()
    return lineage_rows(ns.lineage)


class KeptLineage:
    """A namespace's parent links as a roster file holds them: the line of its thread's
    links (the namespace's at ``at``) left as bytes until they are asked for. A list across
    a thousand threads needs the links of the threads of its results only; parsed, the links
    were half of what the roster files decoded and ten thousand lists kept."""

    __slots__ = ("at", "line")

    def __init__(self, line: bytes, at: int) -> None:
        self.line, self.at = line, at

    def rows(self) -> list[Any] | None:
        """The namespace's rows, or None when the line is off."""
        try:
            links = orjson.loads(self.line)
        except orjson.JSONDecodeError:
            return None
        if type(links) is not list or self.at >= len(links) or type(links[self.at]) is not list:
            return None
        return links[self.at]  # type: ignore[no-any-return]


@dataclass
class ThreadFacts:
    """One thread folder: its id, its namespaces (found under the thread folder's stat key
    and its ``ns/`` folder's) and a row of the ``threads`` command (with the stat keys of
    the files it was derived from: the readmodel's, checked there)."""

    seg: str
    tid: str
    key: StatKey | None  # the thread folder's lstat key when its namespaces were found
    ns_key: StatKey | None  # its ``ns/`` folder's then; None when it had none
    namespaces: list[NsFacts]
    row: dict[str, Any] | None = None
    # ``row`` as a roster file holds it, decoded on first use (``thread_row``): a list across
    # threads never needs it, and it was most of what a roster file decoded
    row_line: bytes | None = None


def thread_row(facts: ThreadFacts) -> dict[str, Any] | None:
    """A thread's kept row of ``threads``, decoded from its roster line when first asked
    for; None when none is kept or the line is off (the row is made again from the files)."""
    line = facts.row_line
    if line is not None:
        facts.row, facts.row_line = _row_of(line), None
    return facts.row


def _row_of(line: bytes) -> dict[str, Any] | None:
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return row if type(row) is dict else None


def roster_shard(seg: str) -> int:
    """The roster file a thread folder's facts are kept in."""
    return zlib.crc32(seg.encode("utf-8", "surrogatepass")) % ROSTER_SHARDS


def roster_path(layout: Layout, shard: int, suffix: str = ROSTER_SUFFIX) -> Path:
    """A roster file: the threads' facts (``ROSTER_SUFFIX``) or their metadata (``ROSTER_META_SUFFIX``)."""
    return index_dir(layout) / f"threads.{shard:x}{suffix}"


def _ns_json(ns: NsFacts) -> dict[str, Any]:
    return {
        "ns": ns.ns,
        "seg": ns.seg,
        "key": list(ns.key) if ns.key is not None else None,
        "ids": ns.ids if ns.key is not None else (),
    }


def _links_json(ns: NsFacts) -> list[Any]:
    small = len(ns.ids) < MIN_NAMES  # a bigger folder keeps its own .lineage
    # as read when never decoded: each row is still checked against its file on use
    return (kept_lineage_rows(ns) or []) if small else []


def encode_roster(layout: Layout, shard: int, threads: list[ThreadFacts]) -> bytes:
    """Three lines per thread whose namespaces were found settled, after a head line (index
    version, kind, shard, count, CRC-32 of the lines): its facts, then its namespaces'
    parent links (``KeptLineage``), then its row of ``threads`` (``thread_row``), the last
    two parsed only when they are used."""
    lines = []
    for t in sorted(threads, key=lambda t: t.seg):
        if t.key is None:
            continue
        entry = {
            "seg": t.seg,
            "id": t.tid,
            "key": list(t.key),
            "ns_key": list(t.ns_key) if t.ns_key is not None else None,
            "ns": [_ns_json(ns) for ns in t.namespaces],
        }
        lines.append(orjson.dumps(entry))
        lines.append(orjson.dumps([_links_json(ns) for ns in t.namespaces]))
        lines.append(
            t.row_line if t.row_line is not None else orjson.dumps(t.row)
        )  # as read, if never decoded
    body = b"\n".join(lines)
    head = _header("roster", THREADS, shard=shard, count=len(lines) // 3, crc32=zlib.crc32(body))
    return orjson.dumps(head) + b"\n" + body


def decode_roster(
    layout: Layout, shard: int, data: bytes, *, strict: bool = False
) -> dict[str, ThreadFacts] | None:
    """``kept_roster`` as objects (fsck, the tests)."""
    kept = kept_roster(layout, shard, data, strict=strict)
    return None if kept is None else {seg: thread_facts(t) for seg, t in kept.items()}


def kept_roster(
    layout: Layout, shard: int, data: bytes, *, strict: bool = False
) -> dict[str, KeptThread] | None:
    """A roster file's threads by folder name, or None when anything in it is off: bounded
    before it is parsed, no key starting with ``$`` anywhere (its metadata trees are used as
    decoded metadata), each thread in its own shard. A line at a time: what one parse makes
    is gone before the next, so the collector never keeps it (``KeptThread``)."""
    if _names_a_type(data) or json_bounds_problem(data) is not None:
        return None
    found = _first_line(data, "roster", layout, layout.threads_dir)
    if found is None or found[0].get("shard") != shard:
        return None
    head, body = found
    lines = body.split(b"\n") if body else []
    count = head.get("count")
    if type(count) is not int or len(lines) != 3 * count:  # a file of two lines a thread (before) too
        return None
    out: dict[str, KeptThread] = {}
    threads = str(layout.threads_dir)
    loads, error = orjson.loads, orjson.JSONDecodeError
    for line, links, kept_row in zip(lines[0::3], lines[1::3], lines[2::3], strict=True):
        try:
            row = loads(line)  # a line of two values joined by a comma does not parse
        except error:
            return None
        got = _kept_thread(threads, row, links, kept_row)
        if got is None or roster_shard(got[0]) != shard or got[0] in out:
            return None
        if strict and not _links_and_row_ok(got):
            return None
        out[got[0]] = got
    return out


def _links_and_row_ok(kept: KeptThread) -> bool:
    """Whether a kept thread's parent links and row decode (fsck: a read decodes them on use)."""
    links, row = kept[4], kept[5]
    if row != b"null" and _row_of(row) is None:
        return False
    spaces = range(len(kept_spaces(kept)))
    return all(lineage_from_rows(KeptLineage(links, at).rows()) is not None for at in spaces)


def _segment_ok(seg: Any) -> bool:
    # three substring tests, no set built: a roster checks two segments a thread
    return (
        type(seg) is str
        and 0 < len(seg) <= 255
        and seg[0] != "."
        and "/" not in seg
        and "\\" not in seg
        and "\x00" not in seg
    )


def _kept_thread(threads: str, row: Any, links: bytes, kept_row: bytes) -> KeptThread | None:
    """One roster line as a kept thread (``links``: the line of its namespaces' parent links,
    ``kept_row``: the line of its row of ``threads``), or None when its shape is off."""
    if type(row) is not dict or row.keys() != _ROSTER_FIELDS or not _segment_ok(row["seg"]):
        return None
    if type(row["id"]) is not str or not _is_key(row["key"]) or type(row["ns"]) is not list:
        return None
    if row["ns_key"] is not None and not _is_key(row["ns_key"]):
        return None
    tdir = f"{threads}/{row['seg']}"
    ns_key = tuple(row["ns_key"]) if row["ns_key"] is not None else None
    kept: list[Any] = [row["seg"], row["id"], tuple(row["key"]), ns_key, links, kept_row]
    for ns in row["ns"]:
        got = _kept_ns(tdir, ns)
        if got is None:
            return None
        kept.extend(got)
    return tuple(kept)


def _ids_ok(ids: Any) -> bool:
    """Whether a derived line's ids can be a checkpoints folder's listing: a sorted list of
    strings, none empty or holding a ``/`` (each names a file in the folder)."""
    if type(ids) is not list or (ids and set(map(type, ids)) != {str}):
        return False
    return "" not in ids and "/" not in "".join(ids) and ids == sorted(ids)


def _kept_ns(tdir: str, ns: Any) -> KeptNs | None:
    """One namespace of a roster line, or None when its shape is off (its metadata and parent
    links are checked when first used, or by fsck)."""
    if type(ns) is not dict or ns.keys() != _NS_FIELDS or type(ns["ns"]) is not str:
        return None
    if ns["seg"] != "" and not _segment_ok(ns["seg"]):
        return None
    if ns["key"] is not None and not _is_key(ns["key"]):
        return None
    ids = ns["ids"]
    if not _ids_ok(ids):
        return None
    folder = f"{tdir}/{NAMESPACES}/{ns['seg']}/{CHECKPOINTS}" if ns["seg"] else f"{tdir}/{CHECKPOINTS}"
    key = tuple(ns["key"]) if ns["key"] is not None else None
    return (ns["ns"], ns["seg"], key, tuple(ids), folder)  # type: ignore[return-value]


def load_roster(layout: Layout, shard: int) -> dict[str, KeptThread] | None:
    """The threads one roster file keeps (each still to be checked against the files by its
    user); None when it is absent or anything in it is off."""
    data = read_index_file(layout, roster_path(layout, shard))
    return kept_roster(layout, shard, data) if data is not None else None


def save_roster(layout: Layout, shard: int, threads: list[ThreadFacts], *, metadata: bool = False) -> None:
    """Write one roster file (``metadata``: the one of the threads' metadata)."""
    try:
        data = (encode_roster_meta if metadata else encode_roster)(layout, shard, threads)
    except (TypeError, ValueError) as exc:  # a tree orjson cannot write: no index, a re-read
        _log.info("derived index not written for shard %d of the threads: %s", shard, exc)
        return
    if len(data) <= MAX_FILE_BYTES and json_bounds_problem(data) is None:
        write_index_file(
            layout, roster_path(layout, shard, ROSTER_META_SUFFIX if metadata else ROSTER_SUFFIX), data
        )
    else:
        _log.info("derived index not written for shard %d of the threads: too big for one file", shard)


def encode_roster_meta(layout: Layout, shard: int, threads: list[ThreadFacts]) -> bytes:
    """Two lines per thread, after a head line as ``encode_roster``'s: its folder name and, per
    namespace of fewer than ``MIN_NAMES`` checkpoints, the ids and stat keys of what is kept
    (``meta_rows`` without their trees); then the namespaces' metadata trees, on a line of
    their own that a filter decodes only when it may match (``KeptRows``)."""
    lines = []
    for t in sorted(threads, key=lambda t: t.seg):
        spaces, trees = [], []
        for ns in t.namespaces:
            held = ns.meta_rows
            kept = (KeptMeta(*held, ns.folder).decoded() or {}) if held is not None else ns.meta
            rows = meta_rows(kept)
            if rows and len(ns.ids) < MIN_NAMES:  # ids, their files' keys one after another
                spaces.append([ns.ns, [row[0] for row in rows], [k for row in rows for k in row[1:5]]])
                trees.append([row[5] for row in rows])
        if spaces:
            lines.append(orjson.dumps({"seg": t.seg, "ns": spaces}))
            lines.append(orjson.dumps(trees))
    body = b"\n".join(lines)
    head = _header("roster-metadata", THREADS, shard=shard, count=len(lines) // 2, crc32=zlib.crc32(body))
    return orjson.dumps(head) + b"\n" + body


KeptRows = tuple[tuple[str, ...], tuple[int, ...], bytes, int]
"""A small namespace's kept metadata as a roster metadata file holds it: its checkpoint ids,
their files' stat keys (four integers each, one after another), and the line of its thread's
metadata trees (the namespace's at the place given) left as bytes until a checkpoint's
metadata is asked for. A filter across a thousand threads decodes the trees of the lines
holding the string it looks for (``may_match``), not every tree: in a fresh process those
trees were most of what the files decoded and most of the garbage collector's work. Plain
tuples, as ``KeptThread``."""

SeededRows = tuple[tuple[str, ...], tuple[int, ...], bytes, int, str, tuple[bytes, ...]]
"""``KeptRows`` as ``MetaCache`` keeps them (``seeded_rows``), with the namespace's checkpoints
folder and each id's file in it (as bytes: ``lstat`` takes a str by encoding it first)."""


def seeded_rows(rows: KeptRows, folder: str, ids: tuple[str, ...]) -> SeededRows:
    """``rows`` of the namespace whose checkpoints folder is ``folder`` and whose listing is
    ``ids`` (taken in place of the rows' ids when they are those: one tuple, not two)."""
    cids, keys, line, at = rows
    cids = ids if cids == ids else cids
    head = os.fsencode(folder) + b"/"
    return (cids, keys, line, at, folder, tuple([head + os.fsencode(cid) + b".json" for cid in cids]))


class KeptMeta:
    """``KeptRows`` of the checkpoints folder ``folder``, to be decoded."""

    __slots__ = ("at", "cids", "folder", "keys", "line")

    def __init__(
        self, cids: tuple[Any, ...], keys: tuple[Any, ...], line: bytes, at: int, folder: str
    ) -> None:
        self.cids, self.keys, self.line, self.at, self.folder = cids, keys, line, at, folder

    def decoded(self) -> dict[str, MetaEntry] | None:
        """``meta_from_rows`` of the ids, keys and trees, or None when anything is off."""
        try:
            trees = orjson.loads(self.line)
        except orjson.JSONDecodeError:
            return None
        if type(trees) is not list or self.at >= len(trees) or type(trees[self.at]) is not list:
            return None
        mine, keys = trees[self.at], self.keys
        if len(mine) != len(self.cids) or len(keys) != 4 * len(mine):
            return None
        pairs = enumerate(zip(self.cids, mine, strict=True))
        rows = [[cid, *keys[4 * i : 4 * i + 4], tree] for i, (cid, tree) in pairs]
        return meta_from_rows(self.folder, rows)


def may_match(line: bytes, needles: list[bytes]) -> bool:
    """False only when one of ``needles`` (``meta_needles``) is nowhere in a line of trees."""
    for needle in needles:
        if needle not in line:
            return False
    return True


def meta_needles(wanted: list[tuple[str, Any]]) -> list[bytes]:
    """What a line of kept metadata trees holds when a tree may match ``wanted``: the JSON of
    each string it asks for (orjson writes a string one way, so a tree holding it holds
    that). A number or a boolean is not looked for: ``1 == 1.0 == True`` where their JSON
    differs."""
    return [orjson.dumps(value) for _, value in wanted if type(value) is str]


def decode_roster_meta(
    layout: Layout, shard: int, data: bytes, *, strict: bool = False
) -> dict[tuple[str, str], KeptRows] | None:
    """A roster metadata file's kept metadata by thread folder name and namespace (each
    decoded and checked when used, or here when ``strict``), or None when anything in it is
    off: bounded before it is parsed, and no key starting with ``$`` anywhere (nothing in it
    names a type). The lines of trees are not parsed here, and the others a line at a time
    (as ``kept_roster``)."""
    if _names_a_type(data) or json_bounds_problem(data) is not None:
        return None
    found = _first_line(data, "roster-metadata", layout, layout.threads_dir)
    if found is None or found[0].get("shard") != shard:
        return None
    head, body = found
    lines = body.split(b"\n") if body else []
    if len(lines) % 2 or len(lines) // 2 != head.get("count"):
        return None
    out: dict[tuple[str, str], KeptRows] = {}
    segs: set[str] = set()
    loads, error = orjson.loads, orjson.JSONDecodeError
    for line, trees in zip(lines[0::2], lines[1::2], strict=True):
        try:
            row = loads(line)  # a line of two values joined by a comma does not parse
        except error:
            return None
        if type(row) is not dict or row.keys() != _META_FIELDS or not _segment_ok(row["seg"]):
            return None
        seg = row["seg"]
        if roster_shard(seg) != shard or seg in segs or type(row["ns"]) is not list:
            return None
        segs.add(seg)
        for at, kept_ns in enumerate(row["ns"]):
            if type(kept_ns) is not list or len(kept_ns) != 3 or type(kept_ns[0]) is not str:
                return None
            ns, cids, keys = kept_ns
            if not _ids_ok(cids) or type(keys) is not list or len(keys) != 4 * len(cids):
                return None  # the ids name the files ``seeded_rows`` makes paths of
            if (seg, ns) in out:
                return None
            rows = out[(seg, ns)] = (tuple(cids), tuple(keys), trees, at)
            if strict and KeptMeta(*rows, "").decoded() is None:
                return None
    return out


def load_roster_meta(layout: Layout, shard: int) -> dict[tuple[str, str], KeptRows] | None:
    """The metadata one roster metadata file keeps; None when it is absent or off."""
    data = read_index_file(layout, roster_path(layout, shard, ROSTER_META_SUFFIX))
    return decode_roster_meta(layout, shard, data) if data is not None else None
