"""Workload 10: one long thread, replayed: put time, bytes on disk and a fresh process's first read
against the number of turns, beside SqliteSaver and PostgresSaver.

The tool-calling agent (bench/growth.py) runs once for ``max(growth_turns)`` turns on a recording
saver; the recording is saved, loaded back and replayed into RepoSaver (durable), SqliteSaver and
PostgresSaver, call by call, the savers in turn (the order rotates every call), each call timed
alone. The replay stops at each size of the ladder to measure: bytes on disk, and fresh processes
(``bench/fresh_child.py``): the first ``get_tuple`` (latest) and the first
``list(config, filter={'step': k})``. A saver whose share of one step of the replay, or one of
whose processes, takes longer than its cap is not measured further (its later points say why).
"""

from __future__ import annotations

import bisect
import itertools
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import goals, growth, plot
from bench.common import REPO, SQLITE, Result, Sizes, progress, quantile_ms, rotated
from bench.growth import Skips, Stores
from bench.replay import Call, Put, PutWrites, Rebuild, Recording, apply, for_saver
from bench.report import Row, md_table

NAME = "turns"
TITLE = "Growth with turns: one replayed thread, beside SqliteSaver and PostgresSaver"
PICTURE = "turns"
"""The picture's name: ``performance-turns.svg`` beside ``performance.md``."""

THREAD = "long"
USER = "user-long"
CALLS = ("get_tuple", "list")
BUCKETS = 30
"""Points of the put-time curves in the picture (buckets of turns, evenly spaced on a log scale)."""
SLOWEST = 5


@dataclass
class Times:
    """One saver's replayed calls: (turn, ns) of each put, put_writes and get_tuple."""

    put: list[tuple[int, int]] = field(default_factory=list)
    writes: list[tuple[int, int]] = field(default_factory=list)
    get: list[tuple[int, int]] = field(default_factory=list)

    def add(self, call: Call, turn: int, ns: int) -> None:
        kind = self.put if isinstance(call, Put) else self.writes if isinstance(call, PutWrites) else self.get
        kind.append((turn, ns))


def run(tmp: Path, sizes: Sizes) -> Result:
    ladder = sorted(set(sizes.growth_turns))
    t0 = time.perf_counter()
    recording = growth.conversation(ladder[-1], THREAD, USER, "the long thread")
    recording, recorded = growth.kept(recording, tmp / "turns.pickle")
    recorded["seconds"] = time.perf_counter() - t0
    progress(
        f"turns: recorded {ladder[-1]:,} turns ({recorded['calls']:,} calls) in {recorded['seconds']:.0f} s"
    )
    with growth.stores(tmp, "turns", sizes.growth_postgres) as stores:
        result = _ladder(stores, recording, ladder, sizes)
        result["postgres_settings"] = stores.settings
    return {**result, "recording": recorded}


def _ladder(stores: Stores, recording: Recording, ladder: list[int], sizes: Sizes) -> Result:
    """Replay up to each size of the ladder and measure there."""
    names = stores.names()
    savers = {name: stores.open(name) for name in names}
    times = {name: Times() for name in names}
    skips = Skips()
    calls = iter(Rebuild(recording.calls))
    rng = random.Random(37)
    points: dict[str, Any] = {}
    done = 0
    for n in ladder:
        end = recording.upto(n)
        _replay(savers, calls, (done, end), recording, times, skips, sizes)
        done = end
        progress(f"turns: {n:,} turns replayed; measuring")
        points[str(n)] = _point(stores, savers, recording, n, times, skips, sizes, rng)
    for name, saver in savers.items():
        stores.close(name, saver)
    return {
        "savers": list(names),
        "ladder": ladder,
        "points": points,
        "curve": {name: _curve(times[name].put, ladder[-1]) for name in names},
        "slowest": {name: _slowest(times[name].put) for name in names},
        "skipped": skips.reasons,
        "repeats": sizes.growth_repeats,
        "cap_s": sizes.growth_cap_s,
        "build_cap_s": sizes.growth_build_cap_s,
    }


