"""Workload 11: many threads, replayed: a cross-thread ``list(None, filter)`` (warm and the first call
of a fresh process) and the listing of every thread, against the number of threads, beside
SqliteSaver and PostgresSaver.

The tool-calling agent (bench/growth.py) runs once for ``growth_thread_turns`` turns on a recording
saver; every thread is that recording replayed under its own thread id, user id, message text and
ids, and new checkpoint ids and timestamps (``bench.replay.Target``), into RepoSaver, SqliteSaver
and PostgresSaver; the threads are written by instances that do not wait for the disk
(``Stores.open_builder``: the same data, sooner), and every measurement is made on instances
opened with the savers' defaults (RepoSaver durable). At each size of the ladder:
``list(None, filter={"user_id": U})`` (one thread's checkpoints among all) on a new instance
after its first call, and in fresh processes; ``langgraph-repo threads`` (RepoSaver) and, for the
SQL savers, a ``GROUP BY thread_id`` query in a fresh process; bytes on disk. A saver whose share
of building one step, or one of whose measurements, takes longer than its cap is not measured
further (its later points say why).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import goals, growth, plot
from bench.common import REPO, SQLITE, Result, Sizes, progress, rotated
from bench.growth import Skips, Stores
from bench.replay import Put, Rebuild, Recording, Target, apply, for_saver
from bench.report import Row, md_table
from bench.workloads.cli import script

NAME = "threads"
TITLE = "Growth with threads: replayed threads, beside SqliteSaver and PostgresSaver"
PICTURE = "threads"
"""The picture's name: ``performance-threads.svg`` beside ``performance.md``."""

TEMPLATE = "thread-template"
TEMPLATE_USER = "user-template"
MEASURES = ("warm", "fresh", "listing")


def thread_name(i: int) -> str:
    return f"thread-{i:05d}"


def user_name(i: int) -> str:
    return f"user-{i:05d}"


def target(i: int) -> Target:
    """Where thread ``i`` goes: the template's thread id (also in its user text) and user id replaced."""
    return Target(thread_name(i), {TEMPLATE: thread_name(i), TEMPLATE_USER: user_name(i)}, f"t{i:05d}")


def run(tmp: Path, sizes: Sizes) -> Result:
    ladder = sorted(set(sizes.growth_threads))
    t0 = time.perf_counter()
    template = growth.conversation(sizes.growth_thread_turns, TEMPLATE, TEMPLATE_USER, TEMPLATE)
    template, recorded = growth.kept(template, tmp / "threads.pickle")
    recorded["seconds"] = time.perf_counter() - t0
    with growth.stores(tmp, "threads", sizes.growth_postgres) as stores:
        result = _ladder(stores, template, ladder, sizes)
        result["postgres_settings"] = stores.settings
    per_thread = sum(isinstance(c, Put) for c in template.calls)
    return {
        **result,
        "recording": recorded,
        "thread_turns": sizes.growth_thread_turns,
        "per_thread": per_thread,
    }


def _ladder(stores: Stores, template: Recording, ladder: list[int], sizes: Sizes) -> Result:
    """Build up to each size of the ladder and measure there."""
    names = stores.names()
    savers = {name: stores.open_builder(name) for name in names}
    build: dict[str, list[tuple[int, int]]] = {name: [] for name in names}
    expected: list[list[str]] = []
    skips = Skips()
    rng = random.Random(3737)
    points: dict[str, Any] = {}
    for n in ladder:
        _build(savers, template, (len(expected), n), build, expected, skips, sizes)
        progress(f"threads: {n:,} threads built; measuring")
        points[str(n)] = _point(stores, savers, n, build, expected, skips, sizes, rng)
    for name, saver in savers.items():
        stores.close(name, saver)
    return {
        "savers": list(names),
        "ladder": ladder,
        "points": points,
        "skipped": skips.reasons,
        "repeats": sizes.growth_repeats,
        "warm_calls": sizes.growth_warm_calls,
        "cap_s": sizes.growth_cap_s,
        "build_cap_s": sizes.growth_build_cap_s,
    }


