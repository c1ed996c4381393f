"""Embeddings of the store's texts, kept under ``.cache/embeddings/``: derived, never committed.

Semantic search (``RepoStore(index=...)``) scores an item by the embeddings of its texts.
They are kept here, one file per embedder, keyed by the SHA-256 of the text embedded, so an
entry is right for every item that holds that text, whatever else changed: an item whose
text is unchanged is never embedded again, a changed one is embedded on its next put or
search, and items that arrive with ``git pull`` are embedded on the first search that meets
them. That is the cache rule (caches.py) by construction: what an entry was derived from is
named by its key, so it cannot go stale. Losing the file costs embedding calls, nothing else.

**Never trusted because it is there.** The key names the text, not the vector: a file that
``git`` checked out (force-committed by a pull request, ``.cache/`` is ignored only by
default) could give a planted memory the query's own vector and the real policy its
opposite, and search would rank them so. So every record carries an HMAC of the header
(format, dims, embedder) and of its digest and vector, under a key of this user kept outside
every work tree (``cache_key``: ``$XDG_CACHE_HOME/langgraph-checkpoint-repo/cache.key``, else
the platform's cache folder). A file made under another key (another user's or machine's, or
forged) is ignored whole, and a record whose MAC does not verify is ignored: either is said
in a warning, its texts are embedded again, and the file is started again on the next append.
Where no key can be kept (no writable cache folder), a key lives for the process only.

A file is a header line (JSON: format, dims, embedder, the key's id) and then records
appended, each the 32-byte digest, its 16-byte MAC and ``dims`` little-endian doubles.
Appends take a lock file and happen in one ``write``; a torn last record (a killed process)
is ignored on read and cut off before the next append. A file whose header is not this
embedder's, or that is over the size a read accepts, is ignored whole and started again. It
is not fsynced: a cache.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import secrets
import stat
import sys
import tempfile
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from .files import Files
from .jsonread import MAX_FILE_BYTES, read_bounded

_log = logging.getLogger(__name__)

FORMAT = 2  # 1: records without a MAC (never read again: embedded anew)
FOLDER = "embeddings"
DIGEST_BYTES = 32
MAC_BYTES = 16
KEY_BYTES = 32
KEY_NAME = "cache.key"


def text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def key_folder() -> Path | None:
    """This user's cache folder for the package, outside every work tree (no checkout can
    write it): ``$XDG_CACHE_HOME`` when it is an absolute path, else ``~/.cache`` (macOS:
    ``~/Library/Caches``, Windows: ``%LOCALAPPDATA%``); None when there is no home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        if os.path.isabs(base):
            top = Path(base)
        elif sys.platform == "win32":
            local = os.environ.get("LOCALAPPDATA", "")
            top = Path(local) if os.path.isabs(local) else Path.home() / "AppData" / "Local"
        elif sys.platform == "darwin":
            top = Path.home() / "Library" / "Caches"
        else:
            top = Path.home() / ".cache"
    except (RuntimeError, KeyError, OSError):  # no home folder to be found
        return None
    return top / "langgraph-checkpoint-repo"


_KEYS: dict[Path | None, bytes] = {}
_KEYS_LOCK = threading.Lock()


def cache_key() -> bytes:
    """The key this user's embeddings are signed with (read once per process and folder)."""
    folder = key_folder()
    with _KEYS_LOCK:
        key = _KEYS.get(folder)
        if key is None:
            key = _KEYS[folder] = _load_or_make_key(folder)
        return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path} is not a plain file")
        data = fh.read(KEY_BYTES + 1)
    return data if len(data) == KEY_BYTES else None


def _load_or_make_key(folder: Path | None) -> bytes:
    """The key in ``folder``, made there the first time (a new file linked into place, so two
    processes making it at once agree on the one that won); one for this process only when
    the folder cannot hold it."""
    if folder is None:
        _log.info("no home folder for the embeddings key: embeddings are kept for this process only")
        return secrets.token_bytes(KEY_BYTES)
    path = folder / KEY_NAME
    try:
        key = _read_key(path)
        if key is not None:
            return key
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".key.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(KEY_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
            if os.path.lexists(path):  # there, but not a key (damaged): replaced
                os.replace(tmp, path)
            else:
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    pass  # another process made it first: that one is the key
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        key = _read_key(path)
        if key is None:
            raise OSError(f"{path} holds no key after it was written")
        return key
    except OSError as exc:
        _log.info("no embeddings key in %s (%s): embeddings are kept for this process only", folder, exc)
        return secrets.token_bytes(KEY_BYTES)


