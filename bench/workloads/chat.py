"""Workloads 1 and 4: chat turns, threads x turns with default durability, then bytes on disk.

Median wall time per turn, the saver calls each turn makes, and the size of each store afterwards.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from bench import goals
from bench.common import (
    COUNTED_METHODS,
    MAIN_SAVERS,
    MEMORY,
    REPO,
    REPO_FAST,
    SQLITE,
    CallCounter,
    FsyncRounds,
    Result,
    Sizes,
    close_saver,
    dir_usage,
    files_usage,
    median_ms,
    ms,
    open_sqlite,
    quantile_ms,
    rotated,
    sqlite_files,
    sqlite_wal_checkpoint,
)
from bench.report import Row, md_table
from langgraph_checkpoint_repo import RepoSaver

NAME = "chat"
TITLE = "Chat turns in detail"


def build_chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    def echo(state: MessagesState) -> dict[str, list[AnyMessage]]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(content=f"You said: {last.content}")]}

    def follow_up(state: MessagesState) -> dict[str, list[AnyMessage]]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"Anything else? ({n} messages so far)")]}

    builder = StateGraph(MessagesState)
    builder.add_node("echo", echo)
    builder.add_node("follow_up", follow_up)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", "follow_up")
    builder.add_edge("follow_up", END)
    return builder.compile(checkpointer=checkpointer)


def user_text(thread: int, turn: int) -> str:
    return (
        f"Thread {thread}, turn {turn}: please summarise the open items for the release "
        f"and tell me which of them block the deploy."
    )


@dataclass
class Samples:
    """One saver's turns: wall time, turn number, saver calls and time inside the saver."""

    times: list[int] = field(default_factory=list)
    turn: list[int] = field(default_factory=list)
    calls: list[dict[str, int]] = field(default_factory=list)
    saver_ns: list[int] = field(default_factory=list)
    fsyncs: list[dict[str, int]] = field(default_factory=list)  # RepoSaver's rounds, per method


def run(tmp: Path, sizes: Sizes) -> Result:
    db = tmp / "chat.db"
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(tmp / "chat-repo"),
        REPO_FAST: RepoSaver(tmp / "chat-repo-fast", durable=False),
        SQLITE: open_sqlite(db),
        MEMORY: InMemorySaver(),
    }
    counters = {name: CallCounter(s) for name, s in savers.items()}
    graphs = {name: build_chat_graph(s) for name, s in savers.items()}
    rounds = FsyncRounds()
    try:
        samples = _play(graphs, counters, sizes, rounds)
    finally:
        rounds.close()
    _check_conversations(graphs, sizes)
    per_saver = {name: _summarise(s, sizes.chat_turns) for name, s in samples.items()}
    return {"per_saver": per_saver, "disk": _disk(tmp, db, savers[SQLITE])}


def _play(
    graphs: dict[str, Any], counters: dict[str, CallCounter], sizes: Sizes, rounds: FsyncRounds
) -> dict[str, Samples]:
    names = list(graphs)
    samples = {n: Samples() for n in names}
    rnd = 0
    for turn in range(sizes.chat_turns):
        for thread in range(sizes.chat_threads):
            for name in rotated(names, rnd):
                config: RunnableConfig = {"configurable": {"thread_id": f"chat-{thread}"}}
                before, before_t = counters[name].snapshot()
                before_f = rounds.snapshot()
                t0 = time.perf_counter_ns()
                graphs[name].invoke({"messages": [HumanMessage(content=user_text(thread, turn))]}, config)
                elapsed = time.perf_counter_ns() - t0
                after, after_t = counters[name].snapshot()
                after_f = rounds.snapshot()
                s = samples[name]
                s.times.append(elapsed)
                s.turn.append(turn)
                s.calls.append({m: after[m] - before[m] for m in COUNTED_METHODS})
                s.saver_ns.append(sum(after_t.values()) - sum(before_t.values()))
                counted = {m: after_f[m] - before_f[m] for m in (*COUNTED_METHODS, "other")}
                s.fsyncs.append({**counted, "total": sum(counted.values())})
            rnd += 1
    return samples


