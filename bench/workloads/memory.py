"""Workload 12: a process answering for many threads, one after another, as a server does.

``memory_threads`` threads of ``memory_turns`` chat turns (the chat workload's graph) are
written once to a RepoSaver root and an SQLite database. A new process per saver
(``bench/memory_child.py``) then reads the latest checkpoint of every thread, in order, for
``memory_rounds`` rounds, and reports its resident memory after each round and the median
``get_tuple`` of each round. InMemorySaver's process fills its own saver with the same turns
first (its memory is its data). RepoSaver runs with its defaults: it keeps what it read of the
threads it used last (``kept_threads``, 512) and reads a thread let go from its files again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.common import MAIN_SAVERS, MEMORY, REPO, SQLITE, Result, Sizes, close_saver, open_sqlite, run_child
from bench.memory_child import fill
from bench.report import Row, md_table
from langgraph_checkpoint_repo import RepoSaver

NAME = "memory"
TITLE = "Memory of a process answering for many threads"


def run(tmp: Path, sizes: Sizes) -> Result:
    threads, turns, rounds = sizes.memory_threads, sizes.memory_turns, sizes.memory_rounds
    root, db = tmp / "memory-repo", tmp / "memory.sqlite"
    fill(RepoSaver(root, durable=False), threads, turns)  # the fill is not measured
    sqlite = open_sqlite(db)
    try:
        fill(sqlite, threads, turns)
    finally:
        close_saver(sqlite)
    paths = {REPO: str(root), SQLITE: str(db), MEMORY: ""}
    kinds = {REPO: "repo", SQLITE: "sqlite", MEMORY: "memory"}
    per_saver: dict[str, Any] = {}
    for name in MAIN_SAVERS:
        argv = [kinds[name], paths[name], str(threads), str(turns), str(rounds)]
        proc, wall_ms = run_child("bench.memory_child", argv, forked=False)
        if proc.returncode != 0:
            raise RuntimeError(f"memory child of {name} failed:\n{proc.stderr}")
        per_saver[name] = {**json.loads(proc.stdout.strip().splitlines()[-1]), "wall_ms": wall_ms}
    return {"per_saver": per_saver, "threads": threads, "turns": turns, "rounds": rounds}


def rows(result: Result) -> list[Row]:
    per, n = result["per_saver"], result["threads"]

    def row(metric: str, values: dict[str, float], unit: str) -> Row:
        return Row("12 memory", f"{n:,} threads read in turn: {metric}", values, unit, "", 2)

    last = {name: per[name]["rounds"][-1] for name in MAIN_SAVERS}
    return [
        row("resident memory after the last round", {k: v["rss_mb"] for k, v in last.items()}, "MB"),
        row(
            "memory the rounds added (after the last round less after opening)",
            {k: last[k]["rss_mb"] - per[k]["opened_mb"] for k in MAIN_SAVERS},
            "MB",
        ),
        row(
            "get_tuple, first round (every thread read once), median",
            {k: per[k]["rounds"][0]["get_tuple_ms"] for k in MAIN_SAVERS},
            "ms",
        ),
        row("get_tuple, last round, median", {k: v["get_tuple_ms"] for k, v in last.items()}, "ms"),
    ]


def details(result: Result, sizes: dict[str, int]) -> str:
    per = result["per_saver"]
    intro = (
        f"{result['threads']:,} threads of {result['turns']} turns of the chat workload's graph, read "
        f"{result['rounds']} times over by a new process per saver: each round a `get_tuple` of the "
        "latest checkpoint of every thread, in order, as a server answering for each in turn. "
        "Resident memory (VmRSS) after opening the saver and after each round; the process has "
        "imported LangGraph first, as an app has. InMemorySaver's process writes the same turns into "
        "its own saver before the rounds: its memory holds its data. RepoSaver keeps what it read "
        "of the 512 threads it used last (`kept_threads`, docs/reliability.md 'Memory across "
        "threads') and reads one let go from its files again, so with more threads than that a round "
        "reads each thread as a fresh process does.\n"
    )
    head = ["Saver", "opened MB", *(f"round {i + 1} MB / ms" for i in range(result["rounds"]))]
    body = [
        [
            name,
            f"{per[name]['opened_mb']:.0f}",
            *(f"{r['rss_mb']:.0f} / {r['get_tuple_ms']:.2f}" for r in per[name]["rounds"]),
        ]
        for name in per
    ]
    return intro + "\n" + md_table(head, "l" + "r" * (len(head) - 1), body) + "\n"
