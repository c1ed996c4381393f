"""What a running saver keeps of a long conversation grows with the conversation, not with its
square.

Every checkpoint of a long thread has its value entry kept (resolve.ValueResolver), each an
append onto its parent's list. An entry used to hold its whole list as one more Python list
(64 MB of pointers at 1,000 turns, 5,000 checkpoints), and every whole copy of the list (one
every ``snapshot_every`` turns) its own msgpack body (30 MB more, about nine times that at
3,000 turns). Now an append entry holds its own items and makes its list when asked, and the
big bodies of a process are kept within ``entries.WHOLE_BODY_BYTES``, least recently used
going first, made again when asked.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, chat_graph, contents
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.format import entries
from langgraph_checkpoint_repo.core.format.entries import KeptBodies, ValueEntry


def _chat(saver: Any, turns: int) -> Any:
    graph = chat_graph(saver)
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i} " + "x" * 200)]}, cfg("t"))
    return graph


def _history(graph: Any) -> list[list[str]]:
    return [contents(s.values.get("messages", [])) for s in graph.get_state_history(cfg("t"))]


def _kept_entries(saver: RepoSaver) -> list[ValueEntry]:
    return [e for e in list(saver.store.values._values.values()) if isinstance(e, ValueEntry)]


def test_the_entries_kept_for_a_long_thread_hold_each_item_once_per_link(tmp_path: Path) -> None:
    saver = RepoSaver(tmp_path / ".langgraph", durable=False, snapshot_every=8)
    graph = _chat(saver, 40)
    for state in graph.get_state_history(cfg("t")):  # every checkpoint's entry kept
        assert state.values.get("messages") is not None or state.next
    kept = [e for e in _kept_entries(saver) if e.is_list]
    appends = [e for e in kept if e.base is not None]
    assert len(appends) > 60
    # what each entry holds itself: its own items (an append) or its whole list (a copy)
    held = sum(len(v) for e in kept for v in vars(e).values() if isinstance(v, list))
    in_lists = sum(e.count for e in kept)
    assert held * 4 < in_lists, (held, in_lists)  # before, every entry held its whole list: all of in_lists
    for e in appends[:20]:  # and each still reads as the whole list
        assert e.tree == e.base.tree + e.items  # type: ignore[union-attr, operator]
        assert e.count == len(e.tree)


def test_big_bodies_past_the_budget_are_let_go_and_made_again_the_same(tmp_path: Path) -> None:
    """The least recently used big bodies go first; a state read after its body went is the
    reference's (InMemorySaver), as is every state of the history."""
    kept = KeptBodies(budget=8 * 1024)
    reference = InMemorySaver()
    _chat(reference, 30)
    saver = RepoSaver(tmp_path / ".langgraph", durable=False, snapshot_every=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(entries, "KEPT_BODIES", kept)
        mp.setattr(entries, "BIG_BODY", 512)  # every whole copy of this chat counts
        graph = _chat(saver, 30)
        mine = [contents(s.values.get("messages", [])) for s in graph.get_state_history(cfg("t"))]
        theirs = [
            contents(s.values.get("messages", [])) for s in chat_graph(reference).get_state_history(cfg("t"))
        ]
        assert kept.total <= kept.budget
        dropped = [e for e in _kept_entries(saver) if e.is_list and e.base is None and e._body is None]
        assert dropped, "no body went: the budget was not reached"
        again = RepoSaver(tmp_path / ".langgraph", durable=False)
        assert [
            contents(s.values.get("messages", [])) for s in chat_graph(again).get_state_history(cfg("t"))
        ] == mine
        assert [contents(s.values.get("messages", [])) for s in graph.get_state_history(cfg("t"))] == mine
    assert mine == theirs


def test_an_entry_let_go_by_the_caches_takes_its_body_out_of_the_budget() -> None:
    kept = KeptBodies(budget=10**9)
    entry = ValueEntry(empty=False, whole=["x"] * 10, where="w")
    kept.used(entry, 1000)
    kept.used(entry, 1000)  # asked again: counted once
    assert kept.total == 1000
    del entry
    gc.collect()
    assert kept.total == 0
