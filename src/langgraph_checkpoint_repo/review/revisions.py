"""Git revisions of a state root, read without a checkout and without touching the work tree.

``RANGE`` is git's: ``BASE..HEAD`` compares two revisions, ``BASE`` compares a revision with
the work tree (files not yet committed, and not yet added, included), and no range compares
the merge-base of ``HEAD`` and the default branch with the work tree. What changed is asked
of git (``git diff --name-status``, ``git ls-files --others``); the files of a revision are
read from ``git archive`` into a temporary folder, only for the threads that changed.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import BadInputError, NotFoundError

WORK_TREE = "work tree"


@dataclass(frozen=True, kw_only=True)
class Range:
    """What ``review`` compares: ``base`` (a commit) with ``head`` (a commit, or the work tree)."""

    base: str
    head: str | None  # None: the work tree
    spec: str  # as the user gave it (or how the default was found), for the report

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
    """A git command's output (git's own error as a NotFoundError/BadInputError naming it)."""
    proc = subprocess.run(
        ["git", "-C", str(top), *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInputError(f"git {' '.join(args[:2])}: {message[-1] if message else 'failed'}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def git_top(root: Path) -> Path:
    """The top of the git work tree holding ``root`` (an error when there is none)."""
    start = root if root.is_dir() else root.parent
    try:
        out = git(start, "rev-parse", "--show-toplevel")
    except BadInputError:
        raise NotFoundError(f"{root} is not in a git work tree: review compares git revisions") from None
    return Path(out.strip())


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


def parse_range(top: Path, spec: str | None) -> Range:
    """``BASE..HEAD``, ``BASE`` (to the work tree), or None: the merge-base of HEAD with the
    default branch, to the work tree. Each revision is resolved to a commit here."""
    if spec is None:
        branch = default_branch(top)
        if branch is None:
            raise BadInputError(
                "no default branch (origin/HEAD, main or master) to review against: give a RANGE"
            )
        base = git(top, "merge-base", "HEAD", branch).strip()
        return Range(base=base, head=None, spec=f"merge-base of HEAD and {branch}")
    if spec.startswith("-"):
        raise BadInputError(f"bad range {spec!r}: a revision cannot start with '-'")
    left, dots, right = spec.partition("..")
    if dots and right.startswith("."):
        raise BadInputError(f"bad range {spec!r}: use BASE..HEAD (the three-dot form is not taken)")
    base = resolve(top, left or "HEAD")
    head = resolve(top, right or "HEAD") if dots else None
    return Range(base=base, head=head, spec=spec)


def resolve(top: Path, rev: str) -> str:
    """A revision as the commit it names; a clear error for one git does not know."""
    if rev.startswith("-") or "\n" in rev:
        raise BadInputError(f"bad revision {rev!r}")
    try:
        return git(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except BadInputError:
        raise NotFoundError(f"unknown revision {rev!r} in {top}") from None


def is_revision(top: Path, text: str) -> bool:
    """Whether git knows ``text`` as a commit (a branch, a tag, a commit id)."""
    try:
        resolve(top, text)
        return True
    except (BadInputError, NotFoundError):
        return False


def changes(top: Path, rel: str, rng: Range) -> Changes:
    """The files below ``rel`` (the root, relative to ``top``) that differ: from git's diff of
    the two commits, or of the base and the work tree plus the files git does not track yet."""
    out = Changes()
    args = ["diff", "--name-status", "--no-renames", "-z", rng.base]
    if rng.head is not None:
        args.append(rng.head)
    fields = git(top, *args, "--", rel).split("\0")
    for status, path in zip(fields[0::2], fields[1::2], strict=False):
        below = _below(path, rel)
        if below is None:
            continue
        {"A": out.added, "D": out.removed}.get(status[:1], out.modified).add(below)
    if rng.head is None:
        for path in git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", rel).split("\0"):
            below = _below(path, rel) if path else None
            if below is not None:
                out.added.add(below)
    return out


def _below(path: str, rel: str) -> str | None:
    prefix = rel.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def materialize(top: Path, rev: str, rel: str, folders: list[str], dest: Path) -> Path:
    """The files of ``folders`` (below the root ``rel``) at ``rev``, written under ``dest`` as
    a root of their own (git archive, extracted with tarfile's "data" filter: no absolute or
    escaping path, no device; links are refused by every read anyway). A folder the revision
    does not have is left out."""
    root = dest / "root"
    root.mkdir(parents=True, exist_ok=True)
    paths = [f"{rel}/{f}" for f in folders]
    present = set(git(top, "ls-tree", "--name-only", "-z", rev, "--", *paths).split("\0"))
    wanted = [f"{rel}/{f}" for f in folders if f"{rel}/{f}" in present]
    if not wanted:
        return root
    proc = subprocess.run(
        ["git", "-C", str(top), "archive", "--format=tar", rev, "--", *wanted],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if proc.returncode != 0:
        raise BadInputError(f"git archive {rev}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    depth = len(Path(rel).parts)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        members = []
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) <= depth:
                continue
            member.name = str(Path(*parts[depth:]))
            members.append(member)
        tar.extractall(root, members=members, filter="data")
    return root
