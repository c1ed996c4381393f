"""The lists a read rebuilt, for a fresh process (the derived index).

A list channel of a long thread (a conversation's messages) is an append chain of up to
``snapshot_every`` links over a whole copy cut into chunks, each message held in the
checkpoint that first held it. A process with empty caches parsed every link, took thousands
of objects from the objects index and checked every message again to read one state: 250-300
ms at 1,000 turns against SqliteSaver's 38-45 (now about 100). This index keeps what such a read rebuilt:
``.cache/index/threads/<thread>~values``, one line per list (the last ``KEEP`` a thread's
reads rebuilt), ``<crc32> <key>\\t<head>\\t<sources>\\t<body>\\t<tree>\\t<located>``:

* key: ``[file below the thread folder, channel]``: the file whose link ends the chain (read
  alone, to find a line);
* head: ``[pointer, where, depth, items, weight, [[dep, stat key], ...], [home folder, ...],
  [type, ...]]``: the pointer of its items in the file and how errors name the value after
  the file; every file the list was built from (deps, ``ValueEntry.deps``: the links, the
  parents naming their bases, a ``large/`` file) with its stat key; the folders its objects
  were taken from;
* sources: ``[file, mtime_ns, ctime_ns, size, inode, ...]``, every other file the read took
  something from (the checkpoints holding its objects, the records the walk read);
* body: the base64 of the msgpack of its items, what the serde revives, its messages checked
  (entries.ValueEntry.check_messages);
* tree: the list as the files rebuild it, parsed only when asked (``IndexedEntry``): the next
  put compares against it, a revive never looks at it;
* located: ``{object: [namespace, checkpoint]}``, where the read found the thread's objects,
  parsed when a writer first asks (``ValueResolver.located_in``): the next whole copy of the
  list, or an edit, refers to each message where it is instead of holding it again. A hint
  only: a writer checks the checkpoint holds the object before it refers to it (overlap.py).

A read takes a list from it, instead of walking the chain, while every dep and every source
has the stat key recorded and every folder lies in the root with no symlink on the way: the
rule a list kept in process follows (resolve.py), and the files its messages were taken from
by name too (a checkpoint holding one, edited or removed, is read as without the line). A
line is written only when every dep and source was settled when read (caches.settled), so an
edit in the same clock tick is seen. A pull request cannot predict the stat keys its checkout gives (ctime,
inode): a line forged into one serves nothing. The serde still refuses, from the bytes, any
type outside the allowlist; an error while reviving a list taken from here is made again
from the files (``ValueEntry.rebuild``), so it names the file and pointer.

Written atomically, not fsynced (a cache); a torn or damaged line fails its checksum and is
skipped; a thread removed takes its file along (``forget``): it holds the thread's messages.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .caches import Dep, StatKey, stat_key
from .index import INDEX_VERSION, index_path, read_index_file, remove_index_file, write_index_file
from .layout import Layout

VALUES_SUFFIX = "~values"
VALUES_HEADER = b'{"index_version":%d,"kind":"values"}\n' % INDEX_VERSION
KEEP = 4  # lists a thread's file keeps: a namespace's few list channels, the latest first
MIN_LINKS = 8  # a read that parsed fewer links rebuilds them quickly next time: nothing written
MIN_ITEMS = 256  # nor a whole list read from its file, shorter than this
THREADS_KEPT = 16  # threads whose lines a process keeps as read, not yet used
NO_FILE_KEPT = 20_000  # and threads found to have no values file (a miss: an open of nothing)
KEPT_BYTES = 16 * 1024 * 1024  # and the most bytes of them (a line is some MB at 1,000 turns)


class Sources:
    """The files a line's list came from besides its deps, as the line has them: one flat
    list, ``[file below the thread folder, mtime_ns, ctime_ns, size, inode, ...]``. Strings
    and integers: a 1,000-turn chat's 4,000 as small tuples set off a full pass of the
    garbage collector in the read they were meant to spare (60 ms)."""

    __slots__ = ("_paths_made", "flat", "tdir")

    def __init__(self, tdir: Path, flat: list[Any]) -> None:
        self.tdir = tdir
        self.flat = flat
        self._paths_made: list[str] | None = None

    @classmethod
    def of(cls, tdir: Path, deps: tuple[Dep, ...]) -> Sources | None:
        """Deps as sources, None when one lies outside the thread folder or has no key."""
        top = f"{tdir}{os.sep}"
        flat: list[Any] = []
        for path, key, _digest in deps:
            if key is None or not path.startswith(top):
                return None
            flat.append(path[len(top) :].replace(os.sep, "/"))
            flat.extend(key)
        return cls(tdir, flat)

    def _paths(self) -> list[str]:
        got = self._paths_made
        if got is None:
            top, sep = f"{self.tdir}{os.sep}", os.sep
            rels = self.flat[::5]
            got = self._paths_made = [top + (r if sep == "/" else r.replace("/", sep)) for r in rels]
        return got

    def folders(self) -> set[str]:
        return {os.path.dirname(p) for p in self._paths()}

    def unchanged(self, observed: dict[str, StatKey] | None = None) -> bool:
        """Whether every file has its recorded stat key: one lstat each (never through a
        link), or the key this read took of it already (``observed``: the lineage check
        takes every checkpoint's, and most sources are checkpoints)."""
        flat, lstat = self.flat, os.lstat
        seen = observed or {}
        for at, path in enumerate(self._paths()):
            i = 5 * at
            key = seen.get(path)
            if key is not None:
                if key != (flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4]):
                    return False
                continue
            try:
                st = lstat(path)
            except OSError:
                return False
            if (
                st.st_mtime_ns != flat[i + 1]
                or st.st_ctime_ns != flat[i + 2]
                or st.st_size != flat[i + 3]
                or st.st_ino != flat[i + 4]
            ):
                return False
        return True

    def deps(self) -> tuple[Dep, ...]:
        f = self.flat
        return tuple(
            (p, (f[5 * at + 1], f[5 * at + 2], f[5 * at + 3], f[5 * at + 4]), None)
            for at, p in enumerate(self._paths())
        )


