"""The git promise: branches that both continue a thread merge without conflicts, and the result runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import MessagesState
from langgraph.graph.state import CompiledStateGraph
from referencing import Registry, Resource

from graphs import cfg, line_graph
from langgraph_checkpoint_repo import InvalidWriteError, RepoSaver

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
BIG_REPORT = "".join(
    f"row {i:05d}: a report that is too large to sit inline in a checkpoint\n" for i in range(300)
)


class ChatState(MessagesState):
    report: str


def build_chat(saver: RepoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Two nodes per turn append AIMessages; a user message containing 'report' adds a large value."""

    def first(state: ChatState) -> dict[str, Any]:
        last = str(state["messages"][-1].content)
        update: dict[str, Any] = {"messages": [AIMessage(content=f"first answers {last}")]}
        if "report" in last:
            update["report"] = BIG_REPORT + last
        return update

    def second(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"second answers {state['messages'][-2].content}")]}

    return line_graph(ChatState, saver, first=first, second=second)


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=check)


def init_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test Author")
    git(path, "config", "user.email", "test@example.invalid")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


CONFIG = cfg("support-42")


def chat(saver: RepoSaver, *texts: str, config: RunnableConfig | None = None) -> list[str]:
    """Run one turn per text; return the message contents after the last turn."""
    app = build_chat(saver)
    out: dict[str, Any] = {}
    for text in texts:
        out = app.invoke({"messages": [HumanMessage(content=text)]}, config or CONFIG)
    return [str(m.content) for m in out["messages"]]


def turn(text: str) -> list[str]:
    return [text, f"first answers {text}", f"second answers {text}"]


def latest_id(saver: RepoSaver) -> str:
    tup = saver.get_tuple(CONFIG)
    assert tup is not None
    return str(tup.config["configurable"]["checkpoint_id"])


def validators() -> dict[str, Draft202012Validator]:
    docs = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in SCHEMAS_DIR.glob("*.schema.json")}
    registry: Registry[Any] = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc)) for doc in docs.values()
    )
    kinds = ("checkpoint", "writes", "value", "large_value", "object")
    return {k: Draft202012Validator(docs[f"{k}.schema.json"], registry=registry) for k in kinds}


def assert_every_file_validates(root: Path) -> int:
    checks = validators()
    files = sorted((root / "threads").rglob("*.json"))
    for path in files:
        doc = json.loads(path.read_bytes())
        assert list(checks[doc["kind"]].iter_errors(doc)) == [], path
    return len(files)


@pytest.fixture
def merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Base (2 turns) -> branch b (2 turns) and branch a (2 later turns) -> b merged into a."""
    repo = init_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    saver = RepoSaver()  # default root: .langgraph at the top of the work tree
    assert saver.root == repo / ".langgraph"
    assert chat(saver, "base one", "base two") == turn("base one") + turn("base two")
    commit_all(repo, "base")
    base_head = latest_id(saver)

    git(repo, "checkout", "-q", "-b", "b")
    b_saver = RepoSaver(repo / ".langgraph")
    chat(b_saver, "bee one", "bee report two")
    b_head = latest_id(b_saver)
    commit_all(repo, "branch b")

    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "a")
    a_saver = RepoSaver(repo / ".langgraph")
    chat(a_saver, "ay report one", "ay two")
    a_head = latest_id(a_saver)
    commit_all(repo, "branch a")

    merge = git(repo, "merge", "--no-edit", "b", check=False)
    return {
        "repo": repo,
        "root": repo / ".langgraph",
        "merge": merge,
        "base": base_head,
        "a": a_head,
        "b": b_head,
    }


def test_merge_of_two_branches_continuing_a_thread_has_no_conflicts(merged: dict[str, Any]) -> None:
    """git merges two continuations of one thread cleanly: exit 0, no unmerged paths, no markers."""
    repo: Path = merged["repo"]
    assert merged["merge"].returncode == 0, merged["merge"].stdout + merged["merge"].stderr
    assert git(repo, "diff", "--name-only", "--diff-filter=U").stdout == ""
    assert git(repo, "status", "--porcelain").stdout == ""
    for path in merged["root"].rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text, path


def test_merged_history_holds_both_branches_as_a_fork(merged: dict[str, Any]) -> None:
    """After the merge the thread's history has both continuations, each starting at the base's head."""
    saver = RepoSaver(merged["root"])
    history = list(saver.list(CONFIG))
    ids = [t.config["configurable"]["checkpoint_id"] for t in history]
    assert len(ids) == len(set(ids)) == 4 * 6
    assert {merged["base"], merged["a"], merged["b"]} <= set(ids)
    children = [
        t
        for t in history
        if t.parent_config and t.parent_config["configurable"]["checkpoint_id"] == merged["base"]
    ]
    assert len(children) == 2
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in history}

    def ancestors(cid: str) -> list[str]:
        chain = []
        while cid:
            chain.append(cid)
            parent = by_id[cid].parent_config
            cid = parent["configurable"]["checkpoint_id"] if parent else ""
        return chain

    a_line, b_line = ancestors(merged["a"]), ancestors(merged["b"])
    assert merged["base"] in a_line and merged["base"] in b_line
    assert set(a_line) & set(b_line) == set(ancestors(merged["base"]))
    assert assert_every_file_validates(merged["root"]) > 20  # format 4: checkpoint files, little else


def test_merged_thread_continues_from_latest_and_from_the_other_branch_head(merged: dict[str, Any]) -> None:
    """The graph resumes from the latest checkpoint (branch a) and, by checkpoint_id, from branch b's head."""
    root: Path = merged["root"]
    base = turn("base one") + turn("base two")
    saver = RepoSaver(root)
    assert latest_id(saver) == merged["a"]

    after_a = chat(saver, "ay three")
    assert after_a == base + turn("ay report one") + turn("ay two") + turn("ay three")

    b_config: RunnableConfig = cfg("support-42", checkpoint_id=merged["b"])
    b_state = saver.get_tuple(b_config)
    assert b_state is not None
    assert b_state.checkpoint["channel_values"]["report"] == BIG_REPORT + "bee report two"
    after_b = chat(RepoSaver(root), "bee three", config=b_config)
    assert after_b == base + turn("bee one") + turn("bee report two") + turn("bee three")

    fresh = RepoSaver(root)
    tup = fresh.get_tuple(CONFIG)
    assert tup is not None and [m.content for m in tup.checkpoint["channel_values"]["messages"]] == after_b
    status = git(merged["repo"], "status", "--porcelain").stdout.splitlines()
    assert status and all(line.startswith("?? ") for line in status)  # only new files; none changed
    assert assert_every_file_validates(root) > 25  # format 4: checkpoint files, little else


