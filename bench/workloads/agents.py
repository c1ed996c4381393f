"""Workload 6: what a conversation turn of a real agent writes, RepoSaver beside SqliteSaver.

Three graphs (``bench.agent_graphs``: ``create_agent``, ``create_react_agent``, a graph whose node
is a compiled subgraph), one thread each, ``agent_turns`` user turns; each saver's files are
committed to a fresh git repository after every turn. Per turn: the bytes written (RepoSaver:
the files the turn added; SqliteSaver: the growth of the database file after a WAL checkpoint,
and the bytes of the rows' blobs), files and git lines added, the copies of the turn's user-text
marker in what the turn wrote, and the turn's wall time. At the end, the size of ``.git`` after
``git gc``, the same command for both.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import goals
from bench.agent_graphs import BUILDERS, INPUT_FORMS, marker, turn_input
from bench.common import (
    REPO,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    dir_usage,
    fmt_ratio,
    median_ms,
    open_sqlite,
    ratio,
    rotated,
    sqlite_wal_checkpoint,
)
from bench.report import Row, md_table
from bench.workloads.git import git, git_env, parse_numstat
from langgraph_checkpoint_repo import RepoSaver

NAME = "agents"
TITLE = "Agent turns in detail"
SAVERS = (REPO, SQLITE)
DB = "agent.db"
SHOWN_TURNS = (1, 3, 10, 30)
"""The turns whose bytes the report shows (those the run reached, and always the last)."""

BLOBS = (
    "SELECT checkpoint AS b FROM checkpoints UNION ALL SELECT metadata FROM checkpoints "
    "UNION ALL SELECT value FROM writes"
)


def run(tmp: Path, sizes: Sizes) -> Result:
    env = git_env(tmp)
    turns = sizes.agent_turns
    graphs = {name: _run_graph(tmp / f"agents-{name}", env, build, turns) for name, build in BUILDERS.items()}
    return {"turns": turns, "graphs": graphs}


def _run_graph(
    folder: Path, env: dict[str, str], build: Callable[[BaseCheckpointSaver[Any]], Any], turns: int
) -> dict[str, Any]:
    """One thread of ``turns`` user turns on each saver, a git commit after every turn."""
    work = {REPO: folder / "repo", SQLITE: folder / "sqlite"}
    empty: dict[str, int] = {}
    for name, path in work.items():
        path.mkdir(parents=True)
        git(path, env, "-c", "init.defaultBranch=main", "init", "-q")
        empty[name] = dir_usage(path / ".git")["apparent"]
    (work[SQLITE] / ".gitignore").write_text("*.db-wal\n*.db-shm\n")
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(work[REPO] / ".langgraph"),
        SQLITE: open_sqlite(work[SQLITE] / DB),
    }
    graphs = {name: build(s) for name, s in savers.items()}
    turn_rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SAVERS}
    config: RunnableConfig = {"configurable": {"thread_id": "agent"}}
    db_size = 0
    blob_bytes = 0
    for turn in range(1, turns + 1):
        form, given = turn_input(turn)
        for name in rotated(list(SAVERS), turn):
            t0 = time.perf_counter_ns()
            graphs[name].invoke(given, config)
            elapsed = time.perf_counter_ns() - t0
            git(work[name], env, "add", "-A")
            if name == REPO:
                row = _repo_turn(work[REPO], env, marker(turn))
            else:
                sqlite_wal_checkpoint(savers[SQLITE])
                size = (work[SQLITE] / DB).stat().st_size
                blobs, copies = _sqlite_blobs(savers[SQLITE], marker(turn))
                row = {"bytes": size - db_size, "blob_bytes": blobs - blob_bytes, "copies": copies}
                db_size, blob_bytes = size, blobs
            row["ns"] = elapsed
            row["form"] = form
            turn_rows[name].append(row)
            git(work[name], env, "commit", "-q", "--allow-empty", "-m", f"turn {turn}")
    close_saver(savers[SQLITE])
    return {name: _summarise(work[name], env, empty[name], turn_rows[name]) for name in SAVERS}


def _repo_turn(work: Path, env: dict[str, str], mark: str) -> dict[str, Any]:
    """The files this turn added to the index: their bytes, lines and copies of the marker, by kind."""
    added = [
        p for p in git(work, env, "diff", "--cached", "--name-only", "--diff-filter=A", "-z").split("\0") if p
    ]
    by_kind: Counter[str] = Counter()
    copies_by_kind: Counter[str] = Counter()
    for rel in added:
        data = (work / rel).read_bytes()
        by_kind[_kind(rel)] += len(data)
        copies_by_kind[_kind(rel)] += data.count(mark.encode())
    lines_by_kind: Counter[str] = Counter()
    for line in git(work, env, "diff", "--cached", "--numstat", "--no-renames").splitlines():
        lines, _, rel = line.split("\t", 2)
        lines_by_kind[_kind(rel)] += int(lines) if lines != "-" else 0
    return {
        "bytes": sum(by_kind.values()),
        "files_added": len(added),
        "copies": sum(copies_by_kind.values()),
        "by_kind": dict(by_kind),
        "lines_by_kind": dict(lines_by_kind),
        "copies_by_kind": {k: v for k, v in copies_by_kind.items() if v},
    }


def _kind(rel: str) -> str:
    """``checkpoints``, ``writes``, ``large``...: the folder a file is in; ``ns/...`` in a subgraph's."""
    parts = Path(rel).parts
    folder = parts[-2] if len(parts) > 1 else "(root)"
    return f"ns/{folder}" if "ns" in parts[:-1] else folder


