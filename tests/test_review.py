"""``langgraph-repo review``: what a change did to the state, read from git (docs/review.md).

Everything runs in a real git repository: a ``create_agent`` tool-calling agent (a fake chat
model) writes turns on branches, they are committed and merged, and ``review`` is asked what
changed between revisions, or between a revision and the work tree.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bench.agent_graphs import build_create_agent, user_message
from langchain_core.messages import HumanMessage

from graphs import cfg
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver
from test_git import commit_all, git, init_repo
from test_layers import LOADED

THREAD = "support-1"


def turn(repo: Path, n: int, *, text: str | None = None, thread: str = THREAD) -> None:
    """User turn ``n`` of the tool-calling agent, into the repository's state root."""
    message = user_message(n) if text is None else HumanMessage(content=text, id=f"user-{n}")
    agent = build_create_agent(RepoSaver(repo / ".langgraph", durable=False))
    agent.invoke({"messages": [message]}, cfg(thread))


def review(repo: Path, *args: str) -> str:
    proc = cli(repo / ".langgraph", "review", *args, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: a README; branch ``work``: two agent turns, committed one by one."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    git(repo, "checkout", "-q", "-b", "work")
    turn(repo, 1)
    commit_all(repo, "turn 1")
    turn(repo, 2)
    commit_all(repo, "turn 2")
    return repo


EXPECTED = [
    "user: Where is my order A-1001? It was due last week. [turn-1-lantern]",
    'ai: → calls lookup_order({"order_id":"A-1001"})',
    "tool lookup_order: Order A-1001: shipped, arriving in 3 days.",
    "ai: Good news: Order A-1001: shipped, arriving in 3 days.",
    "user: Where is my order A-1002? It was due last week. [turn-2-meadow]",
    'ai: → calls lookup_order({"order_id":"A-1002"})',
    "tool lookup_order: Order A-1002: shipped, arriving in 3 days.",
    "ai: Good news: Order A-1002: shipped, arriving in 3 days.",
]


def said(markdown: str) -> list[str]:
    """The events of a Markdown review, as ``label: text`` with the Markdown taken off."""
    out = []
    for line in markdown.splitlines():
        m = re.match(r"^(?:\d+\.|   -) \*\*(.+?)\*\*: (.*)$", line)
        if m:
            label, text = (re.sub(r"^`+ ?| ?`+$", "", part) for part in m.groups())
            out.append(f"{label}: {text}")
    return out


def test_markdown_review_of_two_agent_turns_shows_each_message_once_in_order(repo: Path) -> None:
    """The goal of the review issue: each new message exactly once, in conversation order, with
    the tool call's name and arguments and the tool's result; at most 40 lines per turn."""
    out = review(repo, "main..work", "--markdown")
    assert said(out) == EXPECTED
    assert "### Thread `support-1` (added)" in out
    turns = re.split(r"^\d+\. ", out, flags=re.M)[1:]
    assert len(turns) == 2 and all(len(t.splitlines()) <= 40 for t in turns)
    for text in ("channel_versions", "versions_seen", "$ref", "objects/"):
        assert text not in out


def test_review_to_the_work_tree_includes_files_git_does_not_track_yet(repo: Path) -> None:
    """``review BASE`` compares BASE with the work tree, new files not yet added included;
    nothing in the work tree or the index changes."""
    turn(repo, 3)
    status = git(repo, "status", "--porcelain").stdout
    out = review(repo, "HEAD", "--markdown")
    third = [line.replace("1001", "1003").replace("turn-1-lantern", "turn-3-quartz") for line in EXPECTED[:4]]
    assert said(out) == third
    assert git(repo, "status", "--porcelain").stdout == status
    terminal = review(repo, "HEAD")
    assert "user: Where is my order A-1003?" in terminal and "turn 3" in terminal  # the thread's third turn


def test_default_range_is_the_merge_base_with_the_default_branch(repo: Path) -> None:
    out = review(repo, "--json")
    data = json.loads(out)
    assert data["range"] == "merge-base of HEAD and main"
    assert data["base"] == git(repo, "rev-parse", "main").stdout.strip()
    (thread,) = data["threads"]
    (line,) = thread["namespaces"][0]["lines"]
    users = [e["text"] for e in line["events"] if e.get("role") == "human"]
    assert users == [EXPECTED[0][6:], EXPECTED[4][6:]]
    calls = [c for e in line["events"] for c in e.get("tool_calls", [])]
    assert calls == [{"name": "lookup_order", "args": {"order_id": f"A-100{n}"}} for n in (1, 2)]


def test_review_after_a_merge_shows_both_branches_turns_and_which_head_continues(repo: Path) -> None:
    """Two branches continue the thread from turn 2; after merging both into main, review of
    the merge shows each branch's new turn once, says which head continues and that the heads
    wait for a choice."""
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "work")
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    git(repo, "checkout", "-q", "-b", "left")
    turn(repo, 3, text="approve the refund")
    commit_all(repo, "left")
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "right")
    turn(repo, 3, text="deny the refund")
    commit_all(repo, "right")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "left", "right")
    data = json.loads(review(repo, f"{base}..HEAD", "--json"))
    (thread,) = data["threads"]
    assert thread["unsettled"] is True
    (ns,) = thread["namespaces"]
    assert len(ns["lines"]) == 2 and [line["continues"] for line in ns["lines"]] == [True, False]
    users = sorted(e["text"] for line in ns["lines"] for e in line["events"] if e.get("role") == "human")
    assert users == ["approve the refund", "deny the refund"]
    assert ns["continues"] == ns["lines"][0]["head"]
    markdown = review(repo, f"{base}..HEAD", "--markdown")
    assert "heads to settle" in markdown and "Heads nobody chose" in markdown
    assert markdown.count("approve the refund") == 1 and markdown.count("deny the refund") == 1
    rendered = cli(repo / ".langgraph", "render", THREAD, cwd=repo).stdout
    section = rendered.split("## Heads to settle", 1)[1].split("## State", 1)[0]
    assert section.count("approve the refund") == 1 and section.count("deny the refund") == 1
    assert section.count("continues (the newest)") == 1 and "--merge KEEP OTHER" in section
    kept, other = (line["head"] for line in ns["lines"])
    # the fake model gives both branches' turn 3 the same message ids: no merge can keep both
    refused = cli(repo / ".langgraph", "heads", THREAD, "--merge", kept, other, cwd=repo)
    assert refused.returncode == 6 and "different message with id 'user-3'" in refused.stderr
    chose = cli(repo / ".langgraph", "heads", THREAD, "--choose", other, cwd=repo)
    assert chose.returncode == 0, chose.stderr
    assert cli(repo / ".langgraph", "validate", "--heads", cwd=repo).returncode == 0
    settled = json.loads(review(repo, f"{base}", "--json"))["threads"][0]
    assert settled["unsettled"] is False


