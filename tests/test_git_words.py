"""When git refuses, its words reach the user (issue 38, item 8): every command that asks
git something (``review``, ``git-setup``, ``show --at``) says what git said (a repository
owned by another user and git's fix for it, a repository format it does not know) instead of
"not in a git work tree", and a missing ``git`` is named as such, in one line and an exit
code of the package, never a traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from graphs import chat_root
from helpers import cli
from langgraph_checkpoint_repo.core.gitrun import words_of
from test_git import commit_all, git, init_repo

COMMANDS = [("review",), ("git-setup",)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "repo")
    chat_root(repo / ".langgraph", turns=1)
    commit_all(repo, "one turn")
    return repo


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_repository_format_git_does_not_know_is_said_in_git_s_words(
    repo: Path, command: tuple[str]
) -> None:
    git(repo, "config", "core.repositoryformatversion", "99")
    proc = cli(repo / ".langgraph", *command, cwd=repo)
    assert proc.returncode != 0
    assert "repo version" in proc.stderr and "99" in proc.stderr, proc.stderr
    assert "not in a git work tree" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_repository_owned_by_another_user_is_said_with_git_s_fix(
    repo: Path, command: tuple[str], tmp_path: Path
) -> None:
    if os.geteuid() != 0:  # CI runs as root; only root can give a folder to another user
        pytest.skip("needs root to make a repository owned by another user")
    for here, dirs, files in os.walk(repo):
        for name in [*dirs, *files, "."]:
            os.lchown(os.path.join(here, name), 65534, 65534)
    env = {"HOME": str(tmp_path / "home"), "GIT_CONFIG_NOSYSTEM": "1"}  # no safe.directory of this machine
    proc = cli(repo / ".langgraph", *command, cwd=repo, env=env)
    assert proc.returncode != 0
    assert "dubious ownership" in proc.stderr and "safe.directory" in proc.stderr, proc.stderr
    assert "not in a git work tree" not in proc.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_missing_git_is_named_and_exit_3(repo: Path, command: tuple[str], tmp_path: Path) -> None:
    bare = tmp_path / "bin"  # a PATH with python's folder but no git
    bare.mkdir()
    proc = cli(repo / ".langgraph", *command, cwd=repo, env={"PATH": str(bare)})
    assert shutil.which("git", path=str(bare)) is None
    assert proc.returncode == 3, proc.stderr
    assert "git is not installed or not on PATH" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_outside_any_repository_it_still_says_not_in_a_git_work_tree(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    chat_root(loose / ".langgraph", turns=1)
    proc = cli(loose / ".langgraph", "review", cwd=loose, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert proc.returncode == 3 and "not in a git work tree" in proc.stderr


def test_validate_does_not_pass_when_git_refuses_to_say_what_it_tracks(repo: Path) -> None:
    """validate's check that .cache/ is not committed asks git; a refusal is not "nothing"."""
    git(repo, "config", "core.repositoryformatversion", "99")
    proc = cli(repo / ".langgraph", "validate", cwd=repo)
    assert proc.returncode != 0 and "repo version" in proc.stderr, proc.stdout + proc.stderr


def test_git_setup_undo_that_git_refuses_says_so_and_is_not_reported_done(repo: Path) -> None:
    assert cli(repo / ".langgraph", "git-setup", cwd=repo).returncode == 0
    lock = repo / ".git" / "config.lock"
    lock.write_text("", encoding="utf-8")  # another git is writing the config
    try:
        proc = cli(repo / ".langgraph", "git-setup", "--undo", cwd=repo)
    finally:
        lock.unlink()
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "could not lock config file" in proc.stderr and "removed diff.langgraph-repo" not in proc.stdout


def test_git_s_words_keep_the_spaces_inside_a_line() -> None:
    said = "fatal: detected dubious ownership\n\tgit config --global --add safe.directory '/a/two  spaces'\n"
    assert words_of(said) == (
        "fatal: detected dubious ownership git config --global --add safe.directory '/a/two  spaces'"
    )


def test_an_object_git_lacks_is_named_as_missing_not_as_another_kind(repo: Path) -> None:
    """A partial clone or a damaged repository: review says git has no such object, and how
    to get it, where it said "not a blob"."""
    chat_root(repo / ".langgraph", turns=1)  # a second turn on the same thread
    commit_all(repo, "another turn")
    changed = git(repo, "diff", "--name-only", "HEAD~1", "HEAD").stdout.split()
    blob = git(repo, "rev-parse", f"HEAD:{changed[0]}").stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    proc = cli(repo / ".langgraph", "review", "HEAD~1..HEAD", cwd=repo)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"git has no object {blob}" in proc.stderr and "not a blob" not in proc.stderr
