"""The command line and the files under a root, as the tests drive and read them.

graphs.py makes the states; this module runs ``langgraph-repo`` over them and reads, edits
and lists what the saver wrote, so every test module does it the same way.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import itertools
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner, Result

from langgraph_checkpoint_repo.cli import app
from langgraph_checkpoint_repo.cli.app import PROG
from langgraph_checkpoint_repo.cli.exits import INTERNAL
from langgraph_checkpoint_repo.core.layout import Layout

#: ``LANGGRAPH_REPO_LONG=1``: the long mode (docs/reliability.md, "The default run and the long
#: mode"): more kills, seeds, rounds and hypothesis examples than the default run, which
#: proves each promise once
LONG = os.environ.get("LANGGRAPH_REPO_LONG") == "1"


def crossed(names: str, first: Sequence[str], second: Sequence[bool]) -> pytest.MarkDecorator:
    """Parametrize ``names`` (``"x,strict"``) over two axes: every pair in the long mode; in the
    default run the diagonal (each value of each axis once, ``first[i]`` with ``second[i]``),
    which proves each promise once. Ids read ``x-default`` / ``x-strict``."""
    pairs = list(itertools.product(first, second)) if LONG else list(zip(first, second, strict=True))
    return pytest.mark.parametrize(
        names, [pytest.param(a, b, id=f"{a}-{'strict' if b else 'default'}") for a, b in pairs]
    )


def examples(default: int) -> int:
    """Hypothesis examples of a property: ``default``, ten times as many in the long mode."""
    return default * 10 if LONG else default


# ----------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------
def sigint_as_at_a_terminal() -> None:
    """A ``preexec_fn`` for a child a test stops with SIGINT as Ctrl-C does. A shell without
    job control starts a background job (``pytest ... &``, ``nohup``) with SIGINT ignored, its
    children inherit that, and Python then never raises KeyboardInterrupt: the child went on
    (an import waited out its 60 s lock, exit 6; a server its 5 s). Whoever runs the suite,
    the child gets SIGINT as a process started from a terminal does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This environment without STEERING_ENV, plus ``env`` (None: removed), so the output is
    the same whoever runs the tests (a terminal, a pipe, an xdist worker)."""
    base = {k: v for k, v in os.environ.items() if k not in STEERING_ENV}
    return {k: v for k, v in {**base, **(env or {})}.items() if v is not None}


#: what would steer the command line behind the test's back: a root from LANGGRAPH_REPO_ROOT,
#: rich's TTY_COMPATIBLE, and the terminal size (pytest-xdist workers get COLUMNS=80, which
#: would cut tables short; without it a pipe gets the CLI's own PIPE_WIDTH, as a user's does)
STEERING_ENV = ("LANGGRAPH_REPO_ROOT", "TTY_COMPATIBLE", "COLUMNS", "LINES")

#: how ``cli`` runs the command line: ``in-process`` (the default), ``process`` (every run a
#: fresh ``python -m langgraph_checkpoint_repo``, as before) or ``both`` (each run both ways,
#: from the same files; a difference in exit code, output or files left is appended to the
#: file LANGGRAPH_REPO_TEST_CLI_REPORT names, and the test goes on with the process's result)
CLI_MODE = os.environ.get("LANGGRAPH_REPO_TEST_CLI", "in-process")
if CLI_MODE not in ("in-process", "process", "both"):
    raise ValueError(f"LANGGRAPH_REPO_TEST_CLI={CLI_MODE!r}: expected in-process, process or both")


def cli(
    root: Path | None,
    *args: Any,
    stdin: str = "",
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``langgraph-repo`` (``--root`` first when given) as a person or a hook runs it, with
    what a fresh ``python -m langgraph_checkpoint_repo`` gets: this environment as ``cli_env``
    makes it, ``cwd``, an empty stdin that is not a terminal, stdout and stderr pipes.

    It runs in this process (no interpreter start-up) and looks from inside like a fresh one:
    the ``sys.path`` such a process has (never tests/ nor the current folder), none of the
    modules it could not import (the test modules, a project's code an earlier run imported),
    Python's default warning filters printing to its stderr, an uncaught exception as a
    traceback and exit 1. What only a process can show goes to ``cli_process``; these go there
    by themselves: a prompt answered on stdin, a terminal asked for (TERMINAL_ENV), and an
    environment read when an interpreter starts or LangGraph is imported (READ_AT_START) that
    differs from this process's.
    """
    argv = [*(["--root", str(root)] if root is not None else []), *map(str, args)]
    run_env = cli_env(env)
    terminal = any((env or {}).get(k) is not None for k in TERMINAL_ENV)
    if CLI_MODE == "process" or stdin or terminal or _needs_a_process(run_env):
        return no_bug(argv, _process(argv, stdin=stdin, cwd=cwd, env=run_env, timeout=timeout))
    return no_bug(argv, _in_process(argv, cwd=cwd, env=run_env, timeout=timeout))


