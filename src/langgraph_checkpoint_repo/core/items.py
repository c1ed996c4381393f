"""The store's files: one validated JSON file per item, ``store/<label>/.../<key>.json``.

What ``RepoStore`` (the adapter, repostore.py) and ``langgraph-repo store`` keep, with no
LangGraph in sight. Invariants:

* an item lies where its names say: each namespace label a folder and the key the file name,
  every one a segment made by ``layout.encode_segment`` (as thread ids are), so any label or
  key stays inside its folder; the file names its namespace and key verbatim and a read
  refuses one whose names do not give back its own path (a file planted in another
  namespace's folder is an error naming it, never that namespace's item);
* a label is never empty and holds no ``.`` and no NUL (LangGraph's rule, ``label_problem``):
  so a folder name never holds a ``.``, and an item file always ends in ``.json``; the two
  cannot be confused;
* every write is validated (schema, place, bounds) and atomic and durable (writing.py), under
  the namespace's lock (a filelock across processes, exclusive inside one): a read, modify,
  write (``created_at`` kept, compare-and-swap, a TTL refresh) never loses a concurrent write;
* every read goes through ``Files.read_doc`` (bounded strict JSON, its schema, no symlink,
  nothing outside the root, the cache rule of caches.py), so hand edits and ``git pull`` are
  seen on the next call;
* ``updated_at`` grows with every write of an item, so it names one version of the item
  (compare-and-swap compares it);
* a stored time is data like any other field: a reader accepts only a time it can compute
  with (``_time``), ``validate`` bounds them (``time_problems``: none after now plus
  ``CLOCK_SKEW``, ``updated_at`` not before ``created_at``), and the writer never derives a
  new time from one past those bounds (a forged ``9999-12-31`` made every later put raise
  OverflowError): it stamps now instead, and says so in a log line.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson

from .caches import CACHE_ENTRIES, LRU, StatKey, settled, stat_key
from .errors import BadInputError, FileFormatError, InvalidWriteError, ItemChangedError, symlink_refused
from .files import Files
from .format.validation import SCHEMA_VERSION, validate_read
from .index import is_plain, load_items, save_items
from .jsonread import SURROGATE_MESSAGE, lone_surrogate
from .layout import STORE, Layout, encode_segment
from .removal import remove_files

if TYPE_CHECKING:
    from .redaction import Redactor

_log = logging.getLogger(__name__)

KIND: Final = "item"
SUFFIX: Final = ".json"
MAX_DEPTH = 64  # namespace labels: deeper paths pass what filesystems allow for a path
MAX_PATH_CHARS = 2048  # an item's path below the root, encoded; Linux allows 4,096 for the whole
INDEX_AFTER_READS = 16  # a walk that read at least this many files records the folder (index.py)
#: how far past now a stored time may lie (another machine's clock): docs/store.md, "Times"
CLOCK_SKEW: Final = timedelta(days=1)
#: the longest TTL a put takes or a file may hold: a century, far within what a date can hold
MAX_TTL_MINUTES: Final = 100 * 36_525 * 24 * 60


class _Any:
    """The unconditional write: no compare-and-swap."""

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()
Expect = "datetime | None | _Any"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """How a time is written: UTC, microseconds, ``+00:00`` (what ``fromisoformat`` reads back
    on every Python the package supports)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


# ----------------------------------------------------------------------
# names
# ----------------------------------------------------------------------
def label_problem(label: object) -> str | None:
    """Why a namespace label is not one (LangGraph's rule: a non-empty string without ``.``
    or NUL, ``langgraph.store.base._validate_namespace_labels``), or None."""
    if not isinstance(label, str):
        return f"must be a string, not {type(label).__name__}"
    if not label:
        return "cannot be empty"
    if "." in label:
        return "cannot contain a period ('.')"
    if "\x00" in label:
        return "cannot contain a NUL byte"
    return None