@dataclass(frozen=True)
class Kept:
    """One list as a line holds it, its paths made absolute (deps first: the link's file)."""

    path: str
    channel: str
    pointer: str
    where: str  # how errors name the value, after the file's path
    depth: int
    weight: tuple[int, int, int] | None
    deps: tuple[Dep, ...]
    sources: Sources
    homes: tuple[str, ...]
    types: frozenset[tuple[str, ...]]
    count: int
    tree: bytes  # JSON
    body: bytes
    located: bytes  # JSON


def encode_line(tdir: Path, kept: Kept) -> bytes | None:
    """``kept`` as a line, None when a file it names lies outside the thread folder."""
    top = f"{tdir}{os.sep}"
    names = [kept.path, *(p for p, _k, _d in kept.deps), *kept.homes]
    if not all(n.startswith(top) for n in names) or kept.sources.tdir != tdir:
        return None
    rel = [n[len(top) :].replace(os.sep, "/") for n in names]
    deps = [[r, list(k or ())] for r, (_p, k, _d) in zip(rel[1 : 1 + len(kept.deps)], kept.deps, strict=True)]
    key = orjson.dumps([rel[0], kept.channel])
    head = orjson.dumps(
        [
            kept.pointer,
            kept.where,
            kept.depth,
            kept.count,
            list(kept.weight) if kept.weight is not None else None,
            deps,
            rel[1 + len(kept.deps) :],
            sorted(list(t) for t in kept.types),
        ]
    )
    sources = orjson.dumps(kept.sources.flat)
    body = b"\t".join((key, head, sources, base64.b64encode(kept.body), kept.tree, kept.located))
    return b"%08x %s\n" % (zlib.crc32(body), body)


