"""Where a thread's objects live, with their trees, for a fresh process (the derived index).

Format 4 keeps each message in the checkpoint file that first held it, so the list of a long
thread refers to a message in almost every checkpoint before it: a process with empty caches
opened, parsed and checked a file per message to read one state (1,000 files at 300 turns).
This index is ``.cache/index/threads/<thread>~objects``: one line per holder file, ``<crc32>
<json>``, the JSON ``[file below the thread folder, its stat key, {name: tree}]``. A process
splits the file into lines by the holder each names and decodes a holder's line only when a
reference names that holder, once (the holder's last line that decodes: earlier ones are
dead). A fresh read takes an object from it instead of from its holder while

* the holder's stat key is the one recorded (one lstat: a hand edit, a checkout, a prune
  shows), and the holder lies inside the root with no symlink on the way; and
* the tree matches its name (the sha256 of its canonical bytes, as every object read is
  checked): a line forged into a pull request can serve nothing but the object named.

A line is written only for a file known to be settled (caches.settled): by the writer once
a later put finds the file older than ``RACY_NS`` and still holding the very bytes it wrote,
by a reader for a file that was settled before it read it. So an edit made in the same clock
tick as the write is seen, as in process. The file is appended to (no fsync: a cache); a
torn or damaged line fails its checksum and is skipped; a file over ``MAX_BYTES`` is neither
read nor appended to (``fsck --repair`` removes it, and the next reads write it again).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from .caches import RACY_NS, StatKey, bytes_digest, file_digest, settled, stat_key
from .index import (
    OBJECTS_HEADER,
    OBJECTS_SUFFIX,
    HolderLines,
    decode_holder,
    encode_line,
    holder_lines,
    index_path,
    read_index_file,
    remove_index_file,
    write_index_file,
)
from .layout import Layout

_log = logging.getLogger(__name__)

MAX_BYTES = 64 * 1024 * 1024  # a thread's objects beyond this are read from their files
START = 32  # holders a thread has before it gets an index: reading fewer files costs little
THREADS_KEPT = 64  # threads whose index a process keeps as read (a thread's messages: some MB each)
COMPACT_BYTES = 256 * 1024  # a file this big with over half its lines dead is written anew
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # no symlink, no FIFO wait
_UNSEEN = object()

Held = tuple[StatKey, dict[str, Any]]  # a holder's stat key and the objects it holds, {name: tree}


class _Lines:
    """A thread's objects file as read: its lines by holder, each holder's decoded when first
    asked for (``held``), and what this process wrote down since."""

    __slots__ = ("decoded", "raw", "tdir")

    def __init__(self, tdir: Path, raw: HolderLines) -> None:
        self.tdir = tdir
        self.raw = raw
        self.decoded: dict[str, Held | None] = {}

    def held(self, holder: str) -> Held | None:
        """What the holder's last line that decodes says of it, None when no line does."""
        got = self.decoded.get(holder, _UNSEEN)
        if got is _UNSEEN:
            got = None
            for _, rel, line in reversed(self.raw.get(holder, ())):
                got = decode_holder(rel, line)
                if got is not None:
                    break
            self.decoded[holder] = got
        return got  # type: ignore[return-value]