def _check_conversations(graphs: dict[str, Any], sizes: Sizes) -> None:
    """Every saver holds the same conversation."""
    for name, graph in graphs.items():
        for thread in range(sizes.chat_threads):
            state = graph.get_state({"configurable": {"thread_id": f"chat-{thread}"}})
            got = len(state.values["messages"])
            if got != 3 * sizes.chat_turns:
                raise RuntimeError(f"{name}: thread {thread} has {got} messages, not {3 * sizes.chat_turns}")


def _summarise(s: Samples, turns: int) -> dict[str, Any]:
    k = max(1, turns // 3)
    early = [t for t, i in zip(s.times, s.turn, strict=True) if i < k]
    late = [t for t, i in zip(s.times, s.turn, strict=True) if i >= turns - k]
    return {
        "turns": len(s.times),
        "median_ms": median_ms(s.times),
        "p10_ms": quantile_ms(s.times, 0.1),
        "p90_ms": quantile_ms(s.times, 0.9),
        "first_turn_ms": ms(s.times[0]),
        "median_first_third_ms": median_ms(early),
        "median_last_third_ms": median_ms(late),
        "median_saver_ms": median_ms(s.saver_ns),
        "calls_per_turn": {m: _spread([c[m] for c in s.calls]) for m in COUNTED_METHODS},
        "fsync_rounds_per_turn": {
            m: _spread([f[m] for f in s.fsyncs]) for m in (*COUNTED_METHODS, "other", "total")
        }
        if s.fsyncs
        else {},
    }


def _spread(counts: Sequence[int]) -> dict[str, float]:
    return {"median": statistics.median(counts), "min": min(counts), "max": max(counts)}


def _disk(tmp: Path, db: Path, sqlite: BaseCheckpointSaver[Any]) -> dict[str, dict[str, int]]:
    """Workload 4: bytes on disk after the chat workload."""
    sqlite_open = files_usage(sqlite_files(db))
    sqlite_wal_checkpoint(sqlite)
    close_saver(sqlite)

    def in_cache(p: Path) -> bool:
        return ".cache" in p.parts

    return {
        REPO: dir_usage(tmp / "chat-repo"),
        REPO + " without .cache": dir_usage(tmp / "chat-repo", skip=in_cache),
        REPO_FAST: dir_usage(tmp / "chat-repo-fast"),
        SQLITE: files_usage(sqlite_files(db)),
        SQLITE + " (open, before checkpoint)": sqlite_open,
    }


def rows(chat: Result) -> list[Row]:
    per = chat["per_saver"]
    disk = chat["disk"]
    kb = {n: disk[n] for n in (REPO, SQLITE)}
    return [
        Row(
            "1 chat",
            f"median turn ({per[REPO]['turns']} turns, durability=async)",
            {n: per[n]["median_ms"] for n in MAIN_SAVERS},
            "ms",
            goals.CHAT_TURN.column(chat),
        ),
        Row(
            "1 chat",
            "median turn, RepoSaver(durable=False) in the RepoSaver column",
            {REPO: per[REPO_FAST]["median_ms"], SQLITE: per[SQLITE]["median_ms"]},
            "ms",
        ),
        Row(
            "1 chat",
            "median time inside saver calls per turn (summed; calls overlap)",
            {n: per[n]["median_saver_ms"] for n in MAIN_SAVERS},
            "ms",
        ),
        Row(
            "1 chat",
            "waits on the disk per turn (RepoSaver: fsync rounds; SqliteSaver: WAL commits)",
            {
                REPO: per[REPO]["fsync_rounds_per_turn"]["total"]["median"],
                SQLITE: per[SQLITE]["calls_per_turn"]["put"]["median"]
                + per[SQLITE]["calls_per_turn"]["put_writes"]["median"],
            },
            "count",
            "",
            0,
        ),
        Row(
            "4 bytes on disk",
            "after chat: sum of file sizes (Sqlite: db+wal+shm, closed)",
            {n: d["apparent"] / 1024 for n, d in kb.items()},
            "KB",
            goals.DISK.column(chat),
            1,
        ),
        Row(
            "4 bytes on disk",
            "after chat: allocated blocks (du)",
            {n: d["allocated"] / 1024 for n, d in kb.items()},
            "KB",
            "",
            1,
        ),
    ]


def details(chat: Result, sizes: dict[str, int]) -> str:
    per = chat["per_saver"]
    intro = (
        f"{sizes['chat_threads']} threads x {sizes['chat_turns']} turns; a turn is one `invoke` of a "
        "two-node graph (`echo` then `follow_up`, each appending an `AIMessage`) with LangGraph's "
        "default durability. Saver time is the wall time spent inside the wrapped saver methods "
        "(with async durability some of it overlaps the graph's own work).\n"
    )
    keys = ("median_ms", "p10_ms", "p90_ms", "median_first_third_ms", "median_last_third_ms")
    head = [
        "median ms",
        "p10 ms",
        "p90 ms",
        "first third ms",
        "last third ms",
        "first turn ms",
        "saver ms/turn",
    ]
    turns = md_table(
        ["Saver", *head],
        "lrrrrrrr",
        [
            [name, *(f"{r[k]:.2f}" for k in keys), f"{r['first_turn_ms']:.1f}", f"{r['median_saver_ms']:.2f}"]
            for name, r in per.items()
        ],
    )
    calls = md_table(
        ["Saver", *COUNTED_METHODS],
        "l" + "r" * len(COUNTED_METHODS),
        [[name, *(_calls_cell(r["calls_per_turn"][m]) for m in COUNTED_METHODS)] for name, r in per.items()],
    )
    disk = md_table(
        ["Store after chat", "files", "sum of sizes KB", "allocated KB"],
        "lrrr",
        [
            [name, d["files"], f"{d['apparent'] / 1024:,.1f}", f"{d['allocated'] / 1024:,.1f}"]
            for name, d in chat["disk"].items()
        ],
    )
    waits = _waits_table(per)
    return "\n".join(
        [
            intro,
            turns + "\n",
            "Saver calls per turn (median; min-max when it varies):\n",
            calls + "\n",
            WAITS_INTRO,
            waits + "\n",
            disk + "\n",
        ]
    )


WAITS_INTRO = (
    "Waits on the disk per turn (median; min-max when it varies). RepoSaver: rounds of fsyncs, "
    "counted in durable.py (the fsyncs of one round run side by side: the temp files of a call, "
    "then the folders of each batch: objects before the checkpoint that refers to them). "
    "SqliteSaver: its commits, one WAL fsync each with synchronous=FULL (every `put` and "
    "`put_writes` is one transaction).\n"
)


def _waits_table(per: dict[str, Any]) -> str:
    repo = per[REPO]["fsync_rounds_per_turn"]
    calls = per[SQLITE]["calls_per_turn"]
    commits = {
        "median": calls["put"]["median"] + calls["put_writes"]["median"],
        "min": calls["put"]["min"] + calls["put_writes"]["min"],
        "max": calls["put"]["max"] + calls["put_writes"]["max"],
    }
    return md_table(
        ["Saver", "in put", "in put_writes", "elsewhere", "total"],
        "lrrrr",
        [
            [
                REPO,
                _calls_cell(repo["put"]),
                _calls_cell(repo["put_writes"]),
                _calls_cell(_sum_spread(repo, ("get_tuple", "list", "get_delta_channel_history", "other"))),
                _calls_cell(repo["total"]),
            ],
            [SQLITE, _calls_cell(calls["put"]), _calls_cell(calls["put_writes"]), "0", _calls_cell(commits)],
        ],
    )


def _sum_spread(spreads: dict[str, dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {k: sum(spreads[m][k] for m in keys) for k in ("median", "min", "max")}


def _calls_cell(c: dict[str, float]) -> str:
    cell = f"{c['median']:g}"
    if c["min"] != c["max"]:
        cell += f" ({c['min']}-{c['max']})"
    return cell