# a path below the thread folder as lines write it: 1 to 6 plain segments (no ``.``, ``..``,
# backslash, NUL or newline); several, one a line, in ``_RELS``
_SEGMENT = r"(?!\.\.?(?:/|\n|$))[^/\\\n\x00]+"
_REL = rf"{_SEGMENT}(?:/{_SEGMENT}){{0,5}}"
_ONE_REL = re.compile(_REL)
_RELS = re.compile(rf"{_REL}(?:\n{_REL})*")


def _rel_ok(rel: Any) -> bool:
    return type(rel) is str and _ONE_REL.fullmatch(rel) is not None


_BOUND = 1 << 63  # a stat key's number, a count, a weight: what the format's integers fit in


def _int_ok(n: Any, bound: int = _BOUND) -> bool:
    return type(n) is int and 0 <= n < bound


def _key_ok(key: Any) -> bool:
    return type(key) is list and len(key) == 4 and all(_int_ok(k) for k in key)


def _flat_ok(flat: Any) -> bool:
    """Sources as a line has them: a file below the thread folder, then its four integers
    (checked in a few passes in C: a 1,000-turn chat's line names 4,000)."""
    if type(flat) is not list or len(flat) % 5:
        return False
    if not flat:
        return True
    rels = flat[::5]
    if {type(r) for r in rels} != {str}:
        return False
    ints = flat[1::5] + flat[2::5] + flat[3::5] + flat[4::5]
    if {type(i) for i in ints} != {int} or not all(0 <= i < _BOUND for i in (min(ints), max(ints))):
        return False
    joined = "\n".join(rels)  # a path holding a newline would pass as two
    return joined.count("\n") == len(rels) - 1 and _RELS.fullmatch(joined) is not None


def _weight_ok(weight: Any) -> bool:
    if weight is None:
        return True
    return type(weight) is list and len(weight) == 3 and all(_int_ok(w, 1 << 53) for w in weight)


Span = tuple[bytes, int, int]  # a line as the bytes of its file and where it starts and ends


def decode_line(tdir: Path, line: bytes) -> Kept | None:
    """The list a line holds, or None when its checksum fails or its shape is off."""
    return _decode(tdir, (line, 0, len(line)))


def _parts(span: Span) -> list[memoryview] | None:
    """A line's six tab-separated parts after its checksum, as views, when the checksum holds."""
    data, start, end = span
    view = memoryview(data)
    parts: list[memoryview] = []
    at = start + 9
    while len(parts) < 5:
        tab = data.find(b"\t", at, end)
        if tab < 0:
            return None
        parts.append(view[at:tab])
        at = tab + 1
    if data.find(b"\t", at, end) >= 0:
        return None
    parts.append(view[at:end])
    try:
        crc = int(data[start : start + 8], 16)
    except ValueError:
        return None
    if data[start + 8 : start + 9] != b" " or crc != zlib.crc32(view[start + 9 : end]):
        return None
    return parts


def _decode(tdir: Path, span: Span) -> Kept | None:
    """``decode_line`` of a line inside its file's bytes, its parts read through views (a
    1,000-turn chat's line is some MB: each copy of it cost a millisecond or two)."""
    parts = _parts(span)
    if parts is None:
        return None
    key_bytes, head_bytes, sources_bytes, b64, tree_view, located_view = parts
    try:
        rel, channel = orjson.loads(key_bytes)
        head = orjson.loads(head_bytes)
        pointer, where, depth, count, weight, deps, homes, types = head
        sources = orjson.loads(sources_bytes)
        body = base64.b64decode(b64, validate=True)
    except (ValueError, TypeError, binascii.Error):
        return None
    tree, located = bytes(tree_view), bytes(located_view)
    if not (
        _rel_ok(rel)
        and type(channel) is str
        and tree[:1] == b"["
        and located[:1] == b"{"
        and _head_ok(head)
        and deps[0][0] == rel
        and _flat_ok(sources)
    ):
        return None

    def full(r: str) -> str:
        return os.path.join(tdir, *r.split("/"))

    return Kept(
        path=full(rel),
        channel=channel,
        pointer=pointer,
        where=where,
        depth=depth,
        weight=(weight[0], weight[1], weight[2]) if weight is not None else None,
        deps=tuple((full(r), (k[0], k[1], k[2], k[3]), None) for r, k in deps),
        sources=Sources(tdir, sources),
        homes=tuple(full(h) for h in homes),
        types=frozenset(tuple(t) for t in types),
        count=count,
        tree=tree,
        body=body,
        located=located,
    )


