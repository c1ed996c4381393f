"""The benchmark's goals, each defined once, here, as data.

A goal names the workload it judges, what it measures, the comparison and the threshold.
Its printed wording (the Goals table, the console summary, the Goal column of the results
table) and its check are both made from that one definition, so the two cannot drift apart.
"""

from __future__ import annotations

import operator
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bench.common import REPO, REPO_CACHED, SQLITE, Result, fmt_ratio, ratio

Compare = Literal["<", "<=", "=="]
_OPS: dict[str, Callable[[float, float], bool]] = {"<": operator.lt, "<=": operator.le, "==": operator.eq}


@dataclass(frozen=True)
class Measure:
    value: float | None
    """What is compared with the threshold; None when it could not be measured."""
    shown: str
    """The Measured cell: the value and what it was made from."""


@dataclass(frozen=True)
class GoalResult:
    key: str
    text: str
    measured: str
    met: bool | None


@dataclass(frozen=True)
class Goal:
    key: str
    workload: str
    """The workload whose results the goal judges; the goal is skipped when it did not run."""
    subject: str
    """What is measured; ``{name}`` fields are filled from the workload's results."""
    compare: Compare
    threshold: float
    unit: str
    """Follows the threshold: ``" ms"``, or ``"x SqliteSaver"`` for a ratio (a ratio of 1 reads
    as the reference alone); ``{name}`` fields are filled from the workload's results."""
    measure: Callable[[Result], Measure]
    who: str = REPO
    """What the goal judges, as the Goal column names it (the store's goals: RepoStore)."""

    def bound(self, result: Result) -> str:
        """The comparison and the threshold with its unit, as printed."""
        unit = self.unit.format_map(result)
        if unit.startswith("x ") and self.threshold == 1:
            return f"{self.compare} {unit[2:]}"
        return f"{self.compare} {self.threshold:g}{unit}"

    def text(self, result: Result) -> str:
        """The goal as one line, for the Goals table."""
        return f"{self.subject.format_map(result)} {self.bound(result)}"

    def column(self, result: Result) -> str:
        """The goal in the Goal column of the results table, beside the row it judges."""
        return f"{self.who} {self.bound(result)}"

    def check(self, result: Result) -> GoalResult:
        m = self.measure(result)
        met = None if m.value is None else _OPS[self.compare](m.value, self.threshold)
        return GoalResult(self.key, self.text(result), m.shown, met)


def versus(a: float, b: float, unit: str, digits: int) -> Measure:
    """``a`` against a reference ``b``: the ratio, and both values."""
    r = ratio(a, b)
    return Measure(r, f"{a:,.{digits}f} {unit} vs {b:,.{digits}f} {unit} ({fmt_ratio(r)})")


def _vs_sqlite(key: str, digits: int) -> Callable[[Result], Measure]:
    """RepoSaver's ``per_saver`` milliseconds under ``key`` against SqliteSaver's."""

    def measure(result: Result) -> Measure:
        per = result["per_saver"]
        return versus(per[REPO][key], per[SQLITE][key], "ms", digits)

    return measure


def _disk(chat: Result) -> Measure:
    disk = chat["disk"]
    return versus(disk[REPO]["apparent"] / 1024, disk[SQLITE]["apparent"] / 1024, "KB", 1)


def _get_tuple_warm(depth: Result) -> Measure:
    big: float = depth["per_saver"][REPO]["get_tuple_big_median_ms"]
    return Measure(big, f"{big:.3f} ms")


def _get_tuple_depth(depth: Result) -> Measure:
    per = depth["per_saver"][REPO]
    return versus(per["get_tuple_big_median_ms"], per["get_tuple_small_median_ms"], "ms", 3)


def _git_growth(git: Result) -> Measure:
    repo = git["per_saver"][REPO]
    growth: float = repo["kb_per_turn_growth"]
    raw: float = repo["kb_per_turn_raw"]
    return Measure(growth, f"{growth:.2f} KB/turn growth; {raw:.2f} KB/turn counting the whole .git")


