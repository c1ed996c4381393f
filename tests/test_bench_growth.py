"""The growth workloads' machinery (bench/replay.py, bench/growth.py): a recording replayed into a
saver gives it what the graph gave it live, holds each message once, becomes many threads of
their own, and a saver over a cap is reported, not waited for. The workloads themselves run in
test_bench.py's ``--tiny`` run (without PostgreSQL).

No timing is asserted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from bench import growth, report, run
from bench.agent_graphs import build_create_agent
from bench.common import REPO, SQLITE, TINY
from bench.goals import TURNS_P99
from bench.replay import Appended, Put, Rebuild, Recording, apply, for_saver
from bench.workloads import threads, turns
from langgraph.checkpoint.memory import InMemorySaver

TURNS = 3


def played(saver: InMemorySaver, recording: Recording) -> InMemorySaver:
    for call in Rebuild(recording.calls):
        apply(saver, for_saver(call))
    return saver


def history(saver: InMemorySaver, thread_id: str) -> list[tuple[Any, ...]]:
    """Every checkpoint of a thread, newest first: its metadata, its messages, its pending writes."""
    out = []
    for tup in saver.list({"configurable": {"thread_id": thread_id}}):
        md = {k: v for k, v in tup.metadata.items() if k != "parents"}
        messages = [(m.type, m.id, m.content) for m in tup.checkpoint["channel_values"].get("messages", [])]
        writes = sorted(channel for _, channel, _ in tup.pending_writes or [])
        out.append((md, messages, writes))
    return out


def test_a_replay_gives_a_saver_the_checkpoints_the_graph_gave_it_live() -> None:
    recording = growth.conversation(TURNS, "t", "u", "token")
    live = InMemorySaver()
    graph = build_create_agent(live)
    for turn in range(1, TURNS + 1):
        graph.invoke(growth.turn_input(turn, "token"), growth.turn_config("t", "u"), durability="sync")
    replayed = played(InMemorySaver(), recording)
    assert history(replayed, "t") == history(live, "t")
    assert len(history(live, "t")) == 5 * TURNS  # the input of each turn, then four steps


def test_a_recording_holds_each_message_once(tmp_path: Path) -> None:
    recording = growth.conversation(TURNS, "t", "u", "token")
    puts = [c for c in recording.calls if isinstance(c, Put)]
    values = [
        p.checkpoint["channel_values"]["messages"]
        for p in puts
        if "messages" in p.checkpoint["channel_values"]
    ]
    assert len(values) == len(puts) - 1  # the first checkpoint, before the input, has none
    whole = [v for v in values if isinstance(v, list)]
    appended = [v for v in values if isinstance(v, Appended)]
    assert len(whole) == 1 and len(appended) == len(values) - 1
    assert len(whole[0]) + sum(len(a.tail) for a in appended) == 4 * TURNS
    loaded, kept = growth.kept(recording, tmp_path / "r.pickle")
    assert kept["calls"] == len(recording.calls) and kept["turns"] == TURNS
    assert history(played(InMemorySaver(), loaded), "t") == history(played(InMemorySaver(), recording), "t")


def test_threads_replayed_from_one_recording_are_each_their_own() -> None:
    template = growth.conversation(2, threads.TEMPLATE, threads.TEMPLATE_USER, threads.TEMPLATE)
    saver = InMemorySaver()
    for i in range(2):
        where = threads.target(i)
        for call in Rebuild(template.calls):
            apply(saver, for_saver(where.call(call)))
    mine = list(saver.list(None, filter={"user_id": threads.user_name(0)}))
    assert len(mine) == sum(isinstance(c, Put) for c in template.calls)
    assert {t.config["configurable"]["thread_id"] for t in mine} == {threads.thread_name(0)}
    seen: dict[str, set[Any]] = {}
    for i in range(2):
        h = history(saver, threads.thread_name(i))
        messages = h[0][1]
        assert all(threads.thread_name(i) in text for kind, _, text in messages if kind == "human")
        assert not any(threads.TEMPLATE in str(row) for row in h)
        seen[threads.thread_name(i)] = {mid for _, mid, _ in messages}
    assert not set.intersection(*seen.values())
    ids = [t.checkpoint["id"] for t in saver.list(None)]
    assert len(ids) == len(set(ids)) == 2 * len(mine)


def test_a_saver_over_the_replay_cap_is_reported_skipped_and_not_measured_further(tmp_path: Path) -> None:
    sizes = dataclasses.replace(TINY, growth_build_cap_s=0.0)
    result = turns.run(tmp_path, sizes)
    for n in sizes.growth_turns:
        for name in (REPO, SQLITE):
            assert result["points"][str(n)]["savers"][name] == {
                "skipped": "skipped: replaying turns 1-3 took over 0 s"
            }
    assert all(v is None for row in turns.rows(result) for v in row.values.values())
    assert TURNS_P99.check(result).met is None
    assert "skipped: replaying turns 1-3 took over 0 s" in turns.details(result, {})


def test_a_fresh_process_over_the_cap_is_stopped_and_reported(tmp_path: Path) -> None:
    stores = growth.Stores(tmp_path / "repo", tmp_path / "db", None)
    sizes = dataclasses.replace(TINY, forked_children=False, growth_cap_s=0.001)
    assert growth.fresh(stores, REPO, "get_tuple", "t", "0", sizes) is None


def test_keep_from_takes_what_a_run_did_not_run_from_an_earlier_run_and_says_so() -> None:
    """``bench/run.py --keep-from``: a long run of the growth workloads beside a whole run of the rest."""
    earlier = {
        "started": "2026-01-01T00:00:00+00:00",
        "command": "python bench/run.py",
        "machine": {"loadavg_start": [1.0, 1.0, 1.0], "loadavg_end": [2.0, 2.0, 2.0]},
        "chat": {"from": "earlier"},
        "turns": {"from": "earlier"},
    }
    merged = run.keep_from({"started": "later", "turns": {"from": "later"}}, earlier)
    assert merged["turns"] == {"from": "later"} and merged["chat"] == {"from": "earlier"}
    assert merged["kept"] == [
        {
            "workloads": ["chat"],
            "started": earlier["started"],
            "command": "python bench/run.py",
            "load": [[1.0] * 3, [2.0] * 3],
        }
    ]
    assert run.keep_from({"chat": {}, "turns": {}}, {**earlier, "chat": None, "turns": None}) == {
        "chat": {},
        "turns": {},
    }


def test_a_report_kept_from_two_earlier_runs_names_each_run_its_sections_came_from() -> None:
    """``--keep-from`` twice (a run, then a report of it kept from another): each kept section
    is said to come from the run that measured it, not from the last file it passed through."""

    def a_run(started: str, names: list[str], kept: Any = None) -> dict[str, Any]:
        machine = {"loadavg_start": [1.0, 1.0, 1.0], "loadavg_end": [2.0, 2.0, 2.0]}
        out = {"started": started, "command": f"run {started}", "machine": machine}
        return {**out, **{n: {"ran": started} for n in names}, **({"kept": kept} if kept else {})}

    oldest = a_run("22:55", ["chat", "turns", "threads", "git"])
    middle = run.keep_from(a_run("23:17", ["git"]), oldest)  # git from 23:17, the rest from 22:55
    newest = run.keep_from(a_run("00:11", ["chat"]), middle)
    assert {n: newest[n]["ran"] for n in ("chat", "git", "turns", "threads")} == {
        "chat": "00:11",
        "git": "23:17",
        "turns": "22:55",
        "threads": "22:55",
    }
    said = report._kept(newest)
    assert "sections git and" in said and "at 23:17" in said
    assert "sections turns, threads and" in said and "at 22:55" in said
    assert "chat" not in said