def _head_ok(head: list[Any]) -> bool:
    """A line's head: its pointer, where, depth, count, weight, deps, homes and types."""
    pointer, where, depth, count, weight, deps, homes, types = head
    return (
        type(pointer) is str
        and type(where) is str
        and _int_ok(depth, 1 << 16)
        and _int_ok(count, 1 << 32)
        and _weight_ok(weight)
        and type(deps) is list
        and bool(deps)
        and all(type(d) is list and len(d) == 2 and _rel_ok(d[0]) and _key_ok(d[1]) for d in deps)
        and type(homes) is list
        and all(_rel_ok(h) for h in homes)
        and type(types) is list
        and all(type(t) is list and t and all(type(p) is str for p in t) for t in types)
    )


def _line_key(span: Span) -> tuple[str, str] | None:
    """(file, channel) a line names, read off its key alone (nothing else is parsed)."""
    data, start, end = span
    tab = data.find(b"\t", start, end)
    try:
        got = orjson.loads(memoryview(data)[start + 9 : tab]) if tab > 0 else None
    except ValueError:
        return None
    if type(got) is list and len(got) == 2 and type(got[0]) is str and type(got[1]) is str:
        return got[0], got[1]
    return None


def decode_values(layout: Layout, tdir: Path, data: bytes) -> dict[tuple[str, str], Kept] | None:
    """Every list a values file holds (fsck), None when it is not one or a line of it does not
    decode (a read skips such a line; fsck reports the file, and ``--repair`` removes it)."""
    if not data.startswith(VALUES_HEADER):
        return None
    out: dict[tuple[str, str], Kept] = {}
    for span in _spans(data):
        kept = _decode(tdir, span)
        if kept is None:
            return None
        out[kept.path, kept.channel] = kept
    return out


def _spans(data: bytes) -> list[Span]:
    """The lines of a values file after its header, none copied."""
    out, at = [], len(VALUES_HEADER)
    while at < len(data):
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        if end > at:
            out.append((data, at, end))
        at = end + 1
    return out