class VectorCache:
    """The embeddings one embedder made, in memory and in its file under ``.cache/``."""

    def __init__(self, documents: Files, embedder: str, dims: int) -> None:
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise ValueError(f"index dims={dims!r}: expected a positive integer")
        self.docs = documents
        self.embedder = embedder
        self.dims = dims
        name = hashlib.sha256(f"{dims}\n{embedder}".encode()).hexdigest()[:32]
        self.path = documents.layout.cache_dir / FOLDER / f"{name}.vec"
        self._lock_path = documents.layout.cache_dir / "locks" / FOLDER / f"{name}.lock"
        key = cache_key()
        key_id = hashlib.sha256(b"langgraph-repo embeddings key id\n" + key).hexdigest()[:16]
        self._about = {"format": FORMAT, "dims": dims, "embedder": embedder}
        self._header = orjson.dumps({**self._about, "key": key_id}) + b"\n"
        self._mac = hmac.new(key, self._header, hashlib.sha256)  # copied for each record
        self._record = DIGEST_BYTES + MAC_BYTES + 8 * dims
        self._vectors: dict[bytes, list[float]] = {}
        self._seen: tuple[int, int] | None = None  # (inode, bytes read) of the file
        self._refused: tuple[int, int, int] | None = None  # (inode, size, mtime) of a foreign file
        self._restart = False  # a record failed its MAC: the next append starts the file again
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
            if self._refused == (st.st_ino, st.st_size, st.st_mtime_ns):
                return  # the foreign file of the last look, unchanged: said once
            start = 0
            if self._seen is not None and self._seen[0] == st.st_ino and self._seen[1] <= st.st_size:
                start = self._seen[1]
                if start == st.st_size:
                    return
            fh.seek(start)
            data = read_bounded(fh, st.st_size - start)
        if start == 0:
            if not data.startswith(self._header):
                self._refuse(data, st)
                return
            body, base = memoryview(data)[len(self._header) :], len(self._header)
        else:
            body, base = memoryview(data), start
        whole = len(body) - len(body) % self._record
        forged = 0
        for off in range(0, whole, self._record):
            record = body[off : off + self._record]
            digest, mac = bytes(record[:DIGEST_BYTES]), record[DIGEST_BYTES : DIGEST_BYTES + MAC_BYTES]
            raw = record[DIGEST_BYTES + MAC_BYTES :]
            if not hmac.compare_digest(self._sign(digest, raw), mac):
                forged += 1
                continue
            vector = array("d")
            vector.frombytes(raw)
            if sys.byteorder == "big":
                vector.byteswap()
            values = vector.tolist()
            if all(map(math.isfinite, values)):
                self._vectors.setdefault(digest, values)
        self._seen = (st.st_ino, base + whole)
        if forged:
            self._restart = True
            _log.warning(
                "%d embedding(s) in %s do not carry this cache's signature (forged, or written "
                "under another key): ignored, their texts are embedded again",
                forged,
                self.path,
            )

    def _sign(self, digest: bytes, raw: bytes | memoryview) -> bytes:
        mac = self._mac.copy()
        mac.update(digest)
        mac.update(raw)
        return mac.digest()[:MAC_BYTES]

    def _refuse(self, data: bytes, st: os.stat_result) -> None:
        """A file whose header is not this cache's: ignored whole (started again on the next
        append), and said once while it stays as it is. Made under another key, it is a
        warning: a file from git or from another machine, never used here."""
        self._refused = (st.st_ino, st.st_size, st.st_mtime_ns)
        self._seen = None
        try:
            head = orjson.loads(data[: data.index(b"\n")]) if b"\n" in data[:4096] else None
        except orjson.JSONDecodeError:
            head = None
        if isinstance(head, dict) and {k: head.get(k) for k in self._about} == self._about:
            _log.warning(
                "%s was not written under this user's embeddings key (committed to git, or "
                "copied from another machine): ignored, its texts are embedded again",
                self.path,
            )
        else:
            _log.info("%s is of another format or embedder: ignored, started again", self.path)

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
            raw = vector.tobytes()
            blob += digest + self._sign(digest, raw) + raw
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
            if head != self._header or size > MAX_FILE_BYTES - len(blob) or self._restart:
                fh.seek(0)
                fh.truncate()  # not this cache's, damaged, forged or full: start again
                fh.write(self._header)
                size = len(self._header)
                self._seen = None
                self._restart, self._refused = False, None
            torn = (size - len(self._header)) % self._record
            if torn:
                size -= torn
                fh.truncate(size)  # a record cut short by a killed process
            fh.seek(size)
            fh.write(blob)
            fh.flush()
            if self._seen is not None and self._seen == (st.st_ino, size):
                self._seen = (st.st_ino, size + len(blob))


def folder(documents: Files) -> Path:
    """Where every embedder's file lives (``fsck`` and the docs name it)."""
    return documents.layout.cache_dir / FOLDER