def _git_log_driver(git: Result) -> Measure:
    d = git["driver"]
    per: float = d["per_version_ms"]
    start, floor = (statistics.median(d["starts_ms"][k]) for k in ("driver", "python -c pass"))
    return Measure(
        per,
        f"{per:.1f} ms per file version ({statistics.median(d['log_p_ms']) / 1000:.1f} s for "
        f"{d['versions']:,}); the driver alone {start:.1f} ms, `python -c pass` {floor:.1f} ms",
    )


def _git_binary(git: Result) -> Measure:
    per = git["per_saver"]
    n: int = per[REPO]["binary_entries"]
    return Measure(n, f"{n} binary numstat entries ({SQLITE}: {per[SQLITE]['binary_entries']})")


CHAT_TURN = Goal(
    key="chat_turn",
    workload="chat",
    subject="Chat turn (median, full fsync durability)",
    compare="<=",
    threshold=1.2,
    unit=f"x {SQLITE}",
    measure=_vs_sqlite("median_ms", 2),
)
DISK = Goal(
    key="bytes_on_disk",
    workload="chat",
    subject=f"Bytes on disk after chat: {REPO}",
    compare="<=",
    threshold=1.0,
    unit=f"x {SQLITE}",
    measure=_disk,
)
GET_TUPLE_WARM = Goal(
    key="get_tuple_warm",
    workload="depth",
    subject="get_tuple latest at {big_checkpoints:,} checkpoints (warm)",
    compare="<",
    threshold=1.0,
    unit=" ms",
    measure=_get_tuple_warm,
)
GET_TUPLE_DEPTH = Goal(
    key="get_tuple_depth",
    workload="depth",
    subject="get_tuple at {big_checkpoints:,}",
    compare="<=",
    threshold=2.0,
    unit=f"x get_tuple at {{small_checkpoints}} ({REPO})",
    measure=_get_tuple_depth,
)
LIST_FILTER = Goal(
    key="list_filter",
    workload="depth",
    subject="list(filter={{'step': k}})",
    compare="<=",
    threshold=2.0,
    unit=f"x {SQLITE}",
    measure=_vs_sqlite("list_filter_median_ms", 3),
)
GIT_GROWTH = Goal(
    key="git_growth",
    workload="git",
    subject=f"git growth ({REPO})",
    compare="<=",
    threshold=6.0,
    unit=" KB/turn",
    measure=_git_growth,
)
GIT_TEXT = Goal(
    key="git_text",
    workload="git",
    subject=f"every {REPO} change is text in git: binary numstat entries",
    compare="==",
    threshold=0,
    unit="",
    measure=_git_binary,
)

GIT_LOG_DRIVER = Goal(
    key="git_log_driver",
    workload="git",
    subject="cold `git log -p` through the diff driver ({driver[versions]:,} file versions), per version",
    compare="<=",
    threshold=25,  # issue 37's goal
    unit=" ms",
    measure=_git_log_driver,
)

GOALS: tuple[Goal, ...] = (
    CHAT_TURN,
    DISK,
    GET_TUPLE_WARM,
    GET_TUPLE_DEPTH,
    LIST_FILTER,
    GIT_GROWTH,
    GIT_TEXT,
    GIT_LOG_DRIVER,
)


def check_goals(results: Result) -> list[GoalResult]:
    """Every goal whose workload ran, in the order of ``GOALS``."""
    return [g.check(results[g.workload]) for g in GOALS if results.get(g.workload)]


# ----------------------------------------------------------------------------
# agents (issue 13): what one turn of a real agent writes
# ----------------------------------------------------------------------------
def _per_graph(result: Result, value: Callable[[Result], float | None]) -> dict[str, float | None]:
    """``value`` of RepoSaver's results for each graph of the agents workload."""
    return {graph: value(per[REPO]) for graph, per in result["graphs"].items()}


def _worst(
    values: dict[str, float | None], worst: Callable[[list[float]], float], shown: Callable[[float], str]
) -> Measure:
    """The worst graph's value, and every graph's."""
    known = [v for v in values.values() if v is not None]
    cell = ", ".join(f"{g} {'n/a' if v is None else shown(v)}" for g, v in values.items())
    return Measure(worst(known) if len(known) == len(values) else None, cell)


