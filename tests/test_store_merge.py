"""Store items in git: two branches that changed different items merge as files do (no
conflict); the same item changed on both is an ordinary JSON conflict in that one file; with
the merge driver registered (review/mergeitem.py, the lines docs/store.md gives git-setup),
changes to different fields of one item merge too, and a field both changed conflicts alone.

The driver is run directly (git's protocol: ``%O %A %B``, exit 0 clean, 1 conflict, the
result written over ``%A``) and through real ``git merge``s with the repository's config set
here as git-setup would set it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers import cli
from langgraph_checkpoint_repo import RepoStore
from langgraph_checkpoint_repo.core.checks import Validator
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION
from langgraph_checkpoint_repo.review.mergeitem import main
from storeref import Clock

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
DRIVER = "langgraph-repo-item"
ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# ----------------------------------------------------------------------------
# the driver on its own
# ----------------------------------------------------------------------------
def item(
    value: dict[str, Any], updated: str = "2026-01-01T12:00:00.000000+00:00", **more: Any
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "item",
        "namespace": ["users", "alice"],
        "key": "prefs",
        "value": value,
        "created_at": "2026-01-01T12:00:00.000000+00:00",
        "updated_at": updated,
        **more,
    }


def run_driver(tmp_path: Path, base: Any, ours: Any, theirs: Any) -> tuple[int, str]:
    files = []
    for name, doc in (("base", base), ("ours", ours), ("theirs", theirs)):
        path = tmp_path / name
        path.write_text("" if doc is None else json.dumps(doc) if not isinstance(doc, str) else doc)
        files.append(str(path))
    code = main(*files, "store/users/alice/prefs.json")
    return code, (tmp_path / "ours").read_text()


T1, T2 = "2026-01-02T00:00:00.000000+00:00", "2026-01-03T00:00:00.000000+00:00"


def test_changes_to_different_fields_merge_and_the_result_is_a_newer_version(tmp_path: Path) -> None:
    base = item({"theme": "dark", "lang": "en", "deep": {"a": 1, "b": 1}, "gone": 1})
    ours = item({"theme": "light", "lang": "en", "deep": {"a": 2, "b": 1}}, T1)
    theirs = item({"theme": "dark", "lang": "fr", "deep": {"a": 1, "b": 2}, "gone": 1, "new": [1]}, T2)
    code, text = run_driver(tmp_path, base, ours, theirs)
    assert code == 0
    merged = json.loads(text)
    assert merged["value"] == {"theme": "light", "lang": "fr", "deep": {"a": 2, "b": 2}, "new": [1]}
    later = datetime.fromisoformat(T2) + timedelta(microseconds=1)  # neither side's version
    assert datetime.fromisoformat(merged["updated_at"]) == later
    assert merged["created_at"] == base["created_at"]


def test_the_same_field_changed_on_both_is_a_conflict_marked_around_that_field_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = item({"theme": "dark", "lang": "en", "long": "x" * 120})
    ours = item({"theme": "light", "lang": "en", "long": "x" * 120}, T1)
    theirs = item({"theme": "blue", "lang": "fr", "long": "x" * 120}, T2)
    code, text = run_driver(tmp_path, base, ours, theirs)
    assert code == 1
    assert "conflict at /value/theme" in capsys.readouterr().err
    assert text.count("<<<<<<<") == 1
    conflict = text[text.index("<<<<<<<") : text.index(">>>>>>>")]
    assert '"light"' in conflict and '"blue"' in conflict and "lang" not in conflict
    assert '"lang": "fr"' in text.replace(conflict, "")  # merged outside the markers
    assert T2 in text.replace(conflict, "")


def test_one_side_deletes_a_key_the_other_leaves_alone(tmp_path: Path) -> None:
    base = item({"a": 1, "b": 1})
    code, text = run_driver(tmp_path, base, item({"b": 1}, T1), item({"a": 1, "b": 2}, T2))
    assert code == 0 and json.loads(text)["value"] == {"b": 2}


def test_values_of_another_type_or_a_tree_the_serializer_made_are_one_field(tmp_path: Path) -> None:
    base = item({"when": {"$type": ["datetime", "date"], "$args": [2024, 1, 1]}, "n": 1})
    ours = item({"when": {"$type": ["datetime", "date"], "$args": [2024, 1, 2]}, "n": 1}, T1)
    theirs = item({"when": {"$type": ["datetime", "date"], "$args": [2024, 1, 3]}, "n": True}, T2)
    code, _ = run_driver(tmp_path, base, ours, theirs)
    assert code == 1  # the date: both changed; 1 and true are different JSON values too


def test_both_sides_adding_the_same_item_merge_when_they_agree(tmp_path: Path) -> None:
    code, text = run_driver(tmp_path, None, item({"a": 1}, T1), item({"a": 1, "b": 2}, T2))
    assert code == 0 and json.loads(text)["value"] == {"a": 1, "b": 2}
    code, _ = run_driver(tmp_path, None, item({"a": 1}, T1), item({"a": 2}, T2))
    assert code == 1


def test_a_file_that_is_no_item_is_merged_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_driver(tmp_path, "a\nb\nc\nd\ne\n", "a\nB\nc\nd\ne\n", "a\nb\nc\nd\nE\n")
    assert code == 0 and text == "a\nB\nc\nd\nE\n"
    assert "merged as text" in capsys.readouterr().err
    code, text = run_driver(tmp_path, item({"a": 1}), "{broken", item({"a": 2}, T2))
    assert code == 1 and "<<<<<<<" in text


def test_ttl_and_expiry_merge_as_the_later_expiry(tmp_path: Path) -> None:
    base = item({"a": 1}, ttl_minutes=5.0, expires_at="2026-01-01T12:05:00.000000+00:00")
    ours = item({"a": 1}, ttl_minutes=5.0, expires_at="2026-01-02T00:05:00.000000+00:00")  # refreshed
    theirs = item({"a": 2}, T2, ttl_minutes=5.0, expires_at="2026-01-03T00:05:00.000000+00:00")
    code, text = run_driver(tmp_path, base, ours, theirs)
    merged = json.loads(text)
    assert code == 0 and merged["value"] == {"a": 2}
    assert merged["expires_at"] == "2026-01-03T00:05:00.000000+00:00"


# ----------------------------------------------------------------------------
# through git merge
# ----------------------------------------------------------------------------
def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=check, env={**os.environ, **ENV}
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    store = RepoStore(repo / ".langgraph", clock=Clock(), durable=False)
    store.put(("users", "alice"), "prefs", {"theme": "dark", "lang": "en"})
    store.put(("users", "bob"), "prefs", {"theme": "dark"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def on_branch(repo: Path, branch: str, start: str, change: Any) -> None:
    git(repo, "checkout", "-q", "-b", branch, start)
    clock = Clock()
    clock.tick(days=1 if branch == "a" else 2)
    change(RepoStore(repo / ".langgraph", clock=clock, durable=False))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", branch)


def register_driver(repo: Path) -> None:
    """``langgraph-repo git-setup``: its attribute line for the store, the driver's config."""
    out = cli(repo / ".langgraph", "git-setup", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert f"/.langgraph/store/** merge={DRIVER}" in out.stdout
    assert git(repo, "config", "--local", f"merge.{DRIVER}.driver").stdout.rstrip().endswith("%O %A %B %P")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "git-setup")


