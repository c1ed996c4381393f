"""``git-setup``: git and the forges show the state files as what they mean (docs/review.md).

Two halves, because a forge never runs local code. The top-level ``.gitattributes`` (committed
with the project) marks the root's thread files as generated, so GitHub (``linguist-generated``)
and GitLab (``gitlab-generated``) collapse their raw JSON in a pull request, and names the diff
driver. The repository's own git config (per clone, never committed) defines that driver as
this package's textconv (review/textconv.py, started through review/textconv_entry.py), so
``git diff``, ``git log -p`` and ``git show`` print each file as a few lines; a clone without
it sees the JSON. The lines sit in a marked block and the config in its own section, so
running it again changes nothing and ``--undo`` takes back exactly those. The same block and
config register the merge driver of RepoStore items (``store/``: review/mergeitem.py,
docs/store.md), so two branches that changed different fields of one memory merge by
themselves. With ``--lfs`` the block also marks the threads' ``large/`` files (big values,
core/layout.py) for Git LFS, last, so its ``diff=lfs`` wins for them; the readers name
``git lfs pull`` when they meet a pointer file there (core/jsonread.py).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from ..core import gitrun
from ..core.errors import BadInputError
from ..review import textconv_entry
from ..review.textconv import VIEW
from .app import require_root, settings_of
from .exits import REFUSED, CliError

DRIVER = "langgraph-repo"
MERGE_DRIVER = "langgraph-repo-item"  # RepoStore items merged field by field (review/mergeitem.py)
MERGE_SCRIPT = "langgraph-repo-merge-item"
MERGE_SNIPPET = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "from langgraph_checkpoint_repo.review.mergeitem import cli; sys.exit(cli())"
)
BEGIN = "# langgraph-repo: begin"
END = "# langgraph-repo: end"
BEGIN_LINE = f"{BEGIN} (written by `langgraph-repo git-setup`; `langgraph-repo git-setup --undo` removes it)"
ATTRIBUTES = f"linguist-generated=true gitlab-generated diff={DRIVER}"
LFS_ATTRIBUTES = "filter=lfs diff=lfs merge=lfs -text"  # what ``git lfs track`` writes
INSTALL_LFS = (
    "git lfs is not installed here: install git-lfs (https://git-lfs.com; Debian and Ubuntu: "
    "apt install git-lfs), then run `git lfs install` once; until then git commits large/ files as they are"
)
#: the driver's entry, run by its path with ``-I -S`` (no site, no current folder, no
#: ``PYTHON*`` variables): a start imports the standard library the view uses and nothing else
ENTRY = Path(textconv_entry.__file__).absolute()
ENTRY_FLAGS = "-I -S"
SCRIPT = "langgraph-repo-textconv"
#: the driver when its entry is not a file (a zipped install) and no script is installed beside
#: this program: the current folder (where git runs it: the top of the work tree) leaves
#: ``sys.path`` before anything is imported, so a checkout's own ``orjson.py`` can never run
SNIPPET = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "from langgraph_checkpoint_repo.review.textconv import main; sys.exit(main())"
)


def git_setup(
    ctx: typer.Context,
    undo: Annotated[
        bool, typer.Option("--undo", help="Remove the lines and the git config git-setup wrote.")
    ] = False,
    lfs: Annotated[
        bool,
        typer.Option(
            "--lfs",
            help="Also mark the threads' large/ files (big values) for Git LFS in .gitattributes "
            "(filter=lfs diff=lfs merge=lfs -text); says so when git lfs is not installed.",
        ),
    ] = False,
) -> None:
    """Make pull requests and git show the state readably: mark the root's files generated in
    the top-level .gitattributes (GitHub and GitLab collapse them) and register a textconv driver
    in this repository's git config (git diff, log -p and show print each file as a few lines),
    and a merge driver for RepoStore items (two branches' changes to different fields merge).
    Commit .gitattributes on the default branch, on its own: review flags a range that changes
    it. Running it again changes nothing; --undo removes exactly what it wrote (the LFS line too)."""
    settings = settings_of(ctx)
    root = settings.root
    if not undo:
        require_root(root, creating=True)  # before any state exists is fine; a wrong folder is not
    top = work_tree_top(root)
    rel = relative_root(root, top)
    mine = [attribute_line(rel), merge_line(rel)]
    path = top / ".gitattributes"
    before = read_attributes(path)
    lines = _block_lines(before)
    others = [ln for ln in lines if ln not in [*mine, lfs_line(rel)]]
    if undo:
        after = _with_block(before, others)
        said = [f".gitattributes: removed {ln}" for ln in [*mine, lfs_line(rel)] if ln in lines]
        said += _remove_order(top, rel)
        if not others:
            said += _remove_config(top)
    else:
        wanted = [*mine, lfs_line(rel)] if lfs or lfs_line(rel) in lines else mine
        after = _with_block(before, _ordered([*lines, *(ln for ln in wanted if ln not in lines)], rel))
        said = [f".gitattributes: added {ln}" for ln in wanted if ln not in lines]
        said += _set_config(top, driver_command(), merge_command())
        said += _set_order(top, rel)
    if after != before:
        write_attributes(path, after)
    nothing = "nothing of git-setup's is here" if undo else "already set up"
    for text in said or [f"nothing to change: {nothing}"]:
        settings.out.print(text)
    for text in lfs_advice(top) if lfs and not undo else []:
        settings.err.print(text)
    if said and not undo:
        settings.out.print(_next_step(after != before))


def _next_step(attributes_changed: bool) -> str:
    """What a person does after a setup that changed something. Review flags a range that
    changes .gitattributes (it decides how a checkout writes the state): committed with a
    branch's turns, it made that branch's review exit 1."""
    clones = "each clone runs `langgraph-repo git-setup` once for the readable local diff"
    if not attributes_changed:
        return clones
    return (
        "commit .gitattributes on the default branch, on its own (a review of a branch that "
        f"changes it is flagged: attributes changed), so pull requests collapse the state files; {clones}"
    )


# ----------------------------------------------------------------------------
# where: the work tree, the root's pattern
# ----------------------------------------------------------------------------
def _git(top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A git command as text, whatever its exit code (each caller reads it)."""
    proc = gitrun.run(top, *args, ok=None)
    out, err = (b.decode("utf-8", "surrogateescape") for b in (proc.stdout, proc.stderr))
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _git_change(top: Path, *args: str) -> None:
    """A git command that changes the repository's config or refs; git's refusal (a
    ``config.lock`` left by another git, a read-only ``.git``) stops the command in git's words,
    never reported as done."""
    proc = _git(top, *args)
    if proc.returncode != 0:
        said = gitrun.words_of(proc.stderr) or f"exit {proc.returncode}"
        raise CliError(f"git {' '.join(args[:3])}: {said}", REFUSED)


def work_tree_top(root: Path) -> Path:
    """The top of the git work tree holding ``root`` (which need not exist yet)."""
    start = root.absolute()
    while not start.is_dir() and start != start.parent:
        start = start.parent
    return gitrun.work_tree_top(start, "git-setup writes the .gitattributes and git config of one", root)


def relative_root(root: Path, top: Path) -> str:
    """The root as a path below the top of the work tree ('' when it is the top)."""
    real_root, real_top = Path(os.path.realpath(root)), Path(os.path.realpath(top))
    try:
        rel = real_root.relative_to(real_top).as_posix()
    except ValueError:
        raise BadInputError(f"root {root} is outside the git work tree {top}") from None
    if rel == ".git" or rel.startswith(".git/"):
        raise BadInputError(f"root {root} is inside .git")
    return "" if rel == "." else rel


def attribute_line(rel: str) -> str:
    """The .gitattributes line for the root ``rel``: every file below its ``threads/``."""
    return f"{_pattern(rel, 'threads')} {ATTRIBUTES}"


def merge_line(rel: str) -> str:
    """The .gitattributes line for the root's RepoStore items (``store/``): git merges two
    changes to different fields of one item with the merge driver (docs/store.md). Not marked
    generated: an item is plain JSON a reviewer reads as it is."""
    return f"{_pattern(rel, 'store')} merge={MERGE_DRIVER}"


def lfs_line(rel: str) -> str:
    """The .gitattributes line that stores the root ``rel``'s big values (``threads/<thread>/
    large/``, core/layout.py) in Git LFS: every file of a ``large/`` folder directly in a
    thread's folder (``*`` never matches a ``/``, so a thread named ``large`` is not one)."""
    return f"{_pattern(rel, 'threads', '*/large/**')} {LFS_ATTRIBUTES}"


def _ordered(block: list[str], rel: str) -> list[str]:
    """The block with the LFS line of ``rel`` last: git takes the last line that sets an
    attribute, and the line of ``threads/**`` sets ``diff`` too (the LFS line sets
    ``diff=lfs``: git shows a pointer's change, not a driver's reading of a pointer)."""
    line = lfs_line(rel)
    return [ln for ln in block if ln != line] + [line] if line in block else block


def lfs_advice(top: Path) -> list[str]:
    """What to do for LFS to store the marked files: install git-lfs (``git lfs version``
    fails), or run ``git lfs install`` (no ``filter.lfs`` in git's config); nothing when set."""
    version = _git(top, "lfs", "version")
    if version.returncode != 0:
        return [INSTALL_LFS]
    if not _git(top, "config", "--get", "filter.lfs.process").stdout.strip():
        return [f"{version.stdout.strip()}: run `git lfs install` once, so git stores large/ files in LFS"]
    return []


def _pattern(rel: str, folder: str, below: str = "**") -> str:
    """Every file ``below`` (a glob, ``**`` when not given) the ``folder`` of the root ``rel``.
    Glob characters in the root's path are escaped to match themselves; a path with a space, a
    quote or a character that is not printable is written C-quoted, as gitattributes reads it
    (``_c_quoted``), so a line break in the path (a folder named ``x\\n* filter=evil``) stays
    inside its one line."""
    pattern = "/" + re.sub(r"([*?\[\\])", r"\\\1", f"{rel}/{folder}" if rel else folder) + "/" + below
    if any(ch in pattern for ch in ' "') or not pattern.isprintable():
        pattern = _c_quoted(pattern)
    return pattern


def _c_quoted(text: str) -> str:
    """``text`` in C-style quotes as git reads them in .gitattributes: ``\\`` and ``"``
    escaped, every character that is not printable (a line break of any kind, a tab, a
    control character, an undecodable byte of the path) as the octal escapes of its bytes."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            out += [f"\\{byte:03o}" for byte in ch.encode("utf-8", "surrogateescape")]
    return '"' + "".join(out) + '"'


def driver_command(entry: Path | None = ENTRY, search: list[Path] | None = None) -> str:
    """The textconv command for git: this interpreter running the driver's entry file
    (review/textconv_entry.py) by its path, isolated and without ``site`` (git starts it once
    per file version it prints: the start is the cost); when the entry is not a file, this
    install's ``langgraph-repo-textconv`` script found beside this program, else this
    interpreter running the module. Absolute, so it works from a virtual environment git knows
    nothing of. ``--view`` changes when the view does, and git drops the text it cached for an
    older command (as it does for any other change of the command)."""
    if entry is not None and entry.is_file():
        command = f"{shlex.quote(sys.executable)} {ENTRY_FLAGS} {shlex.quote(str(entry))}"
    else:
        command = _installed(SCRIPT, SNIPPET, search)
    return f"{command} --view {VIEW}"


def merge_command(search: list[Path] | None = None) -> str:
    """The merge driver's command for git (``%O %A %B %P``: ancestor, ours, theirs, path),
    found as ``driver_command`` finds the textconv."""
    return f"{_installed(MERGE_SCRIPT, MERGE_SNIPPET, search)} %O %A %B %P"


def _installed(script_name: str, snippet: str, search: list[Path] | None) -> str:
    """This install's console script ``script_name`` beside this program, else this
    interpreter running ``snippet``; quoted for git's shell."""
    name = script_name + (".exe" if sys.platform == "win32" else "")
    if search is None:
        search = [Path(sys.argv[0]).parent, Path(sysconfig.get_path("scripts"))]
    for folder in search:
        script = folder / name
        if script.is_file() and os.access(script, os.X_OK):
            return shlex.quote(str(script.absolute()))
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(snippet)}"


