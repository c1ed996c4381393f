"""Checkpoints a person can name (issue 38, item 7): ``latest``, ``latest~N``/``~N`` as git's
``HEAD~N``, and the end of an id (ids share their time prefix, so the start needed 13
characters where the end needs 4 or 5); an ambiguous name lists what it matches, and
``--ns`` lists the namespaces a node name could mean."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from graphs import cfg, chat_graph, sub_graph
from helpers import cli, rewrite
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.readmodel.reader import shortest_ends
from test_git import commit_all, git, init_repo

TURNS = 5


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sel") / ".langgraph"
    graph = chat_graph(RepoSaver(root, durable=False))
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}")]}, cfg("chat"))
    return root


def shown_id(root: Path, *args: str) -> str:
    proc = cli(root, "show", "chat", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["checkpoint_id"])


def history(root: Path) -> list[str]:
    """The thread's checkpoints, newest first, as LangGraph's own history walks them."""
    return [t.config["configurable"]["checkpoint_id"] for t in RepoSaver(root).list(cfg("chat"))]


def test_latest_and_latest_tilde_n_walk_the_parents_as_langgraph_s_history_does(root: Path) -> None:
    ids = history(root)
    assert shown_id(root, "-c", "latest") == shown_id(root) == ids[0]
    for n in (1, 2, len(ids) - 1):
        assert shown_id(root, "-c", f"latest~{n}") == ids[n]
        assert shown_id(root, "-c", f"~{n}") == ids[n]


def test_a_step_back_past_the_first_checkpoint_says_how_many_there_are(root: Path) -> None:
    n = len(history(root))
    proc = cli(root, "show", "chat", "-c", f"latest~{n}")
    assert proc.returncode == 3
    assert f"the latest has {n - 1} checkpoints before it" in proc.stderr


def test_the_shortest_end_of_every_id_names_it_where_its_start_needs_the_time(root: Path) -> None:
    ids = history(root)
    ends = shortest_ends(ids, ids)
    assert max(map(len, ends)) <= 6  # the random tail: a handful of characters
    starts = [next(n for n in range(4, 37) if sum(o.startswith(i[:n]) for o in ids) == 1) for i in ids]
    assert max(starts) >= 13  # what the issue saw: the start is the time, shared
    for cid, end in zip(ids, ends, strict=True):
        assert shown_id(root, "-c", end) == cid
        assert shown_id(root, "-c", end.upper()) == cid


def test_an_ambiguous_name_is_refused_listing_the_ends_that_name_each_match(root: Path) -> None:
    ids = history(root)
    proc = cli(root, "show", "chat", "-c", ids[0][:4])
    assert proc.returncode == 2
    assert f"{len(ids)} match" in proc.stderr
    listed = re.sub(r" \(and (\d+) more\)$", "", proc.stderr.strip()).rsplit(": ", 1)[1].split(", ")
    more = re.search(r"\(and (\d+) more\)", proc.stderr)
    assert len(listed) + (int(more.group(1)) if more else 0) == len(ids)
    assert [shown_id(root, "-c", end) for end in listed] == sorted(ids)[: len(listed)]


def test_diff_takes_the_same_names(root: Path) -> None:
    proc = cli(root, "diff", "chat", "--from", "latest~2", "--to", "~1", "--json")
    assert proc.returncode == 0, proc.stderr
    ids = history(root)
    got = json.loads(proc.stdout)
    assert (got["from"], got["to"]) == (ids[2], ids[1])


def test_a_node_name_with_two_calls_lists_both_namespaces(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = sub_graph(RepoSaver(root, durable=False))
    graph.invoke({"log": []}, cfg("sub"))
    graph.invoke(Command(resume="yes"), cfg("sub"))
    graph.invoke({"log": []}, cfg("sub"))  # the subgraph runs a second time
    spaces = {t.config["configurable"]["checkpoint_ns"] for t in RepoSaver(root).list(cfg("sub"))}
    assert len(spaces - {""}) == 2
    proc = cli(root, "show", "sub", "--ns", "sub")
    assert proc.returncode == 2, proc.stderr
    calls = proc.stderr.strip().rsplit(": ", 1)[1].split(", ")
    assert set(calls) == spaces - {""}
    for ns in calls:
        assert cli(root, "show", "sub", "--ns", ns).returncode == 0


def test_a_selector_that_is_also_a_git_revision_is_refused_naming_both(root: Path, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    shutil.copytree(root, repo / ".langgraph")
    commit_all(repo, "five turns")
    git(repo, "tag", "latest")
    proc = cli(repo / ".langgraph", "diff", "chat", "--from", "latest", cwd=repo)
    assert proc.returncode == 2 and "refs/tags/latest" in proc.stderr, proc.stderr
    tagged = cli(repo / ".langgraph", "diff", "chat", "--from", "refs/tags/latest", cwd=repo)
    assert tagged.returncode == 0, tagged.stderr
    ambiguous = cli(repo / ".langgraph", "diff", "chat", "--from", history(root)[0][:4], cwd=repo)
    assert ambiguous.returncode == 2 and "is ambiguous" in ambiguous.stderr  # its own words


def test_steps_back_through_parent_links_that_go_round_are_refused(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = chat_graph(RepoSaver(root, durable=False))
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}")]}, cfg("chat"))
    first = history(root)[-1]
    path = RepoSaver(root).store.layout.checkpoint_path("chat", "", first)
    rewrite(path, lambda doc: doc.__setitem__("parent_checkpoint_id", history(root)[0]))
    proc = cli(root, "show", "chat", "-c", "latest~99999999")
    assert proc.returncode == 2 and "go round" in proc.stderr, proc.stderr


def test_an_end_is_offered_only_when_no_other_id_starts_or_ends_with_it() -> None:
    ids = ["aaaa-0000-c0de1f1f", "1f1f-0000-beef", "2222-0000-1234"]
    assert shortest_ends(ids, ids[:1]) == ["e1f1f"]  # "1f1f" would also be the second's start