def _agent_copies(result: Result) -> Measure:
    """Copies must be exactly one: the worst graph is the one farthest from one, either way."""
    spread = _per_graph(result, lambda s: max(s["copies"], key=lambda c: abs(c - 1)))
    return _worst(spread, lambda vs: max(vs, key=lambda c: abs(c - 1)), lambda v: f"{v:g}")


def _agent_flat(result: Result) -> Measure:
    turns = result["turns"]
    flat = _per_graph(result, lambda s: ratio(s["bytes"][turns - 1], s["bytes"][2]) if turns >= 3 else None)
    return _worst(flat, max, fmt_ratio)


def _create_agent_max(key: str, scale: int, unit: str, digits: int) -> Callable[[Result], Measure]:
    """The largest turn of ``create_agent`` under RepoSaver, in ``unit`` (bytes divided by ``scale``)."""

    def measure(result: Result) -> Measure:
        values = [v for v in result["graphs"]["create_agent"][REPO][key] if v is not None]
        if not values:
            return Measure(None, "n/a")
        top = max(values) / scale
        turn = values.index(max(values)) + 1
        last = values[-1] / scale
        return Measure(
            top, f"largest turn {top:,.{digits}f} {unit} (turn {turn}); last turn {last:,.{digits}f} {unit}"
        )

    return measure


def _agent_git(result: Result) -> Measure:
    def growth(saver: str) -> dict[str, float]:
        return {g: per[saver]["git_growth_bytes"] for g, per in result["graphs"].items()}

    repo, sqlite = growth(REPO), growth(SQLITE)
    ratios = {g: ratio(repo[g], sqlite[g]) for g in repo}
    m = _worst(ratios, max, fmt_ratio)
    kb = ", ".join(f"{g} {repo[g] / 1024:,.0f} KB vs {sqlite[g] / 1024:,.0f} KB" for g in repo)
    return Measure(m.value, f"{m.shown} ({kb})")


AGENT_COPIES = Goal(
    key="agent_copies",
    workload="agents",
    subject=f"copies of a turn's user text in what {REPO} wrote that turn (worst graph, worst turn)",
    compare="==",
    threshold=1,
    unit="",
    measure=_agent_copies,
)
AGENT_FLAT = Goal(
    key="agent_flat",
    workload="agents",
    subject=f"{REPO} bytes written at turn {{turns}} (worst graph)",
    compare="<=",
    threshold=1.3,
    unit="x turn 3",
    measure=_agent_flat,
)
AGENT_BYTES = Goal(
    key="agent_bytes",
    workload="agents",
    subject=f"create_agent: {REPO} bytes written by a turn (largest of {{turns}})",
    compare="<=",
    threshold=8,
    unit=" KB",
    measure=_create_agent_max("bytes", 1024, "KB", 1),
)
AGENT_LINES = Goal(
    key="agent_lines",
    workload="agents",
    subject=f"create_agent: git lines a {REPO} turn adds (largest of {{turns}})",
    compare="<=",
    threshold=250,
    unit=" lines",
    measure=_create_agent_max("lines", 1, "lines", 0),
)
AGENT_GIT = Goal(
    key="agent_git",
    workload="agents",
    subject=f"agents: {REPO} .git growth after git gc (worst graph)",
    compare="<=",
    threshold=1,
    unit=f"x {SQLITE}",
    measure=_agent_git,
)

GOALS += (AGENT_COPIES, AGENT_FLAT, AGENT_BYTES, AGENT_LINES, AGENT_GIT)


# ----------------------------------------------------------------------------
# issue 14: the first read of a fresh process, and the command line
# ----------------------------------------------------------------------------
def _fresh_vs_sqlite(call: str) -> Callable[[Result], Measure]:
    """RepoSaver's first ``call`` in a fresh process, with ``.cache/`` as earlier processes left it
    (the steady state), against SqliteSaver's first call in a fresh process: the call alone."""

    def measure(result: Result) -> Measure:
        fresh = result["points"][str(result["table_length"])]["fresh"]
        return versus(fresh[REPO_CACHED][call]["call_ms"], fresh[SQLITE][call]["call_ms"], "ms", 3)

    return measure


