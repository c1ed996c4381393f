"""Time travel: ``__copy__`` forks, forks of older checkpoints and what writes them.

LangGraph stores a ``__copy__`` fork under the copied checkpoint's *parent* with no new
channel versions, so the copy's values sit at versions its parent may not have.
InMemorySaver finds a value by its version; these tests hold RepoSaver to the same
answers (values, next, tasks with their results, interrupts and history), sync and async,
and check every other path that writes a checkpoint whose values come from elsewhere.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, StateUpdate, interrupt
from typing_extensions import TypedDict

from graphs import cfg, line_graph, sub_graph
from langgraph_checkpoint_repo import RepoSaver, copy_threads
from test_differential import Canon


class S(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    note: str
    count: int


def three_nodes(saver: BaseCheckpointSaver[Any]) -> Any:
    """The graph of the issue: a, b, c in a row, each touching different channels."""
    return line_graph(
        S,
        saver,
        a=lambda s: {"log": ["a"], "note": "from a", "count": s.get("count", 0) + 1},
        b=lambda s: {"log": ["b"], "count": s["count"] + 1},
        c=lambda s: {"log": ["c"]},
    )


def asking(saver: BaseCheckpointSaver[Any]) -> Any:
    return line_graph(S, saver, a=lambda s: {"log": ["a"]}, b=lambda s: {"log": [f"b:{interrupt('ok?')}"]})


def _view(snapshot: Any) -> Any:
    return (
        snapshot.values,
        snapshot.next,
        [(t.name, t.result, [i.value for i in t.interrupts]) for t in snapshot.tasks],
        snapshot.metadata.get("source") if snapshot.metadata else None,
        snapshot.metadata.get("step") if snapshot.metadata else None,
    )


def _savers(tmp_path: Path) -> list[BaseCheckpointSaver[Any]]:
    return [InMemorySaver(), RepoSaver(tmp_path / "repo", durable=False)]


def _copies_of_every_checkpoint(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    graph = three_nodes(saver)
    graph.invoke({"log": ["start"]}, cfg("t"))
    out = []
    for h in list(graph.get_state_history(cfg("t"))):
        out.append(_view(graph.get_state(graph.update_state(h.config, None, as_node="__copy__"))))
    return out


async def _acopies_of_every_checkpoint(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    graph = three_nodes(saver)
    await graph.ainvoke({"log": ["start"]}, cfg("t"))
    out = []
    for h in [s async for s in graph.aget_state_history(cfg("t"))]:
        fork = await graph.aupdate_state(h.config, None, as_node="__copy__")
        out.append(_view(await graph.aget_state(fork)))
    return out


def test_copy_of_every_checkpoint_keeps_values_and_next_like_inmemorysaver(tmp_path: Path) -> None:
    reference, repo = (_copies_of_every_checkpoint(s) for s in _savers(tmp_path))
    assert repo == reference
    # the case of the issue: the fork before "c" keeps count and runs c next
    assert ({"log": ["start", "a", "b"], "note": "from a", "count": 2}, ("c",)) in [r[:2] for r in repo]


async def test_copy_of_every_checkpoint_keeps_values_and_next_like_inmemorysaver_async(
    tmp_path: Path,
) -> None:
    reference, repo = [await _acopies_of_every_checkpoint(s) for s in _savers(tmp_path)]
    assert repo == reference
    assert ({"log": ["start", "a", "b"], "note": "from a", "count": 2}, ("c",)) in [r[:2] for r in repo]


def _fork_with_start_update(saver: BaseCheckpointSaver[Any]) -> tuple[Any, list[Any]]:
    graph = asking(saver)
    graph.invoke({"log": ["start"]}, cfg("t"))
    graph.invoke(Command(resume="yes"), cfg("t"))
    first = list(graph.get_state_history(cfg("t")))[-1]
    update = [StateUpdate(values={"log": ["forked"]}, as_node="__start__")]
    fork = graph.update_state(first.config, update, as_node="__copy__")
    result = graph.invoke(None, fork)
    return result["log"], [_view(h) for h in graph.get_state_history(cfg("t"))]


def test_copy_with_start_update_keeps_start_task_and_result_in_history(tmp_path: Path) -> None:
    reference, repo = (_fork_with_start_update(s) for s in _savers(tmp_path))
    assert repo == reference
    fork_rows = [row for row in repo[1] if row[3] == "fork"]
    assert fork_rows and fork_rows[0][2] == [("__start__", {"log": ["forked"]}, [])]


def _fork_before_interrupt(saver: BaseCheckpointSaver[Any]) -> Any:
    graph = asking(saver)
    graph.invoke({"log": ["start"]}, cfg("t"))
    graph.invoke(Command(resume="yes"), cfg("t"))
    before_b = next(h for h in graph.get_state_history(cfg("t")) if h.next == ("b",))
    fork = graph.update_state(before_b.config, None, as_node="__copy__")
    return graph.invoke(None, fork)


def test_copy_taken_before_an_interrupt_raises_it_again(tmp_path: Path) -> None:
    reference, repo = (_fork_before_interrupt(s) for s in _savers(tmp_path))
    assert "__interrupt__" in reference
    assert [i.value for i in repo["__interrupt__"]] == [i.value for i in reference["__interrupt__"]]
    assert repo["log"] == reference["log"] == ["start", "a"]


async def test_copy_taken_before_an_interrupt_raises_it_again_async(tmp_path: Path) -> None:
    results = []
    for saver in _savers(tmp_path):
        graph = asking(saver)
        await graph.ainvoke({"log": ["start"]}, cfg("t"))
        await graph.ainvoke(Command(resume="yes"), cfg("t"))
        history = [h async for h in graph.aget_state_history(cfg("t"))]
        before_b = next(h for h in history if h.next == ("b",))
        fork = await graph.aupdate_state(before_b.config, None, as_node="__copy__")
        results.append(await graph.ainvoke(None, fork))
    reference, repo = results
    assert "__interrupt__" in reference and "__interrupt__" in repo
    assert repo["log"] == reference["log"]


def _subgraph_copy(saver: BaseCheckpointSaver[Any]) -> Any:
    """Copy the subgraph's own checkpoint (its namespace) while it waits on its interrupt."""
    graph = sub_graph(saver)
    graph.invoke({"log": []}, cfg("t"))
    state = graph.get_state(cfg("t"), subgraphs=True)
    sub_config = state.tasks[0].state.config
    fork = graph.update_state(sub_config, None, as_node="__copy__")
    inner = graph.get_state(fork)
    result = graph.invoke(Command(resume="yes"), cfg("t"))
    canon = Canon()
    return canon((_view(inner), result, [_view(h) for h in graph.get_state_history(cfg("t"))]))