def no_bug(argv: Sequence[str], proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """A run, unless it ended in exit 7: an unexpected error is a bug of the program, never an
    outcome a test of the command line accepts (``returncode != 0`` would pass on it), so it
    fails the test here, with the line the program printed. A test of exit 7 itself runs the
    program without this helper."""
    if proc.returncode == INTERNAL:
        raise AssertionError(
            f"langgraph-repo {' '.join(argv)}: a bug (exit {INTERNAL}): {proc.stderr.strip()}"
        )
    return proc


def cli_process(
    root: Path | None,
    *args: Any,
    stdin: str = "",
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m langgraph_checkpoint_repo`` in a fresh process, for what only a process
    shows: the entry point itself, exit codes and output as a process returns them, a prompt
    on stdin, an environment read at import time, which modules a fresh interpreter imports,
    and a second process reading files another wrote (no cache of this one can help it)."""
    argv = [*(["--root", str(root)] if root is not None else []), *map(str, args)]
    return no_bug(argv, _process(argv, stdin=stdin, cwd=cwd, env=cli_env(env), timeout=timeout))


def cli_in_process(*args: Any, env: Mapping[str, str | None] | None = None) -> Result:
    """The command line in this process, as ``cli`` runs it, as typer's ``Result``
    (``exit_code``, ``stdout``, ``stderr``, ``output``: both interleaved, ``exception``)."""
    argv, run_env = [str(a) for a in args], cli_env(env)
    ran = (
        _both(argv, cwd=None, env=run_env, timeout=300)
        if CLI_MODE == "both"
        else _invoke(argv, cwd=None, env=run_env)
    )
    if ran.code == INTERNAL:
        stderr = ran.stderr.decode("utf-8", "replace").strip()
        raise AssertionError(f"langgraph-repo {' '.join(argv)}: a bug (exit {INTERNAL}): {stderr}")
    return Result(
        runner=CliRunner(),
        stdout_bytes=ran.stdout,
        stderr_bytes=ran.stderr,
        output_bytes=ran.output,
        return_value=None,
        exit_code=ran.code,
        exception=ran.exception,
        exc_info=ran.exc_info,  # type: ignore[arg-type]
    )


def _process(
    argv: list[str], *, stdin: str, cwd: Path | str | None, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langgraph_checkpoint_repo", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        input=stdin,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def _in_process(
    argv: list[str], *, cwd: Path | str | None, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    ran = (
        _both(argv, cwd=cwd, env=env, timeout=timeout)
        if CLI_MODE == "both"
        else _invoke(argv, cwd=cwd, env=env)
    )
    out, err = (data.decode("utf-8", "surrogateescape") for data in (ran.stdout, ran.stderr))
    return subprocess.CompletedProcess(["langgraph-repo", *argv], ran.code, out, err)


#: a run that asks for a terminal's behaviour (colour, progress bars, a width) gets a process:
#: rich also asks the process's own file descriptors, which in here are pytest's
TERMINAL_ENV = ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "FORCE_COLOR", "COLUMNS", "LINES")
#: read once, when an interpreter starts (PYTHON*, the locale) or when LangGraph is imported:
#: a run whose value differs from this process's would see this process's, so it gets a process
READ_AT_START = ("LANGGRAPH_STRICT_MSGPACK", "LANG", "LC_ALL", "LC_CTYPE")
#: what an in-process run cannot follow even when unchanged (warning options, dev mode)
NEVER_IN_PROCESS = ("PYTHONWARNINGS", "PYTHONDEVMODE")
_START_ENV = dict(os.environ)


def _needs_a_process(env: Mapping[str, str]) -> bool:
    names = {*READ_AT_START, *(k for k in {*env, *_START_ENV} if k.startswith("PYTHON"))} - {"PYTHONPATH"}
    return any(env.get(k) != _START_ENV.get(k) for k in names) or any(env.get(k) for k in NEVER_IN_PROCESS)


@dataclass
class _Ran:
    code: int
    stdout: bytes
    stderr: bytes
    output: bytes  # stdout and stderr as written, interleaved
    exception: BaseException | None
    exc_info: Any


class _Tee(io.BytesIO):
    def __init__(self, both: io.BytesIO) -> None:
        super().__init__()
        self.both = both

    def write(self, data: Any) -> int:
        self.both.write(data)
        return super().write(data)


_ONE_AT_A_TIME = threading.Lock()  # the streams, the environment and the folder are the process's


def _invoke(argv: list[str], *, cwd: Path | str | None, env: dict[str, str]) -> _Ran:
    """``app(argv)`` as ``python -m langgraph_checkpoint_repo`` runs it, with what a fresh
    process would have (see ``cli``); everything is put back afterwards."""
    fresh = _fresh_interpreter(env.get("PYTHONPATH"))
    both = io.BytesIO()
    out, err = _Tee(both), _Tee(both)
    code, exception, exc_info = 0, None, None
    streams = (
        io.TextIOWrapper(io.BytesIO(), encoding=fresh["encoding"], errors=fresh["errors"]),
        io.TextIOWrapper(out, encoding=fresh["encoding"], errors=fresh["errors"], write_through=True),
        io.TextIOWrapper(err, encoding=fresh["encoding"], errors="backslashreplace", write_through=True),
    )
    with _ONE_AT_A_TIME, _as_a_fresh_process(fresh, env, cwd):
        sys.stdin, sys.stdout, sys.stderr = streams
        try:
            get_command(app).main(args=argv, prog_name=PROG)  # as main() builds it
        except SystemExit as exc:  # what the interpreter makes of it
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
            exception = exc if code else None
            exc_info = sys.exc_info() if code else None
        except Exception as exc:  # uncaught: a traceback and exit 1, as the interpreter does
            sys.stderr.write("".join(traceback.format_exception(exc)))
            code, exception, exc_info = 1, exc, sys.exc_info()
        finally:
            for stream in streams[1:]:
                stream.flush()
    ran = _Ran(code, out.getvalue(), err.getvalue(), both.getvalue(), exception, exc_info)
    for stream in streams:
        stream.detach()  # leaves the buffers to the collector, never closes them under a reader
    return ran


_FRESH: dict[str | None, dict[str, Any]] = {}
_PROBE = (
    "import json, sys\n"
    "print(json.dumps({'path': sys.path[1:], 'encoding': sys.stdout.encoding, 'errors': sys.stdout.errors}))"
)


def _fresh_interpreter(pythonpath: str | None) -> dict[str, Any]:
    """What a fresh interpreter with this PYTHONPATH has, once asked: its ``sys.path`` as
    ``python -m`` leaves it (the current folder removed, as __main__.py does) and the encoding
    and error handler of its stdout into a pipe."""
    if pythonpath not in _FRESH:
        env = cli_env({"PYTHONPATH": pythonpath})
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, env=env, cwd="/"
        )
        _FRESH[pythonpath] = json.loads(probe.stdout)
    return _FRESH[pythonpath]


#: the answer of ``_importable_in`` for a module that lives in one file, kept with the module
#: and the path it was for
_IMPORTABLE: dict[int, tuple[Any, list[str], bool]] = {}


def _importable_in(module: Any, path: list[str]) -> bool:
    """Whether a fresh process with this ``sys.path`` could have imported ``module``. Asked
    for each of some 3,000 loaded modules at every in-process run (10-20 ms a run): the
    answer for a module object of one file and a path (``fresh["path"]``, the same list at
    every run) is remembered; the entry holds the module, so its id is not reused meanwhile.
    A namespace package's folders follow ``sys.path``: asked again each time."""
    memo = _IMPORTABLE.get(id(module))
    if memo is not None and memo[0] is module and memo[1] is path:
        return memo[2]
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or getattr(module, "__file__", None)
    if origin and origin not in ("built-in", "frozen"):
        answer = _under((str(origin),), tuple(path))
        _IMPORTABLE[id(module)] = (module, path, answer)
        return answer
    if spec is not None and spec.submodule_search_locations:  # a namespace package
        return _under(tuple(str(p) for p in spec.submodule_search_locations), tuple(path))
    return True  # built in, frozen or made up by a package (typing.io): every process has it


@functools.lru_cache(maxsize=1 << 16)
def _under(places: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether every place is inside an entry of ``path`` (asked for each of thousands of
    modules at every in-process run: remembered)."""
    return all(any(p.startswith(entry + os.sep) for entry in path if entry) for p in places)


@contextmanager
def _as_a_fresh_process(fresh: dict[str, Any], env: dict[str, str], cwd: Path | str | None) -> Iterator[None]:
    """This process made to look like a fresh one for a run, and put back after it: the
    environment, the folder, ``sys.path``, the modules it could import, default warnings,
    logging with no handler (a warning goes to stderr, as Python's last resort prints it),
    and LangGraph's warn-once memory empty."""
    saved_environ, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    hidden = {
        name: module
        for name, module in sys.modules.items()
        if name != "__main__" and module is not None and not _importable_in(module, fresh["path"])
    }
    before = set(sys.modules)
    root_logger = logging.getLogger()
    saved_handlers, saved_level = root_logger.handlers[:], root_logger.level
    warned = _warned_once()
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.path[:] = fresh["path"]
        for name in hidden:
            del sys.modules[name]
        importlib.invalidate_caches()  # a file written since the last import is found, as fresh
        root_logger.handlers.clear()  # pytest's capture: a process has none
        root_logger.setLevel(logging.WARNING)
        for module, name, _seen in warned:
            setattr(module, name, set())
        with warnings.catch_warnings():
            warnings.resetwarnings()  # Python's defaults (pytest's capture is not a process's)
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            warnings.showwarning = _warning_to_stderr
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for module, name, seen in warned:
            setattr(module, name, seen)
        root_logger.handlers[:] = saved_handlers
        root_logger.setLevel(saved_level)
        for name in set(sys.modules) - before:  # what a run imported from outside (--allow's folder)
            module = sys.modules[name]
            if module is not None and not _importable_in(module, fresh["path"]):
                del sys.modules[name]
        sys.modules.update(hidden)
        for entry in set(sys.path_importer_cache) - set(saved_path):
            sys.path_importer_cache.pop(entry, None)
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)


def _warned_once() -> list[tuple[Any, str, set[Any]]]:
    """LangGraph's memory of what it has warned about once per process (the serializer's
    ``_warned_*`` sets): a fresh process has warned about nothing yet."""
    return [
        (module, name, value)
        for module_name, module in list(sys.modules.items())
        if module_name.startswith("langgraph.") and module is not None
        for name in _warned_names(module)
        if isinstance(value := vars(module).get(name), set)
    ]


#: the ``_warned*`` names of each LangGraph module, kept with the module (the same answer
#: at every run: looking through every global of every module took 1-4 ms a run)
_WARNED_NAMES: dict[int, tuple[Any, tuple[str, ...]]] = {}


def _warned_names(module: Any) -> tuple[str, ...]:
    memo = _WARNED_NAMES.get(id(module))
    if memo is None or memo[0] is not module:
        memo = (module, tuple(name for name in list(vars(module)) if name.startswith("_warned")))
        _WARNED_NAMES[id(module)] = memo
    return memo[1]


def _both(argv: list[str], *, cwd: Path | str | None, env: dict[str, str], timeout: float) -> _Ran:
    """LANGGRAPH_REPO_TEST_CLI=both: the run in a fresh process, then what it changed in the
    test's folders put back (each file and folder it added, changed or removed, with its
    bytes, mode and times) and the run in this process; what differs is reported (see
    CLI_MODE). The in-process run's result and files are what the test goes on with. What
    cannot be put back is not compared: a server's database, a folder with a socket in it.
    Differences to expect: new ids and times where a run writes, a file another process
    writes meanwhile (a server's log), and the derived index after a file was put back (it
    keys on inode and ctime, which putting back changes)."""
    places = sorted({p for p in map(_test_folder, _paths_in(argv, cwd)) if p is not None})
    saved = Path(tempfile.mkdtemp(prefix="cli-both-"))
    try:
        if any(a.startswith(("postgres://", "postgresql://")) for a in argv):
            raise OSError("a PostgreSQL database is not put back")
        for i, place in enumerate(places):
            shutil.copytree(place, saved / str(i), symlinks=True)
    except (OSError, shutil.Error) as exc:
        shutil.rmtree(saved, ignore_errors=True)
        _report({"argv": argv, "not compared": str(exc)})
        return _invoke(argv, cwd=cwd, env=env)
    try:
        before = [tree(p) for p in places]
        proc = _process(argv, stdin="", cwd=cwd, env=env, timeout=timeout)
        proc_files = [tree(p) for p in places]
        for i, place in enumerate(places):
            _put_back(place, saved / str(i), before[i], proc_files[i])
        inside = _invoke(argv, cwd=cwd, env=env)
        inside_files = [tree(p) for p in places]
    finally:
        shutil.rmtree(saved, ignore_errors=True)
    out, err = (data.decode("utf-8", "surrogateescape") for data in (inside.stdout, inside.stderr))
    got, want = (inside.code, out, err), (proc.returncode, proc.stdout, proc.stderr)
    if got != want or inside_files != proc_files:
        names = ("returncode", "stdout", "stderr")
        same = _masked([dict(zip(names, map(str, got), strict=True)), *inside_files]) == _masked(
            [dict(zip(names, map(str, want), strict=True)), *proc_files]
        )
        _report(
            {
                "argv": argv,
                "cwd": str(cwd),
                "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                **{
                    f"{n} (in process, process)": [x, y]
                    for n, x, y in zip(names, got, want, strict=True)
                    if x != y
                },
                "only time-ordered ids differ": same,
                "files that differ": sorted(
                    f"{place}/{rel}"
                    for place, x, y in zip(places, inside_files, proc_files, strict=True)
                    for rel in set(x) | set(y)
                    if x.get(rel) != y.get(rel)
                ),
            }
        )
    return inside


def _put_back(place: Path, saved: Path, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Undo what a run did under ``place``: what it added goes, what it changed or removed
    comes back from ``saved`` (a copy made before it), everything else is left alone."""
    for rel in sorted(set(after) - set(before), key=len, reverse=True):
        path = place / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif os.path.lexists(path):
            path.unlink()
    for rel in sorted((r for r in before if after.get(r, b"") != before[r]), key=len):
        path, copy = place / rel, saved / rel
        if copy.is_symlink():
            if os.path.lexists(path):
                path.unlink()
            os.symlink(os.readlink(copy), path)
        elif copy.is_dir():
            path.mkdir(exist_ok=True)
            shutil.copystat(copy, path)
        else:
            if os.path.lexists(path):
                path.unlink()
            shutil.copy2(copy, path)


#: a time-ordered id (UUID v6, as LangGraph and the saver make them): new at every run
_NEW_ID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-6[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")


def _masked(states: list[dict[str, Any]]) -> list[list[tuple[bytes, bytes | None]]]:
    def mask(data: bytes | str | None) -> bytes | None:
        data = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        return None if data is None else _NEW_ID.sub(b"<id>", data)

    return [
        sorted((mask(rel.encode()) or b"", mask(data)) for rel, data in state.items()) for state in states
    ]


def _paths_in(argv: list[str], cwd: Path | str | None) -> list[Path]:
    """Absolute paths the run names (its root, a sqlite:/// file) and the folder it runs in."""
    found = [Path(cwd if cwd is not None else os.getcwd()).absolute()]
    for arg in argv:
        text = arg.removeprefix("sqlite:///")
        if text.startswith("/"):
            found.append(Path(text))
    return found


def _test_folder(path: Path) -> Path | None:
    """The folder of pytest's temp folders (a test's tmp_path, a mktemp) holding ``path``."""
    for folder in (path, *path.parents):
        if re.fullmatch(r"popen-gw\d+|pytest-\d+", folder.parent.name) and not re.fullmatch(
            r"popen-gw\d+", folder.name
        ):
            return folder
    return None


def _report(entry: dict[str, Any]) -> None:
    target = os.environ.get("LANGGRAPH_REPO_TEST_CLI_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, default=repr) + "\n")


def _warning_to_stderr(
    message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def one_line_error(proc: Any, code: int, *words: str) -> str:
    """A documented exit code and one line on stderr naming the thing, never a traceback.

    ``proc`` is a subprocess result or a CliRunner one; the line is returned.
    """
    stderr = proc.stderr
    got = proc.exit_code if hasattr(proc, "exit_code") else proc.returncode
    assert got == code, (got, stderr, getattr(proc, "stdout", ""))
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("langgraph-repo: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return str(lines[0])


# ----------------------------------------------------------------------------
# the files of a root
# ----------------------------------------------------------------------------
def load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def dump(path: Path, doc: Any, *, sort_keys: bool = True) -> None:
    """Write ``doc`` the way a person's editor or script would (indented, UTF-8)."""
    path.write_text(
        json.dumps(doc, sort_keys=sort_keys, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def rewrite(path: Path, change: Callable[[Any], None]) -> None:
    """A hand edit: load, change, write back."""
    doc = load(path)
    change(doc)
    dump(path, doc)


def checkpoints(tdir: Path) -> list[Path]:
    """The checkpoint files in a thread folder (of one namespace), oldest first."""
    return sorted((tdir / "checkpoints").glob("*.json"))


def writes_files(tdir: Path) -> list[Path]:
    return sorted((tdir / "writes").glob("*.json"))


def checkpoint_files(root: Path, thread_id: str = "t", ns: str = "") -> list[Path]:
    """The checkpoint files of a thread's namespace, oldest first."""
    return sorted(Layout(root).checkpoints_dir(thread_id, ns).glob("*.json"))


def file_bytes(root: Path, *, cache: bool = False) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes (the lock and listing cache only with ``cache``)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and (cache or ".cache" not in p.relative_to(root).parts)
    }


def file_digests(root: Path) -> dict[str, str]:
    """file_bytes, as SHA-256 digests: cheap to keep for a whole root."""
    return {rel: hashlib.sha256(data).hexdigest() for rel, data in file_bytes(root).items()}


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` without following links (files with content, links as their
    target, folders None): shows that nothing outside a root was touched."""
    out: dict[str, bytes | None] = {}
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(here) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                out[rel] = ("-> " + os.readlink(path)).encode()
            elif path.is_file():
                out[rel] = path.read_bytes()
            else:
                out[rel] = None
    return out


def lookups_per_put(saver: Any) -> list[int]:
    """For each put made from now on: how many objects it looked up where they were stored
    before (``Overlap.locate_object``: a stat, and a read of the file holding it)."""
    overlap = saver.store._overlap
    original, put = overlap.locate_object, saver.put
    counts: list[int] = []
    current = [0]

    def counting(*args: Any, **kwargs: Any) -> Any:
        current[0] += 1
        return original(*args, **kwargs)

    def counted_put(*args: Any, **kwargs: Any) -> Any:
        current[0] = 0
        try:
            return put(*args, **kwargs)
        finally:
            counts.append(current[0])

    overlap.locate_object = counting  # type: ignore[method-assign]
    saver.put = counted_put  # type: ignore[method-assign]
    return counts


def as_a_race(saver: Any, config: Any) -> None:
    """The checkpoint ``config`` names made a second writer's plain step (source ``loop``), as
    two processes or a merge of two branches leave it, not a line LangGraph starts on purpose
    (a replay's ``fork``, ``update_state``'s ``update``): its head then waits for a choice
    (docs/forks.md). Tests of choices make their forks so.

    The edit is in place, and a running saver keeps a namespace's lineage while the folder's
    listing is unchanged (docs/reliability.md, "Hand edits and caches", the one stated
    exception): a second writer would have added a file, so the listing is changed here too
    (a file made and removed), else ``saver`` would see the edit only on a slow machine."""
    conf = config["configurable"]
    path = saver.store.layout.checkpoint_path(
        conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
    )
    rewrite(path, lambda doc: doc["metadata"].__setitem__("source", "loop"))
    mark = path.parent / ".as-a-race"
    mark.write_bytes(b"")
    mark.unlink()


def logged(log: Path) -> list[dict[str, Any]]:
    """The entries of a crash child's log, a JSON object a line (written with one ``os.write``
    each, appended); a line cut short by the kill is not a returned call."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_bytes().split(b"\n")[:-1]]


def cut_torn_tail(log: Path) -> None:
    """After a kill, drop what follows the log's last newline: SIGKILL can cut a write to a
    file at a page boundary, and the next child, appending to the same log, would finish the
    cut line with its own first entry (a line in the middle that is no JSON: the harness
    failed, not the store). What is dropped is a call that never returned."""
    if not log.exists():
        return
    data = log.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep != len(data):
        with log.open("r+b") as f:
            f.truncate(keep)


def without_values_index(root: Path, thread_id: str = "t") -> None:
    """Remove a thread's values index (core/bodyindex.py), so that the next fresh read builds
    its lists from the files and the objects index, as the first read after the writer does."""
    from langgraph_checkpoint_repo.core.bodyindex import VALUES_SUFFIX
    from langgraph_checkpoint_repo.core.index import index_path

    layout = Layout(root)
    path = index_path(layout, layout.thread_dir(thread_id), VALUES_SUFFIX)
    if path is not None:
        path.unlink(missing_ok=True)


_SECOND_READ = (
    "import json, os, sys\n"
    "from langgraph_checkpoint_repo import RepoSaver\n"
    "seen = []\n"
    "real = os.open\n"
    "os.open = lambda p, *a, **k: (seen.append(str(p)), real(p, *a, **k))[1]\n"
    "got = RepoSaver(sys.argv[1]).get_tuple({'configurable': {'thread_id': sys.argv[2]}})\n"
    "os.open = real\n"
    "texts = [m.content for m in got.checkpoint['channel_values']['messages']]\n"
    "print(json.dumps([texts, [p for p in seen if os.sep + 'checkpoints' + os.sep in p]]))\n"
)


def second_process_read(root: Path, thread_id: str = "t") -> tuple[list[str], list[str]]:
    """The latest messages' texts as a real second process reads them, and the checkpoint
    files it opened (every one, in order)."""
    run = [sys.executable, "-c", _SECOND_READ, str(root), thread_id]
    texts, opened = json.loads(subprocess.run(run, capture_output=True, text=True, check=True).stdout)
    return texts, opened
