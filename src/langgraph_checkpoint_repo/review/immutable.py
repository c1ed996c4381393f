"""``validate --base REV``: the state files that existed at a git revision and were changed since.

The format never changes a file once written (docs/format.md): a checkpoint, a pending-writes
file, an object, a large value or a kept value is added, and later maybe removed, never
edited. An edit is history rewritten, which the app loads as if it had always been so; CI
fails on it with ``--base`` set to the pull request's base. Store items (``store/``) change
by design and are not looked at.
"""

from __future__ import annotations

from pathlib import Path

from ..core.checks import Problem
from ..core.layout import THREADS
from .revisions import git_top, resolve, work_tree_changes


def rewritten_since(root: Path, rev: str) -> list[Problem]:
    """One problem per file under the root's ``threads/`` that ``rev`` has and the work tree
    holds with other content (or as another kind of file: a symlink), read from disk by its
    bytes (a file marked assume-unchanged or skip-worktree is no exception)."""
    top = git_top(root)
    commit = resolve(top, rev)
    rel = root.resolve().relative_to(top.resolve()).as_posix()
    out = []
    for path in sorted(work_tree_changes(top, rel, commit, THREADS).modified):
        out.append(
            Problem(
                str(root / path),
                "/",
                f"changed since {rev}: state files are never changed once written (history "
                "rewritten); restore it from git and make the change as a new checkpoint "
                "(`langgraph-repo edit`)",
            )
        )
    return out
