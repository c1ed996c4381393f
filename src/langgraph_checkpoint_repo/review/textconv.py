"""git's textconv driver for state files: each file as a few readable lines.

``langgraph-repo git-setup`` registers it (``diff.langgraph-repo.textconv``: the interpreter
running review/textconv_entry.py with ``-I -S``), and ``git diff``, ``git log -p`` and ``git
show`` then run it once per state file version they print, so it must start fast: it imports
the standard library and its view's modules only (not even orjson, whose import costs more
than this whole view, nor typing; nor ``re`` and the ``json`` package, which imports it: the
JSON is read and written by ``json``'s C half, core/cjson.py, and the screen compiles a regex
only for a line that may hold a secret), never typer, rich or LangGraph (tests/test_gitsetup.py
runs the registered command and checks every module it imports). git hands it one path, often a
temporary copy of the old side outside the root, so it reads that one file and follows no
reference.

What a state file looks like is the format's business: the view is core/format/view.py,
built on the format package's own reading of a file (the same door the app reads through).
This module is what is about git and the terminal: it reads the file (a link, not a file, or
a file over the size of a state file is said, not read), parses it strictly within the JSON
reader's bounds, says a Git LFS pointer is one (``git lfs pull`` fetches the file), prints a
file that is not a state file, or not strict JSON, as it is
(within the same budgets), and screens whatever is printed: git prints it to a terminal, so
control characters are escaped and secrets masked.
"""

from __future__ import annotations

import os
import stat
import sys

from ..core.errors import FileFormatError
from ..core.format.inline import CALLS, FOLD, TEXT, fold
from ..core.format.inline import message as _message  # noqa: F401  (tests read textconv._message)
from ..core.format.inline import pieces as _pieces  # noqa: F401  (tests read textconv._pieces)
from ..core.format.view import BUDGET, VIEW, budgeted, render
from ..core.jsonread import MAX_FILE_BYTES, json_bounds_problem, lfs_pointer, parse_strict
from ..core.masking import escape_controls, mask_message

#: the view and its budgets, for git-setup (VIEW) and the tests
__all__ = ["BUDGET", "CALLS", "FOLD", "TEXT", "VIEW", "budgeted", "main", "render", "view"]


def main(argv: list[str] | None = None) -> int:
    """``langgraph-repo-textconv [--view N] FILE``: the view of FILE on standard output."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--view"]:
        args = args[2:]
    if len(args) != 1:
        sys.stderr.write("usage: langgraph-repo-textconv [--view N] FILE (git runs it; see git-setup)\n")
        return 2
    text = "".join(line + "\n" for line in view(args[0]))
    try:
        sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
        sys.stdout.flush()
    except BrokenPipeError:  # git stopped reading
        return 0
    return 0


def view(path: str) -> list[str]:
    """The screened lines that stand for the file at ``path``; never raises for what it holds."""
    raw = _read(path)
    if isinstance(raw, str):
        return [_screen(raw)]
    try:
        lines = _lines(raw, path)
    except (RecursionError, ValueError, TypeError, KeyError, AttributeError):
        lines = None  # a shape no view expects: the file as it is
    if lines is None:  # as it is, within the same budgets (a long line folded with its digest)
        lines = [fold(line, TEXT) for line in raw.decode("utf-8", "backslashreplace").splitlines()]
    lines = budgeted(lines)
    return [_screen(line) for line in lines]


def _read(path: str) -> bytes | str:
    """The file's bytes, or a line saying why they are not read (a link, not a file, too big)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return f"(a symlink to {os.readlink(path)}: not followed)"
        if not stat.S_ISREG(st.st_mode):
            return "(not a regular file)"
        if st.st_size > MAX_FILE_BYTES:
            return f"(a file of {st.st_size} bytes, over the {MAX_FILE_BYTES}-byte limit of a state file)"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return f"(cannot read {path}: {exc.strerror or exc})"
    if len(raw) > MAX_FILE_BYTES:
        return f"(a file over the {MAX_FILE_BYTES}-byte limit of a state file)"
    return raw


def _lines(raw: bytes, path: str) -> list[str] | None:
    """The view of a state file, a Git LFS pointer said as one, or None for anything else
    (printed as it is)."""
    pointer = lfs_pointer(raw)
    if pointer is not None:  # the whole oid: a changed value still changes the line
        return [f"Git LFS pointer: sha256 {pointer[0]}, {pointer[1]} bytes (`git lfs pull` fetches the file)"]
    if json_bounds_problem(raw) is not None:
        return None
    try:
        doc = parse_strict(raw, path)
    except FileFormatError:
        return None
    return render(doc, raw)


def _screen(line: str) -> str:
    """A line as it may reach a terminal: secrets masked, control characters escaped."""
    return escape_controls(mask_message(line))


if __name__ == "__main__":
    sys.exit(main())