def _replay(
    savers: dict[str, BaseCheckpointSaver[Any]],
    calls: Any,
    span: tuple[int, int],
    recording: Recording,
    times: dict[str, Times],
    skips: Skips,
    sizes: Sizes,
) -> None:
    """Calls ``span`` of the recording into every saver still measured, each call timed alone;
    a saver whose share passes ``growth_build_cap_s`` stops here."""
    start, end = span
    spent = dict.fromkeys(savers, 0)
    cap_ns = sizes.growth_build_cap_s * 1e9
    first, last = _turn(recording, start) + 1, _turn(recording, end - 1) + 1
    for i in range(start, end):
        call = next(calls)
        turn = _turn(recording, i)
        for name in rotated(list(savers), i):
            if skips.why(name, Skips.ALL):
                continue
            args = for_saver(call)
            t0 = time.perf_counter_ns()
            apply(savers[name], args)
            elapsed = time.perf_counter_ns() - t0
            times[name].add(call, turn, elapsed)
            spent[name] += elapsed
            if spent[name] > cap_ns:
                reason = (
                    f"skipped: replaying turns {first:,}-{last:,} took over {sizes.growth_build_cap_s:g} s"
                )
                skips.add(name, Skips.ALL, reason)


def _turn(recording: Recording, call_index: int) -> int:
    """The turn (0-based) a call belongs to."""
    return bisect.bisect_right(recording.turn_starts, call_index) - 1


def _point(
    stores: Stores,
    savers: dict[str, BaseCheckpointSaver[Any]],
    recording: Recording,
    n: int,
    times: dict[str, Times],
    skips: Skips,
    sizes: Sizes,
    rng: random.Random,
) -> Result:
    """The figures at ``n`` turns: each saver's calls so far, its bytes, and fresh processes."""
    point: Result = {"savers": {}}
    for name, saver in savers.items():
        why = skips.why(name, Skips.ALL)
        if why:
            point["savers"][name] = {"skipped": why}
            continue
        point["savers"][name] = {
            "put": _put_stats(times[name].put, n),
            "put_writes_median_ms": _median_ms(times[name].writes, n),
            "get_tuple_median_ms": _median_ms(times[name].get, n),
            "turn_median_ms": _turn_median_ms(times[name], n),
            "bytes": stores.disk_bytes(name, saver),
        }
    for name, calls in _fresh(stores, recording, n, skips, sizes, rng).items():
        point["savers"][name]["fresh"] = calls
    return point


def _put_stats(puts: list[tuple[int, int]], n: int) -> Result:
    """Median, p99 and max of the puts of the first ``n`` turns, and the turn of the max."""
    ns = [t for turn, t in puts if turn < n]
    top = max(range(len(ns)), key=ns.__getitem__)
    return {
        "count": len(ns),
        "median_ms": statistics.median(ns) / 1e6,
        "p99_ms": quantile_ms(ns, 0.99),
        "max_ms": ns[top] / 1e6,
        "max_turn": [turn for turn, _ in puts if turn < n][top] + 1,
    }


def _median_ms(samples: list[tuple[int, int]], n: int) -> float | None:
    ns = [t for turn, t in samples if turn < n]
    return statistics.median(ns) / 1e6 if ns else None