# ----------------------------------------------------------------------------
# .gitattributes: one marked block
# ----------------------------------------------------------------------------
def read_attributes(path: Path) -> str:
    """The file's text ('' when there is none); a symlink or a folder there is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ""
    if stat.S_ISLNK(st.st_mode):
        raise CliError(f"{path} is a symlink: git-setup does not follow it (make it a file)", REFUSED)
    if not stat.S_ISREG(st.st_mode):
        raise CliError(f"{path} is not a regular file", REFUSED)
    return path.read_bytes().decode("utf-8", "surrogateescape")


def _split(text: str) -> tuple[list[str], int, int]:
    """The file's lines (with their ends) and where the block starts and ends (-1, -1: none)."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n").startswith(BEGIN)]
    ends = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == END]
    if not starts and not ends:
        return lines, -1, -1
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise CliError(
            f".gitattributes has a broken '{BEGIN}' ... '{END}' block: fix or remove it by hand first",
            REFUSED,
        )
    return lines, starts[0], ends[0]


def _block_lines(text: str) -> list[str]:
    lines, start, end = _split(text)
    return [ln.rstrip("\r\n") for ln in lines[start + 1 : end]] if start >= 0 else []


def _with_block(text: str, block: list[str]) -> str:
    """``text`` with the block holding exactly ``block`` (no block when it is empty)."""
    lines, start, end = _split(text)
    eol = "\r\n" if "\r\n" in text else "\n"
    new = [f"{BEGIN_LINE}{eol}", *(ln + eol for ln in block), f"{END}{eol}"] if block else []
    if start >= 0:
        if block and _block_lines(text) == block:
            return text  # as it is, its own first line included
        return "".join(lines[:start] + new + lines[end + 1 :])
    if not block:
        return text
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += eol
    return "".join(lines + new)