def test_different_items_merge_without_conflict_even_without_the_driver(repo: Path) -> None:
    on_branch(
        repo, "a", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "light", "lang": "en"})
    )
    on_branch(
        repo,
        "b",
        "main",
        lambda s: (
            s.put(("users", "bob"), "prefs", {"theme": "blue"}),
            s.put(("users", "carol"), "x", {"v": 1}),
        ),
    )
    git(repo, "checkout", "-q", "a")
    git(repo, "merge", "-q", "--no-edit", "b")
    store = RepoStore(repo / ".langgraph")
    assert store.get(("users", "alice"), "prefs").value["theme"] == "light"  # type: ignore[union-attr]
    assert store.get(("users", "bob"), "prefs").value == {"theme": "blue"}  # type: ignore[union-attr]
    assert store.get(("users", "carol"), "x") is not None
    assert Validator(repo / ".langgraph").run() == []


def test_one_item_changed_on_both_is_a_conflict_in_that_file_only_without_the_driver(repo: Path) -> None:
    on_branch(
        repo,
        "a",
        "main",
        lambda s: (
            s.put(("users", "alice"), "prefs", {"theme": "light", "lang": "en"}),
            s.put(("users", "dave"), "x", {"v": 1}),
        ),
    )
    on_branch(
        repo, "b", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "dark", "lang": "fr"})
    )
    git(repo, "checkout", "-q", "a")
    merged = git(repo, "merge", "--no-edit", "b", check=False)
    assert merged.returncode == 1
    unmerged = git(repo, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert unmerged == [".langgraph/store/users/alice/prefs.json"]
    text = (repo / ".langgraph/store/users/alice/prefs.json").read_text()
    assert "<<<<<<<" in text and '"updated_at"' in text  # an ordinary JSON conflict, as for any file


def test_after_git_setup_different_fields_of_one_item_merge_and_read_back(repo: Path) -> None:
    register_driver(repo)
    on_branch(
        repo, "a", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "light", "lang": "en"})
    )
    on_branch(
        repo, "b", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "dark", "lang": "fr"})
    )
    git(repo, "checkout", "-q", "a")
    git(repo, "merge", "-q", "--no-edit", "b")
    store = RepoStore(repo / ".langgraph")
    got = store.get(("users", "alice"), "prefs")
    assert got is not None and got.value == {"theme": "light", "lang": "fr"}
    assert Validator(repo / ".langgraph").run() == []
    assert git(repo, "status", "--porcelain").stdout == ""


def test_with_the_driver_a_field_changed_on_both_still_stops_the_merge(repo: Path) -> None:
    register_driver(repo)
    on_branch(
        repo, "a", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "light", "lang": "de"})
    )
    on_branch(
        repo, "b", "main", lambda s: s.put(("users", "alice"), "prefs", {"theme": "blue", "lang": "de"})
    )
    git(repo, "checkout", "-q", "a")
    merged = git(repo, "merge", "--no-edit", "b", check=False)
    assert merged.returncode == 1
    assert "conflict at /value/theme" in merged.stderr
    text = (repo / ".langgraph/store/users/alice/prefs.json").read_text()
    assert (
        text.count("<<<<<<<") == 1 and "updated_at" not in text[text.index("<<<<<<<") : text.index(">>>>>>>")]
    )
