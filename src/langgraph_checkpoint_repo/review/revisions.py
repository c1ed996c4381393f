"""Git revisions of a state root, read without a checkout and without touching the work tree.

``RANGE`` is git's: ``BASE...HEAD`` compares the merge-base of the two with ``HEAD`` (what
``HEAD`` adds since it left ``BASE``, as a pull request shows it), ``BASE..HEAD`` compares the
two revisions as they are, ``BASE`` compares a revision with the work tree (files not yet
committed, and not yet added, included), and no range compares the merge-base of ``HEAD``
and the default branch with the work tree. What changed is asked
of git: between two commits, their trees as git stores them (``git ls-tree``); between a
commit and the work tree, every file under the root on disk, compared by its bytes with the
commit's blob (``work_tree_changes``: nothing git's index hides is missed). The files
of a revision are read from git's objects as they are (``git cat-file --batch``) into a
temporary folder, only for the threads that changed: no ``.gitattributes`` of the pull
request (``export-ignore``, ``export-subst``, filters) changes what the review reads. A
``large/`` blob that is a Git LFS pointer (``git-setup --lfs`` marks ``large/``) is read as the
object it names from git-lfs's store in this repository, by its sha256, without running
git-lfs (``fill_lfs``); one the store lacks stays a pointer, which every reader names with
``git lfs pull``.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import gitrun
from ..core.errors import BadInputError, NotFoundError
from ..core.jsonread import LFS_POINTER_MAX, LFS_VERSION, MAX_FILE_BYTES, lfs_pointer
from ..core.layout import LARGE, THREADS

WORK_TREE = "work tree"


@dataclass(frozen=True, kw_only=True)
class Range:
    """What ``review`` compares: ``base`` (a commit) with ``head`` (a commit, or the work tree)."""

    base: str
    head: str | None  # None: the work tree
    spec: str  # as the user gave it (or how the default was found), for the report
    #: what the report says under its title when the range is not what it may look like: a
    #: two-dot base that moved on since the head left it (its new work reads as removed)
    note: str = ""

    @property
    def head_label(self) -> str:
        return self.head or WORK_TREE


@dataclass(kw_only=True)
class Changes:
    """The files under the root that differ between the two sides, by path below the root."""

    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    modified: set[str] = field(default_factory=set)

    @property
    def all(self) -> set[str]:
        return self.added | self.removed | self.modified


def git(top: Path, *args: str) -> str:
    """A git command's output (git's own words in an error of the package when it refuses)."""
    return gitrun.run(top, *args).stdout.decode("utf-8", "surrogateescape")


def git_top(root: Path) -> Path:
    """The top of the git work tree holding ``root`` (an error in git's words when there is none)."""
    start = root if root.is_dir() else root.parent
    return gitrun.work_tree_top(start, "review compares git revisions", root)


def default_branch(top: Path) -> str | None:
    """The default branch: ``origin/HEAD``'s target, else a local main or master."""
    try:
        ref = git(top, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD").strip()
        return ref.removeprefix("refs/remotes/")
    except BadInputError:
        pass
    for name in ("main", "master"):
        try:
            git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}")
            return name
        except BadInputError:
            continue
    return None


def parse_range(top: Path, spec: str | None, rel: str = "") -> Range:
    """``BASE...HEAD`` (the merge-base of the two, to ``HEAD``), ``BASE..HEAD``, ``BASE`` (to
    the work tree), or None: the merge-base of HEAD with the default branch, to the work tree.
    Each revision is resolved to a commit here; an empty side is ``HEAD``, as in git. A
    two-dot (or one-revision) range whose base moved on since the head left it, with new
    work under the root ``rel``, gets a note saying so."""
    if spec is None:
        branch = default_branch(top)
        if branch is None:
            raise BadInputError(
                "no default branch (origin/HEAD, main or master) to review against: give a RANGE"
            )
        base = git(top, "merge-base", "HEAD", branch).strip()
        note = several_bases(top, "HEAD", branch, base)
        return Range(base=base, head=None, spec=f"merge-base of HEAD and {branch}", note=note)
    if spec.startswith("-"):
        raise BadInputError(f"bad range {spec!r}: a revision cannot start with '-'")
    if "..." in spec:
        left, _, right = spec.partition("...")
        if right.startswith("."):
            raise BadInputError(f"bad range {spec!r}: BASE...HEAD or BASE..HEAD")
        tip = resolve(top, right or "HEAD")
        base = merge_base(top, left or "HEAD", right or "HEAD")
        note = several_bases(top, left or "HEAD", right or "HEAD", base)
        if base == tip != resolve(top, left or "HEAD"):  # the sides given the other way round
            note = (
                f"{right or 'HEAD'} is an ancestor of {left or 'HEAD'}: nothing is new on it; "
                f"{right or 'HEAD'}...{left or 'HEAD'} shows what {left or 'HEAD'} adds"
            )
        return Range(base=base, head=tip, spec=spec, note=note)
    left, dots, right = spec.partition("..")
    base = resolve(top, left or "HEAD")
    head = resolve(top, right or "HEAD") if dots else None
    note = ""
    tip = head or resolve(top, "HEAD")
    if moved_on(top, base, tip, rel):
        base_rev, head_rev = left or "HEAD", right or "HEAD"
        if _git_ok(top, "merge-base", "--is-ancestor", tip, base):  # the other way round
            note = f"{head_rev} is an ancestor of {base_rev}: {base_rev}'s own work shows as removed "
            note += f"here; {head_rev}...{base_rev} shows what {base_rev} adds"
        else:
            note = f"{base_rev} moved on since {head_rev} left it: its new work shows as removed here; "
            note += f"{base_rev}...{head_rev} shows what {head_rev} adds"
        note += "" if head else " (committed)"
    return Range(base=base, head=head, spec=spec, note=note)


def merge_base(top: Path, rev: str, other: str) -> str:
    """The best common ancestor of the revisions ``rev`` and ``other``: where ``other``'s line
    left ``rev``'s (what a forge compares a pull request with)."""
    base, head = resolve(top, rev), resolve(top, other)
    try:
        return git(top, "merge-base", base, head).strip()
    except BadInputError:
        raise BadInputError(
            f"{rev!r} and {other!r} have no common ancestor: compare the two tips with {rev}..{other}"
        ) from None


def several_bases(top: Path, rev: str, other: str, chosen: str) -> str:
    """What to say when ``rev`` and ``other`` have several merge-bases (a criss-cross merge):
    git picks one, as ``git diff rev...other`` does, and what the others hold that it lacks
    reads as the branch's own work; empty when there is one."""
    bases = git(top, "merge-base", "--all", resolve(top, rev), resolve(top, other)).split()
    if len(bases) < 2:
        return ""
    others = ", ".join(b[:12] for b in bases if b != chosen)
    return (
        f"{rev} and {other} have {len(bases)} merge-bases; compared with {chosen[:12]}, as git "
        f"diff {rev}...{other} is: what {others} brought in may show as {other}'s own work"
    )


def moved_on(top: Path, base: str, head: str, path: str = "") -> bool:
    """Whether the commit ``base`` moved on since ``head`` left it (it is not an ancestor of
    ``head``) with new work under ``path`` (the top: ''): comparing the two tips then shows
    that work as removed."""
    if _git_ok(top, "merge-base", "--is-ancestor", base, head):
        return False
    try:
        fork = git(top, "merge-base", base, head).strip()
    except BadInputError:  # no common ancestor: nothing moved on, they are apart
        return False
    return not _git_ok(
        top, "--literal-pathspecs", "diff-tree", "--quiet", "-r", fork, base, "--", path or "."
    )


def _git_ok(top: Path, *args: str) -> bool:
    """Whether a git command that answers by its exit code (0: yes, 1: no) says yes."""
    return gitrun.run(top, *args, ok=(0, 1)).returncode == 0


def resolve_base(top: Path, rev: str, path: str = "") -> tuple[str, bool]:
    """A revision the work tree is compared with (``history --since``, ``diff --from``) as a
    commit: ``REV``, or ``REV...`` / ``REV...OTHER``, the merge-base of ``REV`` and ``OTHER``
    (``HEAD``), where the branch left ``REV``; and whether a plain ``REV`` moved on since
    ``HEAD`` left it, with new work under ``path`` (``moved_on``)."""
    if "..." in rev:
        left, _, right = rev.partition("...")
        if right.startswith("."):
            raise BadInputError(f"bad revision {rev!r}: REV or REV...")
        return merge_base(top, left or "HEAD", right or "HEAD"), False
    commit = resolve(top, rev)
    return commit, moved_on(top, commit, resolve(top, "HEAD"), path)


def resolve(top: Path, rev: str) -> str:
    """A revision as the commit it names; a clear error for one git does not know."""
    if rev.startswith("-") or "\n" in rev:
        raise BadInputError(f"bad revision {rev!r}")
    try:
        return git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except BadInputError:
        raise NotFoundError(f"unknown revision {rev!r} in {top}") from None


def changes(top: Path, rel: str, rng: Range) -> Changes:
    """The files below ``rel`` (the root, relative to ``top``) that differ: between two
    commits, from their trees as git stores them (``git diff-tree``: no attribute of any
    ``.gitattributes`` applies); between a commit and the work tree, every file on disk by
    its bytes (``work_tree_changes``: not git's index, which a file can be hidden from)."""
    out = Changes()
    if rng.head is not None:
        # the two trees as git stores them: diff-tree compares their objects (no attribute,
        # filter or textconv is involved in telling a path changed)
        args = ["diff-tree", "-r", "--no-renames", "--name-status", "-z", rng.base, rng.head]
        fields = git(top, "--literal-pathspecs", *args, "--", rel or ".").split("\0")
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            below = _below(path, rel)
            if below is not None:
                {"A": out.added, "D": out.removed}.get(status[:1], out.modified).add(below)
        return out
    return work_tree_changes(top, rel, rng.base)


def diff_entries(base: dict[str, Entry], head: dict[str, Entry]) -> Changes:
    """What differs between two listings of the root: a path on one side only is added or
    removed; on both, modified when its object or its mode (a file that became a link) differs."""
    out = Changes()
    out.added = {p for p in head if p not in base}
    out.removed = {p for p in base if p not in head}
    out.modified = {p for p in head if p in base and head[p] != base[p]}
    return out


def _below(path: str, rel: str) -> str | None:
    if rel in ("", "."):
        return path
    prefix = rel.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _under(rel: str, path: str) -> str:
    return path if rel in ("", ".") else f"{rel.rstrip('/')}/{path}"


# ----------------------------------------------------------------------------
# a commit's files, read from git's objects as they are
# ----------------------------------------------------------------------------
#: the modes git stores: a file, an executable file, a symbolic link, a submodule
FILE_MODES = ("100644", "100755")
LINK_MODE = "120000"
MAX_LINK_BYTES = 4096  # a symbolic link's target: longer is no link a file system makes


@dataclass(frozen=True)
class Entry:
    """One file of a commit's tree below the root, as git stores it."""

    mode: str
    oid: str
    size: int  # bytes; -1 where git gives none (a submodule)

    @property
    def kind(self) -> str:
        """file, link or submodule (anything else git may hold is a submodule's commit)."""
        if self.mode in FILE_MODES:
            return "file"
        return "link" if self.mode == LINK_MODE else "submodule"


def tree_entries(top: Path, rev: str, rel: str, folders: list[str] | None = None) -> dict[str, Entry]:
    """Every file of ``rev`` below the root ``rel`` (or below ``folders`` of it), by path below
    the root: ``git ls-tree -r``, which reads the tree objects themselves (no attribute,
    filter or ``export-ignore`` applies, unlike ``git archive`` or a checkout)."""
    paths = [_under(rel, f) for f in folders] if folders is not None else [rel or "."]
    if not paths:
        return {}
    out: dict[str, Entry] = {}
    listing = git(top, "--literal-pathspecs", "ls-tree", "-r", "-l", "-z", "--full-tree", rev, "--", *paths)
    for record in listing.split("\0"):
        if not record:
            continue
        info, _, path = record.partition("\t")
        mode, _kind, oid, size = info.split(maxsplit=3)
        below = _below(path, rel)
        if below is not None:
            out[below] = Entry(mode=mode, oid=oid, size=int(size) if size.strip().isdigit() else -1)
    return out


@dataclass(kw_only=True)
class Materialized:
    """A revision's files written out as a root of their own, and those that were not."""

    root: Path
    skipped: dict[str, str] = field(default_factory=dict)  # path below the root -> why not written


def materialize(top: Path, rev: str, rel: str, folders: list[str], dest: Path) -> Materialized:
    """The files of ``folders`` (below the root ``rel``) at ``rev``, written under ``dest`` as
    a root of their own, from git's objects as they are (``tree_entries``, then ``git cat-file
    --batch``, each blob streamed to its file: nothing held whole in memory). A file over the
    size limit of a state file, a submodule, or a path no checkout would write (``..``,
    ``.git``) is not written and is named in ``skipped``; a symbolic link is written as one
    (every read refuses links, as on a checkout). A folder the revision lacks is left out."""
    root = dest / "root"
    root.mkdir(parents=True, exist_ok=True)
    out = Materialized(root=root)
    wanted: list[tuple[str, Entry]] = []
    for path, entry in sorted(tree_entries(top, rev, rel, folders).items()):
        why = _not_written(path, entry)
        if why is not None:
            out.skipped[path] = why
        else:
            wanted.append((path, entry))
    if wanted:
        _write_blobs(top, root, wanted, out.skipped)
        fill_lfs(top, root, [path for path, e in wanted if e.kind == "file" and _may_be_in_lfs(path, e)])
    return out


def _may_be_in_lfs(path: str, entry: Entry) -> bool:
    """A file a checkout may hold whole where git stores its LFS pointer: small enough to be
    one, in a thread's ``large/`` (what ``git-setup --lfs`` marks). A pointer anywhere else is
    what the app reads there too, so the review reads it as it is (and names ``git lfs pull``)."""
    parts = path.split("/")
    return entry.size < LFS_POINTER_MAX and len(parts) == 4 and parts[0] == THREADS and parts[2] == LARGE


def fill_lfs(top: Path, root: Path, small: list[str]) -> None:
    """Each of the ``small`` files written below ``root`` that is a Git LFS pointer, replaced
    by the object it names when git-lfs holds it in this repository (``lfs_object``): the
    review reads what a checkout with git-lfs gives the app. A file it lacks stays the pointer."""
    store: Path | None = None
    for path in small:
        target = root / path
        try:
            with open(target, "rb", opener=_no_follow) as fh:
                pointer = lfs_pointer(fh.read(LFS_POINTER_MAX))
        except OSError:  # skipped, or written as a link: not a pointer read here
            continue
        if pointer is None:
            continue
        store = store or _lfs_store(top)
        data = lfs_object(store, *pointer)
        if data is not None:
            with open(target, "wb", opener=_no_follow) as fh:
                fh.write(data)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))