def _build(
    savers: dict[str, BaseCheckpointSaver[Any]],
    template: Recording,
    span: tuple[int, int],
    build: dict[str, list[tuple[int, int]]],
    expected: list[list[str]],
    skips: Skips,
    sizes: Sizes,
) -> None:
    """Threads ``span`` (from, to) replayed into every saver still measured, the savers in turn
    (the order rotates every thread); the ids of each thread's checkpoints, newest first, in
    ``expected``. A saver whose share passes ``growth_build_cap_s`` stops here."""
    start, end = span
    spent = dict.fromkeys(savers, 0)
    for i in range(start, end):
        where = target(i)
        calls = [where.call(c) for c in Rebuild(template.calls)]
        expected.append(sorted((c.checkpoint["id"] for c in calls if isinstance(c, Put)), reverse=True))
        for name in rotated(list(savers), i):
            if skips.why(name, Skips.ALL):
                continue
            own = [for_saver(c) for c in calls]
            t0 = time.perf_counter_ns()
            for call in own:
                apply(savers[name], call)
            elapsed = time.perf_counter_ns() - t0
            build[name].append((i, elapsed))
            spent[name] += elapsed
            if spent[name] > sizes.growth_build_cap_s * 1e9:
                cap = sizes.growth_build_cap_s
                skips.add(
                    name, Skips.ALL, f"skipped: building threads {start + 1:,}-{end:,} took over {cap:g} s"
                )


