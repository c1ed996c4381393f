"""A prune removes files in an order a reader without the lock can follow.

Readers take no lock, so a ``get_tuple`` or ``list`` in another process may run at any moment
of a prune. A checkpoint file refers to older ones: a delta to its parent (format 4), a list
append to its parent's list, a message to the checkpoint that first held it (in its own
namespace or another). A reader that finds the file it was reading gone looks again; one
that finds a file it refers to gone while it is still there raises MissingReferenceError.
So every checkpoint still there must read whole at every step of a removal: the checkpoints
go newest first. (Oldest first, as before, a later checkpoint stood a moment without its
parent: about 2 failed reads in 5,000 while another process pruned every 50 ms.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import MessagesState

from graphs import cfg, chat_graph, line_graph
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core import removal
from langgraph_checkpoint_repo.core.errors import MissingReferenceError


def _relay(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"relayed {len(state['messages'])}")]}


def _relay_graph(saver: RepoSaver) -> Any:
    """A graph whose subgraph gets the conversation: its checkpoints refer to messages the
    outer namespace's checkpoints hold, and the outer ones to the subgraph's answers."""
    inner = line_graph(MessagesState, None, relay=_relay)
    return line_graph(MessagesState, saver, sub=inner)


def _written(root: Path, thread_id: str, graph_of: Any, turns: int) -> list[tuple[str, str]]:
    saver = RepoSaver(root, durable=False)
    graph = graph_of(saver)
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}")]}, cfg(thread_id))
    return sorted(
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
        for t in saver.list(cfg(thread_id))
    )


@pytest.mark.parametrize("case", ["chat", "subgraph", "clock behind"])
def test_every_checkpoint_still_there_reads_whole_at_each_step_of_a_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine: Any, case: str
) -> None:
    """ "clock behind": the thread is continued by a machine whose clock is an hour behind, so
    its checkpoints have ids older than their parents': a removal by id alone took a parent
    before its child."""
    root = tmp_path / ".langgraph"
    if case == "clock behind":
        _written(root, "t", chat_graph, 4)
        machine(-3600)
        ids = _written(root, "t", chat_graph, 3)
    else:
        ids = _written(root, "t", _relay_graph if case == "subgraph" else chat_graph, 6)
    layout = RepoSaver(root).store.layout
    steps: list[int] = []

    def unlink(path: Any) -> None:
        os.unlink(path)
        if "checkpoints" not in Path(path).parts:
            return
        reader = RepoSaver(root)  # a fresh process's reader: nothing kept from before
        there = [(ns, cid) for ns, cid in ids if layout.checkpoint_path("t", ns, cid).exists()]
        for ns, cid in there:
            tup = reader.get_tuple(cfg("t", checkpoint_ns=ns, checkpoint_id=cid))
            assert tup is not None and tup.checkpoint["id"] == cid
        steps.append(len(there))

    monkeypatch.setattr(removal, "os", SimpleNamespace(**{**vars(os), "unlink": unlink}))
    RepoSaver(root, durable=False).prune(["t"])

    assert len(steps) >= 8, steps  # checkpoints went one by one, each step checked
    assert steps[-1] < len(ids)
    latest = RepoSaver(root).get_tuple(cfg("t"))
    assert latest is not None and latest.checkpoint["channel_values"]["messages"][-1].content


@pytest.mark.parametrize("asked", ["latest", "by id"])
def test_a_reference_to_a_file_never_there_raises_at_the_first_read(tmp_path: Path, asked: str) -> None:
    """A reader looks again only when the file holding a missing reference is gone too (a
    race with a removal). An error naming the missing file itself, whose referrer is not known
    where it is raised, is damage: raised at the first read, not after five."""
    root = tmp_path / ".langgraph"
    ids = _written(root, "t", chat_graph, 1)
    first = RepoSaver(root).store.layout.checkpoint_path("t", *ids[0])
    for ns, cid in ids[1:]:
        RepoSaver(root).store.layout.checkpoint_path("t", ns, cid).unlink()
    doc = json.loads(first.read_text())
    version = doc["checkpoint"]["channel_versions"]["__start__"] = doc["version"]
    doc["values"] = {"__start__": f"values/__start__@{version}.json"}  # a file never written
    doc["new_values"] = {}
    first.write_text(json.dumps(doc))
    reader = RepoSaver(root)
    reads: list[str] = []
    get = reader.store.get
    reader.store.get = lambda *a: reads.append(a[2]) or get(*a)  # type: ignore[method-assign]
    with pytest.raises(MissingReferenceError, match="value of channel '__start__' is missing"):
        reader.get_tuple(cfg("t", checkpoint_id=ids[0][1] if asked == "by id" else None))
    assert reads == [ids[0][1]]