class ObjectIndex:
    """The objects index of each thread this process reads or writes."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._lock = threading.Lock()
        # thread folder -> its objects file as read, the last THREADS_KEPT threads read
        self._entries: OrderedDict[Path, _Lines] = OrderedDict()
        # per thread folder: files this process wrote, (file, bytes_digest of its bytes, objects, written at)
        # (the last THREADS_KEPT threads written: one written once and never again lets go)
        self._unsettled: OrderedDict[Path, list[tuple[Path, bytes, dict[str, Any], int]]] = OrderedDict()
        # per thread folder: lines to write, kept until the thread has START holders (or a file)
        self._lines: dict[Path, list[tuple[Path, StatKey, dict[str, Any]]]] = {}
        self._has_file: set[Path] = set()

    def path(self, tdir: Path) -> Path | None:
        return index_path(self.layout, tdir, OBJECTS_SUFFIX)

    # -- reading -----------------------------------------------------------------------
    def find(
        self,
        tdir: Path,
        name: str,
        holder: str,
        seen: dict[str, Any],
        observed: dict[str, StatKey] | None = None,
    ) -> Any | None:
        """The tree of object ``name`` as the file ``holder`` (its path's text) holds it, while
        the holder is unchanged and inside the root; None: read the holder. ``seen``: what
        this read found of each holder and folder so far (a holder holding several objects
        is checked once); ``observed``: stat keys this read took already (the check of which
        checkpoint continues lstats every checkpoint), compared instead of an lstat. The
        caller checks the tree against its name."""
        objects = seen.get(holder, _UNSEEN)
        if objects is _UNSEEN:
            objects = seen[holder] = self._trusted(tdir, holder, seen, observed)
        return None if objects is None else objects.get(name)

    def key_of(self, tdir: Path, holder: str) -> StatKey | None:
        """The stat key the index records for ``holder`` (what ``find`` compared), or None."""
        lines = self._entries.get(tdir)
        held = lines.held(holder) if lines is not None else None
        return held[0] if held is not None else None

    def _trusted(
        self, tdir: Path, holder: str, seen: dict[str, Any], observed: dict[str, StatKey] | None
    ) -> dict[str, Any] | None:
        """The objects the index has for ``holder`` while its stat key is the recorded one
        (taken now, or earlier in the same read: ``observed``) and its folder lies inside the
        root with no symlink on the way, else None."""
        lines = self._entries.get(tdir)
        if lines is None:
            lines = self._load(tdir)
        held = lines.held(holder)
        if held is None:
            return None
        folder = holder[: holder.rfind(os.sep) + 1]  # its folder's entry ends in a separator, a file's never
        inside = seen.get(folder)
        if inside is None:
            inside = seen[folder] = self.layout.off_the_way(Path(folder)) is None
        if not inside:
            return None  # never a stat through a planted link
        key = observed.get(holder) if observed is not None else None
        try:
            if (key or stat_key(os.lstat(holder))) != held[0]:
                return None
        except OSError:
            return None
        return held[1]

    def _load(self, tdir: Path) -> _Lines:
        path = self.path(tdir)
        data = read_index_file(self.layout, path) if path is not None else None
        raw = holder_lines(tdir, data) if data is not None and len(data) <= MAX_BYTES else None
        lines = _Lines(tdir, raw or {})
        if path is not None and data is not None and raw is not None and len(data) > COMPACT_BYTES:
            self._compact(path, data, lines)
        with self._lock:
            if data is not None:
                self._has_file.add(tdir)
            got = self._entries.setdefault(tdir, lines)
            while len(self._entries) > THREADS_KEPT:
                self._entries.popitem(last=False)
            return got

    def _compact(self, path: Path, data: bytes, lines: _Lines) -> None:
        """Write the file anew with the last line of each holder that is unchanged, when over
        half its lines are dead (a holder read again after a checkout, pruned or removed):
        appending only, the file would grow with every checkout until it is too big to use."""
        if data.count(b"\n") - 1 <= 2 * len(lines.raw):
            return
        kept = []
        inside: dict[str, bool] = {}  # folder -> inside the root, no symlink on the way
        for holder in lines.raw:
            held = lines.held(holder)
            if held is None:
                continue
            folder = os.path.dirname(holder)
            if folder not in inside:
                inside[folder] = self.layout.off_the_way(Path(folder)) is None
            try:
                if not inside[folder] or stat_key(os.lstat(holder)) != held[0]:
                    lines.decoded[holder] = None
                    continue  # never a stat through a planted link
            except OSError:
                lines.decoded[holder] = None
                continue
            rel = os.path.relpath(holder, lines.tdir).replace(os.sep, "/")
            kept.append(encode_line(rel, held[0], held[1]))
        write_index_file(self.layout, path, OBJECTS_HEADER + b"".join(kept))

    # -- writing -----------------------------------------------------------------------
    def wrote(
        self, tdir: Path, path: Path, data: bytes, objects: dict[str, Any]
    ) -> list[tuple[Path, StatKey]]:
        """A checkpoint file this process just wrote, holding ``objects``: written down once
        settled. Returns the files written before that have settled meanwhile, still holding
        the bytes written, and their stat keys (the lineage index takes them too)."""
        with self._lock:
            pending = self._unsettled.setdefault(tdir, [])
            self._unsettled.move_to_end(tdir)
            while len(self._unsettled) > THREADS_KEPT:
                self._unsettled.popitem(last=False)
            pending.append((path, bytes_digest(data), objects, time.time_ns()))
            if len(pending) > 64:  # never settled (a clock gone back?): not worth keeping
                del pending[:-64]
        return self.settle(tdir)

    def read(
        self, tdir: Path, path: Path, before: os.stat_result, objects: dict[str, Any], read_at: int
    ) -> None:
        """A holder a reader just read (``before``: its lstat then): written down when it was
        settled before the read and is unchanged since."""
        if not objects or not settled(before, read_at):
            return
        try:
            if stat_key(os.lstat(path)) != stat_key(before):
                return
        except OSError:
            return
        with self._lock:
            self._lines.setdefault(tdir, []).append((path, stat_key(before), objects))

    def flush(self, tdir: Path) -> None:
        """Write down the lines kept for a thread (a read is over), once it has START holders."""
        self._append(tdir, [])

    def settle(self, tdir: Path) -> list[tuple[Path, StatKey]]:
        """Write down the files this process wrote that have settled holding its bytes; them."""
        now = time.time_ns()
        with self._lock:
            pending = self._unsettled.get(tdir, [])
            ripe = [p for p in pending if now - p[3] > RACY_NS]
            if not ripe:
                return []
            self._unsettled[tdir] = [p for p in pending if now - p[3] <= RACY_NS]
        lines = []
        for path, digest, objects, _ in ripe:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            checked_at = time.time_ns()
            if settled(st, checked_at) and file_digest(path) == digest:
                lines.append((path, stat_key(st), objects))
        self._append(tdir, [line for line in lines if line[2]])
        return [(path, key) for path, key, _ in lines]

    def _append(self, tdir: Path, more: list[tuple[Path, StatKey, dict[str, Any]]]) -> None:
        with self._lock:
            lines = self._lines.pop(tdir, []) + more
            if not lines:
                return
            if tdir not in self._has_file and len(lines) < START:
                self._lines[tdir] = lines  # a short thread: its few files are read quickly
                return
            self._has_file.add(tdir)
        index = self.path(tdir)
        if index is None:
            return
        data = b"".join(encode_line(p.relative_to(tdir).as_posix(), k, o) for p, k, o in lines)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW
        try:
            if self.layout.off_the_way(index.parent) is not None:
                return
            index.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(index, flags, 0o644)
        except OSError as exc:  # read-only, full, a symlink in the way: only time is lost
            _log.info("objects index not written to %s: %s", index, exc)
            return
        try:
            st = os.fstat(fd)
            size = st.st_size
            if stat.S_ISREG(st.st_mode) and size + len(data) <= MAX_BYTES:
                os.write(fd, (OBJECTS_HEADER if size == 0 else b"") + data)
        except OSError as exc:
            _log.info("objects index not written to %s: %s", index, exc)
        finally:
            os.close(fd)
        with self._lock:
            known = self._entries.get(tdir)
            if known is not None:
                for path, key, objects in lines:
                    known.decoded[str(path)] = (key, objects)

    def let_go(self, tdir: Path) -> None:
        """Drop the thread's file as read and the lines of a short thread kept until it has
        ``START`` holders (caches.KeptThreads): they hold its objects, and are found again
        when the thread is read again. Lines of files this process wrote stay until settled."""
        with self._lock:
            self._entries.pop(tdir, None)
            self._lines.pop(tdir, None)

    def forget(self, tdir: Path) -> None:
        """A thread removed, replaced or repaired: what was kept of it goes, its file too (it
        holds the thread's messages; a deleted thread leaves none behind in the cache)."""
        with self._lock:
            self._entries.pop(tdir, None)
            self._unsettled.pop(tdir, None)
            self._lines.pop(tdir, None)
            self._has_file.discard(tdir)
        remove_index_file(self.layout, self.path(tdir))