def test_gitignore_keeps_cache_and_temp_files_out_of_git(merged: dict[str, Any]) -> None:
    """The root's own .gitignore is tracked and keeps lock files and temp leftovers untracked."""
    repo, root = merged["repo"], merged["root"]
    assert (root / ".gitignore").read_text(encoding="utf-8").splitlines()[1:] == ["/.cache", "*.tmp"]
    leftover = next((root / "threads").rglob("checkpoints")) / ".1f0-crashed.json.0a1b2c.tmp"
    leftover.write_text("{half a file", encoding="utf-8")
    tracked = git(repo, "ls-files").stdout.splitlines()
    assert ".langgraph/.gitignore" in tracked
    assert not [p for p in tracked if "/.cache/" in p or p.endswith(".tmp")]
    assert any((root / ".cache" / "locks").iterdir())
    assert git(repo, "status", "--porcelain").stdout == ""
    ignored = git(repo, "status", "--porcelain", "--ignored").stdout.splitlines()
    assert "!! .langgraph/.cache/" in ignored
    assert any(line.startswith("!! ") and line.endswith(".tmp") for line in ignored)


def test_one_long_lived_saver_survives_branch_switches(tmp_path: Path) -> None:
    """A notebook or server keeps one saver while the developer switches branches under it."""
    repo = init_repo(tmp_path / "repo")
    saver = RepoSaver(repo / ".langgraph")
    chat(saver, "base one")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "a")
    chat(saver, "ay report")  # creates threads/<t>/large/ on branch a only
    commit_all(repo, "a")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "b")
    assert chat(saver, "bee report") == turn("base one") + turn("bee report")


def test_one_long_lived_saver_sees_merged_files(tmp_path: Path) -> None:
    """A saver that was open during checkout and merge lists and continues the merged history."""
    repo = init_repo(tmp_path / "repo")
    saver = RepoSaver(repo / ".langgraph")
    chat(saver, "base one")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "b")
    chat(saver, "bee two")
    b_head = latest_id(saver)
    commit_all(repo, "b")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "a")
    assert len(list(saver.list(CONFIG))) == 4
    chat(saver, "ay two")
    commit_all(repo, "a")
    assert git(repo, "merge", "--no-edit", "b", check=False).returncode == 0
    assert len(list(saver.list(CONFIG))) == 12
    b_config: RunnableConfig = cfg("support-42", checkpoint_id=b_head)
    assert chat(saver, "bee three", config=b_config) == turn("base one") + turn("bee two") + turn("bee three")


def test_refused_first_put_leaves_nothing_for_git_to_track(tmp_path: Path) -> None:
    """An invalid first write into a fresh root leaves git nothing but the root's own .gitignore."""
    repo = init_repo(tmp_path / "repo")
    checkpoint: Any = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": []}
    checkpoint["channel_versions"] = {"messages": [1]}
    with pytest.raises(InvalidWriteError):
        RepoSaver(repo / ".langgraph").put(cfg("t", checkpoint_ns=""), checkpoint, {}, {"messages": [1]})
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == "?? .langgraph/.gitignore\n"


def test_thread_whose_id_ends_in_tmp_is_committed(tmp_path: Path) -> None:
    """Every thread's files reach git, whatever the thread is called."""
    repo = init_repo(tmp_path / "repo")
    chat(RepoSaver(repo / ".langgraph"), "hello", config=cfg("draft.tmp"))
    commit_all(repo, "draft")
    assert [p for p in git(repo, "ls-files").stdout.splitlines() if p.endswith(".json")]