def _lfs_store(top: Path) -> Path:
    """git-lfs's object store of the repository: ``lfs/objects`` in its common git folder
    (shared by its worktrees; a store moved by ``lfs.storage`` is not looked for)."""
    return (top / git(top, "rev-parse", "--git-common-dir").strip()).resolve() / "lfs" / "objects"


def lfs_object(store: Path, oid: str, size: int) -> bytes | None:
    """The bytes of the LFS object ``oid`` (``<store>/ab/cd/abcd…``): a regular file of the
    pointer's size, at most a state file's, whose sha256 is ``oid``; None for anything else
    (not fetched, damaged, a link)."""
    path = store / oid[:2] / oid[2:4] / oid
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size or size > MAX_FILE_BYTES:
            return None
        with open(path, "rb", opener=_no_follow) as fh:
            data = fh.read(size + 1)
    except OSError:
        return None
    return data if len(data) == size and hashlib.sha256(data).hexdigest() == oid else None


def _not_written(path: str, entry: Entry) -> str | None:
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        return "a path no checkout writes"
    if entry.kind == "submodule":
        return "a submodule (a commit of another repository), not a file"
    if entry.kind == "file" and entry.size > MAX_FILE_BYTES:
        return f"a file of {entry.size} bytes, over the {MAX_FILE_BYTES}-byte limit of a state file"
    if entry.kind == "link" and entry.size > MAX_LINK_BYTES:
        return "a symbolic link with a target too long for a file system"
    return None


