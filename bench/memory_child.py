"""One process answering for many threads, one after another, as a server does: the memory
workload's child, run as ``python -m bench.memory_child``.

``python -m bench.memory_child KIND PATH THREADS TURNS ROUNDS``: KIND ``repo`` (PATH: the root,
``RepoSaver`` with its defaults), ``sqlite`` (PATH: the database file) or ``memory`` (an
``InMemorySaver`` this process fills first with the same graph and turns: its memory is its data).
Each round reads the latest checkpoint of every thread (``get_tuple``), in order. Prints JSON:
the process's resident memory (VmRSS, MB) after opening the saver and after each round, and the
median ``get_tuple`` of each round (ms).
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def rss_mb() -> float:
    """Resident memory now (Linux ``/proc``; the peak, ``ru_maxrss``, elsewhere)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def thread_id(k: int) -> str:
    return f"user-{k:05d}"


def fill(saver: Any, threads: int, turns: int) -> None:
    """The workload's threads and turns, through the chat workload's graph."""
    from langchain_core.messages import HumanMessage

    from bench.workloads.chat import build_chat_graph, user_text

    graph = build_chat_graph(saver)
    for k in range(threads):
        for turn in range(turns):
            graph.invoke({"messages": [HumanMessage(content=user_text(k, turn))]}, _config(k))


def _config(k: int) -> Any:
    return {"configurable": {"thread_id": thread_id(k), "checkpoint_ns": ""}}


def open_saver(kind: str, path: str, threads: int, turns: int) -> Any:
    import langchain_core.messages  # noqa: F401 - what an app has imported (bench/fresh_child.py)
    import langgraph.graph  # noqa: F401

    if kind == "repo":
        from langgraph_checkpoint_repo import RepoSaver

        return RepoSaver(path)
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    fill(saver, threads, turns)
    return saver


def main(argv: list[str]) -> int:
    kind, path = argv[0], argv[1]
    threads, turns, rounds = int(argv[2]), int(argv[3]), int(argv[4])
    saver = open_saver(kind, path, threads, turns)
    gc.collect()
    out: dict[str, Any] = {"opened_mb": rss_mb(), "rounds": []}
    for _ in range(rounds):
        times = []
        for k in range(threads):
            t0 = time.perf_counter_ns()
            tup = saver.get_tuple(_config(k))
            times.append(time.perf_counter_ns() - t0)
            if tup is None or len(tup.checkpoint["channel_values"]["messages"]) != 3 * turns:
                raise RuntimeError(f"{kind}: thread {thread_id(k)} did not read back whole")
            del tup
        gc.collect()
        out["rounds"].append({"get_tuple_ms": statistics.median(times) / 1e6, "rss_mb": rss_mb()})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
