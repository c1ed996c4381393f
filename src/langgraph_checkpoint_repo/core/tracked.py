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

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

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
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--", CACHE],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # a read: never takes git's index lock
            check=False,
        )
    except OSError:  # no git
        return []
    if proc.returncode != 0:  # not a work tree
        return []
    names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [root / name for name in cache_paths(n for n in names if n)]
