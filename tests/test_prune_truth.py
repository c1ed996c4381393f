"""``prune`` tells the truth (issue 38, item 5): its plan counts the files and bytes it writes
first as well as those it removes, a real run does exactly what its dry run said, and by
default it never makes the root bigger: what the kept checkpoints still use of the removed
ones is written first, and with forks off a wide state that outweighs what goes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph

from graphs import cfg, chat_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver

WIDTH = 150  # channels: each fork's base file holds them all
Wide = TypedDict("Wide", {f"c{i:03d}": int for i in range(WIDTH)}, total=False)  # type: ignore[misc]


def sizes(root: Path) -> dict[str, int]:
    """Every state file below the root (not the derived .cache/) by path, with its size."""
    out = {}
    for here, _, files in os.walk(root / "threads"):
        for name in files:
            path = os.path.join(here, name)
            out[path] = os.lstat(path).st_size
    return out


def wide_forks(root: Path) -> None:
    """A wide state run through eight nodes, then six update_state forks off its history."""
    builder = StateGraph(Wide)
    for k in range(8):
        builder.add_node(f"n{k}", lambda s, k=k: {f"c{k:03d}": k + 1})
    builder.add_edge(START, "n0")
    for k in range(7):
        builder.add_edge(f"n{k}", f"n{k + 1}")
    builder.add_edge("n7", END)
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    graph.invoke({f"c{i:03d}": i for i in range(WIDTH)}, cfg("w"))
    for past in list(graph.get_state_history(cfg("w")))[2:8]:
        graph.update_state(past.config, {"c149": 7})


def plan(root: Path, *args: str) -> dict[str, Any]:
    proc = cli(root, "prune", *args, "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    (thread,) = json.loads(proc.stdout)["threads"]
    return thread  # type: ignore[no-any-return]


def test_a_prune_that_would_grow_the_root_keeps_the_thread_whole_and_says_by_how_much(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    wide_forks(root)
    before = sizes(root)
    grows = plan(root, "--keep-last", "6", "--allow-growth")
    assert grows["write_bytes"] > grows["remove_bytes"] > 0
    said = cli(root, "prune", "--keep-last", "6", "--yes")
    assert said.returncode == 0, said.stderr
    growth = grows["write_bytes"] - grows["remove_bytes"]
    assert f"kept whole, pruning would grow it by {growth:,} bytes" in said.stdout
    assert "--allow-growth" in said.stdout
    assert sizes(root) == before
    kept = plan(root, "--keep-last", "6")
    assert kept["remove"] == [] and kept["skipped"].startswith("pruning would grow it")
    assert (kept["remove_bytes"], kept["write_bytes"]) == (grows["remove_bytes"], grows["write_bytes"])
    assert cli(root, "prune", "--keep-last", "6", "--yes", "--allow-growth").returncode == 0
    assert sum(sizes(root).values()) - sum(before.values()) == growth


def test_the_dry_run_counts_what_it_writes_and_the_run_does_exactly_that(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    graph = chat_graph(RepoSaver(root, durable=False))
    for i in range(12):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}")]}, cfg("t"))
    said = plan(root, "--keep-last", "5")
    text = cli(root, "prune", "--keep-last", "5", "--dry-run").stdout
    assert f"({said['remove_bytes']:,} bytes); would write {len(said['write'])} first" in text
    assert f"({said['write_bytes']:,} bytes)" in text
    before = sizes(root)
    assert cli(root, "prune", "--keep-last", "5", "--yes").returncode == 0
    after = sizes(root)
    assert sorted(set(before) - set(after)) == sorted(said["remove"])
    assert sorted(set(after) - set(before)) == sorted(said["write"])
    assert sum(before[p] for p in said["remove"]) == said["remove_bytes"]
    assert sum(after[p] for p in said["write"]) == said["write_bytes"]
    assert said["write_bytes"] < said["remove_bytes"]  # an ordinary prune shrinks the root


def test_keep_latest_keeps_whole_a_thread_it_would_grow_unless_growth_is_allowed(tmp_path: Path) -> None:
    """The growth rule is one for every prune (``plans.unless_it_grows``): retention's
    keep_latest strategy passes ``prune``'s ``allow_growth`` (it skipped the rule: hostile
    review) and keeps whole a thread its removal would make bigger, saying by how much;
    LangGraph's own ``RepoSaver.prune`` call asks for the removal and still gets it."""
    from langgraph_checkpoint_repo.core.plans import plan_keep_latest, stored_metadata

    root = tmp_path / "root"
    wide_forks(root)
    store = RepoSaver(root).store
    grows = plan_keep_latest(store, stored_metadata(store), "w")
    assert grows.written_bytes > grows.removed_bytes > 0 and grows.skipped is None
    kept = plan_keep_latest(store, stored_metadata(store), "w", allow_growth=False)
    growth = grows.written_bytes - grows.removed_bytes
    assert (kept.skipped or "").startswith(f"pruning would grow it by {growth:,} bytes"), kept
    before = sizes(root)
    RepoSaver(root).prune(["w"], strategy="keep_latest")
    assert sum(sizes(root).values()) - sum(before.values()) == growth