def test_copy_in_a_subgraph_namespace_matches_inmemorysaver(tmp_path: Path) -> None:
    reference, repo = (_subgraph_copy(s) for s in _savers(tmp_path))
    assert repo == reference
    assert repo[0][0] == {"log": ["outer_start", "inner_prep"]}


def test_copy_refers_to_stored_values_instead_of_repeating_them(tmp_path: Path) -> None:
    """A fork's file points at the files that already hold its values: a reviewer sees a fork,
    not a second copy of the state."""
    saver = RepoSaver(tmp_path, durable=False)
    graph = three_nodes(saver)
    graph.invoke({"log": ["start"]}, cfg("t"))
    before_c = next(h for h in graph.get_state_history(cfg("t")) if h.next == ("c",))
    fork = graph.update_state(before_c.config, None, as_node="__copy__")
    fork_id = fork["configurable"]["checkpoint_id"]
    doc = json.loads(next(tmp_path.rglob(f"{fork_id}.json")).read_text())
    assert "new_values" not in doc
    assert doc["parent_checkpoint_id"] == before_c.parent_config["configurable"]["checkpoint_id"]
    own = f"checkpoints/{before_c.config['configurable']['checkpoint_id']}.json"
    assert own in doc["values"].values()  # the copied checkpoint's own values, by reference
    assert graph.get_state(fork).values == before_c.values


@pytest.mark.parametrize("how", ["prune", "delete_for_runs"])
def test_fork_survives_removal_of_the_checkpoint_it_refers_to(tmp_path: Path, how: str) -> None:
    """Prune and delete_for_runs rescue a value that a kept fork takes from a removed
    checkpoint that is not its ancestor."""
    saver = RepoSaver(tmp_path, durable=False)
    graph = three_nodes(saver)
    graph.invoke({"log": ["start"]}, {**cfg("t"), "metadata": {"run_id": "first"}})
    before_c = next(h for h in graph.get_state_history(cfg("t")) if h.next == ("c",))
    fork = graph.update_state(before_c.config, None, as_node="__copy__")
    want = graph.get_state(fork)
    if how == "prune":
        saver.prune(["t"])
    else:
        saver.delete_for_runs(["first"])
    fresh = three_nodes(RepoSaver(tmp_path, durable=False))
    got = fresh.get_state(cfg("t"))
    assert (got.values, got.next) == (want.values, want.next) == (before_c.values, ("c",))
    assert fresh.invoke(None, cfg("t"))["log"] == ["start", "a", "b", "c"]


def test_thread_with_forks_copies_through_another_saver_unchanged(tmp_path: Path) -> None:
    """import/export (copy_threads) of a forked history: repo -> memory -> repo reads the same."""
    source = RepoSaver(tmp_path / "a", durable=False)
    graph = three_nodes(source)
    graph.invoke({"log": ["start"]}, cfg("t"))
    for h in list(graph.get_state_history(cfg("t")))[1:3]:
        graph.invoke(None, graph.update_state(h.config, None, as_node="__copy__"))
    middle = InMemorySaver()
    target = RepoSaver(tmp_path / "b", durable=False)
    copy_threads(source, middle, ["t"])
    copy_threads(middle, target, ["t"])

    def history(saver: BaseCheckpointSaver[Any]) -> list[Any]:
        return [(_view(h), h.config, h.parent_config) for h in three_nodes(saver).get_state_history(cfg("t"))]

    assert history(target) == history(middle) == history(source)
