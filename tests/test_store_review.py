"""``langgraph-repo review`` covers store items: each added, changed or removed item as the
fields that changed, and what validate finds in it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import cli
from langgraph_checkpoint_repo import RepoStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **ENV})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    store = RepoStore(repo / ".langgraph", durable=False)
    store.put(("users", "ada"), "prefs", {"theme": "dark", "lang": "en", "deep": {"a": 1}})
    store.put(("users", "bob"), "prefs", {"theme": "dark"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    store.put(("users", "ada"), "prefs", {"theme": "light", "lang": "en", "deep": {"a": 2, "b": 1}})
    store.put(("users", "cy"), "notes", {"text": "new"}, ttl=60)
    store.delete(("users", "bob"), "prefs")
    return repo


def test_review_lists_each_store_item_as_its_changed_fields(repo: Path) -> None:
    got = cli(repo / ".langgraph", "review", "HEAD", "--json", env={"GIT_CONFIG_NOSYSTEM": "1"})
    assert got.returncode == 0, got.stderr
    items = {(tuple(i["namespace"]), i["key"]): i for i in json.loads(got.stdout)["items"]}
    ada = items[(("users", "ada"), "prefs")]
    assert ada["status"] == "changed"
    assert [(f["pointer"], f["old"], f["new"]) for f in ada["fields"]] == [
        ("/value/deep/a", 1, 2),
        ("/value/deep/b", None, 1),
        ("/value/theme", "dark", "light"),
    ]
    cy = items[(("users", "cy"), "notes")]
    assert cy["status"] == "added"
    assert {f["pointer"] for f in cy["fields"]} == {"/value/text", "/ttl_minutes"}
    assert items[(("users", "bob"), "prefs")]["status"] == "removed"
    markdown = cli(repo / ".langgraph", "review", "HEAD", "--markdown").stdout
    assert "### Store: 3 items changed" in markdown and "`/value/theme`: `dark` → `light`" in markdown
    text = cli(repo / ".langgraph", "review", "HEAD").stdout
    assert "store item users.ada prefs (changed)" in text and "/value/theme: " in text


def test_review_fails_on_an_item_that_does_not_validate(repo: Path) -> None:
    path = repo / ".langgraph" / "store" / "users" / "ada" / "prefs.json"
    doc = json.loads(path.read_text())
    doc["value"]["key"] = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7" * 2  # a secret pasted by hand
    path.write_text(json.dumps(doc))
    got = cli(repo / ".langgraph", "review", "HEAD", "--json")
    assert got.returncode == 1
    (ada,) = [
        i for i in json.loads(got.stdout)["items"] if i["key"] == "prefs" and i["namespace"][1] == "ada"
    ]
    assert any("OpenAI" in p["message"] for p in ada["problems"])
