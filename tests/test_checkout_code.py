"""Reading state never runs the checkout's code (docs/design.md, "Reading never runs the
checkout's code"; the third outside review).

A pull request may change any file beside the state: pyproject.toml, any ``.py`` file, a
module that shadows an installed one. Each test plants code that leaves a marker file when
it runs, then runs what a maintainer or CI runs on that checkout, and checks the marker is
not there. Each case failed before the rule (``[tool.langgraph-repo]`` was read by every
command and put the project's folder on ``sys.path``; ``python -m`` kept the current folder
first on it; ``find_pyproject`` walked up to ``/``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from helpers import cli, cli_env
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import BadInputError
from langgraph_checkpoint_repo.project_types import find_pyproject, project_types

MARKER = "import pathlib\npathlib.Path({path!r}).write_text('ran')\n"


class ArrayState(TypedDict):
    data: object
    n: int


def array_graph(saver: RepoSaver):  # type: ignore[no-untyped-def]
    builder = StateGraph(ArrayState)
    builder.add_node("step", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=saver)


def checkout(tmp_path: Path, table: str = "") -> Path:
    """A repository with state holding a numpy array, and a pyproject.toml (``table``)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pyproject.toml").write_text(f'[project]\nname = "app"\n{table}', encoding="utf-8")
    array_graph(RepoSaver(repo / ".langgraph", durable=False)).invoke(
        {"data": np.arange(3), "n": 0}, {"configurable": {"thread_id": "t"}}
    )
    return repo


def run_module(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m langgraph_checkpoint_repo`` from the top of the checkout, as a person does: a
    fresh process, as only its start (``python -m`` puts the current folder first on sys.path,
    __main__.py takes it off) and its first import of numpy can show a module shadowing one."""
    return subprocess.run(
        [sys.executable, "-m", "langgraph_checkpoint_repo", "--root", str(repo / ".langgraph"), *args],
        cwd=repo,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


READS = [["show", "t"], ["diff", "t"], ["render", "t"], ["history", "t"], ["tasks", "t"], ["threads"]]


TABLE = '[tool.langgraph-repo]\nallow = ["app.state:*"]\n'


@pytest.mark.parametrize("table", ["", TABLE], ids=["no table", "table"])
def test_a_module_planted_at_the_top_of_the_checkout_never_shadows_what_reviving_imports(
    tmp_path: Path, table: str
) -> None:
    """``numpy.py`` beside the state: reviving the stored array imports numpy, which must be
    the installed one, whether or not the project has a table, from every read command."""
    repo = checkout(tmp_path, table)
    marker = tmp_path / "ran"
    (repo / "numpy.py").write_text(MARKER.format(path=str(marker)), encoding="utf-8")
    shown = ""
    for args in READS:
        proc = run_module(repo, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert not marker.exists(), args
        shown = proc.stdout if args == ["show", "t"] else shown
    assert "array([0, 1, 2])" in shown  # show revived the array with the installed numpy


def test_the_tables_allow_never_lets_a_file_call_os_system(tmp_path: Path) -> None:
    """``allow = ["os:system"]`` plus a value naming ``os.system``: the read commands never run
    it (they do not read the table), validate reports the value's type, and the table itself
    is refused wherever it is used (the Agent Server's factory, export --trust-project)."""
    repo = checkout(tmp_path, '[tool.langgraph-repo]\nallow = ["os:system"]\n')
    marker = tmp_path / "ran"
    latest = sorted((repo / ".langgraph" / "threads" / "t" / "checkpoints").glob("*.json"))[-1]
    doc = json.loads(latest.read_text(encoding="utf-8"))
    doc["new_values"]["n"]["value"]["json"] = {"$type": ["os", "system"], "$arg": f"touch {marker}"}
    latest.write_text(json.dumps(doc), encoding="utf-8")
    root = repo / ".langgraph"
    for args in READS:
        cli(root, *args, cwd=repo)
        assert not marker.exists(), args
    checked = cli(root, "validate", cwd=repo)
    assert checked.returncode == 1 and "os.system" in checked.stdout
    with pytest.raises(BadInputError, match="standard library"):
        project_types(root)
    export = cli(root, "export", f"sqlite:///{tmp_path / 'out.db'}", "--trust-project", cwd=repo)
    assert export.returncode == 2 and "standard library" in export.stderr
    assert not marker.exists()


def test_a_graph_named_by_the_table_is_imported_by_no_reading_command(tmp_path: Path) -> None:
    repo = checkout(tmp_path, '[tool.langgraph-repo]\ngraph = "planted:graph"\n')
    marker = tmp_path / "ran"
    (repo / "planted.py").write_text(MARKER.format(path=str(marker)), encoding="utf-8")
    for args in [*READS, ["validate"], ["fsck"], ["heads", "t"]]:
        proc = cli(repo / ".langgraph", *args, cwd=repo)
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert not marker.exists(), args


def test_configuration_is_read_only_inside_the_repository_from_the_users_own_files(tmp_path: Path) -> None:
    """A pyproject.toml above the repository's top (a shared parent such as /tmp) is never
    read, nor one inside the repository that another user owns (git's safe.directory rule)."""
    shared = tmp_path / "shared"
    repo = shared / "repo"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    root = repo / ".langgraph"
    root.mkdir()
    (shared / "pyproject.toml").write_text('[tool.langgraph-repo]\ngraph = "evil:graph"\n', encoding="utf-8")
    assert find_pyproject(root) is None
    assert project_types(root).types == set()
    own = repo / "pyproject.toml"
    own.write_text('[tool.langgraph-repo]\nallow = ["app.state:*"]\n', encoding="utf-8")
    assert find_pyproject(root) == own
    if os.geteuid() == 0:  # as root, hand the file to another user and it is no longer read
        shutil.chown(own, user="nobody")
        assert find_pyproject(root) is None
