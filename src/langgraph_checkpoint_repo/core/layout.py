"""Where things live on disk: ids to path segments and the folder layout.

Thread ids, namespaces, channel names and versions are arbitrary strings, so
each becomes one path segment that is reversible, injective, confined to its
folder, and identical on case-insensitive or normalising filesystems:

* ``a-z 0-9 - _`` stay as they are, ``.`` too except first or last;
* an upper-case letter ``X`` becomes ``^x``;
* any other byte of the UTF-8 form becomes ``%hh`` (lower-case hex);
* the empty string becomes ``%``;
* a trailing ``.tmp`` becomes ``%2etmp`` (names ending in .tmp are temp files);
* a trailing ``.py`` becomes ``%2epy`` where the segment is a whole name (a folder named
  ``helper.py``, from a subgraph node of that name, would make ``langgraph dev`` reload);
* a Windows device name (``con``, ``prn``, ``aux``, ``nul``, ``com0``-``com9``,
  ``lpt0``-``lpt9``), alone or before a ``.``, has its first letter escaped: ``con`` becomes
  ``%63on`` and ``con.json`` ``%63on.json`` (Windows cannot check such a file out);
* a result longer than ``MAX_SEGMENT`` becomes ``~`` + sha256 of the id; the
  id itself is kept inside the files of that folder (``hashed_thread_id`` reads it back).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from .errors import FileFormatError

MAX_SEGMENT = 120
PATHS_KEPT = 8192  # paths made from names kept per layout (Layout._memo), then made again
_SAFE = frozenset(string.ascii_lowercase + string.digits + "-_")
_HEX = frozenset("0123456789abcdef")

ROOT_NS_DIR = ""  # the root namespace lives directly in the thread folder
CHECKPOINTS = "checkpoints"
VALUES = "values"
WRITES = "writes"
LARGE = "large"
OBJECTS = "objects"
NAMESPACES = "ns"
THREADS = "threads"
NS_FOLDERS = (CHECKPOINTS, WRITES, VALUES)  # the folders a namespace folder (ns/<namespace>/) holds
#: the folders a thread folder holds, beside ns/: its root namespace's, and what the thread shares
THREAD_FOLDERS = (*NS_FOLDERS, LARGE, OBJECTS)
STORE = "store"  # RepoStore's items: store/<label>/.../<key>.json (docs/store.md)
CACHE = ".cache"
PY_SUFFIX = ".py"  # what uvicorn's reloader (langgraph dev) restarts the server for
GITIGNORE_TEXT = "# lock files and temp files: never state\n/.cache\n*.tmp\n"


#: names Windows keeps for devices, in any case and with any extension; the superscript
#: digits of ``COM¹`` and ``LPT³`` never reach a segment unescaped (``%c2%b9``)
WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{d}{n}" for d in ("com", "lpt") for n in range(10)]
)


def is_windows_device_name(name: str) -> bool:
    """True for ``nul``, ``COM1``, ``con.json``: names a Windows checkout cannot create."""
    return name.partition(".")[0].rstrip(" ").lower() in WINDOWS_DEVICE_NAMES


# checkpoint and task ids (uuids): verbatim by every rule of ``is_verbatim`` (no dot, lower
# case, no device name can be spelt in hex and dashes), tested first without the cache
_ID_LIKE = re.compile(r"[0-9a-f-]{1,64}").fullmatch


def encode_segment(value: str, *, whole_name: bool = True) -> str:
    """Map any string to one safe, reversible path segment.

    ``whole_name=False`` is for a segment that never starts a file name (the channel and
    version of ``values/<channel>@<version>.json``): Windows device names are kept as they
    are there, so those names stay what earlier versions wrote.
    """
    if _ID_LIKE(value):  # the ids of a long thread would turn the cache over on every pass
        return value
    return _encode_segment(value, whole_name)


@lru_cache(maxsize=4096)  # a pure function, called for the same names on every write and read
def _encode_segment(value: str, whole_name: bool) -> str:
    if value == "":
        return "%"
    if is_verbatim(value):  # most ids (uuids, plain names) encode to themselves
        return value
    out: list[str] = []
    last = len(value) - 1
    for i, ch in enumerate(value):
        if ch in _SAFE:
            out.append(ch)
        elif ch == "." and 0 < i < last:
            out.append(ch)
        elif "A" <= ch <= "Z":
            out.append("^" + ch.lower())
        else:
            out.extend(f"%{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    seg = "".join(out)
    if seg.endswith(".tmp"):  # would read as a temp file (and be git-ignored)
        seg = seg[:-4] + "%2etmp"
    if whole_name and seg.endswith(PY_SUFFIX):  # a dev server's reloader watches *.py
        seg = seg[: -len(PY_SUFFIX)] + "%2epy"
    if whole_name and is_windows_device_name(seg):  # escape its first letter: ``%63on``
        seg = f"%{ord(seg[0]):02x}{seg[1:]}"
    if len(seg) > MAX_SEGMENT:
        return "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return seg


def is_hashed_segment(seg: str) -> bool:
    return seg.startswith("~")


def segment_name(seg: str) -> str:
    """The id a path segment stands for, or the segment itself when it is none the layout
    makes (a hash, an escape it never writes): for readers that show names from a checkout,
    where a name must never stop them (validate reports the file)."""
    try:
        return decode_segment(seg)
    except ValueError:
        return seg


def decode_segment(seg: str) -> str:
    """Inverse of ``encode_segment``; hashed segments cannot be decoded here."""
    if is_verbatim(seg):
        return seg
    if seg == "%":
        return ""
    if is_hashed_segment(seg):
        raise ValueError(f"segment {seg!r} is a hash; read the id from a file inside")
    raw = bytearray()
    i = 0
    while i < len(seg):
        ch = seg[i]
        if ch == "%":
            hh = seg[i + 1 : i + 3]
            if len(hh) != 2 or not set(hh) <= _HEX:
                raise ValueError(f"bad escape in segment {seg!r}")
            raw.append(int(hh, 16))
            i += 3
        elif ch == "^":
            nxt = seg[i + 1 : i + 2]
            if not ("a" <= nxt <= "z"):
                raise ValueError(f"bad upper-case escape in segment {seg!r}")
            raw.extend(nxt.upper().encode())
            i += 2
        elif ch in _SAFE or ch == ".":
            raw.extend(ch.encode())
            i += 1
        else:
            raise ValueError(f"character {ch!r} cannot appear in segment {seg!r}")
    text = raw.decode("utf-8", "surrogatepass")
    if encode_segment(text) != seg:
        if is_windows_device_name(seg):
            raise ValueError(
                f"segment {seg!r} is a Windows device name, which earlier versions did not encode: "
                f"rename it to {encode_segment(text)!r} (git mv)"
            )
        if seg.endswith(PY_SUFFIX):
            raise ValueError(
                f"segment {seg!r} ends in {PY_SUFFIX}, which earlier versions did not encode: "
                f"rename it to {encode_segment(text)!r} (git mv)"
            )
        raise ValueError(f"segment {seg!r} is not in canonical form")
    return text


def is_verbatim(seg: str) -> bool:
    """Fast path: a segment made only of characters that encode to themselves."""
    return (
        0 < len(seg) <= MAX_SEGMENT
        and seg[0] != "."
        and seg[-1] != "."
        and seg.isascii()
        and seg.replace("-", "a").replace("_", "a").replace(".", "a").isalnum()
        and seg.lower() == seg
        and not seg.endswith((".tmp", PY_SUFFIX))
        and not is_windows_device_name(seg)
    )


def _named_dir(parent: Path, value: str, what: str) -> Path:
    """The folder of a thread or namespace; one an earlier version wrote unescaped (a Windows
    device name, a name ending in .py) is named with its rename, never shadowed by a second."""
    seg = encode_segment(value)
    bare = encode_segment(value, whole_name=False)
    if seg != bare and os.path.lexists(parent / bare):
        raise FileFormatError(
            str(parent / bare),
            "/",
            f"{what} {value!r} is stored under a name earlier versions did not encode (a Windows "
            f"device name or a name ending in {PY_SUFFIX}): rename the folder to {seg!r} (git mv)",
        )
    return parent / seg


def version_segment(version: str | int | float) -> str:
    """File stem of a channel version; keeps 1, 1.0 and "1" apart."""
    if isinstance(version, bool):
        raise TypeError(f"channel version must be str, int or float, not {version!r}")
    if isinstance(version, int):
        return f"=i{version}"
    if isinstance(version, float):
        return f"=f{version!r}"
    return encode_segment(version, whole_name=False)  # always after ``@``: never a whole name


def git_top(start: Path) -> Path | None:
    """The top of the git work tree holding ``start`` (the nearest folder up with a ``.git``)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def find_default_root(start: Path | None = None) -> Path:
    """``.langgraph`` at the top of the git work tree, else in the current folder."""
    here = (start or Path.cwd()).resolve()
    return (git_top(here) or here) / ".langgraph"


