"""Workload 10: big values, written by a graph as LangGraph writes them.

A one-node graph (``START -> fill -> END``) whose node returns a list of ``big_list_items``
strings, and one whose node returns a string of ``big_text_bytes`` (prose: words, capitals,
hyphens), run with the default durability (``async``: LangGraph saves the step's writes and
the next checkpoint at once, in background threads). Each round writes a new thread in each
saver, the savers in a rotating order, the value new in every round (its round in its text), so
nothing a saver remembers from an earlier round (a file, a redaction) is reused.

Measured per saver: the ``put`` of the checkpoint that first holds the value (for RepoSaver
that call waits for the ``put_writes`` of the same value, whose writes it takes into the
checkpoint), that ``put_writes``, and the whole ``invoke``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from bench import goals
from bench.common import (
    MAIN_SAVERS,
    MEMORY,
    REPO,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    median_ms,
    ms,
    open_sqlite,
    quantile_ms,
    rotated,
)
from bench.report import Row, md_table
from langgraph_checkpoint_repo import RepoSaver

NAME = "big"
TITLE = "Big values in detail"

VALUES = ("list", "text")
"""The two values, each the state channel of that name."""
PROSE = (
    "Release notes, part {n} of run {r}: the deploy is blocked by two open items - the Staging "
    "database migration and the cache warm-up. Owners were asked to report back by Friday.\n"
)


class BigState(TypedDict, total=False):
    list: list[str]
    text: str


def big_list(items: int, rnd: int) -> list[str]:
    return [f"Row {i} of run {rnd}: ok" for i in range(items)]


def big_text(size: int, rnd: int) -> str:
    parts: list[str] = []
    total = n = 0
    while total < size:
        line = PROSE.format(n=n, r=rnd)
        parts.append(line)
        total += len(line)
        n += 1
    return "".join(parts)[:size]


def build_graph(saver: BaseCheckpointSaver[Any], channel: str, value: Callable[[], Any]) -> Any:
    builder = StateGraph(BigState)
    builder.add_node("fill", lambda state: {channel: value()})
    builder.add_edge(START, "fill")
    builder.add_edge("fill", END)
    return builder.compile(checkpointer=saver)


class Calls:
    """Times a saver's ``put`` and ``put_writes`` (from any thread) that carry a channel."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.log: list[tuple[str, frozenset[str], int]] = []  # (method, channels, ns)
        put, put_writes = saver.put, saver.put_writes

        def timed_put(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return put(config, checkpoint, metadata, new_versions)
            finally:
                self.log.append(("put", frozenset(new_versions), time.perf_counter_ns() - t0))

        def timed_put_writes(config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            t0 = time.perf_counter_ns()
            try:
                put_writes(config, writes, task_id, task_path)
            finally:
                self.log.append(("put_writes", frozenset(c for c, _ in writes), time.perf_counter_ns() - t0))

        saver.put = timed_put  # type: ignore[method-assign]
        saver.put_writes = timed_put_writes  # type: ignore[method-assign]

    def first(self, method: str, channel: str, since: int) -> int:
        """The first call of ``method`` carrying ``channel`` logged after entry ``since``."""
        for name, channels, ns in self.log[since:]:
            if name == method and channel in channels:
                return ns
        raise RuntimeError(f"no {method} carrying {channel!r}")


def run(tmp: Path, sizes: Sizes) -> Result:
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(tmp / "big-repo"),
        SQLITE: open_sqlite(tmp / "big.db"),
        MEMORY: InMemorySaver(),
    }
    calls = {name: Calls(s) for name, s in savers.items()}
    samples: dict[str, dict[str, list[int]]] = {
        name: {f"{v}_{m}": [] for v in VALUES for m in ("put", "put_writes", "invoke")} for name in savers
    }
    makers: dict[str, Callable[[int], Any]] = {
        "list": lambda rnd: big_list(sizes.big_list_items, rnd),
        "text": lambda rnd: big_text(sizes.big_text_bytes, rnd),
    }
    try:
        for rnd in range(sizes.big_rounds):
            for value in VALUES:
                for name in rotated(list(savers), rnd):
                    _one_run(savers[name], calls[name], samples[name], value, makers[value], rnd)
    finally:
        close_saver(savers[SQLITE])
    per_saver = {name: _summarise(s) for name, s in samples.items()}
    return {
        "per_saver": per_saver,
        "list_items": sizes.big_list_items,
        "text_mb": sizes.big_text_bytes / 1e6,
        "rounds": sizes.big_rounds,
    }


def _one_run(
    saver: BaseCheckpointSaver[Any],
    calls: Calls,
    samples: dict[str, list[int]],
    value: str,
    make: Callable[[int], Any],
    rnd: int,
) -> None:
    """One graph run writing a new ``value`` into a new thread; checks it reads back."""
    made = make(rnd)
    graph = build_graph(saver, value, lambda: made)
    config = {"configurable": {"thread_id": f"big-{value}-{rnd}"}}
    since = len(calls.log)
    t0 = time.perf_counter_ns()
    graph.invoke({}, config)
    samples[f"{value}_invoke"].append(time.perf_counter_ns() - t0)
    samples[f"{value}_put"].append(calls.first("put", value, since))
    samples[f"{value}_put_writes"].append(calls.first("put_writes", value, since))
    if graph.get_state(config).values.get(value) != made:
        raise RuntimeError(f"{type(saver).__name__}: the {value} read back is not the one written")


def _summarise(samples: dict[str, list[int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in samples.items():
        out[f"{key}_median_ms"] = median_ms(values)
        out[f"{key}_p90_ms"] = quantile_ms(values, 0.9)
        out[f"{key}_all_ms"] = [round(ms(v), 3) for v in values]
    return out


def rows(big: Result) -> list[Row]:
    per = big["per_saver"]
    what = {"list": f"a {big['list_items']:,}-item list", "text": f"a {big['text_mb']:g} MB string"}

    def row(value: str, metric: str, key: str, goal: str = "") -> Row:
        values = {n: per[n][f"{value}_{key}_median_ms"] for n in MAIN_SAVERS}
        return Row("10 big values", metric.format(what[value]), values, "ms", goal, 2)

    out: list[Row] = []
    for value in VALUES:
        goal = goals.BIG_LIST_PUT.column(big) if value == "list" else ""
        out += [
            row(value, "first put of {} (a graph run), median", "put", goal),
            row(value, "put_writes of {} beside it, median", "put_writes"),
            row(value, "graph run writing {} (invoke), median", "invoke"),
        ]
    return out


def details(big: Result, sizes: dict[str, int]) -> str:
    per = big["per_saver"]
    intro = (
        f"Each of {big['rounds']} rounds runs, for each saver in a rotating order, a one-node graph "
        f"whose node returns a {big['list_items']:,}-item list of short strings, then one whose node "
        f"returns a {big['text_mb']:g} MB string of prose, each into a new thread (default durability: "
        "the step's `put_writes` and the next `put` run at once in LangGraph's background threads). "
        "The value is new in every round. *First put*: the `put` of the checkpoint that first holds "
        "the value; RepoSaver's waits for the `put_writes` of the same value beside it, whose writes "
        "it takes into the checkpoint. Medians; p90 below.\n"
    )
    keys = [f"{v}_{m}_p90_ms" for v in VALUES for m in ("put", "put_writes", "invoke")]
    head = ["Saver", *(k.removesuffix("_p90_ms").replace("_", " ") + " p90 ms" for k in keys)]
    table = md_table(head, "l" + "r" * len(keys), [[n, *(f"{per[n][k]:.2f}" for k in keys)] for n in per])
    lines = "\n".join(
        f"- {name}, first put of the list in each round: "
        + ", ".join(f"{v:.1f}" for v in per[name]["list_put_all_ms"])
        + " ms"
        for name in (REPO, SQLITE)
    )
    return "\n".join([intro, table + "\n", lines + "\n"])