def test_removed_thread_and_pruned_checkpoints_are_reported(repo: Path) -> None:
    turn(repo, 1, thread="other")
    commit_all(repo, "other thread")
    before = git(repo, "rev-parse", "HEAD").stdout.strip()
    assert cli(repo / ".langgraph", "delete", "other", "--yes").returncode == 0
    assert cli(repo / ".langgraph", "prune", THREAD, "--keep-last", "2", "--yes").returncode == 0
    data = json.loads(review(repo, before, "--json"))
    status = {t["thread_id"]: t["status"] for t in data["threads"]}
    assert status == {"other": "removed", THREAD: "changed"}
    kept = next(t for t in data["threads"] if t["thread_id"] == THREAD)
    assert kept["namespaces"][0]["removed"] and not kept["namespaces"][0]["added"]


def test_markdown_keeps_message_text_inert(repo: Path) -> None:
    """A message is data: a mention, a link, HTML, a fence or a control character in it does
    nothing in the comment (code spans longer than any backtick run, screened text)."""
    hostile = "@maintainers <img src=x onerror=alert(1)> [click](http://evil) ``` \x1b[2J sk-ant-" + "a" * 30
    turn(repo, 3, text=hostile)
    out = review(repo, "HEAD", "--markdown")
    line = next(ln for ln in out.splitlines() if "maintainers" in ln)
    assert "\x1b" not in out and "sk-ant-aaaa" not in out
    body = line.split("**user**: ", 1)[1]
    fence = re.match(r"`+", body)
    assert fence is not None and body.endswith(fence.group()) and len(fence.group()) > 3


def test_long_text_is_folded_into_details(repo: Path) -> None:
    turn(repo, 3, text="long " * 200)
    out = review(repo, "HEAD", "--markdown")
    assert "<details><summary>user (full text)</summary>" in out
    assert "(+" in out.split("<details>", 1)[0]


def test_review_outside_git_or_with_an_unknown_revision_is_one_line(tmp_path: Path, repo: Path) -> None:
    loose = tmp_path / "loose"
    RepoSaver(loose / ".langgraph", durable=False)
    turn(loose, 1)
    proc = cli(loose / ".langgraph", "review", cwd=loose)
    assert proc.returncode == 3 and "not in a git work tree" in proc.stderr
    bad = cli(repo / ".langgraph", "review", "nosuchbranch..work", cwd=repo)
    assert bad.returncode == 3 and "unknown revision 'nosuchbranch'" in bad.stderr
    assert bad.stderr.count("\n") == 1


def test_review_imports_no_langgraph(repo: Path) -> None:
    """CI runs it on pull requests: it reads files and git, and constructs nothing."""
    proc = subprocess.run(
        [sys.executable, "-c", LOADED, "--root", str(repo / ".langgraph"), "review", "main..work"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert proc.stderr.strip().splitlines()[-1] == "LOADED 0 -", proc.stderr


def test_diff_from_and_history_since_take_a_git_revision(repo: Path) -> None:
    """``diff --from main`` compares with the checkpoint that continued the thread at that
    revision; ``history --since main`` lists only the checkpoints it did not have."""
    turn(repo, 3)
    diff = cli(repo / ".langgraph", "diff", THREAD, "--from", "HEAD", "--json", cwd=repo)
    assert diff.returncode == 0, diff.stderr
    (change,) = [c for c in json.loads(diff.stdout)["changes"] if c["channel"] == "messages"]
    ids = [item["value"]["$fields"]["id"] for item in change["added"]]
    assert ids == ["user-3", "ai-call-3", "tool-call-3", "ai-answer-3"]
    at_start = cli(repo / ".langgraph", "diff", THREAD, "--from", "main", "--json", cwd=repo)
    assert at_start.returncode == 0 and json.loads(at_start.stdout)["from"].endswith("(no such thread then)")
    root = repo / ".langgraph"
    since = json.loads(cli(root, "history", THREAD, "--since", "HEAD", "--json", cwd=repo).stdout)
    whole = json.loads(cli(root, "history", THREAD, "--json", cwd=repo).stdout)
    assert 0 < len(since["checkpoints"]) < len(whole["checkpoints"])
    assert {c["step"] for c in since["checkpoints"]} == set(range(9, 14))  # turn 3: its input and 4 steps
    bad = cli(repo / ".langgraph", "diff", THREAD, "--from", "no-such-thing", cwd=repo)
    assert bad.returncode == 2 and "neither a checkpoint" in bad.stderr
