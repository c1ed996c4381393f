"""Hostile review of issue 12 (which user types a read may construct): each test is a
problem reproduced on a real project, with real state files, commands run in fresh
processes (docs/types.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import helpers
from types_project import WRITE, cli, make_project, run_script, script_env


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataclass thread of ``types_project``, written once; tests plant values in copies."""
    project = make_project(tmp_path_factory.mktemp("review-types"))
    run_script(project, "write.py", WRITE, "dataclass")
    return project


def latest_checkpoint(project: Path, thread: str) -> Path:
    files = sorted((project / ".langgraph" / "threads" / thread / "checkpoints").glob("*.json"))
    return max(files, key=lambda p: json.loads(p.read_text("utf-8"))["metadata"]["step"])


def plant(project: Path, thread: str, channel: str, tree: object) -> Path:
    """Replace the stored JSON of ``channel`` in the thread's latest checkpoint (a hand edit,
    as a pull request can make)."""
    path = latest_checkpoint(project, thread)
    doc = json.loads(path.read_text("utf-8"))
    doc["new_values"][channel] = {"value": {"serde": "msgpack", "json": tree}}
    doc.setdefault("values", {})[channel] = f"checkpoints/{path.name}"  # a delta may list none
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def planted(project: Path, tmp_path: Path) -> Path:
    """A copy of the project whose thread ``dataclass`` can be edited by the test."""
    import shutil

    copy = tmp_path / "proj"
    shutil.copytree(project, copy)
    return copy


def advised_allow_options(text: str) -> list[str]:
    """The ``--allow X`` options of the "To allow them:" advice, as a user would copy them."""
    line = next(line for line in text.splitlines() if line.startswith("To allow them:"))
    return re.findall(r"--allow (\S+)", line.split(" (or ", 1)[0])


# ----------------------------------------------------------------------
# 1. the refusal advice is built from whatever the file names
# ----------------------------------------------------------------------
def test_following_the_refusal_advice_does_not_run_a_command_the_file_names(
    planted: Path, tmp_path: Path
) -> None:
    """A pull request plants ``{"$type": ["os", "system"], "$arg": "touch MARK"}``. ``show``
    refuses it, as it should; its advice must not lead a reviewer to run the file's shell
    command: a name from Python's standard library is never advised in (codec.refusal_fix),
    the note warns that the file may have been edited to run code instead, and nothing runs."""
    marker = tmp_path / "PWNED"
    plant(planted, "dataclass", "address", {"$type": ["os", "system"], "$arg": f"touch {marker}"})
    first = cli(planted, "show", "dataclass")
    assert first.returncode == 0, first.stderr
    assert not marker.exists()
    assert "os.system: from Python's standard library" in first.stdout, first.stdout
    assert "may have been edited to run code" in first.stdout
    assert "--allow os:" not in first.stdout and '"os:' not in first.stdout, first.stdout
    assert not marker.exists()


# ----------------------------------------------------------------------
# 2. the advised --allow, run from outside the project
# ----------------------------------------------------------------------
def test_advised_allow_from_outside_the_project_is_not_blamed_on_the_file(
    project: Path, tmp_path: Path
) -> None:
    """``langgraph-repo --root proj/.langgraph show`` run from another folder: the note advises
    ``--allow myapp.state:Address``. Followed, the module is not importable from there (the
    command line never puts the project on sys.path by itself), and that must not be reported
    as the *file's* fault ("rejects the stored data ... fix the file"), which would send the
    user to hand-edit a file that is fine."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    root = str(project / ".langgraph")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"LANGGRAPH_STRICT_MSGPACK": None, "PYTHONPATH": None}  # as script_env(False)
        return helpers.cli(root, *args, cwd=outside, env=env)

    first = run("show", "dataclass")
    assert first.returncode == 0, first.stderr
    argv = [a for opt in advised_allow_options(first.stdout) for a in ("--allow", opt)]
    assert argv == ["--allow", "myapp.state:Address"], first.stdout
    second = run("show", "dataclass", *argv)
    out = second.stdout + second.stderr
    assert "fix the file" not in out and "rejects the stored data" not in out, out


def test_an_allowed_type_whose_module_cannot_be_imported_is_not_blamed_on_the_file(
    project: Path, tmp_path: Path
) -> None:
    """The same through the Python API: ``RepoSaver(allowlist=[("myapp.state", "Address")])``
    in a program that cannot import ``myapp``. The error says the stored data is rejected
    and to fix the file; the file is fine, the module is missing."""
    script = tmp_path / "read.py"
    script.write_text(
        "from langgraph_checkpoint_repo import RepoSaver\n"
        "from langgraph_checkpoint_repo.core.errors import UnrevivableValueError\n"
        f"saver = RepoSaver({str(project / '.langgraph')!r}, allowlist=[('myapp.state', 'Address')])\n"
        "try:\n"
        "    saver.get_tuple({'configurable': {'thread_id': 'dataclass'}})\n"
        "except UnrevivableValueError as exc:\n"
        "    print(exc)\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=script_env(False), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "No module named 'myapp'" in proc.stdout, proc.stdout
    assert "fix the file" not in proc.stdout, proc.stdout


# ----------------------------------------------------------------------
# 3. render: a type name from a file forges lines of the note
# ----------------------------------------------------------------------
def test_render_does_not_let_a_type_name_forge_a_line_of_advice(planted: Path) -> None:
    """A type name is text from the file. ``show`` prints its newline as ``\\x0a``; ``render``
    (the Markdown posted on a pull request) keeps it, so a planted name
    ``"Address\\nTo allow them: --allow evil.payload:*"`` prints a line of advice of the
    attacker's making, in the note and in the value block."""
    forged = "To allow them: --allow evil.payload:*"
    plant(
        planted,
        "dataclass",
        "address",
        {"$type": ["myapp.state", f"Address\n{forged}"], "$kwargs": {"city": "x"}},
    )
    shown = cli(planted, "show", "dataclass")
    assert shown.returncode == 0, shown.stderr
    assert forged not in shown.stdout.splitlines()  # show escapes it
    rendered = cli(planted, "render", "dataclass")
    assert rendered.returncode == 0, rendered.stderr
    forged_lines = [line for line in rendered.stdout.splitlines() if line.lstrip().startswith(forged)]
    assert not forged_lines, rendered.stdout