def _sqlite_blobs(saver: BaseCheckpointSaver[Any], mark: str) -> tuple[int, int]:
    """Bytes of every blob in the database, and the copies of ``mark`` in them."""
    conn: sqlite3.Connection = saver.conn  # type: ignore[attr-defined]
    total = copies = 0
    needle = mark.encode()
    for (blob,) in conn.execute(BLOBS):
        if blob:
            total += len(blob)
            copies += bytes(blob).count(needle)
    return total, copies


def _summarise(work: Path, env: dict[str, str], empty: int, turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-turn lists, git numstat per commit, then ``.git`` before and after ``git gc``."""
    commits = parse_numstat(git(work, env, "log", "--reverse", "--numstat", "--format=@%s"))
    before_gc = dir_usage(work / ".git")["apparent"]
    git(work, env, "gc", "--aggressive", "--prune=now", "-q")
    after_gc = dir_usage(work / ".git")["apparent"]
    times = [t["ns"] for t in turns]
    return {
        "bytes": [t["bytes"] for t in turns],
        "blob_bytes": [t.get("blob_bytes") for t in turns],
        "files": [t.get("files_added", c["files"]) for t, c in zip(turns, commits, strict=True)],
        "lines": [None if c["binary"] else c["added"] for c in commits],
        "copies": [t["copies"] for t in turns],
        "forms": [t.get("form", "message") for t in turns],
        "by_kind": [t.get("by_kind", {}) for t in turns],
        "lines_by_kind": [t.get("lines_by_kind", {}) for t in turns],
        "copies_by_kind": [t.get("copies_by_kind", {}) for t in turns],
        "turn_ms": [ns / 1e6 for ns in times],
        "median_ms": median_ms(times),
        "git_dir_bytes_empty": empty,
        "git_dir_bytes_before_gc": before_gc,
        "git_dir_bytes": after_gc,
        "git_growth_bytes": after_gc - empty,
    }


# ----------------------------------------------------------------------------
# reading the results (goals.py and the report use these)
# ----------------------------------------------------------------------------
def at(values: Sequence[Any], turn: int) -> Any:
    """The value of 1-based ``turn``, or None when the run was shorter."""
    return values[turn - 1] if 0 < turn <= len(values) else None


def shown_turns(turns: int) -> list[int]:
    return sorted({t for t in SHOWN_TURNS if t <= turns} | {turns})


def flat_ratio(per: dict[str, Any], turns: int) -> float | None:
    """Bytes written at the last turn over turn 3's."""
    return ratio(at(per["bytes"], turns), at(per["bytes"], 3))


def kb(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 1024:,.1f}"


def _spread(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "n/a"
    lo, hi = min(known), max(known)
    return f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"


def rows(result: Result) -> list[Row]:
    n = result["turns"]
    out: list[Row] = []
    for graph, per in result["graphs"].items():
        label = f"6 agents: {graph}"
        both = partial(_both, per)
        out += [
            Row(label, "bytes written, turn 3", both(lambda s: _kb_or_none(at(s["bytes"], 3))), "KB", "", 1),
            Row(
                label, f"bytes written, turn {n}", both(lambda s: _kb_or_none(at(s["bytes"], n))), "KB", "", 1
            ),
            Row(
                label,
                f"bytes written, turn {n} / turn 3",
                both(lambda s: flat_ratio(s, n)),
                "x",
                goals.AGENT_FLAT.column(result),
                2,
                False,
            ),
            Row(
                label,
                f"git lines added, turn {n}",
                {REPO: at(per[REPO]["lines"], n)},
                "lines",
                goals.AGENT_LINES.column(result) if graph == "create_agent" else "",
                0,
                False,
            ),
            Row(
                label,
                "copies of the turn's user text in what the turn wrote, max over turns",
                both(lambda s: max(s["copies"])),
                "count",
                goals.AGENT_COPIES.column(result),
                0,
                False,
            ),
            Row(label, f"median turn ({n} turns)", both(lambda s: s["median_ms"]), "ms"),
            Row(
                label,
                ".git after gc minus empty .git",
                both(lambda s: s["git_growth_bytes"] / 1024),
                "KB",
                goals.AGENT_GIT.column(result),
                1,
            ),
        ]
    return out


def _both(per: dict[str, Any], get: Callable[[dict[str, Any]], float | None]) -> dict[str, float | None]:
    """``get`` of each saver's results."""
    return {name: get(per[name]) for name in SAVERS}


def _kb_or_none(n: float | None) -> float | None:
    return None if n is None else n / 1024


def details(result: Result, sizes: dict[str, int]) -> str:
    n = result["turns"]
    shown = shown_turns(n)
    intro = (
        f"One thread a graph, {n} user turns; each turn is one `invoke` with a user's text that "
        "holds a unique marker (`turn-7-harbour`), given in turn as a `HumanMessage`, a message dict "
        '(`{"role": "user", "content": ...}`) and a `("user", text)` tuple. The fake model makes one '
        "`lookup_order` tool call a "
        "turn, then answers (the subgraph graph has no tools: its subgraph appends one reply). After "
        "every turn `git add -A && git commit` of the RepoSaver root or of the SQLite file (after "
        "`PRAGMA wal_checkpoint(TRUNCATE)`); at the end `git gc --aggressive --prune=now` for both. "
        "Bytes written: RepoSaver, the sizes of the files the turn added; SqliteSaver, the growth of "
        "the database file (pages, so it moves in steps), and in brackets the bytes of the blobs "
        "(checkpoint, metadata, write values) the turn inserted. Copies: occurrences of the turn's "
        "marker in the files the turn added (SqliteSaver: in every blob; earlier turns never hold "
        "it). Lines: `git log --numstat` of the turn's commit (the database is binary).\n"
    )
    head = [
        "Graph",
        "Saver",
        *(f"KB turn {t}" for t in shown),
        f"turn {n}/3",
        "lines turn 3",
        f"lines turn {n}",
        "copies",
        "files/turn",
        "median ms",
        "ms vs Sqlite",
        ".git after gc KB",
        "growth KB",
    ]
    table_rows: list[list[Any]] = []
    for graph, per in result["graphs"].items():
        for name in SAVERS:
            s = per[name]
            cells = [_bytes_cell(s, t) for t in shown]
            table_rows.append(
                [
                    graph,
                    name,
                    *cells,
                    fmt_ratio(flat_ratio(s, n)),
                    _opt(at(s["lines"], 3)),
                    _opt(at(s["lines"], n)),
                    _spread(s["copies"]),
                    _spread(s["files"]),
                    f"{s['median_ms']:.1f}",
                    fmt_ratio(ratio(s["median_ms"], per[SQLITE]["median_ms"])),
                    kb(s["git_dir_bytes"]),
                    kb(s["git_growth_bytes"]),
                ]
            )
    table = md_table(head, "ll" + "r" * (len(head) - 2), table_rows)
    return "\n".join([intro, table + "\n", _forms(result) + "\n", _where(result) + "\n", _FORMAT_NOTE])


def _forms(result: Result) -> str:
    """The most copies of a turn's text each saver wrote, by the form the text came in."""
    head = ["Graph", "Saver", *(f"copies, {f} input" for f in INPUT_FORMS)]
    rows_: list[list[str]] = []
    for graph, per in result["graphs"].items():
        for name in SAVERS:
            s = per[name]
            forms = s.get("forms") or ["message"] * len(s["copies"])
            cells = []
            for f in INPUT_FORMS:
                got = [c for c, g in zip(s["copies"], forms, strict=True) if g == f]
                cells.append(_spread(got))
            rows_.append([graph, name, *cells])
    intro = (
        "Copies of the turn's text in what the turn wrote, by how the text was given (min-max over turns).\n"
    )
    return intro + "\n" + md_table(head, "ll" + "r" * len(INPUT_FORMS), rows_)


_FORMAT_NOTE = (
    "What is left, in format 3 (each message stored once in `objects/`, docs/format.md): a "
    "tool-calling turn of `create_agent` is five supersteps, so five checkpoint files and four "
    "writes files, and most of their bytes and lines are LangGraph's bookkeeping, written whole "
    "in every checkpoint so the latest one reads in O(1): `channel_versions` and `versions_seen` "
    "(version strings of 51 characters, `0000…0144.0.1604067512986318`), the `values` references "
    "and the ids. The messages themselves are a few hundred bytes each, once. That is why the "
    "8 KB and 250-line goals are still missed (the by-folder table above shows the split), and "
    "why `.git` after `gc` stays above SqliteSaver's: git stores each small file as its own "
    "object, and every commit writes new tree objects for the folders it touched, while one "
    "SQLite file deltas well against its previous version. Storing the bookkeeping as a delta "
    "from the parent checkpoint (with a whole copy every so often, as the message list does) "
    "would shrink both; it is a format change of its own.\n"
)


def _bytes_cell(s: dict[str, Any], turn: int) -> str:
    cell = kb(at(s["bytes"], turn))
    blob = at(s["blob_bytes"], turn)
    return cell if blob is None else f"{cell} ({kb(blob)})"


def _opt(v: Any) -> str:
    return "n/a" if v is None else f"{v:,}"


def _where(result: Result) -> str:
    """Where a RepoSaver turn's bytes, lines and copies go: the files it added, by folder (``ns/`` for
    a subgraph's), at turn 3 and the last."""
    n = result["turns"]
    intro = (
        "Where a RepoSaver turn goes, by folder of the files it added (`ns/...`: a subgraph's "
        "namespace): KB, git lines, copies of the turn's user text, and the number of files.\n"
    )
    rows_: list[list[str]] = []
    for graph, per in result["graphs"].items():
        s = per[REPO]
        for t in sorted({min(3, n), n}):
            rows_.append(
                [
                    graph,
                    str(t),
                    _by_kind(at(s["by_kind"], t), kb),
                    _by_kind(at(s["lines_by_kind"], t), _opt),
                    _by_kind(at(s["copies_by_kind"], t), _opt),
                    _opt(at(s["files"], t)),
                ]
            )
    head = ["Graph", "Turn", "KB by folder", "lines by folder", "copies by folder", "files"]
    return intro + "\n" + md_table(head, "lrlllr", rows_)


def _by_kind(kinds: dict[str, int] | None, shown: Callable[[Any], str]) -> str:
    """``checkpoints 12.5, writes 4.8``: largest first."""
    ordered = sorted((kinds or {}).items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {shown(v)}" for k, v in ordered) or "n/a"
