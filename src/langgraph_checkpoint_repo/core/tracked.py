"""Files under a root's ``.cache/`` that git tracks: derived data that came from a commit.

Everything under ``.cache/`` is derived here, from the root's own files, and ignored by the
root's ``.gitignore``; a file there that git tracks was force-added (``git add -f``), so a
checkout puts a commit's bytes where a reader expects its own. No reader trusts them for
that: the derived index is used only against stat keys (inode and ctime in nanoseconds) no
commit can predict, and the embeddings only under a key kept outside the work tree
(vectors.py). Such a file is still worth flagging (``validate``, the review): it is the sign
of a pull request planting data, and it makes every cache write show in ``git status``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from . import gitrun
from .layout import CACHE


def cache_paths(paths: Iterable[str]) -> list[str]:
    """Of paths below a root (``/``-separated, as ``git ls-tree`` lists a revision's tree
    from the root), those under ``.cache/``, sorted."""
    return sorted(p for p in paths if p == CACHE or p.startswith(CACHE + "/"))


def tracked_cache_files(root: Path) -> list[Path]:
    """The files under ``root/.cache/`` that git tracks (in the index of the work tree holding
    the root), sorted; none when the root is in no git work tree or git is not installed."""
    if not root.is_dir():
        return []
    env = {**gitrun.english(), "GIT_OPTIONAL_LOCKS": "0"}  # a read: never takes git's index lock
    try:
        proc = gitrun.run(root, "ls-files", "-z", "--cached", "--", CACHE, env=env, ok=None)
    except gitrun.GitMissingError:  # no git: nothing can be tracked
        return []
    if proc.returncode != 0:
        said = gitrun.words_of(proc.stderr)
        if gitrun.outside_any_repository(said):
            return []
        # another refusal (a repository of another user, a format git does not know): what it
        # tracks is unknown, and validate must not pass as if nothing were
        raise gitrun.GitRefusedError(f"git refused to list what it tracks under {root / CACHE}: {said}", said)
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [root / name for name in cache_paths(n for n in names if n)]