def write_attributes(path: Path, text: str) -> None:
    """Replace the file at once (temp file, rename); a file left empty is removed."""
    if not text:
        path.unlink(missing_ok=True)
        return
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=".gitattributes.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogateescape"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------
# git config: the driver's section
# ----------------------------------------------------------------------------
def _set_config(top: Path, command: str, merge: str) -> list[str]:
    said = []
    for name, value in (
        (f"diff.{DRIVER}.textconv", command),
        (f"diff.{DRIVER}.cachetextconv", "true"),
        (f"merge.{MERGE_DRIVER}.name", "langgraph-repo: field-wise merge of RepoStore items"),
        (f"merge.{MERGE_DRIVER}.driver", merge),
    ):
        if _git(top, "config", "--local", "--get", name).stdout.rstrip("\n") == value:
            continue
        proc = _git(top, "config", "--local", name, value)
        if proc.returncode != 0:
            raise CliError(f"git config {name}: {proc.stderr.strip()}", REFUSED)
        said.append(f"git config {name} {value}")
    return said


# ----------------------------------------------------------------------------
# diff.orderFile: the state's checkpoints first, in time order within a namespace
# ----------------------------------------------------------------------------
ORDER_NAME = "langgraph-repo.order"  # in the repository's git folder, shared by its worktrees
ORDER_KEY = "diff.orderFile"


