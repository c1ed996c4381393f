"""Embeddings of the store's texts, kept under ``.cache/embeddings/``: derived, never committed.

Semantic search (``RepoStore(index=...)``) scores an item by the embeddings of its texts.
They are kept here, one file per embedder, keyed by the SHA-256 of the text embedded, so an
entry is right for every item that holds that text, whatever else changed: an item whose
text is unchanged is never embedded again, a changed one is embedded on its next put or
search, and items that arrive with ``git pull`` are embedded on the first search that meets
them. That is the cache rule (caches.py) by construction: what an entry was derived from is
named by its key, so it cannot go stale. Losing the file costs embedding calls, nothing else.

A file is a header line (JSON: format, dims, embedder) and then records appended, each the
32-byte digest and ``dims`` little-endian doubles. Appends take a lock file and happen in one
``write``; a torn last record (a killed process) is ignored on read and cut off before the
next append. A file whose header is not this embedder's, or that is over the size a read
accepts, is ignored whole and started again. It is not fsynced: a cache.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import stat
import sys
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from .documents import Documents
from .jsonread import MAX_FILE_BYTES, read_bounded

_log = logging.getLogger(__name__)

FORMAT = 1
FOLDER = "embeddings"
DIGEST_BYTES = 32


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """The embeddings one embedder made, in memory and in its file under ``.cache/``."""

    def __init__(self, documents: Documents, embedder: str, dims: int) -> None:
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise ValueError(f"index dims={dims!r}: expected a positive integer")
        self.docs = documents
        self.embedder = embedder
        self.dims = dims
        name = hashlib.sha256(f"{dims}\n{embedder}".encode()).hexdigest()[:32]
        self.path = documents.layout.cache_dir / FOLDER / f"{name}.vec"
        self._lock_path = documents.layout.cache_dir / "locks" / FOLDER / f"{name}.lock"
        self._header = orjson.dumps({"format": FORMAT, "dims": dims, "embedder": embedder}) + b"\n"
        self._record = DIGEST_BYTES + 8 * dims
        self._vectors: dict[bytes, list[float]] = {}
        self._seen: tuple[int, int] | None = None  # (inode, bytes read) of the file
        self._mutex = threading.Lock()  # abatch reads from worker threads while the loop adds

    def __len__(self) -> int:
        return len(self._vectors)

    def known(self, digests: Iterable[bytes]) -> dict[bytes, list[float]]:
        """The vectors kept for these digests (the file read again first if it grew)."""
        with self._mutex:
            self._load()
            return {d: self._vectors[d] for d in digests if d in self._vectors}

    def missing(self, digests: Iterable[bytes]) -> list[bytes]:
        with self._mutex:
            self._load()
            return [d for d in dict.fromkeys(digests) if d not in self._vectors]

    def add(self, pairs: Sequence[tuple[bytes, Sequence[float]]]) -> None:
        """Keep new vectors, in memory and appended to the file. A vector of the wrong length
        is a ValueError naming the embedder (its embeddings do not fit the configured dims)."""
        fresh: list[tuple[bytes, list[float]]] = []
        with self._mutex:
            self._add(pairs, fresh)
            if fresh:
                self._append(fresh)

    def _add(
        self, pairs: Sequence[tuple[bytes, Sequence[float]]], fresh: list[tuple[bytes, list[float]]]
    ) -> None:
        for digest, vector in pairs:
            values = [float(x) for x in vector]
            if len(values) != self.dims:
                raise ValueError(
                    f"the embedder {self.embedder!r} returned a vector of {len(values)} numbers; "
                    f"the index is configured with dims={self.dims}"
                )
            if digest not in self._vectors:
                self._vectors[digest] = values
                fresh.append((digest, values))

    # -- the file ------------------------------------------------------------------
    def _usable_folder(self) -> bool:
        return self.docs.layout.off_the_way(self.path.parent) is None

    def _load(self) -> None:
        """Read what the file holds beyond what was read (another process's appends)."""
        if not self._usable_folder():
            return
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                return
            start = 0
            if self._seen is not None and self._seen[0] == st.st_ino and self._seen[1] <= st.st_size:
                start = self._seen[1]
                if start == st.st_size:
                    return
            fh.seek(start)
            data = read_bounded(fh, st.st_size - start)
        if start == 0:
            if not data.startswith(self._header):
                return  # another format or embedder: ignored whole (rewritten on the next append)
            body, base = memoryview(data)[len(self._header) :], len(self._header)
        else:
            body, base = memoryview(data), start
        whole = len(body) - len(body) % self._record
        for off in range(0, whole, self._record):
            record = body[off : off + self._record]
            vector = array("d")
            vector.frombytes(record[DIGEST_BYTES:])
            if sys.byteorder == "big":
                vector.byteswap()
            values = vector.tolist()
            if all(map(math.isfinite, values)):
                self._vectors.setdefault(bytes(record[:DIGEST_BYTES]), values)
        self._seen = (st.st_ino, base + whole)

    def _append(self, records: list[tuple[bytes, list[float]]]) -> None:
        """Keep new records in the file too. A cache, written on reads (a search embeds what
        it meets): a root that cannot take it (read-only, full, a lock not taken in time)
        costs embedding calls in the next process, never the read; the records stay in memory."""
        if not self._usable_folder():
            _log.info("embeddings not kept: %s leads outside the root", self.path.parent)
            return
        blob = bytearray()
        for digest, values in records:
            vector = array("d", values)
            if sys.byteorder == "big":
                vector.byteswap()
            blob += digest + vector.tobytes()
        try:
            self.docs.writer.ensure_gitignore()  # before the first file under .cache/: git never sees one
            self.docs.writer.check_inside(self._lock_path.parent)
            with self.docs.locks.hold(self._lock_path, self.embedder, exclusive=True, what="embeddings of"):
                self._append_locked(bytes(blob))
        except OSError as exc:
            self._seen = None  # a write cut short: read the file whole next time
            _log.info("embeddings not kept in %s: %s", self.path, exc)

    def _append_locked(self, blob: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.path, flags, 0o644)
        with os.fdopen(fd, "r+b") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return
            head = fh.read(len(self._header))
            size = st.st_size
            if head != self._header or size > MAX_FILE_BYTES - len(blob):
                fh.seek(0)
                fh.truncate()  # not this embedder's, damaged or full: start again
                fh.write(self._header)
                size = len(self._header)
                self._seen = None
            torn = (size - len(self._header)) % self._record
            if torn:
                size -= torn
                fh.truncate(size)  # a record cut short by a killed process
            fh.seek(size)
            fh.write(blob)
            fh.flush()
            if self._seen is not None and self._seen == (st.st_ino, size):
                self._seen = (st.st_ino, size + len(blob))


def folder(documents: Documents) -> Path:
    """Where every embedder's file lives (``fsck`` and the docs name it)."""
    return documents.layout.cache_dir / FOLDER