def _wall(command: str) -> Callable[[Result], Measure]:
    """The median wall time of a ``langgraph-repo`` process, in seconds."""

    def measure(result: Result) -> Measure:
        c = result["commands"][command]
        s: float = c["median_s"]
        return Measure(s, f"{s:.2f} s (median of {len(c['all_s'])}; {c['output']})")

    return measure


FRESH_GET_TUPLE = Goal(
    key="fresh_get_tuple",
    workload="history",
    subject="first get_tuple (latest) of a fresh process, {table_length:,} checkpoints (the call)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}'s",
    measure=_fresh_vs_sqlite("get_tuple"),
)
FRESH_LIST = Goal(
    key="fresh_list",
    workload="history",
    subject="first list(filter={{'step': k}}) of a fresh process, {table_length:,} checkpoints (the call)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}'s",
    measure=_fresh_vs_sqlite("list"),
)
CLI_THREADS = Goal(
    key="cli_threads",
    workload="cli",
    subject="`langgraph-repo threads` on a small root (wall)",
    compare="<=",
    threshold=0.4,
    unit=" s",
    measure=_wall("threads"),
)
CLI_HELP = Goal(
    key="cli_help",
    workload="cli",
    subject="`langgraph-repo --help` (wall)",
    compare="<=",
    threshold=0.3,
    unit=" s",
    measure=_wall("help"),
)
CLI_PRECOMMIT = Goal(
    key="cli_precommit",
    workload="cli",
    subject="pre-commit `langgraph-repo validate FILE...` of the {changed_files} files one turn changed, "
    "root of {checkpoints:,} checkpoints (wall)",
    compare="<=",
    threshold=0.3,  # issue 25's goal
    unit=" s",
    measure=_wall("precommit"),
)
CLI_VALIDATE = Goal(
    key="cli_validate",
    workload="cli",
    subject="full `langgraph-repo validate`, root of {checkpoints:,} checkpoints (wall)",
    compare="<=",
    threshold=1.5,
    unit=" s",
    measure=_wall("validate"),
)

CLI_REVIEW = Goal(
    key="cli_review",
    workload="cli",
    subject="`langgraph-repo review` of a {review_turns}-turn branch, root of {checkpoints:,} "
    "checkpoints (wall)",
    compare="<=",
    threshold=2.0,  # issue 34's goal
    unit=" s",
    measure=_wall("review"),
)

GOALS += (FRESH_GET_TUPLE, FRESH_LIST, CLI_THREADS, CLI_HELP, CLI_PRECOMMIT, CLI_VALIDATE, CLI_REVIEW)


# ----------------------------------------------------------------------------
# issue 27: the store
# ----------------------------------------------------------------------------
def _store_vs_sqlite(key: str) -> Callable[[Result], Measure]:
    def measure(result: Result) -> Measure:
        per = result["per_store"]
        return versus(per["RepoStore"][key], per["SqliteStore"][key], "ms", 3)

    return measure


STORE_PUT = Goal(
    key="store_put",
    workload="store",
    subject="RepoStore put of an existing item (median, full fsync durability)",
    compare="<=",
    threshold=2.0,
    unit="x SqliteStore",
    measure=_store_vs_sqlite("put_median_ms"),
    who="RepoStore",
)
STORE_GET = Goal(
    key="store_get",
    workload="store",
    subject="RepoStore get (warm median)",
    compare="<=",
    threshold=3.0,
    unit="x SqliteStore",
    measure=_store_vs_sqlite("get_median_ms"),
    who="RepoStore",
)

GOALS += (STORE_PUT, STORE_GET)