class BodyIndex:
    """The values index of the threads this process reads: their lines, decoded when asked."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._lock = threading.Lock()
        # thread folder -> its lines by (file below it, channel), undecoded, their files' bytes
        # within KEPT_BYTES and THREADS_KEPT files; a line is dropped once decoded (the entry
        # made of it is kept with the other values), and the file's bytes with the last of its
        # lines; a thread with none (no file: most) is kept as such, up to NO_FILE_KEPT
        self._files: OrderedDict[Path, dict[tuple[str, str], Span]] = OrderedDict()
        self._with_lines: OrderedDict[Path, None] = OrderedDict()  # those of them with lines
        self._bytes = 0

    def path(self, tdir: Path) -> Path | None:
        return index_path(self.layout, tdir, VALUES_SUFFIX)

    def find(self, tdir: Path, path: Path, channel: str) -> Kept | None:
        """The list the index has for ``channel`` in the link ``path``, unchecked (the caller
        compares its deps and folders), or None."""
        top = f"{tdir}{os.sep}"
        text = str(path)
        if not text.startswith(top):
            return None
        key = (text[len(top) :].replace(os.sep, "/"), channel)
        with self._lock:
            lines = self._files.get(tdir)
        if lines is None:
            lines = self._load(tdir)
        with self._lock:
            line = lines.pop(key, None)
            if line is not None and not lines and self._files.get(tdir) is lines:
                self._with_lines.pop(tdir, None)  # its last line used: the file's bytes go
                self._bytes -= _size(line)
        if line is None:
            return None
        kept = _decode(tdir, line)
        return kept if kept is not None and kept.path == text and kept.channel == channel else None

    def _read(self, tdir: Path) -> dict[tuple[str, str], Span]:
        """The thread's file as it is now: its lines by (file, channel), the last of each."""
        path = self.path(tdir)
        data = read_index_file(self.layout, path) if path is not None else None
        lines: dict[tuple[str, str], Span] = {}
        if data is not None and data.startswith(VALUES_HEADER):
            for span in _spans(data):
                key = _line_key(span)
                if key is not None:
                    lines.pop(key, None)
                    lines[key] = span  # later lines win, and come last
        return lines

    def _load(self, tdir: Path) -> dict[tuple[str, str], Span]:
        lines = self._read(tdir)
        with self._lock:
            old = self._files.pop(tdir, None)
            self._with_lines.pop(tdir, None)
            if old is not None:
                self._bytes -= _size(old)
            self._files[tdir] = lines
            self._bytes += _size(lines)
            if lines:
                self._with_lines[tdir] = None
            while len(self._with_lines) > 1 and (
                self._bytes > KEPT_BYTES or len(self._with_lines) > THREADS_KEPT
            ):
                gone = self._files.pop(self._with_lines.popitem(last=False)[0], None)
                self._bytes -= _size(gone)
            while len(self._files) > NO_FILE_KEPT:
                oldest, gone = self._files.popitem(last=False)
                self._with_lines.pop(oldest, None)
                self._bytes -= _size(gone)
        return lines

    def save(self, tdir: Path, kept: Kept) -> None:
        """Write ``kept`` down with the thread's last ``KEEP - 1`` other lines as its file has
        them now (a line whose file is gone is dropped: the thread was removed or pruned); a
        root that cannot take it is logged and left alone (index.write_index_file). Should
        the thread have gone meanwhile (its file is no longer the one read), the file goes
        too: what it holds is the thread's messages."""
        line = encode_line(tdir, kept)
        path = self.path(tdir)
        if line is None or path is None:
            return
        key = (kept.path[len(str(tdir)) + 1 :].replace(os.sep, "/"), kept.channel)
        kept_lines = [
            data[start:end]
            for k, (data, start, end) in self._read(tdir).items()
            if k != key and os.path.lexists(tdir / k[0])
        ]
        kept_lines = [*kept_lines[-(KEEP - 1) :], line.rstrip(b"\n")] if KEEP > 1 else [line.rstrip(b"\n")]
        written = write_index_file(self.layout, path, VALUES_HEADER + b"\n".join(kept_lines) + b"\n")
        self.let_go(tdir)
        try:  # asked now, not as this read's look first found it (caches.one_look)
            now: StatKey | None = stat_key(os.lstat(kept.path))
        except OSError:
            now = None
        if written is not None and now != kept.deps[0][1]:
            self.forget(tdir)  # removed (or changed) while the line was made: not left behind

    def let_go(self, tdir: Path) -> None:
        """Drop the thread's lines as read (caches.KeptThreads): its file stays."""
        with self._lock:
            old = self._files.pop(tdir, None)
            self._with_lines.pop(tdir, None)
            if old is not None:
                self._bytes -= _size(old)

    def forget(self, tdir: Path) -> None:
        """A thread removed, replaced or repaired: its lines go, its file too (it holds the
        thread's messages; a deleted thread leaves none behind in the cache)."""
        self.let_go(tdir)
        remove_index_file(self.layout, self.path(tdir))


def _size(lines: dict[tuple[str, str], Span] | Span | None) -> int:
    """The bytes lines keep: their file's, as long as any of them is kept (each is a view)."""
    if isinstance(lines, dict):
        lines = next(iter(lines.values()), None)
    return len(lines[0]) if lines is not None else 0