@dataclass(frozen=True)
class Layout:
    """Paths of every kind of file under one root."""

    root: Path

    @cached_property  # asked for on every read (jsonread's containment check, objects)
    def threads_dir(self) -> Path:
        return self.root / THREADS

    @cached_property
    def store_dir(self) -> Path:
        """RepoStore's items (docs/store.md)."""
        return self.root / STORE

    @cached_property
    def guarded(self) -> tuple[Path, ...]:
        """The root and, inside a git work tree, every folder between it and the work tree's
        top: none may be a symlink (``root_link``). A pull request can commit ``.langgraph``
        (or a folder above it) as a link to another project's state; confinement starts at
        the root, not below it. Outside a git work tree only the root itself is guarded (a
        system's own links, such as /tmp on macOS, are not the repository's)."""
        above: list[Path] = []
        cur = self.root.parent
        while cur != cur.parent:
            if os.path.lexists(cur / ".git") and not os.path.islink(cur):
                return (self.root, *above)
            above.append(cur)
            cur = cur.parent
        return (self.root,)

    def root_link(self, lstat: Callable[[str], os.stat_result] = os.lstat) -> Path | None:
        """The symlink among ``guarded`` (the root first), or None (``lstat``: as
        ``off_the_way``'s)."""
        for path in self.guarded:
            try:
                if stat.S_ISLNK(lstat(str(path)).st_mode):
                    return path
            except FileNotFoundError:
                continue  # made as a real folder when first written
        return None

    @property
    def cache_dir(self) -> Path:
        return self.root / CACHE

    @lru_cache(maxsize=4096)  # noqa: B019 - Layout is immutable and lives as long as its saver
    def thread_dir(self, thread_id: str) -> Path:
        return _named_dir(self.threads_dir, thread_id, "thread")

    @lru_cache(maxsize=4096)  # noqa: B019 - Layout is immutable and lives as long as its saver
    def ns_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        base = self.thread_dir(thread_id)
        if checkpoint_ns == "":
            return base
        return _named_dir(base / NAMESPACES, checkpoint_ns, "namespace")

    @lru_cache(maxsize=4096)  # noqa: B019 - Layout is immutable and lives as long as its saver
    def checkpoints_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        return self.ns_dir(thread_id, checkpoint_ns) / CHECKPOINTS

    @cached_property
    def _named_paths(self) -> dict[tuple[str, ...], Path]:
        """Paths already made from names (``_memo``): a put asks for its parent's path, its
        own and its objects' several times, and each Path join parses its parts again."""
        return {}

    def _memo(self, key: tuple[str, ...], make: Callable[[], Path]) -> Path:
        """``make()``, made once per ``key`` (a pure function of the names: no file is read)."""
        paths = self._named_paths
        got = paths.get(key)
        if got is None:
            if len(paths) >= PATHS_KEPT:
                paths.clear()
            got = paths[key] = make()
        return got

    def folder_of(self, path: Path) -> Path:
        """``path.parent``, the same Path each time (made once per folder): a Path made again
        parses its parts again, and each set or dict it keys hashes and spells them again."""
        head = str(path).rpartition(os.sep)[0]
        if not head:  # "/x" and "x" alike: not worth a key
            return path.parent
        return self._memo(("folder", head), lambda: path.parent)

    def sibling(self, path: Path, name: str) -> Path:
        """``path.parent / name`` (``name``: one segment), made once (``folder_of``)."""
        head = str(path).rpartition(os.sep)[0]
        if not head:
            return path.parent / name
        return self._memo(("in", head, name), lambda: path.parent / name)

    def child(self, folder: Path, rel: str) -> Path:
        """``folder / rel``, made once per (folder, rel) (``folder_of``)."""
        return self._memo(("child", str(folder), rel), lambda: folder / rel)

    def checkpoint_path(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> Path:
        return self._memo(
            ("checkpoint", thread_id, checkpoint_ns, checkpoint_id),
            lambda: (
                self.checkpoints_dir(thread_id, checkpoint_ns) / (encode_segment(checkpoint_id) + ".json")
            ),
        )

    def value_rel(self, channel: str, version: str | int | float) -> str:
        """Path of a value file relative to its namespace folder (stored in checkpoints).

        One flat folder (``channel@version``) so a put fsyncs one folder, not one per channel.
        """
        return f"{VALUES}/{encode_segment(channel, whole_name=False)}@{version_segment(version)}.json"

    @staticmethod
    def checkpoint_rel(checkpoint_id: str) -> str:
        """Path of a checkpoint file relative to its namespace folder (a value's location).
        Not cached per Layout: hashing the Layout cost more than encode_segment's own cache."""
        return f"{CHECKPOINTS}/{encode_segment(checkpoint_id)}.json"

    @staticmethod
    def base_rel(checkpoint_id: str) -> str:
        """Where prune keeps a removed checkpoint's whole bookkeeping for the deltas built on
        it, relative to its namespace folder (``values/@<checkpoint>.json``: a value file's
        name never starts with ``@``, which a channel segment escapes)."""
        return f"{VALUES}/@{encode_segment(checkpoint_id, whole_name=False)}.json"

    def checkpoint_in(self, thread_dir: Path, checkpoint_ns: str, checkpoint_id: str) -> Path:
        """A checkpoint's file in the thread folder ``thread_dir`` (where a reference names it)."""

        def make() -> Path:
            ns_dir = thread_dir
            if checkpoint_ns != "":
                ns_dir = _named_dir(thread_dir / NAMESPACES, checkpoint_ns, "namespace")
            return ns_dir / CHECKPOINTS / (encode_segment(checkpoint_id) + ".json")

        return self._memo(("checkpoint in", str(thread_dir), checkpoint_ns, checkpoint_id), make)

    @lru_cache(maxsize=4096)  # noqa: B019 - Layout is immutable and lives as long as its saver
    def writes_dir(self, thread_id: str, checkpoint_ns: str) -> Path:
        return self.ns_dir(thread_id, checkpoint_ns) / WRITES

    @staticmethod
    def writes_name(checkpoint_id: str, unique: str) -> str:
        """``<checkpoint>~<uuid6>.json``: flat, so no folder is created per checkpoint."""
        return f"{encode_segment(checkpoint_id)}~{unique}.json"

    @staticmethod
    def writes_owner(name: str) -> str:
        """The encoded checkpoint segment a writes file name belongs to."""
        return name[: name.rindex("~")] if "~" in name[1:] else ""

    def large_path(self, thread_id: str, digest: str) -> Path:
        return self.thread_dir(thread_id) / LARGE / f"{digest}.json"

    @lru_cache(maxsize=4096)  # noqa: B019 - Layout is immutable and lives as long as its saver
    def objects_dir(self, thread_id: str) -> Path:
        return self.thread_dir(thread_id) / OBJECTS

    def object_path(self, thread_id: str, digest: str) -> Path:
        return self._memo(
            (OBJECTS, thread_id, digest), lambda: self.objects_dir(thread_id) / f"{digest}.json"
        )

    def lock_path(self, thread_id: str) -> Path:
        return self._memo(("lock", thread_id), lambda: self._lock_path(thread_id))  # every put asks

    def _lock_path(self, thread_id: str) -> Path:
        seg = encode_segment(thread_id)
        if len(seg) > 60:
            seg = "~" + hashlib.sha256(seg.encode()).hexdigest()
        return self.cache_dir / "locks" / f"{seg}.lock"

    @cached_property
    def _root_text(self) -> str:
        """The root's text without a final separator: a folder on the way is this plus
        ``os.sep`` and each part (``os.path.join``'s result, without a call per part)."""
        return str(self.root).rstrip(os.sep)

    def parts_below_root(self, path: Path) -> tuple[str, ...] | None:
        """``path.relative_to(root).parts``, None when it is not below the root: by its text
        when that starts with the root's and a separator (pathlib parsed and compared both
        paths' parts on every call), else as pathlib says (the root itself, another case)."""
        text, head = str(path), self._root_text + os.sep
        if text.startswith(head) and len(text) > len(head):
            return tuple(text[len(head) :].split(os.sep))
        try:
            return path.relative_to(self.root).parts
        except ValueError:
            return None

    def contains(self, path: Path, lstat: Callable[[str], os.stat_result] = os.lstat) -> bool:
        """True when ``path`` is under the root with no symlink on the way (``off_the_way``)."""
        return self.off_the_way(path, lstat) is None

    def off_the_way(
        self, path: Path, lstat: Callable[[str], os.stat_result] = os.lstat
    ) -> tuple[str, Path] | None:
        """Why ``path`` is not under the root with no symlink on the way, or None: ("outside",
        path), ("not plain", path) for a ``..`` or ``.`` part, ("symlink", the link).

        The saver never makes symlinks, so any symlink below the root was planted
        (or checked out) and may lead anywhere: refuse it rather than resolve it.
        Folders that do not exist yet are fine; they will be made as real folders.
        ``lstat``: how each folder on the way is asked (caches.lstat: once in a look).
        """
        parts = self.parts_below_root(path)
        if parts is None:
            return "outside", path
        link = self.root_link(lstat)
        if link is not None:
            return "symlink", link
        current = self._root_text
        for part in parts:
            if part in ("..", "."):
                return "not plain", path
            current = f"{current}{os.sep}{part}"
            try:
                if stat.S_ISLNK(lstat(current).st_mode):
                    return "symlink", Path(current)
            except FileNotFoundError:
                return None
        return None

    def first_off_the_way(self, paths: Iterable[Path]) -> tuple[Path, tuple[str, Path]] | None:
        """``off_the_way`` of several paths at once: the first refused path and why, or None.

        Each folder on the way is ``lstat``-ed once for all of them (a write's folders share
        the root, ``threads/`` and the thread folder), so checking every folder of a write
        costs a syscall per distinct folder, not per folder per level."""
        exists: dict[str, bool] = {}  # checked so far: present and no symlink (True), or absent
        link = self.root_link()
        for path in paths:
            if link is not None:
                return path, ("symlink", link)
            parts = self.parts_below_root(path)
            if parts is None:
                return path, ("outside", path)
            current = self._root_text
            for part in parts:
                if part in ("..", "."):
                    return path, ("not plain", path)
                current = f"{current}{os.sep}{part}"
                if current not in exists:
                    try:
                        exists[current] = not stat.S_ISLNK(os.lstat(current).st_mode)
                    except FileNotFoundError:
                        exists[current] = False
                        break
                    if not exists[current]:
                        return path, ("symlink", Path(current))
                elif not exists[current]:
                    break
        return None


def hashed_thread_id(tdir: Path, read: Callable[[Path], Any]) -> str | None:
    """The thread id a hashed thread folder (``~`` + sha256 of an id too long for a segment)
    stands for: the ``thread_id`` of the first checkpoint file, by name, of its root
    namespace, then of each namespace folder in turn, that names one. ``read`` parses a file
    (validated or not: a migration reads older formats); None when no file names one."""
    nsroot = tdir / NAMESPACES
    for folder in (tdir, *(nsroot / n for n in data_names(nsroot))):
        names = [n for n in data_names(folder / CHECKPOINTS) if n.endswith(".json")]
        if names:
            doc = read(folder / CHECKPOINTS / names[0])
            if isinstance(doc, dict) and isinstance(doc.get("thread_id"), str):
                return str(doc["thread_id"])
    return None


def data_names(folder: Path) -> list[str]:
    """Sorted names in a folder, temp names left out (never data); none for a missing folder
    or a file."""
    try:
        return sorted(n for n in os.listdir(folder) if not is_temp_name(n))
    except (FileNotFoundError, NotADirectoryError):
        return []


def place_problem(path: Path, kind: str, doc: dict[str, Any]) -> tuple[str, str] | None:
    """(pointer, message) when a valid document's names disagree with where it lies.

    Compared on the path's own segments (never resolved), so it holds however the root is
    spelled. A writes file's checkpoint id is matched to its name where writes are looked
    up by that name (``ThreadStore.writes_docs``, validate).
    """
    if kind == "value":
        want = f"{VALUES}/{encode_segment(doc['channel'])}@{version_segment(doc['version'])}.json"
        if f"{path.parent.name}/{path.name}" != want:
            return "/version", f"channel {doc['channel']!r} at {doc['version']!r} belongs in {want}"
        return None
    if kind == "base":
        want = f"@{encode_segment(doc['checkpoint_id'], whole_name=False)}.json"
        if path.parent.name != VALUES or path.name != want:
            return "/checkpoint_id", f"checkpoint_id {doc['checkpoint_id']!r} belongs in {VALUES}/{want}"
        return _ns_problem(path, doc)
    if kind == "item":
        return item_place_problem(path, doc)
    if kind in ("large_value", "object"):
        folder = LARGE if kind == "large_value" else OBJECTS
        if path.parent.name != folder or path.name != f"{doc['sha256']}.json":
            return "/sha256", "sha256 does not match the file name"
        return None
    if kind == "checkpoint" and path.name != encode_segment(doc["checkpoint_id"]) + ".json":
        return "/checkpoint_id", f"checkpoint_id {doc['checkpoint_id']!r} does not match the file name"
    return _ns_problem(path, doc)


def _ns_problem(path: Path, doc: dict[str, Any]) -> tuple[str, str] | None:
    """A document's thread and namespace against the namespace folder holding the folder of
    ``path`` (its file)."""
    ns = doc["checkpoint_ns"]
    parts = path.parts
    if len(parts) >= (7 if ns else 5):
        # the folder names looked at are the path's own parts (none is its anchor): no Path
        # made per file read (validate reads thousands)
        if ns:
            ns_ok = parts[-3] == encode_segment(ns) and parts[-4] == NAMESPACES
            tname, above = parts[-5], parts[-6]
        else:
            ns_ok, tname, above = True, parts[-3], parts[-4]
    else:
        ns_dir = path.parent.parent
        if ns:
            tdir = ns_dir.parent.parent
            ns_ok = ns_dir.name == encode_segment(ns) and ns_dir.parent.name == NAMESPACES
        else:
            tdir, ns_ok = ns_dir, True
        tname, above = tdir.name, tdir.parent.name
    if not ns_ok or above != THREADS:
        return "/checkpoint_ns", f"checkpoint_ns {ns!r} does not match its folder"
    if tname != encode_segment(doc["thread_id"]):
        return "/thread_id", f"thread_id {doc['thread_id']!r} does not match its folder"
    return None


def value_file_kind(path: Path) -> str:
    """The kind of a file of ``values/``: a value, or (``@<checkpoint>.json``) the base prune
    keeps of a removed checkpoint for the deltas built on it (format 4)."""
    return "base" if path.name.startswith("@") else "value"


def item_place_problem(path: Path, doc: dict[str, Any]) -> tuple[str, str] | None:
    """(pointer, message) when a store item's namespace or key disagrees with its place:
    ``store/<label>/.../<key>.json``, each name the segment of its id (``encode_segment``)."""
    if path.name != encode_segment(doc["key"]) + ".json":
        return "/key", f"key {doc['key']!r} does not match the file name"
    labels = doc["namespace"]
    folder = path.parent
    for label in reversed(labels):
        if folder.name != encode_segment(label):
            return "/namespace", f"namespace {tuple(labels)!r} does not match its folders"
        folder = folder.parent
    if folder.name != STORE:
        where = f"not directly under {STORE}/"
        return "/namespace", f"namespace {tuple(labels)!r} does not match its folders ({where})"
    return None


def is_temp_name(name: str) -> bool:
    """Temp files (``.name.random.tmp``) and hidden names are never data."""
    return name.startswith(".") or name.endswith(".tmp")


# The only names the saver gives to files and folders that are not state (durable._write_temp,
# removal.remove_tree): fsck may remove these, and nothing else that is hidden or ends in .tmp.
_OWN_TEMP_FILE = re.compile(r"\.(?P<target>.+)\.[0-9a-f]{12}\.tmp")
_OWN_GRAVE = re.compile(r"\..+\.deleted\.[0-9]+\.[0-9]+\.tmp")


def is_own_temp_file(name: str, target_suffix: str = ".json") -> bool:
    """``.<file>.<12 hex>.tmp``: a temp file the saver writes before renaming it over ``<file>``.

    ``target_suffix`` is what the final name ends with where it lies (``.json`` in the
    thread folders, ``.gitignore`` at the top of the root).
    """
    match = _OWN_TEMP_FILE.fullmatch(name)
    return match is not None and match["target"].endswith(target_suffix)


def is_own_grave(name: str) -> bool:
    """``.<thread folder>.deleted.<pid>.<ns>.tmp``: a thread folder renamed away to be deleted."""
    return _OWN_GRAVE.fullmatch(name) is not None


def holds_state(root: Path) -> bool:
    """Whether ``root`` is a RepoSaver root: it has a ``threads/`` folder, or the ``.gitignore``
    the saver writes before anything else (a root initialised but without threads yet, or
    whose threads were all deleted). A folder with neither holds no state to read or tidy."""
    if (root / THREADS).is_dir():
        return True
    path = root / ".gitignore"
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(len(GITIGNORE_TEXT))  # bounded: a committed file can be anything
    except OSError:
        return False
    return first.rstrip("\r\n") == GITIGNORE_TEXT.splitlines()[0]