def _turn_median_ms(times: Times, n: int) -> float:
    """The median over the last tenth of the first ``n`` turns of a turn's saver time
    (every call of the turn, summed): what a turn costs the saver at about ``n`` turns."""
    since = n - max(1, n // 10)
    per_turn: dict[int, int] = {}
    for samples in (times.put, times.writes, times.get):
        for turn, t in samples:
            if since <= turn < n:
                per_turn[turn] = per_turn.get(turn, 0) + t
    return statistics.median(per_turn.values()) / 1e6


def _steps(recording: Recording, n: int) -> dict[int, str]:
    """The checkpoint id of each step in the first ``n`` turns."""
    end = recording.upto(n)
    return {int(c.metadata["step"]): c.checkpoint["id"] for c in recording.calls[:end] if isinstance(c, Put)}


def _fresh(
    stores: Stores, recording: Recording, n: int, skips: Skips, sizes: Sizes, rng: random.Random
) -> Result:
    """Median figures of fresh processes' first ``get_tuple`` and ``list(filter step k)``, per
    saver, ``growth_repeats`` of each, round-robin; RepoSaver's ``.cache/`` as a reader leaves it."""
    steps = _steps(recording, n)
    latest = [c.checkpoint["id"] for c in recording.calls[: recording.upto(n)] if isinstance(c, Put)][-1]
    ks = [rng.choice(sorted(steps)) for _ in range(sizes.growth_repeats)]
    names = [name for name in stores.names() if not skips.why(name, Skips.ALL)]
    if sizes.warm_up and REPO in names:
        for call in CALLS:
            growth.fresh(stores, REPO, call, THREAD, str(ks[0]), sizes)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {name: {c: [] for c in CALLS} for name in names}
    for rep, k in enumerate(ks):
        for name in rotated(names, rep):
            for call in rotated(CALLS, rep):
                if skips.why(name, call):
                    continue
                out = growth.fresh(stores, name, call, THREAD, str(k), sizes)
                if out is None:
                    skips.add(name, call, growth.over(sizes.growth_cap_s))
                    continue
                want = [latest] if call == "get_tuple" else [steps[k]]
                if out["found"] != want:
                    raise RuntimeError(f"fresh {name} {call} at {n} turns: found {out['found']}, not {want}")
                runs[name][call].append(out)
    return {
        name: {
            call: growth.medians(runs[name][call]) if runs[name][call] else {"skipped": skips.why(name, call)}
            for call in CALLS
        }
        for name in names
    }


def _curve(puts: list[tuple[int, int]], turns: int) -> list[dict[str, Any]]:
    """Put time along the thread: for buckets of turns (even on a log scale), the median and
    the max put, ms."""
    edges = sorted({round(turns ** (i / BUCKETS)) for i in range(BUCKETS + 1)} | {0, turns})
    out = []
    for low, high in itertools.pairwise(edges):
        ns = [t for turn, t in puts if low <= turn < high]
        if ns:
            out.append({"turn": high, "median_ms": statistics.median(ns) / 1e6, "max_ms": max(ns) / 1e6})
    return out


def _slowest(puts: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The slowest puts of the whole replay: turn (1-based) and ms."""
    top = sorted(puts, key=lambda p: p[1], reverse=True)[:SLOWEST]
    return [{"turn": turn + 1, "ms": t / 1e6} for turn, t in top]


# ----------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------
def table_turns(result: Result) -> int:
    """The size the results table shows: the goals' (1,000 turns) when measured, else the largest."""
    ladder: list[int] = result["ladder"]
    return goals.TURNS_AT if goals.TURNS_AT in ladder else ladder[-1]


def _value(result: Result, n: int, saver: str, path: tuple[str, ...]) -> float | None:
    found = goals.figure(result, n, saver, path)
    return None if isinstance(found, str) else found


def rows(result: Result) -> list[Row]:
    n = table_turns(result)

    def row(metric: str, path: tuple[str, ...], unit: str = "ms", goal: goals.Goal | None = None) -> Row:
        values = {s: _value(result, n, s, path) for s in (REPO, SQLITE)}
        if unit == "MB":
            values = {s: None if v is None else v / 1e6 for s, v in values.items()}
        return Row(
            "10 turns",
            f"replayed thread of {n:,} turns: {metric}",
            values,
            unit,
            goal.column(result) if goal else "",
            3,
        )

    return [
        row("put, median", ("put", "median_ms")),
        row("put, p99", ("put", "p99_ms"), goal=goals.TURNS_P99),
        row("put, slowest", ("put", "max_ms"), goal=goals.TURNS_MAX_PUT),
        row("a turn's saver calls, summed (median of its last tenth)", ("turn_median_ms",)),
        row("bytes on disk", ("bytes",), "MB"),
        row(
            "first get_tuple of a fresh process, the call",
            ("fresh", "get_tuple", "call_ms"),
            goal=goals.TURNS_FRESH,
        ),
        row("first list(filter={'step': k}) of a fresh process, the call", ("fresh", "list", "call_ms")),
    ]


def _put_table(result: Result) -> str:
    head = ["Turns", "Saver", "put median", "put p99", "put max (turn)", "turn, summed", "get_tuple"]
    head += ["put_writes", "bytes on disk MB"]
    cells = []
    for n in result["ladder"]:
        for name in result["savers"]:
            e = result["points"][str(n)]["savers"][name]
            if "skipped" in e:
                cells.append([f"{n:,}", name, e["skipped"], *[""] * 6])
                continue
            put = e["put"]
            cells.append(
                [
                    f"{n:,}",
                    name,
                    f"{put['median_ms']:,.2f}",
                    f"{put['p99_ms']:,.2f}",
                    f"{put['max_ms']:,.1f} ({put['max_turn']:,})",
                    f"{e['turn_median_ms']:,.1f}",
                    growth.fmt_ms(e["get_tuple_median_ms"]),
                    growth.fmt_ms(e["put_writes_median_ms"]),
                    f"{e['bytes'] / 1e6:,.2f}",
                ]
            )
    return md_table(head, "llrrrrrrr", cells)


def _fresh_table(result: Result) -> str:
    head = ["Turns", "Saver", "get_tuple: call ms", "files opened", "process wall ms"]
    head += ["list(step k): call ms", "files opened"]
    cells = []
    for n in result["ladder"]:
        for name in result["savers"]:
            e = result["points"][str(n)]["savers"][name]
            if "skipped" in e:
                cells.append([f"{n:,}", name, e["skipped"], "", "", "", ""])
                continue
            fresh = e["fresh"]
            cells.append(
                [
                    f"{n:,}",
                    name,
                    _part(fresh, "get_tuple", "call_ms"),
                    _part(fresh, "get_tuple", "opened", 0),
                    _part(fresh, "get_tuple", "wall_ms", 0),
                    _part(fresh, "list", "call_ms"),
                    _part(fresh, "list", "opened", 0),
                ]
            )
    return md_table(head, "llrrrrr", cells)


def _part(fresh: Result, call: str, key: str, digits: int = 2) -> str:
    got = fresh[call]
    return str(got["skipped"]) if "skipped" in got else f"{got[key]:,.{digits}f}"


def details(result: Result, sizes: dict[str, Any]) -> str:
    rec = result["recording"]
    savers = ", ".join(result["savers"])
    intro = (
        f"One thread of up to {result['ladder'][-1]:,} turns of LangChain's `create_agent` with the bench's "
        "fake tool-calling model (a user message, a tool call, the tool's answer, the model's reply: five "
        "checkpoints and four `put_writes` a turn; bench/growth.py). The graph ran once on a recording saver "
        f"({rec['calls']:,} calls in {rec['seconds']:.0f} s, saved as a {rec['pickle_bytes'] / 1e6:,.1f} MB "
        "pickle and loaded back); the calls were then replayed into each saver in the order LangGraph made "
        "them (`get_tuple` at the start of a turn, then `put` and `put_writes`), the savers taking turns "
        "call by call, each call timed alone, its arguments rebuilt as LangGraph builds them outside the "
        "timing (bench/replay.py). One call after another: each `put_writes` returns before the next "
        "`put`, so RepoSaver's is written alone (`ride.writes_alone`), not taken into the next "
        "checkpoint as in a graph run (ride.py; the chat and agents workloads run graphs). "
        f"Savers: {savers}; RepoSaver durable (its default), SqliteSaver "
        "WAL with synchronous=FULL, PostgresSaver on a local server with fsync=on "
        f"({_settings(result)}). At each size the replay stops: put times are over all the puts so far; "
        "'turn, summed' is a turn's saver calls added up (the median of the last tenth of the turns so far); "
        "get_tuple and put_writes are the medians of the replayed calls. Bytes on disk: RepoSaver's files "
        "without `.cache/`, SqliteSaver's database after folding its WAL in, PostgreSQL's "
        "`pg_database_size`. Then fresh processes (`python -m bench.fresh_child --app`: imports "
        "`langgraph.graph` and `langchain_core.messages`, as an app running the agent has, then the "
        "saver's package, opens the saver and makes one call, timed alone): "
        f"the first `get_tuple` (latest) and the first `list(config, filter={{'step': k}})`, median of "
        f"{result['repeats']} per saver, RepoSaver with `.cache/` as an earlier process left it; 'files "
        "opened' counts Python's `open` audit events during the call. A saver whose share of one step of "
        f"the replay takes over {result['build_cap_s']:g} s, or one of whose processes takes over "
        f"{result['cap_s']:g} s, is not measured further. ms unless noted.\n"
    )
    out = [intro]
    if result.get("picture"):
        out.append(f"![put time, first read and bytes on disk against turns]({result['picture']})\n")
    out += [_put_table(result) + "\n", "Fresh processes:\n", _fresh_table(result) + "\n"]
    slow = "; ".join(
        f"{name}: " + ", ".join(f"{p['ms']:,.0f} ms (turn {p['turn']:,})" for p in result["slowest"][name])
        for name in result["savers"]
    )
    out.append(f"The slowest puts of the whole replay: {slow}.\n")
    return "\n".join(out)


def _settings(result: Result) -> str:
    found: dict[str, str] = result.get("postgres_settings") or {}
    return ", ".join(f"{k} {v}" for k, v in found.items()) or "PostgresSaver not run"


def _lines(result: Result, value: Any, dash: str | None, mode: str) -> tuple[plot.Line, ...]:
    """One line per saver: ``value(entry)`` at each size (None where skipped)."""
    out = []
    for name in result["savers"]:
        pts = []
        for n in result["ladder"]:
            e = result["points"][str(n)]["savers"][name]
            pts.append((n, None if "skipped" in e else value(e)))
        out.append(plot.Line(name, mode, growth.COLORS[name], dash, tuple(pts)))
    return tuple(out)


def picture(result: Result) -> str:
    """put time along the thread (median and slowest of buckets of turns), a fresh process's
    first get_tuple, and bytes on disk, against turns."""
    puts: list[plot.Line] = []
    for name in result["savers"]:
        curve = result["curve"][name]
        puts.append(
            plot.Line(
                name,
                "put, median",
                growth.COLORS[name],
                None,
                tuple((p["turn"], p["median_ms"]) for p in curve),
            )
        )
        puts.append(
            plot.Line(
                name,
                "put, slowest",
                growth.COLORS[name],
                "2 3",
                tuple((p["turn"], p["max_ms"]) for p in curve),
            )
        )

    def fresh(e: Result) -> float | None:
        got = e["fresh"]["get_tuple"]
        return None if "skipped" in got else float(got["call_ms"])

    panels = [
        plot.Panel("put", "put, along the thread (buckets of turns)", tuple(puts)),
        plot.Panel(
            "fresh", "first get_tuple of a fresh process", _lines(result, fresh, "7 4", "fresh get_tuple")
        ),
        plot.Panel(
            "bytes", "bytes on disk", _lines(result, lambda e: e["bytes"] / 1e6, None, "MB on disk"), "MB"
        ),
    ]
    return plot.render(panels, "One replayed thread against its turns", "turns", "ms")