CHUNK = 1 << 20


def _blob_size(line: bytes, oid: str, path: str) -> int:
    """The size ``git cat-file --batch`` gives for ``oid``; an error for an object git lacks
    or one that is not a blob."""
    header = line.split()
    if header[1:] == [b"missing"]:  # a partial clone, a pruned or damaged repository
        raise NotFoundError(
            f"git has no object {oid} for {path} (a partial or shallow clone, or a damaged repository): "
            "fetch it (git fetch) and review again"
        )
    if len(header) != 3 or header[1] != b"blob":
        raise BadInputError(f"git cat-file: object {oid} of {path} is not a blob")
    return int(header[2])


def _write_blobs(top: Path, root: Path, wanted: list[tuple[str, Entry]], skipped: dict[str, str]) -> None:
    """Stream each blob from one ``git cat-file --batch`` into its file below ``root``."""
    try:
        proc = subprocess.Popen(
            ["git", "-C", str(top), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise gitrun.missing() from None
    assert proc.stdin is not None and proc.stdout is not None
    links: set[str] = set()  # written as symbolic links: nothing is written below one
    try:
        for path, entry in wanted:
            parts = path.split("/")
            if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
                skipped[path] = "below a symbolic link: never followed"
                continue
            proc.stdin.write(entry.oid.encode("ascii") + b"\n")
            proc.stdin.flush()
            size = _blob_size(proc.stdout.readline(), entry.oid, path)
            target = root / path
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file where a folder must be: a tree no checkout writes
                skipped[path] = f"cannot be written: {exc.strerror or exc}"
                _drain(proc.stdout, size + 1)
                continue
            if entry.kind == "link":
                link = proc.stdout.read(size)
                proc.stdout.read(1)
                try:
                    os.symlink(os.fsdecode(link), target)
                    links.add(path)
                except OSError as exc:
                    skipped[path] = f"cannot be written: {exc.strerror or exc}"
                continue
            try:
                with open(target, "xb") as fh:
                    left = size
                    while left:
                        block = proc.stdout.read(min(CHUNK, left))
                        if not block:
                            raise BadInputError(f"git cat-file: {path} ended early")
                        fh.write(block)
                        left -= len(block)
            except OSError as exc:
                skipped[path] = f"cannot be written: {exc.strerror or exc}"
                _drain(proc.stdout, size + 1)
                continue
            proc.stdout.read(1)  # the newline after each object
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait()


def _drain(stream: Any, size: int) -> None:
    while size > 0:
        got = stream.read(min(CHUNK, size))
        if not got:
            return
        size -= len(got)


# ----------------------------------------------------------------------------
# the root itself: a folder on both sides, or something a checkout fills from elsewhere
# ----------------------------------------------------------------------------
TREE_MODE = "040000"
#: what a root that is not a folder on a side gives the app (the state files below it show as removed)
_ROOT_AS = {
    "submodule": "a submodule on the {side} side (commit {oid} of another repository): a checkout "
    "puts that repository's files there (git submodule update), which this review does not read",
    "link": "a symbolic link on the {side} side: RepoSaver refuses a linked root, the app does not "
    "start, and this review does not read what it points to",
    "file": "a file on the {side} side: there is no state there for the app to read",
}


def root_replaced(top: Path, rel: str, rng: Range) -> list[str]:
    """Why the root is not the folder of files the review reads, one sentence each: the root
    or a folder above it held by a side as a submodule (a commit of another repository, which
    ``git submodule update`` checks out in its place) or a symbolic link (git diff-tree and
    ls-tree below the root see neither: the files below it just look removed); and a changed
    ``.gitmodules`` naming a submodule at, above or below the root (where its files come from)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    out = []
    for label, rev in (("base", rng.base), ("head", rng.head)):
        if rev is None:
            continue
        for folder in folders:
            listing = git(top, "--literal-pathspecs", "ls-tree", "--full-tree", "-z", rev, "--", folder)
            for record in listing.split("\0"):
                info, _, path = record.partition("\t")
                if path != folder or not info or info.split()[0] == TREE_MODE:
                    continue
                entry = Entry(mode=info.split()[0], oid=info.split()[2], size=-1)
                where = "the root" if folder == rel else f"{folder}, a folder above the root,"
                out.append(f"{where} is {_ROOT_AS[entry.kind].format(oid=entry.oid[:12], side=label)}")
    if changed_files(top, rng, [".gitmodules"]):
        sides = [_submodule_paths(top, rng.base), _submodule_paths(top, rng.head)]
        near = sorted({p for paths in sides for p in paths or () if _overlaps(p, rel)})
        if near:
            out.append(
                f".gitmodules changed and names a submodule at, above or below the root ({', '.join(near)}): "
                "it says which repository a checkout takes those files from"
            )
        elif None in sides:
            out.append(
                ".gitmodules changed and does not read as git's config: where a checkout takes a "
                "submodule's files from is not known"
            )
    return out


def _submodule_paths(top: Path, rev: str | None) -> set[str] | None:
    """The paths ``.gitmodules`` gives its submodules at ``rev`` (the work tree: None); None
    when it is there and does not read."""
    if rev is None:
        if not (top / ".gitmodules").is_file():
            return set()
        source = ["--file", str(top / ".gitmodules")]
    else:
        if not git(top, "--literal-pathspecs", "ls-tree", "--full-tree", rev, "--", ".gitmodules").strip():
            return set()
        source = ["--blob", f"{rev}:.gitmodules"]
    proc = gitrun.run(top, "config", *source, "-z", "--get-regexp", r"^submodule\..*\.path$", ok=None)
    if proc.returncode not in (0, 1):  # 1: no such key
        return None
    listing = proc.stdout.decode("utf-8", "surrogateescape")
    return {record.partition("\n")[2] for record in listing.split("\0") if record}


def _overlaps(path: str, rel: str) -> bool:
    path, rel = path.strip("/"), rel.strip("/")
    return rel in ("", ".") or path == rel or rel.startswith(path + "/") or path.startswith(rel + "/")


# ----------------------------------------------------------------------------
# the work tree as the app reads it: every file, by its bytes
# ----------------------------------------------------------------------------
#: what the saver's own .gitignore keeps out of git (layout.GITIGNORE_TEXT): derived data and
#: temp files, made on each machine and never read as state; left out of a work-tree review
#: unless the base commit holds them
_LOCAL_ONLY = (".cache/",)


def work_tree_changes(top: Path, rel: str, base: str, under: str = "") -> Changes:
    """The files below the root (or below its folder ``under``) that differ between the
    commit ``base`` and the work tree as the app reads it: every file on disk walked and
    compared by its bytes with the base's blob (the object id git would give them, with no
    filter: ``git hash-object --no-filters``), never through git's index, so nothing marked
    assume-unchanged or skip-worktree, ignored, or made to look unchanged by an attribute
    (``ident``, an encoding, a clean filter) is missed. A text file checked out with CRLF
    line endings (``core.autocrlf``) is the same file: JSON reads the same either way; so is
    a file git-lfs checked out whole where git stores its pointer (``_lfs_pointer_of``)."""
    entries = tree_entries(top, base, rel, [under] if under else None)
    disk = _disk_files(top / rel if rel not in ("", ".") else top, under)
    out = Changes()
    for path, full in disk.items():
        entry = entries.get(path)
        if entry is None:
            if not path.startswith(_LOCAL_ONLY) and not path.endswith(".tmp"):
                out.added.add(path)
        elif not _same_object(full, entry):
            out.modified.add(path)
    out.removed = {p for p in entries if p not in disk}
    return out


def _disk_files(root: Path, under: str) -> dict[str, Path]:
    """Every file and symbolic link below ``root`` (or its folder ``under``), by path below
    ``root``; links are never followed, ``.git`` (a nested repository's) is left out."""
    start = root / under if under else root
    out: dict[str, Path] = {}
    if start.is_symlink() or not start.is_dir():
        return out
    for folder, dirs, files in os.walk(start):
        here = Path(folder)
        for name in [d for d in dirs if (here / d).is_symlink()]:
            dirs.remove(name)
            files.append(name)
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            if name != ".git":
                out[(here / name).relative_to(root).as_posix()] = here / name
    return out


def _same_object(path: Path, entry: Entry) -> bool:
    """Whether the file at ``path`` (not followed) is what git stores as ``entry``."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(path))
            return entry.kind == "link" and _blob_id([target], entry.oid, len(target)) == entry.oid
        if not stat.S_ISREG(info.st_mode) or entry.kind != "file":
            return False
        if info.st_size == entry.size:
            with open(path, "rb") as fh:
                if _blob_id(iter(lambda: fh.read(CHUNK), b""), entry.oid, info.st_size) == entry.oid:
                    return True
        if entry.size < LFS_POINTER_MAX < info.st_size and _lfs_pointer_of(path, entry):
            return True
        if not entry.size < info.st_size <= 2 * entry.size:  # CRLF can only make it longer
            return False
        with open(path, "rb") as fh:  # CRLF as a checkout with core.autocrlf writes it
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return False
    if b"\r\n" not in data:
        return False
    plain = data.replace(b"\r\n", b"\n")
    return len(plain) == entry.size and _blob_id([plain], entry.oid, len(plain)) == entry.oid


def _lfs_pointer_of(path: Path, entry: Entry) -> bool:
    """Whether git stores ``entry`` as the Git LFS pointer of the file at ``path``: what git-lfs
    commits for a file it tracks and checks out whole (``git lfs pull``), so the same value."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb", opener=_no_follow) as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
            size += len(block)
    text = LFS_VERSION + f"oid sha256:{digest.hexdigest()}\nsize {size}\n".encode("ascii")
    return len(text) == entry.size and _blob_id([text], entry.oid, len(text)) == entry.oid


def _blob_id(blocks: Iterable[bytes], like: str, size: int) -> str:
    """The id git gives a blob of ``size`` bytes read from ``blocks`` (SHA-1, or SHA-256 in a
    repository whose object ids, like ``like``, are 64 hex digits)."""
    digest = hashlib.sha256() if len(like) == 64 else hashlib.sha1()  # git's object id
    digest.update(b"blob %d\0" % size)
    for block in blocks:
        digest.update(block)
    return digest.hexdigest()


def changed_files(top: Path, rng: Range, paths: list[str]) -> list[str]:
    """Which of ``paths`` (from the top) differ between the two sides: the commits' trees, or
    the base and the file on disk by its bytes (as ``work_tree_changes``: git's index is not
    asked, a file it is told to skip counts too)."""
    if rng.head is not None:
        args = ["diff", "--name-only", "--no-renames", "-z", rng.base, rng.head]
        return [p for p in git(top, "--literal-pathspecs", *args, "--", *paths).split("\0") if p]
    out = []
    for path in paths:
        listing = git(top, "--literal-pathspecs", "ls-tree", "-l", "-z", "--full-tree", rng.base, "--", path)
        info = listing.split("\0")[0].partition("\t")[0].split()
        entry = (
            Entry(mode=info[0], oid=info[2], size=int(info[3]) if info[3].isdigit() else -1) if info else None
        )
        there = os.path.lexists(top / path)
        if (entry is None and there) or (entry is not None and not _same_object(top / path, entry)):
            out.append(path)
    return out