# ----------------------------------------------------------------------------
# issue 37: big values
# ----------------------------------------------------------------------------
BIG_LIST_PUT = Goal(
    key="big_list_put",
    workload="big",
    subject="first put of a {list_items:,}-item list, in a graph run (median)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}",
    measure=_vs_sqlite("list_put_median_ms", 2),
)

GOALS += (BIG_LIST_PUT,)


# ----------------------------------------------------------------------------
# issue 37: growth with turns and with threads (the turns and threads workloads)
# ----------------------------------------------------------------------------
TURNS_AT = 1_000
"""The replayed thread the turns goals judge, in turns."""
THREADS_AT = 3_000
THREADS_FROM = 300
"""The threads goals: at 3,000 threads, and the growth from 300 to 3,000..."""
THREADS_BIG = 10_000
THREADS_BIG_FROM = 1_000
"""... and the same at 10,000 threads (the growth from 1,000: the same tenfold step)."""


def figure(result: Result, n: int, saver: str, path: tuple[str, ...]) -> float | str:
    """The figure at ``path`` under a saver at point ``n`` of a growth workload, or why there is none."""
    point = result["points"].get(str(n))
    if point is None:
        ladder = ", ".join(f"{x:,}" for x in result["ladder"])
        return f"not measured: {n:,} is not in this run's ladder ({ladder}; bench/run.py --growth-full)"
    node: Any = point["savers"].get(saver, {"skipped": f"{saver} not run"})
    for key in path:
        if "skipped" in node:
            return f"{saver}: {node['skipped']}"
        node = node[key]
    if isinstance(node, dict) and "skipped" in node:
        return f"{saver}: {node['skipped']}"
    return float(node)


def _versus_sqlite(n: int, path: tuple[str, ...], unit: str = "ms") -> Callable[[Result], Measure]:
    """RepoSaver's figure at ``path``, point ``n``, against SqliteSaver's."""

    def measure(result: Result) -> Measure:
        repo, sqlite = figure(result, n, REPO, path), figure(result, n, SQLITE, path)
        if isinstance(repo, str) or isinstance(sqlite, str):
            return Measure(None, repo if isinstance(repo, str) else str(sqlite))
        return versus(repo, sqlite, unit, 3)

    return measure


def _max_put(result: Result) -> Measure:
    top = figure(result, TURNS_AT, REPO, ("put", "max_ms"))
    mid = figure(result, TURNS_AT, REPO, ("put", "median_ms"))
    if isinstance(top, str) or isinstance(mid, str):
        return Measure(None, top if isinstance(top, str) else str(mid))
    turn = result["points"][str(TURNS_AT)]["savers"][REPO]["put"]["max_turn"]
    r = ratio(top, mid)
    return Measure(r, f"slowest {top:,.1f} ms (turn {turn:,}) vs median {mid:,.2f} ms ({fmt_ratio(r)})")


def _growth_vs_sqlite(low: int, high: int, path: tuple[str, ...]) -> Callable[[Result], Measure]:
    """How much RepoSaver's figure grew from ``low`` to ``high``, against how much SqliteSaver's did."""

    def measure(result: Result) -> Measure:
        figures = {(s, n): figure(result, n, s, path) for s in (REPO, SQLITE) for n in (low, high)}
        missing = [v for v in figures.values() if isinstance(v, str)]
        if missing:
            return Measure(None, str(missing[0]))
        found = {k: float(v) for k, v in figures.items()}
        grew = {s: ratio(found[(s, high)], found[(s, low)]) for s in (REPO, SQLITE)}
        r = ratio(grew[REPO], grew[SQLITE])
        said = "; ".join(
            f"{s} {fmt_ratio(grew[s])} ({found[(s, low)]:,.1f} -> {found[(s, high)]:,.1f} ms)" for s in grew
        )
        return Measure(r, f"{said}: {fmt_ratio(r)}")

    return measure


def _threads_command(result: Result) -> Measure:
    s = figure(result, THREADS_AT, REPO, ("listing", "median_s"))
    if isinstance(s, str):
        return Measure(None, s)
    sql = figure(result, THREADS_AT, SQLITE, ("listing", "median_s"))
    beside = "" if isinstance(sql, str) else f"; a GROUP BY in {SQLITE}'s database, its process: {sql:.2f} s"
    return Measure(s, f"{s:.2f} s{beside}")