def order_lines(rel: str) -> list[str]:
    """The ``diff.orderFile`` lines of the root ``rel``: its threads' checkpoints (in a
    namespace, a checkpoint's file name is its time-ordered id: git's path order is the time
    order), then their pending writes, then their other files; git prints any file no line
    matches after them. A glob character of the path is escaped; a character that cannot
    stand in a line of the file (git takes each line as it is) is matched by ``?``."""
    threads = _order_glob(f"{rel}/threads" if rel else "threads")
    return [f"{threads}/*/checkpoints/*", f"{threads}/*/writes/*", threads]


def _order_glob(path: str) -> str:
    out = []
    for ch in path:
        if ch in "*?[\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:  # ? matches one byte
            out.append("?" * len(ch.encode("utf-8", "surrogateescape")))
    glob = "".join(out)
    return "\\" + glob if glob.startswith("#") else glob  # a line starting with # is a comment


def _order_rank(line: str) -> int:
    return 0 if line.endswith("/*/checkpoints/*") else 1 if line.endswith("/*/writes/*") else 2


def _order_path(top: Path) -> Path:
    proc = _git(top, "rev-parse", "--git-common-dir")
    if proc.returncode != 0 or not proc.stdout.strip():
        raise CliError(f"git rev-parse --git-common-dir: {proc.stderr.strip()}", REFUSED)
    return (top / proc.stdout.strip()).resolve() / ORDER_NAME