def check_namespace(namespace: Sequence[str], *, of_item: bool = True) -> tuple[str, ...]:
    """The namespace as a tuple, or BadInputError naming the label that is not one. An item's
    namespace has at least one label; a prefix (``of_item=False``) may have none."""
    ns = tuple(namespace)
    if of_item and not ns:
        raise BadInputError("an item's namespace needs at least one label")
    if len(ns) > MAX_DEPTH:
        raise BadInputError(f"namespace {ns!r} has {len(ns)} labels; at most {MAX_DEPTH} are stored")
    for label in ns:
        problem = label_problem(label)
        if problem is not None:
            raise BadInputError(f"namespace label {label!r} of {ns!r} {problem}")
    return ns


def namespace_dir(layout: Layout, namespace: Sequence[str]) -> Path:
    folder = layout.store_dir
    for label in namespace:
        folder = folder / encode_segment(label)
    return folder


def item_path(layout: Layout, namespace: Sequence[str], key: str) -> Path:
    return namespace_dir(layout, namespace) / (encode_segment(key) + SUFFIX)


def dotted(namespace: Sequence[str]) -> str:
    """A namespace as one string, labels joined by ``.`` (no label holds one): how the command
    line and the errors spell it, as LangGraph's SQL stores do."""
    return ".".join(namespace)


# ----------------------------------------------------------------------
# values
# ----------------------------------------------------------------------
_INT_RANGE = range(-(2**63), 2**64)  # what orjson writes as a JSON integer


def _is_plain_json(value: Any) -> bool:
    """Whether a value is JSON as it stands: dicts with string keys (none starting with ``$``,
    the tag marker), lists and tuples, strings, finite floats, 64-bit integers, booleans, None."""
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str or kind is bool or node is None:
            continue
        if kind is int:
            if node not in _INT_RANGE:
                return False
        elif kind is float:
            if not math.isfinite(node):
                return False
        elif kind is dict:
            for key, member in node.items():
                if type(key) is not str or key.startswith("$"):
                    return False
                stack.append(member)
        elif kind is list or kind is tuple:
            stack.extend(node)
        else:
            return False
    return True


def plain_tree(value: Mapping[str, Any], redactor: Redactor | None) -> dict[str, Any] | None:
    """A value that is plain JSON as a fresh JSON tree (its own stored form, redacted), or
    None when it is not plain JSON (the serializer makes its tree: repostore.py)."""
    if type(value) is not dict or not _is_plain_json(value):
        return None
    try:
        data = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):  # nested past orjson's depth: the serializer says why
        return None
    tree: dict[str, Any] = orjson.loads(data)
    if redactor is not None:
        tree = redactor.redact_plain(tree, data)
    return tree


def copy_plain(tree: Any) -> Any:
    """A fresh copy of a plain tree, for a caller who may change it (the stored one is cached)."""
    return orjson.loads(orjson.dumps(tree))


# ----------------------------------------------------------------------
# items
# ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoredItem:
    """One item as its file holds it; ``tree`` is the stored value, shared with the cache
    (never changed: ``copy_plain`` or the serializer makes the caller's value)."""

    namespace: tuple[str, ...]
    key: str
    tree: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None
    expires_at: datetime | None
    index: Literal[False] | list[str] | None  # False: not embedded; a list: these fields; None: the store's
    path: Path
    plain: bool  # the tree names no type: it is its own value
    doc: dict[str, Any]

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


def _time(doc: dict[str, Any], field: str, path: Path) -> datetime:
    """A stored time, as an aware time in UTC: one whose UTC form no date can hold (year 1 at
    ``+01:00``, year 9999 at ``-01:00``) is refused, naming the file, not an OverflowError
    later (``iso`` of it, or a microsecond added)."""
    try:
        moment = datetime.fromisoformat(doc[field])
        if moment.tzinfo is None:  # the schema wants an offset; a hand-made document may lack one
            raise ValueError("no UTC offset")
        return moment.astimezone(timezone.utc)
    except ValueError as exc:
        raise FileFormatError(str(path), f"/{field}", f"not a date and time: {exc}") from None
    except OverflowError:
        raise FileFormatError(str(path), f"/{field}", "out of the range of dates (in UTC)") from None


