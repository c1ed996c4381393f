"""Running git, and saying what git said when it refuses.

Every command that asks git something goes through ``run``: a missing ``git`` binary and a
refusal (a repository owned by another user, an unknown repository format, a bad revision)
become errors of the package carrying git's own words, so a user sees "detected dubious
ownership ... git config --global --add safe.directory ..." rather than a guess such as
"not in a git work tree".
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path

from .errors import BadInputError, NotFoundError

NOT_A_REPOSITORY = "not a git repository"  # what git says in a folder outside any work tree


def english() -> dict[str, str]:
    """This environment with git's messages untranslated, where the code reads them (a German
    git says "Kein Git-Repository")."""
    return {**os.environ, "LC_ALL": "C", "LANGUAGE": "C"}


class GitMissingError(NotFoundError):
    """No ``git`` to run: not installed, or not on ``PATH``."""


class GitRefusedError(BadInputError):
    """git ran and refused; ``words`` is what it said (its stderr, on one line)."""

    def __init__(self, message: str, words: str) -> None:
        super().__init__(message)
        self.words = words


def words_of(stderr: bytes | str) -> str:
    """git's message on one line: its non-empty lines, each stripped, joined by a space (the
    spaces inside a line kept, so a hint's command with a path stays whole, ready to copy)."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def run(
    top: Path,
    *args: str,
    ok: Collection[int] | None = (0,),
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C top ARGS`` with its output captured; an exit code outside ``ok`` raises
    ``GitRefusedError`` with git's words (``ok=None``: the caller reads every exit code), a
    missing git ``GitMissingError``."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(top), *args],
            capture_output=True,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            env=None if env is None else dict(env),
            check=False,
        )
    except FileNotFoundError:
        raise missing() from None
    if ok is not None and proc.returncode not in ok:
        said = words_of(proc.stderr) or f"exit {proc.returncode}"
        raise GitRefusedError(f"git {' '.join(args[:2])}: {said}", said)
    return proc


def outside_any_repository(words: str) -> bool:
    """Whether git's (untranslated: ``english``) refusal says no folder above holds a ``.git``,
    not that one it found is broken (a linked work tree whose git folder is gone)."""
    return words.lower().startswith(f"fatal: {NOT_A_REPOSITORY} (or any")


def missing() -> GitMissingError:
    """The error for a ``git`` that is not there."""
    return GitMissingError("git is not installed or not on PATH: install git, then run the command again")


def work_tree_top(start: Path, why: str, shown: Path | None = None) -> Path:
    """The top of the git work tree holding the folder ``start``. Outside any work tree:
    "``shown`` (default ``start``) is not in a git work tree: ``why``"; any other refusal
    (ownership, repository format) in git's words."""
    shown = shown or start
    try:  # git's words in English: what they say is matched below
        proc = run(start, "rev-parse", "--show-toplevel", env=english())
    except GitRefusedError as exc:
        if outside_any_repository(exc.words):
            raise NotFoundError(f"{shown} is not in a git work tree: {why}") from None
        raise GitRefusedError(f"git refused to read {shown}: {exc.words}", exc.words) from None
    out = proc.stdout.decode("utf-8", "surrogateescape").strip()
    if not out:  # inside .git itself: no work tree
        raise NotFoundError(f"{shown} is not in a git work tree: {why}")
    return Path(out)