TURNS_MAX_PUT = Goal(
    key="turns_max_put",
    workload="turns",
    subject=f"replayed thread of {TURNS_AT:,} turns: {REPO}'s slowest put",
    compare="<=",
    threshold=5.0,
    unit="x its median put",
    measure=_max_put,
)
TURNS_P99 = Goal(
    key="turns_p99",
    workload="turns",
    subject=f"replayed thread of {TURNS_AT:,} turns: put p99",
    compare="<=",
    threshold=1.5,
    unit=f"x {SQLITE}'s p99",
    measure=_versus_sqlite(TURNS_AT, ("put", "p99_ms")),
)
TURNS_FRESH = Goal(
    key="turns_fresh_get_tuple",
    workload="turns",
    subject=f"replayed thread of {TURNS_AT:,} turns: first get_tuple of a fresh process (the call)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}'s",
    measure=_versus_sqlite(TURNS_AT, ("fresh", "get_tuple", "call_ms")),
)
GOALS += (TURNS_MAX_PUT, TURNS_P99, TURNS_FRESH)


THREADS_WARM = Goal(
    key="threads_warm_list",
    workload="threads",
    subject=f"{THREADS_AT:,} threads: list(None, filter) (warm)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}",
    measure=_versus_sqlite(THREADS_AT, ("warm", "median_ms")),
)
THREADS_FRESH = Goal(
    key="threads_fresh_list",
    workload="threads",
    subject=f"{THREADS_AT:,} threads: first list(None, filter) of a fresh process (the call)",
    compare="<=",
    threshold=5.0,
    unit=f"x {SQLITE}'s",
    measure=_versus_sqlite(THREADS_AT, ("fresh", "call_ms")),
)
THREADS_GROWTH = Goal(
    key="threads_growth",
    workload="threads",
    subject=f"growth of warm list(None, filter) from {THREADS_FROM:,} to {THREADS_AT:,} threads",
    compare="<=",
    threshold=1.5,
    unit=f"x {SQLITE}'s growth",
    measure=_growth_vs_sqlite(THREADS_FROM, THREADS_AT, ("warm", "median_ms")),
)


THREADS_COMMAND = Goal(
    key="threads_command",
    workload="threads",
    subject=f"`langgraph-repo threads` at {THREADS_AT:,} threads (wall)",
    compare="<=",
    threshold=1.5,
    unit=" s",
    measure=_threads_command,
)
THREADS_BIG_WARM = Goal(
    key="threads_big_warm_list",
    workload="threads",
    subject=f"{THREADS_BIG:,} threads: list(None, filter) (warm)",
    compare="<=",
    threshold=3.0,
    unit=f"x {SQLITE}",
    measure=_versus_sqlite(THREADS_BIG, ("warm", "median_ms")),
)
THREADS_BIG_FRESH = Goal(
    key="threads_big_fresh_list",
    workload="threads",
    subject=f"{THREADS_BIG:,} threads: first list(None, filter) of a fresh process (the call)",
    compare="<=",
    threshold=5.0,
    unit=f"x {SQLITE}'s",
    measure=_versus_sqlite(THREADS_BIG, ("fresh", "call_ms")),
)
THREADS_BIG_GROWTH = Goal(
    key="threads_big_growth",
    workload="threads",
    subject=f"growth of warm list(None, filter) from {THREADS_BIG_FROM:,} to {THREADS_BIG:,} threads",
    compare="<=",
    threshold=1.5,
    unit=f"x {SQLITE}'s growth",
    measure=_growth_vs_sqlite(THREADS_BIG_FROM, THREADS_BIG, ("warm", "median_ms")),
)
GOALS += (THREADS_WARM, THREADS_FRESH, THREADS_GROWTH, THREADS_COMMAND)
GOALS += (THREADS_BIG_WARM, THREADS_BIG_FRESH, THREADS_BIG_GROWTH)