def ttl_problem(minutes: Any) -> str | None:
    """Why a TTL (minutes) cannot be stored, or None: not a finite number, or past a century
    (``now + ttl`` must stay a date)."""
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not math.isfinite(minutes):
        return f"ttl {minutes!r}: expected a finite number of minutes"
    if abs(minutes) > MAX_TTL_MINUTES:
        return f"ttl {minutes!r} minutes: at most {MAX_TTL_MINUTES:,} (a century) is kept"
    return None


def time_problems(item: StoredItem, now: datetime) -> list[tuple[str, str]]:
    """(pointer, why) of each time of an item that no write made at ``now`` or before on a clock
    within ``CLOCK_SKEW`` of ours (``validate``; the merge driver refuses to merge such an item
    field by field). Well-formed and in range is ``stored_item``'s check already."""
    out: list[tuple[str, str]] = []
    latest = now + CLOCK_SKEW
    for name, moment in (("created_at", item.created_at), ("updated_at", item.updated_at)):
        if moment > latest:
            out.append((f"/{name}", f"{iso(moment)} is in the future (after now plus {_skew()})"))
    if item.updated_at < item.created_at:
        out.append(("/updated_at", f"{iso(item.updated_at)} is before created_at {iso(item.created_at)}"))
    if item.ttl_minutes is not None:
        problem = ttl_problem(item.ttl_minutes)
        if problem is not None:
            out.append(("/ttl_minutes", problem))
        elif item.expires_at is not None and item.expires_at > latest + timedelta(
            minutes=max(item.ttl_minutes, 0)
        ):
            out.append(
                (
                    "/expires_at",
                    f"{iso(item.expires_at)} is later than a read now could set (now plus {_skew()} "
                    f"plus ttl_minutes {item.ttl_minutes})",
                )
            )
    return out


def _skew() -> str:
    hours = CLOCK_SKEW.total_seconds() / 3600
    return f"{hours:g} hours of clock skew"


def trusted_time(moment: datetime, now: datetime) -> bool:
    """Whether the writer may derive a new time from a stored one: not after now plus
    ``CLOCK_SKEW`` (``stored_item`` made sure it is a date in range)."""
    return moment <= now + CLOCK_SKEW


def later_by(moment: datetime, minutes: float) -> datetime | None:
    """``moment`` plus ``minutes``, None when no date can hold it (a TTL from a forged file)."""
    try:
        return moment + timedelta(minutes=minutes)
    except (OverflowError, ValueError):
        return None


def stored_item(doc: dict[str, Any], path: Path) -> StoredItem:
    """A validated item document as a ``StoredItem`` (its times parsed, naming the file)."""
    expires = doc.get("expires_at")
    return StoredItem(
        namespace=tuple(doc["namespace"]),
        key=doc["key"],
        tree=doc["value"],
        created_at=_time(doc, "created_at", path),
        updated_at=_time(doc, "updated_at", path),
        ttl_minutes=doc.get("ttl_minutes"),
        expires_at=None if expires is None else _time(doc, "expires_at", path),
        index=doc.get("index"),
        path=path,
        plain=is_plain(doc["value"]),
        doc=doc,
    )


def item_doc(
    namespace: tuple[str, ...],
    key: str,
    tree: dict[str, Any],
    created_at: datetime,
    updated_at: datetime,
    ttl_minutes: float | None = None,
    expires_at: datetime | None = None,
    index: Literal[False] | list[str] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "namespace": list(namespace),
        "key": key,
        "value": tree,
        "created_at": iso(created_at),
        "updated_at": iso(updated_at),
    }
    if ttl_minutes is not None:
        doc["ttl_minutes"] = ttl_minutes
        doc["expires_at"] = iso(expires_at or updated_at)
    if index is not None:
        doc["index"] = index if index is False else list(index)
    return doc


