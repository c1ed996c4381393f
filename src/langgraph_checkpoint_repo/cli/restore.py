"""How git can give back a state file that does not read: the files live in a repository,
so a damaged one is rarely lost. Used by every command-line error about a file."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from ..core.errors import FileFormatError, LfsPointerError


def restore_hint(exc: BaseException) -> str:
    """For a file that does not read: how git can give it back, when git has it (the files are
    in a repository, so a damaged one is rarely lost); empty otherwise."""
    path = Path(exc.path) if isinstance(exc, FileFormatError) else None
    if isinstance(exc, LfsPointerError):
        return ""  # what git holds is the pointer: its message says how to fetch the file
    if path is None or not path.is_file():
        return ""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(path.parent), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )

    try:
        spec = f":(literal){path.name}"  # a name with * ? [ is that file, not a pattern
        last = git("log", "-1", "--format=%h", "--", spec)
        changed = git("diff", "--quiet", "HEAD", "--", spec)
    except (OSError, subprocess.SubprocessError):
        return ""
    commit = last.stdout.strip()
    if last.returncode != 0 or not commit:
        return ""
    shown = shlex.quote(str(path))  # a command to paste: quoted whatever the path holds
    if changed.returncode == 1:  # changed since it was committed: the committed one may be whole
        return f" (git has it as committed in {commit}: git checkout {commit} -- {shown})"
    return f" (committed so in {commit}: git log -- {shown} lists earlier versions to restore)"
