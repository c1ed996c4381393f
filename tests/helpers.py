"""The command line and the files under a root, as the tests drive and read them.

graphs.py makes the states; this module runs ``langgraph-repo`` over them and reads, edits
and lists what the saver wrote, so every test module does it the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from langgraph_checkpoint_repo.cli import app
from langgraph_checkpoint_repo.core.layout import Layout


# ----------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------
def cli_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This environment without STEERING_ENV, plus ``env`` (None: removed), so the output is
    the same whoever runs the tests (a terminal, a pipe, an xdist worker)."""
    base = {k: v for k, v in os.environ.items() if k not in STEERING_ENV}
    return {k: v for k, v in {**base, **(env or {})}.items() if v is not None}


#: what would steer the command line behind the test's back: a root from LANGGRAPH_REPO_ROOT,
#: rich's TTY_COMPATIBLE, and the terminal size (pytest-xdist workers get COLUMNS=80, which
#: would cut tables short; without it a pipe gets the CLI's own PIPE_WIDTH, as a user's does)
STEERING_ENV = ("LANGGRAPH_REPO_ROOT", "TTY_COMPATIBLE", "COLUMNS", "LINES")


def cli(
    root: Path | None,
    *args: Any,
    stdin: str = "",
    cwd: Path | str | None = None,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m langgraph_checkpoint_repo`` as a person or a hook runs it (``--root`` first when given)."""
    prefix = ["--root", str(root)] if root is not None else []
    return subprocess.run(
        [sys.executable, "-m", "langgraph_checkpoint_repo", *prefix, *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        input=stdin,
        timeout=timeout,
        cwd=cwd,
        env=cli_env(env),
    )


def cli_in_process(*args: Any, env: Mapping[str, str | None] | None = None) -> Result:
    """The command line in this process (typer's CliRunner): no interpreter start-up per run."""
    steering: dict[str, str | None] = dict.fromkeys(STEERING_ENV)
    return CliRunner().invoke(app, [str(a) for a in args], env={**steering, **(env or {})})


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