class ItemFiles:
    """The items of one root: read, written and removed through ``Files``."""

    def __init__(self, documents: Files, clock: Callable[[], datetime] | None = None) -> None:
        """``clock``: what "now" is (timestamps, TTL); tests and simulations pass their own."""
        self.docs = documents
        self.layout = documents.layout
        self.clock = clock or utc_now
        self._items = LRU(CACHE_ENTRIES)  # path -> StoredItem of the very document kept for it
        self._walked = LRU(CACHE_ENTRIES // 16)  # folder -> {name: (stat key, item)} of the last walk
        self._store_depth = len(self.layout.store_dir.parts)
        self._store_text = str(self.layout.store_dir)

    @property
    def root(self) -> Path:
        return self.layout.root

    def now(self) -> datetime:
        moment = self.clock()
        return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment

    def path(self, namespace: Sequence[str], key: str) -> Path:
        return item_path(self.layout, namespace, key)

    def lock(self, namespace: tuple[str, ...]) -> AbstractContextManager[None]:
        """The namespace's lock: every writer of its items takes it, alone (a filelock across
        processes; exclusive inside one, since writers read, then write)."""
        self.docs.writer.ensure_gitignore()  # before the lock file: git never sees one
        name = hashlib.sha256(json.dumps(list(namespace)).encode()).hexdigest()[:40]  # ASCII, surrogates too
        lock_path = self.layout.cache_dir / "locks" / STORE / f"{name}.lock"
        self.docs.writer.check_inside(lock_path.parent)
        return self.docs.locks.hold(lock_path, dotted(namespace), exclusive=True, what="store namespace")

    # -- reading -----------------------------------------------------------------
    def get(self, namespace: tuple[str, ...], key: str) -> StoredItem | None:
        """The item, or None when there is none."""
        path = self.path(namespace, key)
        try:
            return self._read(path)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            raise FileFormatError(
                str(path), "/", "a file lies where a namespace folder should be (not part of the layout)"
            ) from None

    def _read(self, path: Path, inside: Callable[[Path], bool] | None = None) -> StoredItem:
        """The item at ``path`` (FileNotFoundError when absent), its names checked to give
        back that very path: a file planted in another namespace's folder is refused."""
        doc = self.docs.read_doc(path, KIND, inside)
        hit: StoredItem | None = self._items.get(path)
        if hit is not None and hit.doc is doc:
            return hit
        item = stored_item(doc, path)
        # read_doc checked the file and folder names against the key and labels, up to a folder
        # named "store": the depth tells that it is the root's store, not one nested inside it
        if len(path.parts) != self._store_depth + len(item.namespace) + 1:
            raise FileFormatError(
                str(path),
                "/namespace",
                f"names namespace {item.namespace!r} and key {item.key!r}, which live at "
                f"{self.path(item.namespace, item.key)}, not here (moved or planted)",
            )
        self._items.put(path, item)
        return item

    def walk(self, prefix: tuple[str, ...] = ()) -> Iterator[StoredItem]:
        """Every item whose namespace starts with ``prefix`` (one removed meanwhile by another
        writer is not one: it is gone).

        An item is reused from the last walk while its file has the stat key it was read with
        and was settled then (the cache rule, caches.py): one ``lstat`` per item, no parse."""
        for folder in self.folders(prefix):
            yield from self._folder_items(folder)

    def _folder_items(self, folder: Path) -> Iterator[StoredItem]:
        """The items of one folder: from this process's last walk, else (a fresh process) from
        the derived index (index.py), else read; every one only while its file's stat key is
        the recorded one. A walk that had to read many recorded their documents for the next
        process."""
        base = str(folder)
        kept: dict[str, tuple[StatKey, StoredItem]] | None = self._walked.get(base)
        recorded = load_items(self.layout, folder) if kept is None else {}
        kept = kept or {}
        now: dict[str, tuple[StatKey, StoredItem]] = {}
        checked: dict[Path, bool] = {}
        names = [n for n in self._names(folder) if n.endswith(SUFFIX)]
        read = 0

        def inside(where: Path) -> bool:  # once per folder, not once per file
            if where not in checked:
                checked[where] = self.layout.contains(where)
            return checked[where]

        for name in names:
            full = base + os.sep + name
            read_at = time.time_ns()
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue  # removed since its folder was listed
            key = stat_key(st)
            hit = kept.get(name)
            entry = recorded.get(name)
            item: StoredItem | None
            if hit is not None and hit[0] == key:
                item = hit[1]
            elif entry is not None and entry[0] == key and stat.S_ISREG(st.st_mode):
                item = self._recorded(Path(full), entry[1])
            else:
                item = None
            if item is None:
                item = self._read_listed(Path(full), inside)
                if item is None:
                    continue
                read += 1
                if not settled(st, read_at):
                    yield item  # changed within the racy window: read again next time
                    continue
            now[name] = (key, item)
            yield item
        self._walked.put(base, now)
        if read >= INDEX_AFTER_READS and len(now) == len(names):
            save_items(self.layout, folder, {n: (k, i.doc) for n, (k, i) in now.items()})

    def _recorded(self, path: Path, doc: dict[str, Any]) -> StoredItem | None:
        """An item from the derived index, validated and placed as a read of its file would be;
        None when it is not (the file is read instead: the files win)."""
        try:
            validate_read(doc, KIND, str(path))
            item = stored_item(doc, path)
        except FileFormatError:
            return None
        segments = [encode_segment(label) for label in item.namespace]
        want = os.sep.join([self._store_text, *segments, encode_segment(item.key) + SUFFIX])
        return item if want == str(path) else None

    def _read_listed(self, path: Path, inside: Callable[[Path], bool] | None = None) -> StoredItem | None:
        try:
            return self._read(path, inside)
        except FileNotFoundError:
            return None  # removed since its folder was listed

    def folders(self, prefix: tuple[str, ...] = ()) -> Iterator[Path]:
        """The prefix's folder and every folder below it (none when it does not exist); a
        symlink or a stray file on the way is refused, naming it."""
        start = namespace_dir(self.layout, prefix)
        problem = self.layout.off_the_way(start)
        if problem is not None:
            raise FileFormatError(
                str(problem[1]), "/", f"refusing to read the store through it ({problem[0]})"
            )
        try:
            st = os.lstat(start)
        except (FileNotFoundError, NotADirectoryError):
            return
        if not stat.S_ISDIR(st.st_mode):
            raise FileFormatError(str(start), "/", "a file lies where a namespace folder should be")
        stack = [start]
        while stack:
            folder = stack.pop()
            yield folder
            for name in reversed(self._names(folder)):
                if name.endswith(SUFFIX):
                    continue
                sub = folder / name
                try:
                    mode = os.lstat(sub).st_mode
                except FileNotFoundError:
                    continue  # removed since it was listed (an empty folder pruned)
                if stat.S_ISLNK(mode):
                    raise symlink_refused(sub)
                if not stat.S_ISDIR(mode):
                    raise FileFormatError(
                        str(sub),
                        "/",
                        f"stray file in the store (items are <key>{SUFFIX}, namespaces folders)",
                    )
                stack.append(sub)

    def _names(self, folder: Path) -> list[str]:
        """A folder's names (temp names left out), kept while its stat is unchanged (caches.py)."""
        listing = self.docs.listings.get(folder)
        return [] if listing is None else listing.names

    def namespaces(self, live_at: datetime | None = None) -> list[tuple[str, ...]]:
        """Every namespace holding an item (holding one not expired at ``live_at``, if given),
        each read from an item's file, so a hashed folder name needs no decoding."""
        found: list[tuple[str, ...]] = []
        for folder in self.folders(()):
            for name in self._names(folder):
                if not name.endswith(SUFFIX):
                    continue
                item = self._read_listed(folder / name)
                if item is not None and (live_at is None or not item.expired(live_at)):
                    found.append(item.namespace)
                    break
        return found

    # -- writing -------------------------------------------------------------------
    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        tree: dict[str, Any],
        *,
        ttl_minutes: float | None = None,
        index: Literal[False] | list[str] | None = None,
        expect: datetime | _Any | None = ANY,
    ) -> StoredItem:
        """Write an item: ``created_at`` kept from the item it replaces, ``updated_at`` now (or
        just after the replaced one's, so it always grows). ``expect``: the ``updated_at`` the
        caller read (None: there was no item); anything else is an ``ItemChangedError``."""
        path = self._checked_path(namespace, key)
        if ttl_minutes is not None:
            problem = ttl_problem(ttl_minutes)
            if problem is not None:
                raise BadInputError(f"item {key!r} of namespace {namespace!r}: {problem}")
        with self.lock(namespace):
            current = self._current(path)
            self._compare(namespace, key, path, current, expect)
            now = self.now()
            updated = now
            if current is not None and updated <= current.updated_at:
                if trusted_time(current.updated_at, now):
                    updated = current.updated_at + timedelta(microseconds=1)
                else:  # forged, or a clock far ahead: never a base for this write's time
                    _log.warning(
                        "%s: updated_at %s is after now plus %s; this write stamps now",
                        path,
                        iso(current.updated_at),
                        _skew(),
                    )
            created = updated
            if current is not None and current.created_at <= updated:
                created = current.created_at
            expires = None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes)
            doc = item_doc(namespace, key, tree, created, updated, ttl_minutes, expires, index)
            return self._write(path, doc)

    def _checked_path(self, namespace: tuple[str, ...], key: str) -> Path:
        """The item's path; a name that is no text (a lone surrogate) or a path too long for a
        filesystem is refused before anything is locked or made."""
        path = self.path(namespace, key)
        bad = lone_surrogate({"namespace": list(namespace), "key": key})
        if bad is not None:
            raise InvalidWriteError(KIND, str(path), bad, SURROGATE_MESSAGE)
        rel = len(str(path)) - len(str(self.root))
        if rel > MAX_PATH_CHARS:
            raise BadInputError(
                f"item {key!r} of namespace {namespace!r} would be a path of {rel} characters below the "
                f"root; at most {MAX_PATH_CHARS} are stored (use fewer or shorter labels)"
            )
        return path

    def _current(self, path: Path) -> StoredItem | None:
        try:
            return self._read(path)
        except FileNotFoundError:
            return None

    def _compare(
        self,
        namespace: tuple[str, ...],
        key: str,
        path: Path,
        current: StoredItem | None,
        expect: datetime | _Any | None,
    ) -> None:
        if isinstance(expect, _Any):
            return
        found = None if current is None else current.updated_at
        if found != expect:
            raise ItemChangedError(
                namespace,
                key,
                None if expect is None else iso(expect),
                None if found is None else iso(found),
                str(path),
            )

    def _write(self, path: Path, doc: dict[str, Any]) -> StoredItem:
        target = self.docs.prepare(KIND, doc, path)
        for attempt in range(3):
            try:
                self.docs.write([[target]])
                break
            except FileNotFoundError:
                # a folder on the way was pruned meanwhile (a delete of its last item elsewhere)
                if attempt == 2:
                    raise
                self.docs.writer.forget()
        self.docs.remember(path, doc, target[1])
        item = stored_item(doc, path)
        kept = self.docs.docs.doc(path)
        if kept is not None:
            self._items.put(path, _with_doc(item, kept))
        return item

    def delete(self, namespace: tuple[str, ...], key: str, *, expect: datetime | _Any | None = ANY) -> bool:
        """Remove an item (True when there was one); empty namespace folders go with it."""
        path = self.path(namespace, key)
        with self.lock(namespace):
            if not isinstance(expect, _Any):
                self._compare(namespace, key, path, self._current(path), expect)
            return self._remove(namespace, path)

    def _remove(self, namespace: tuple[str, ...], path: Path) -> bool:
        existed = os.path.lexists(path)
        remove_files(self.layout, [path], self.docs.durable)  # refuses a symlink on the way
        self._items.pop(path, None)
        self._prune(namespace_dir(self.layout, namespace))
        return existed

    def _prune(self, folder: Path) -> None:
        """Remove the namespace's folder and those above it while they are empty (an empty
        folder is no namespace; git keeps none). The writer is told: a folder it settled and
        that is found again later (made again by another write) is settled again."""
        top = self.layout.store_dir
        while folder != top and folder.is_relative_to(top):
            try:
                os.rmdir(folder)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
                    return
                raise
            self.docs.writer.forget()
            folder = folder.parent

    def refresh(self, items: Sequence[StoredItem]) -> list[tuple[tuple[str, ...], OSError]]:
        """Expire each item with a TTL ``ttl_minutes`` from now (a read that refreshes): written
        only when the item is still the version read and its expiry moves.

        The write is a side effect of a read: a namespace whose refresh cannot be written (a
        read-only root, a full disk, a lock not taken in time) is returned with the error,
        for the caller to log, and the others are still refreshed (each file written whole or not
        at all)."""
        by_namespace: dict[tuple[str, ...], list[StoredItem]] = {}
        for item in items:
            if item.ttl_minutes is not None:
                by_namespace.setdefault(item.namespace, []).append(item)
        failed: list[tuple[tuple[str, ...], OSError]] = []
        for namespace, group in by_namespace.items():
            try:
                self._refresh(namespace, group)
            except OSError as exc:
                failed.append((namespace, exc))
        return failed

    def _refresh(self, namespace: tuple[str, ...], group: list[StoredItem]) -> None:
        with self.lock(namespace):
            now = self.now()
            for item in group:
                current = self._current(item.path)
                if current is None or current.updated_at != item.updated_at or current.ttl_minutes is None:
                    continue  # removed or written since it was read: that write set its expiry
                expires = later_by(now, current.ttl_minutes)
                if expires is None:  # a TTL from a hand-made file: no date holds it
                    _log.warning(
                        "%s: ttl_minutes %r: no date is that far from now; expiry not refreshed",
                        item.path,
                        current.ttl_minutes,
                    )
                    continue
                if current.expires_at is not None and expires <= current.expires_at:
                    continue
                doc = dict(current.doc, expires_at=iso(expires))
                self._write(item.path, doc)

    def sweep(self, now: datetime | None = None) -> int:
        """Remove every item expired at ``now`` (default: the clock), each judged again under
        its namespace's lock (a refresh or a put since may have saved it); how many went."""
        moment = now or self.now()
        removed = 0
        for item in [i for i in self.walk(()) if i.expired(moment)]:
            with self.lock(item.namespace):
                current = self._current(item.path)
                if current is not None and current.expired(moment):
                    removed += self._remove(item.namespace, item.path)
        return removed


def _with_doc(item: StoredItem, doc: dict[str, Any]) -> StoredItem:
    """The item as the cache keeps its document (``Files.remember`` may keep a copy)."""
    if item.doc is doc:
        return item
    return StoredItem(
        namespace=item.namespace,
        key=item.key,
        tree=doc["value"],
        created_at=item.created_at,
        updated_at=item.updated_at,
        ttl_minutes=item.ttl_minutes,
        expires_at=item.expires_at,
        index=item.index,
        path=item.path,
        plain=item.plain,
        doc=doc,
    )
