"""Which checkpoint continues, by one rule that follows parent links, not clocks
(core/lineage.py, docs/forks.md "The rule"; the third outside review).

The checkpoint ``get_tuple`` returns, the one ``heads`` marks as continuing and the one prune
keeps are the same: the newest head that no valid choice passed over. A turn written on a
machine whose clock is behind is not lost, and a pull request cannot settle a fork by
writing a "choice" that is not one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import id as lg_id
from langgraph.types import Command

from graphs import cfg, chat_graph, contents
from helpers import as_a_race, checkpoint_files, cli, load
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.lineage import CHOICE_KEY

THREAD = "skew"


def say(root: Path, *texts: str) -> list[str]:
    graph = chat_graph(RepoSaver(root, durable=False))
    out: dict[str, Any] = {}
    for text in texts:
        out = graph.invoke({"messages": [HumanMessage(content=text)]}, cfg(THREAD))
    return contents(out["messages"])


def test_a_turn_from_a_machine_whose_clock_is_behind_continues_and_is_kept(
    tmp_path: Path, machine: Any
) -> None:
    root = tmp_path / "root"
    machine(600)  # machine A: ten minutes ahead
    say(root, "one", "two")
    ahead = sorted(p.stem for p in checkpoint_files(root, THREAD))
    machine(0)  # machine B: the right time; its ids sort before A's
    said = say(root, "three")
    assert said[-2:] == ["three", "echo: three"]
    behind = sorted(p.stem for p in checkpoint_files(root, THREAD) if p.stem not in ahead)
    assert behind and max(behind) < min(ahead)  # B's turn has the oldest ids of the thread

    # the graph, a fresh saver, heads, validate and prune all see B's turn as the one that continues
    state = chat_graph(RepoSaver(root)).get_state(cfg(THREAD))
    assert contents(state.values["messages"])[-2:] == ["three", "echo: three"]
    latest = state.config["configurable"]["checkpoint_id"]
    assert latest == max(behind)
    heads = RepoSaver(root).heads(cfg(THREAD))
    assert [(h.checkpoint_id, h.continues) for h in heads] == [(latest, True)]
    rows = json.loads(cli(root, "heads", THREAD, "--json").stdout)["heads"]
    assert [(r["checkpoint_id"], r["continues"]) for r in rows] == [(latest, True)]
    assert cli(root, "validate", "--heads").returncode == 0
    pruned = cli(root, "prune", "--keep-last", "1", "--yes")
    assert pruned.returncode == 0, pruned.stderr
    assert latest in {p.stem for p in checkpoint_files(root, THREAD)}
    again = chat_graph(RepoSaver(root)).get_state(cfg(THREAD))
    assert contents(again.values["messages"])[-2:] == ["three", "echo: three"]
    RepoSaver(root).prune([THREAD])
    assert [p.stem for p in checkpoint_files(root, THREAD)] == [latest]
    assert say(root, "four")[-2:] == ["four", "echo: four"]


def test_a_choice_continues_even_when_its_id_is_older_than_the_head_it_passed_over(
    tmp_path: Path, machine: Any
) -> None:
    """A choice made on a machine whose clock is behind still makes its head continue (no
    refusal because of the clock)."""
    root = tmp_path / "root"
    machine(600)
    say(root, "one", "two")
    saver = RepoSaver(root)
    first = list(saver.list(cfg(THREAD)))[-1]
    as_a_race(
        saver, chat_graph(saver).update_state(first.config, {"messages": [HumanMessage(content="fork")]})
    )
    heads = saver.heads(cfg(THREAD))
    assert len(heads) == 2 and not any(h.settled for h in heads)
    older = next(h for h in heads if not h.continues)
    machine(-600)  # twenty minutes behind the fork
    chosen = RepoSaver(root).choose_head(older.config)
    fresh = RepoSaver(root)
    assert fresh.get_tuple(cfg(THREAD)).config == chosen  # type: ignore[union-attr]
    assert all(h.settled for h in fresh.heads(cfg(THREAD)))
    assert cli(root, "validate", "--heads").returncode == 0


def test_a_checkpoint_that_only_claims_to_be_a_choice_settles_nothing(tmp_path: Path) -> None:
    """A pull request continues one head with a changed state and adds choice metadata over
    the other: the other head stays unsettled, validate --heads fails naming the file, and the
    forged checkpoint is an ordinary head."""
    root = tmp_path / "root"
    say(root, "one", "two")
    saver = RepoSaver(root)
    first = list(saver.list(cfg(THREAD)))[-1]
    as_a_race(
        saver, chat_graph(saver).update_state(first.config, {"messages": [HumanMessage(content="deny")]})
    )
    heads = saver.heads(cfg(THREAD))
    mine = next(h for h in heads if not h.continues)  # the branch the pull request favours
    other = next(h for h in heads if h.continues)
    tup = mine.checkpoint_tuple
    version = saver.get_next_version(tup.checkpoint["channel_versions"]["messages"], None)
    forged_id = str(lg_id.uuid6(clock_seq=9))
    checkpoint: Any = {
        **tup.checkpoint,
        "id": forged_id,
        "channel_versions": {**tup.checkpoint["channel_versions"], "messages": version},
        "channel_values": {**tup.checkpoint["channel_values"], "messages": [HumanMessage("ok", id="x")]},
    }
    metadata: Any = {
        **tup.metadata,
        "source": "fork",
        CHOICE_KEY: {"chose": mine.checkpoint_id, "over": [other.checkpoint_id]},
    }
    saver.put(tup.config, checkpoint, metadata, {"messages": version})

    after = RepoSaver(root).heads(cfg(THREAD))
    assert {(h.checkpoint_id, h.settled) for h in after} == {(forged_id, False), (other.checkpoint_id, False)}
    failed = cli(root, "validate", "--heads")
    assert failed.returncode == 1
    forged_file = next(p for p in checkpoint_files(root, THREAD) if p.stem == forged_id)
    problem = f"{forged_file.name}: /metadata/{CHOICE_KEY}: records a choice but changes the state"
    assert problem in failed.stdout
    assert "2 heads nobody chose" in failed.stdout
    assert load(forged_file)["metadata"][CHOICE_KEY]["over"] == [other.checkpoint_id]


# ----------------------------------------------------------------------------
# --merge: keep both branches' turns
# ----------------------------------------------------------------------------
def forked(root: Path) -> tuple[RepoSaver, str, str]:
    """A thread with two heads: the line that said "one", "two", and an update_state branch
    from after "one" that added "fork text". Returns (saver, that line's head, the branch's)."""
    say(root, "one", "two")
    saver = RepoSaver(root)
    first = next(t for t in saver.list(cfg(THREAD)) if t.metadata["step"] == 1)
    branch = chat_graph(saver).update_state(first.config, {"messages": [HumanMessage(content="fork text")]})
    as_a_race(saver, branch)  # two heads that wait for a choice, as two writers leave them
    heads = {h.checkpoint_id for h in saver.heads(cfg(THREAD))}
    other = str(branch["configurable"]["checkpoint_id"])
    (line,) = heads - {other}
    return saver, line, other


def test_merge_keeps_both_branches_messages_in_order_and_settles_the_fork(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _, line, other = forked(root)
    before = {p.stem for p in checkpoint_files(root, THREAD)}
    out = cli(root, "heads", THREAD, "--merge", line, other, "--json")
    assert out.returncode == 0, out.stderr
    new = json.loads(out.stdout)["checkpoint_id"]
    assert {p.stem for p in checkpoint_files(root, THREAD)} - before == {new}
    fresh = chat_graph(RepoSaver(root))
    state = fresh.get_state(cfg(THREAD))
    assert state.config["configurable"]["checkpoint_id"] == new
    assert contents(state.values["messages"]) == ["one", "echo: one", "two", "echo: two", "fork text"]
    assert all(h.settled for h in RepoSaver(root).heads(cfg(THREAD)))
    assert cli(root, "validate", "--heads").returncode == 0
    assert contents(fresh.invoke({"messages": [HumanMessage("three")]}, cfg(THREAD))["messages"])[-2:] == [
        "three",
        "echo: three",
    ]


def test_merge_is_refused_where_it_cannot_be_right(tmp_path: Path) -> None:
    """A head waiting on an interrupt (pending writes), and two heads whose other channels
    differ, are refused naming why; nothing is written."""
    from graphs import ask_graph

    root = tmp_path / "ask"
    saver = RepoSaver(root)
    graph = ask_graph(saver)
    graph.invoke({"log": ["start"]}, cfg(THREAD))
    waiting = saver.get_tuple(cfg(THREAD))
    first = list(graph.get_state_history(cfg(THREAD)))[-1]
    graph.update_state(first.config, {"log": ["time travel"]})
    ids = [h.checkpoint_id for h in saver.heads(cfg(THREAD))]
    files = sorted(p.name for p in checkpoint_files(root, THREAD))
    refused = cli(root, "heads", THREAD, "--merge", *ids)
    assert refused.returncode == 6 and "pending writes" in refused.stderr, refused.stderr
    assert waiting is not None and waiting.checkpoint["id"] in ids
    assert sorted(p.name for p in checkpoint_files(root, THREAD)) == files

    root = tmp_path / "log"
    saver = RepoSaver(root)
    graph = ask_graph(saver)
    graph.invoke({"log": ["start"]}, cfg(THREAD))
    graph.invoke(Command(resume="Ada"), cfg(THREAD))
    first = list(graph.get_state_history(cfg(THREAD)))[-2]
    graph.update_state(first.config, {"log": ["another"]})
    ids = [h.checkpoint_id for h in saver.heads(cfg(THREAD))]
    refused = cli(root, "heads", THREAD, "--merge", *ids)
    assert refused.returncode == 6, refused.stderr
    assert "differ in" in refused.stderr and "log" in refused.stderr


def test_a_merge_that_drops_messages_settles_nothing(tmp_path: Path) -> None:
    """A checkpoint that records a merge but whose messages do not start with the kept head's
    (a forged settlement that drops a turn) is no choice: validate --heads names it."""
    root = tmp_path / "root"
    saver, line, other = forked(root)
    kept = saver.get_tuple(cfg(THREAD, checkpoint_ns="", checkpoint_id=line))
    assert kept is not None
    version = saver.get_next_version(kept.checkpoint["channel_versions"]["messages"], None)
    checkpoint: Any = {
        **kept.checkpoint,
        "id": str(lg_id.uuid6(clock_seq=5)),
        "channel_versions": {**kept.checkpoint["channel_versions"], "messages": version},
        "channel_values": {**kept.checkpoint["channel_values"], "messages": [HumanMessage("only", id="z")]},
    }
    choice = {"chose": line, "over": [other], "merged": [other]}
    metadata: Any = {**kept.metadata, "source": "fork", CHOICE_KEY: choice}
    forged = saver.put(kept.config, checkpoint, metadata, {"messages": version})
    failed = cli(root, "validate", "--heads")
    assert failed.returncode == 1 and "do not start with the kept head's" in failed.stdout
    states = {h.checkpoint_id: h.settled for h in RepoSaver(root).heads(cfg(THREAD))}
    assert states == {forged["configurable"]["checkpoint_id"]: False, other: False}