def _set_order(top: Path, rel: str) -> list[str]:
    """Add the root's lines to git-setup's order file, and name it ``diff.orderFile`` unless
    the repository names its own (left as it is: git-setup says so)."""
    path = _order_path(top)
    current = _git(top, "config", "--local", "--get", ORDER_KEY).stdout.rstrip("\n")
    if current and current != str(path):
        return [f"{ORDER_KEY} is {current}: left as it is (git-setup would order the state's files: {path})"]
    lines = _read_order(path)
    added = [ln for ln in order_lines(rel) if ln not in lines]
    said = [f"{_shown(top, path)}: added {ln}" for ln in added]
    if added:
        _write_order(path, sorted([*lines, *added], key=_order_rank))
    if not current:
        proc = _git(top, "config", "--local", ORDER_KEY, str(path))
        if proc.returncode != 0:
            raise CliError(f"git config {ORDER_KEY}: {proc.stderr.strip()}", REFUSED)
        said.append(f"git config {ORDER_KEY} {path}")
    return said


def _remove_order(top: Path, rel: str) -> list[str]:
    """Take the root's lines out of git-setup's order file; with none left, the file and the
    ``diff.orderFile`` that names it."""
    path = _order_path(top)
    lines = _read_order(path)
    mine = order_lines(rel)
    said = [f"{_shown(top, path)}: removed {ln}" for ln in mine if ln in lines]
    left = [ln for ln in lines if ln not in mine]
    if left:
        if said:
            _write_order(path, left)
        return said
    path.unlink(missing_ok=True)
    if _git(top, "config", "--local", "--get", ORDER_KEY).stdout.rstrip("\n") == str(path):
        _git_change(top, "config", "--local", "--unset", ORDER_KEY)
        said.append(f"git config: removed {ORDER_KEY}")
    return said


def _shown(top: Path, path: Path) -> str:
    """The order file as a person finds it: below the top of the work tree (``.git/…``), else
    (a worktree's shared git folder) whole."""
    try:
        return path.relative_to(top.resolve()).as_posix()
    except ValueError:
        return str(path)


def _read_order(path: Path) -> list[str]:
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return []
    return [ln for ln in text.split("\n") if ln]


def _write_order(path: Path, lines: list[str]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{ORDER_NAME}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write("".join(ln + "\n" for ln in lines).encode("utf-8", "surrogateescape"))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_config(top: Path) -> list[str]:
    said = []
    for section in (f"diff.{DRIVER}", f"merge.{MERGE_DRIVER}"):
        if _git(top, "config", "--local", "--get-regexp", "^" + re.escape(section) + r"\.").stdout.strip():
            _git_change(top, "config", "--local", "--remove-section", section)
            said.append(f"git config: removed {section}")
    cache = f"refs/notes/textconv/{DRIVER}"
    if _git(top, "rev-parse", "--verify", "--quiet", cache).returncode == 0:
        _git_change(top, "update-ref", "-d", cache)
        said.append(f"removed git's cache of the converted text ({cache})")
    return said