def _point(
    stores: Stores,
    savers: dict[str, BaseCheckpointSaver[Any]],
    n: int,
    build: dict[str, list[tuple[int, int]]],
    expected: list[list[str]],
    skips: Skips,
    sizes: Sizes,
    rng: random.Random,
) -> Result:
    """The figures at ``n`` threads, for every saver still measured."""
    ks = [rng.randrange(n) for _ in range(max(sizes.growth_warm_calls, sizes.growth_repeats) + 1)]
    live = [name for name in stores.names() if not skips.why(name, Skips.ALL)]
    warm = _warm(stores, live, ks[: sizes.growth_warm_calls + 1], expected, skips, sizes)
    fresh = _fresh(stores, live, ks[1 : sizes.growth_repeats + 1], expected, skips, sizes)
    listing = _listing(stores, live, n, skips, sizes)
    point: Result = {"savers": {}}
    for name, saver in savers.items():
        if name not in live:
            point["savers"][name] = {"skipped": skips.why(name, Skips.ALL)}
            continue
        since = [t for i, t in build[name] if i >= n - max(1, n // 10)]
        point["savers"][name] = {
            "warm": warm[name],
            "fresh": fresh[name],
            "listing": listing[name],
            "bytes": stores.disk_bytes(name, saver),
            "build_ms_per_thread": statistics.median(since) / 1e6,
        }
    return point


def _filter(k: int) -> dict[str, Any]:
    return {"user_id": user_name(k)}


def _check(name: str, what: str, k: int, found: list[str], expected: list[list[str]]) -> None:
    if found != expected[k]:
        raise RuntimeError(f"{name} {what}: list(None, filter={_filter(k)}) found {found}, not {expected[k]}")


def _warm(
    stores: Stores, names: list[str], ks: list[int], expected: list[list[str]], skips: Skips, sizes: Sizes
) -> dict[str, Result]:
    """``list(None, filter)`` on a new instance per saver: its first call (``ks[0]``), then one
    timed call per later k, round-robin; a call over ``growth_cap_s`` ends the saver's repeats."""
    readers = {name: stores.open(name) for name in names}
    ns: dict[str, list[int]] = {name: [] for name in names}
    first: dict[str, float] = {}
    looked_at = rule_paths(stores.root) if REPO in names else []
    floor: list[int] = []
    for rep, k in enumerate(ks):
        for name in rotated(names, rep):
            if skips.why(name, "warm") or (rep and name not in first):
                continue
            t0 = time.perf_counter_ns()
            found = [t.checkpoint["id"] for t in readers[name].list(None, filter=_filter(k))]
            elapsed = time.perf_counter_ns() - t0
            _check(name, "warm", k, found, expected)
            if rep and name == REPO:
                floor.append(lstat_all(looked_at))
            if rep:
                ns[name].append(elapsed)
            else:
                first[name] = elapsed / 1e6
            if elapsed > sizes.growth_cap_s * 1e9:
                skips.add(name, "warm", growth.over(sizes.growth_cap_s))
    for name, reader in readers.items():
        stores.close(name, reader)
    out = {
        name: (
            {"median_ms": statistics.median(ns[name]) / 1e6, "all_ms": [t / 1e6 for t in ns[name]]}
            | {"first_ms": first[name]}
            if ns[name]
            else {"skipped": skips.why(name, "warm"), "first_ms": first.get(name)}
        )
        for name in names
    }
    if floor:
        out[REPO] |= {"floor_ms": statistics.median(floor) / 1e6, "floor_lstats": len(looked_at)}
    return out


def rule_paths(root: Path) -> list[str]:
    """What the cache rule has a warm cross-thread filter look at (docs/reliability.md, "Hand
    edits and caches"): every thread folder, every namespace's checkpoints folder, every
    checkpoint file: one ``lstat`` each, however little changed."""
    out: list[str] = []
    for tdir in sorted((root / "threads").iterdir()):
        out.append(str(tdir))
        for folder in [tdir / "checkpoints", *sorted((tdir / "ns").glob("*/checkpoints"))]:
            if folder.is_dir():
                out.append(str(folder))
                out += sorted(str(p) for p in folder.iterdir() if p.suffix == ".json")
    return out


def lstat_all(paths: list[str]) -> int:
    """Nanoseconds of one bare ``lstat`` of each path, in a loop: the floor under the rule."""
    lstat = os.lstat
    t0 = time.perf_counter_ns()
    for path in paths:
        lstat(path)
    return time.perf_counter_ns() - t0


def _fresh(
    stores: Stores, names: list[str], ks: list[int], expected: list[list[str]], skips: Skips, sizes: Sizes
) -> dict[str, Result]:
    """The first ``list(None, filter)`` of fresh processes, one per k and saver, round-robin;
    one untimed RepoSaver process first, which leaves ``.cache/`` as a reader does."""
    if sizes.warm_up and REPO in names:
        growth.fresh(stores, REPO, "list_all", "", json.dumps(_filter(ks[0])), sizes)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for rep, k in enumerate(ks):
        for name in rotated(names, rep):
            if skips.why(name, "fresh"):
                continue
            out = growth.fresh(stores, name, "list_all", "", json.dumps(_filter(k)), sizes)
            if out is None:
                skips.add(name, "fresh", growth.over(sizes.growth_cap_s))
                continue
            _check(name, "fresh", k, out["found"], expected)
            runs[name].append(out)
    return {
        name: growth.medians(runs[name]) if runs[name] else {"skipped": skips.why(name, "fresh")}
        for name in names
    }


def _listing(stores: Stores, names: list[str], n: int, skips: Skips, sizes: Sizes) -> dict[str, Result]:
    """Wall seconds of listing every thread, ``growth_repeats`` times round-robin: RepoSaver's
    ``langgraph-repo threads``, the SQL savers' ``GROUP BY thread_id`` in a fresh process."""
    walls: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(sizes.growth_repeats):
        for name in rotated(names, rep):
            if skips.why(name, "listing"):
                continue
            wall = _list_threads(stores, name, n, sizes)
            if wall is None:
                skips.add(name, "listing", growth.over(sizes.growth_cap_s))
                continue
            walls[name].append(wall)
    return {
        name: {"median_s": statistics.median(walls[name]), "all_s": walls[name]}
        if walls[name]
        else {"skipped": skips.why(name, "listing")}
        for name in names
    }


def _list_threads(stores: Stores, name: str, n: int, sizes: Sizes) -> float | None:
    """One listing of every thread, its wall seconds (None: over the cap); it must list ``n``."""
    if name != REPO:
        out = growth.fresh(stores, name, "group_by", "", "", sizes)
        if out is not None and len(out["found"]) != n:
            raise RuntimeError(f"{name}: GROUP BY found {len(out['found'])} threads, not {n}")
        return None if out is None else float(out["wall_ms"]) / 1e3
    cmd, _ = script()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [*cmd, "--root", str(stores.root), "threads"],
            capture_output=True,
            text=True,
            check=False,
            timeout=sizes.growth_cap_s,
        )
    except subprocess.TimeoutExpired:
        return None
    wall = time.perf_counter() - t0
    listed = sum(1 for line in proc.stdout.splitlines() if "thread-" in line)
    if proc.returncode != 0 or listed != n:
        raise RuntimeError(f"langgraph-repo threads: exit {proc.returncode}, {listed} threads\n{proc.stderr}")
    return wall


# ----------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------
def table_threads(result: Result) -> int:
    """The size the results table shows: the goals' (3,000 threads) when measured, else the largest."""
    ladder: list[int] = result["ladder"]
    return goals.THREADS_AT if goals.THREADS_AT in ladder else ladder[-1]


def _value(result: Result, n: int, saver: str, path: tuple[str, ...]) -> float | None:
    found = goals.figure(result, n, saver, path)
    return None if isinstance(found, str) else found


def rows(result: Result) -> list[Row]:
    n = table_threads(result)
    at = n == goals.THREADS_AT

    def row(metric: str, path: tuple[str, ...], unit: str = "ms", goal: goals.Goal | None = None) -> Row:
        values = {s: _value(result, n, s, path) for s in (REPO, SQLITE)}
        if unit == "MB":
            values = {s: None if v is None else v / 1e6 for s, v in values.items()}
        column = goal.column(result) if goal and at else ""
        return Row("11 threads", f"{n:,} threads: {metric}", values, unit, column, 3)

    warm, fresh = goals.THREADS_WARM, goals.THREADS_FRESH
    return [
        row("list(None, filter), warm median", ("warm", "median_ms"), goal=warm),
        Row(
            "11 threads",
            f"{n:,} threads: the floor of that warm call under the cache rule: one bare lstat of each "
            "thread folder, checkpoints folder and checkpoint file, in a loop (median)",
            {REPO: _floor(result, n), SQLITE: None},
            "ms",
            "",
            3,
        ),
        row("first list(None, filter) of a fresh process, the call", ("fresh", "call_ms"), goal=fresh),
        row(
            "list every thread: `langgraph-repo threads` (RepoSaver), GROUP BY in a fresh process (SQL)",
            ("listing", "median_s"),
            "s",
            goals.THREADS_COMMAND,
        ),
        row("bytes on disk", ("bytes",), "MB"),
        row(
            "saver time to write one thread, not durable (median of the last tenth)", ("build_ms_per_thread",)
        ),
    ]


def _floor(result: Result, n: int) -> float | None:
    """``rule_paths``' bare lstats at ``n`` threads (None: a run before it was measured)."""
    warm = result["points"].get(str(n), {}).get("savers", {}).get(REPO, {}).get("warm", {})
    return warm.get("floor_ms")


def _fig(entry: Result, *path: str, digits: int = 2, scale: float = 1) -> str:
    """A cell: the figure at ``path``, or why it was not measured."""
    node: Any = entry
    for key in path:
        if key not in node:
            return str(node.get("skipped", "n/a"))
        node = node[key]
    return "n/a" if node is None else f"{node * scale:,.{digits}f}"


def _table(result: Result) -> str:
    head = ["Threads", "Saver", "list warm ms", "first call ms", "fresh: call ms", "files opened"]
    head += ["process wall ms", "list every thread s", "bytes on disk MB", "write a thread ms (not durable)"]
    cells = []
    for n in result["ladder"]:
        for name in result["savers"]:
            e = result["points"][str(n)]["savers"][name]
            if "warm" not in e:
                cells.append([f"{n:,}", name, str(e.get("skipped")), *[""] * 7])
                continue
            cells.append(
                [
                    f"{n:,}",
                    name,
                    _fig(e, "warm", "median_ms"),
                    _fig(e, "warm", "first_ms"),
                    _fig(e, "fresh", "call_ms"),
                    _fig(e, "fresh", "opened", digits=0),
                    _fig(e, "fresh", "wall_ms", digits=0),
                    _fig(e, "listing", "median_s", digits=3),
                    _fig(e, "bytes", scale=1e-6),
                    _fig(e, "build_ms_per_thread", digits=1),
                ]
            )
    return md_table(head, "llrrrrrrrr", cells)


def _growth_table(result: Result) -> str:
    """How much each figure grew from one size to the next (10x the threads: a linear cost is 10x)."""
    ladder = result["ladder"]
    head = ["Threads", "Saver", "threads grew", "list warm grew", "fresh call grew", "list every thread grew"]
    cells = []
    for low, high in itertools.pairwise(ladder):
        for name in result["savers"]:
            grew = []
            for path in (("warm", "median_ms"), ("fresh", "call_ms"), ("listing", "median_s")):
                a, b = _value(result, low, name, path), _value(result, high, name, path)
                grew.append("n/a" if a is None or b is None or a == 0 else f"{b / a:,.1f}x")
            cells.append([f"{low:,} -> {high:,}", name, f"{high / low:,.1f}x", *grew])
    return md_table(head, "llrrrr", cells)


def details(result: Result, sizes: dict[str, Any]) -> str:
    rec = result["recording"]
    intro = (
        f"Up to {result['ladder'][-1]:,} threads of {result['thread_turns']} turns each "
        f"({result['per_thread']} checkpoints a thread) of the turns workload's tool-calling agent: "
        f"the agent ran once on a recording saver ({rec['calls']} calls), and each thread is that "
        "recording replayed under its own thread id, user id (in the config, so every checkpoint's "
        "metadata holds it), message text and ids, with new checkpoint ids and timestamps "
        "(bench/replay.py, `Target`), into each saver, the savers taking turns thread by thread, by "
        "instances that do not wait for the disk (RepoSaver `durable=False`, SqliteSaver "
        "`synchronous=OFF`, PostgresSaver `synchronous_commit=off`: the same data, written sooner); "
        "'write a thread' is the saver time of one thread's calls so written (the median of the last "
        "tenth built; one call after another, so RepoSaver's `put_writes` are written alone: "
        "`ride.writes_alone`). Every measurement is made on instances opened with the savers' defaults. "
        "At each size: `list(None, filter={'user_id': U})` (one thread's "
        f"{result['per_thread']} checkpoints among all), warm: the median of "
        f"{result.get('warm_calls', result['repeats'])} "
        "calls on a new instance after its first call ('first call'; RepoSaver's builds its caches "
        "from the files, and the next call pays for that call's garbage: seconds at 10,000 threads, "
        "all calls in bench/results.json), and after each RepoSaver call "
        "a bare loop of `os.lstat` over every thread folder, checkpoints folder and checkpoint file "
        "(`rule_paths`: what the cache rule has that call check, one lstat each, docs/reliability.md); "
        "fresh: the call alone in a new "
        f"process (`bench/fresh_child.py --app`, as in the turns workload), median of {result['repeats']}, "
        "RepoSaver with `.cache/` as "
        "an earlier process left it; 'files opened' counts Python's `open` audit events during the call. "
        "List every thread: the wall time of `langgraph-repo --root ROOT threads` for RepoSaver (a table "
        "of every thread: namespaces, checkpoints, latest step, last update, forks, interrupts), and of a "
        "fresh Python process running `SELECT thread_id, COUNT(*), MAX(checkpoint_id) FROM checkpoints "
        "WHERE checkpoint_ns = '' GROUP BY thread_id` for the SQL savers (they have no such command; the "
        "query lists what the table's first columns say). Bytes on disk as in the turns workload. A "
        f"measurement over {result['cap_s']:g} s, or a saver's share of building one step over "
        f"{result['build_cap_s']:g} s, ends that saver's curve. PostgreSQL: {_settings(result)}.\n"
    )
    out = [intro]
    if result.get("picture"):
        out.append(f"![list(None, filter) and listing every thread against threads]({result['picture']})\n")
    out += [_table(result) + "\n", "Growth from one size to the next:\n", _growth_table(result) + "\n"]
    return "\n".join(out)


def _settings(result: Result) -> str:
    found: dict[str, str] = result.get("postgres_settings") or {}
    return ", ".join(f"{k} {v}" for k, v in found.items()) or "not run"


def _line(
    result: Result, name: str, path: tuple[str, ...], mode: str, dash: str | None, scale: float = 1
) -> plot.Line:
    found = ((n, _value(result, n, name, path)) for n in result["ladder"])
    pts = tuple((n, None if v is None else v * scale) for n, v in found)
    return plot.Line(name, mode, growth.COLORS[name], dash, pts)


def picture(result: Result) -> str:
    """list(None, filter) warm and fresh, listing every thread, and bytes on disk, against threads."""
    names = result["savers"]
    lists = [_line(result, s, ("warm", "median_ms"), "list, warm", None) for s in names]
    lists += [_line(result, s, ("fresh", "call_ms"), "list, fresh process", "7 4") for s in names]
    listing = [_line(result, s, ("listing", "median_s"), "list every thread", "2 3") for s in names]
    disk = [_line(result, s, ("bytes",), "MB on disk", None, 1e-6) for s in names]
    panels = [
        plot.Panel("list", "list(None, filter={'user_id': U})", tuple(lists)),
        plot.Panel("listing", "threads (RepoSaver) / GROUP BY (SQL)", tuple(listing), "s"),
        plot.Panel("bytes", "bytes on disk", tuple(disk), "MB"),
    ]
    return plot.render(panels, "Replayed threads against their number", "threads", "ms")
