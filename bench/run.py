"""Benchmark RepoSaver beside SqliteSaver (file database) and InMemorySaver, in one run.

Writes a Markdown report (default ``docs/performance.md``) and, with ``--json``,
the raw results. Machines are noisy, so every timing is a median over many
calls, savers are interleaved round-robin (the order rotates every round), and
comparisons are given as ratios measured in the same run.

Workloads (``bench/workloads``):

1. chat: a two-node ``MessagesState`` graph, threads x turns, default durability;
   median wall time per turn, plus the saver calls each turn makes.
2. get_tuple latest in a thread of 5,000 checkpoints and in one of 10 (warm, and
   the first call of a fresh saver instance).
3. ``list(config, filter={"step": k})`` in the 5,000-checkpoint thread.
4. bytes on disk after the chat workload.
5. git growth: commit the saver's files to a fresh git repository after every turn; a cold
   ``git log -p`` through the diff driver over a longer thread, per file version.
6. agents: ``create_agent``, ``create_react_agent`` and a subgraph graph with a fake tool-calling
   model; what each turn writes (bytes, files, git lines, copies of the user's text), beside
   SqliteSaver, each turn committed to git (``--turns``).
7. history: ``get_tuple`` and ``list(filter)`` against history length (10 to 10,000 checkpoints),
   warm and the first call of a fresh Python process, for the three savers; drawn as an SVG next to
   the report (``performance-depth.svg`` beside ``performance.md``).
8. cli: wall time of ``langgraph-repo`` processes: ``--help``, ``threads``, the pre-commit
   ``validate FILE...`` and a whole-root ``validate`` of 5,000 checkpoints.
9. store: RepoStore beside SqliteStore and InMemoryStore.
10. big: the first put of a 50,000-item list and of a 5 MB string, written by a graph.
11. turns and threads: growth curves (replayed); 12. memory: one process reading 1,000 threads
    in turn, as a server does: its resident memory and ``get_tuple``, per saver.

The goals are in ``bench/goals.py``.

Usage::

    python bench/run.py --quick                      # smoke run, small sizes
    python bench/run.py --out docs/performance.md --json bench/results.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    FULL,
    GROWTH_FULL,
    PROJECT_ROOT,
    QUICK,
    TINY,
    Result,
    Sizes,
    fmt_load,
    loadavg,
    progress,
    temp_dir,
)
from bench.goals import check_goals
from bench.machine import machine_info
from bench.report import Section, render_markdown, summary
from bench.workloads import WORKLOADS

NAMES = [w.NAME for w in WORKLOADS]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    size.add_argument("--tiny", action="store_true", help="smallest sizes: checks that the benchmark runs")
    p.add_argument(
        "--out",
        type=Path,
        default=PROJECT_ROOT / "docs" / "performance.md",
        help="Markdown report (default docs/performance.md)",
    )
    p.add_argument("--json", type=Path, default=None, help="also write raw results as JSON here")
    p.add_argument(
        "--tmp-dir",
        type=Path,
        default=PROJECT_ROOT.parent / "bench-tmp",
        help="parent of the temp folder; keep it on the filesystem you care about",
    )
    p.add_argument(
        "--only",
        default=",".join(NAMES),
        help=f"comma-separated subset of {','.join(NAMES)} (chat includes bytes on disk)",
    )
    p.add_argument("--turns", type=int, default=None, help="user turns of the agents workload")
    p.add_argument(
        "--growth-full",
        action="store_true",
        help="the whole ladders of the turns and threads workloads (to 3,000 turns and 10,000 threads; "
        "an hour or more)",
    )
    p.add_argument("--growth-turns", type=_ladder, default=None, help="the turns ladder, e.g. 10,100,1000")
    p.add_argument("--growth-threads", type=_ladder, default=None, help="the threads ladder, e.g. 300,3000")
    p.add_argument(
        "--keep-from",
        type=Path,
        default=None,
        help="the raw results of an earlier run (--json): the workloads this run does not run are taken "
        "from it, so a report can hold a long run of some workloads beside a whole run of the others",
    )
    p.add_argument(
        "--no-postgres",
        action="store_true",
        help="the growth workloads without PostgresSaver (no server started)",
    )
    p.add_argument("--keep-tmp", action="store_true", help="leave the temp data for inspection")
    p.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="render the report (and picture) again from the raw results of an earlier run; runs nothing",
    )
    args = p.parse_args(argv)
    args.only = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(args.only) - set(NAMES)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(NAMES)}")
    return args


def _ladder(text: str) -> tuple[int, ...]:
    """``10,100,1000`` (or ``1_000``): the sizes of a growth ladder."""
    return tuple(sorted({int(x) for x in text.split(",") if x.strip()}))


def chosen_sizes(args: argparse.Namespace) -> Sizes:
    """The sizes of ``--tiny``, ``--quick`` or the full run, with the options that change them."""
    sizes = TINY if args.tiny else QUICK if args.quick else FULL
    if args.turns is not None:
        sizes = dataclasses.replace(sizes, agent_turns=args.turns)
    if args.growth_full:
        sizes = dataclasses.replace(sizes, **GROWTH_FULL)
    if args.growth_turns:
        sizes = dataclasses.replace(sizes, growth_turns=args.growth_turns)
    if args.growth_threads:
        sizes = dataclasses.replace(sizes, growth_threads=args.growth_threads)
    if args.no_postgres:
        sizes = dataclasses.replace(sizes, growth_postgres=False)
    return sizes


def run_all(args: argparse.Namespace, argv: Sequence[str]) -> Result:
    """Machine info, then every chosen workload in registry order, in one temp folder."""
    sizes = chosen_sizes(args)
    # the processes the bench starts (commands, fresh readers) load compiled bytecode as an
    # installed package does: with PYTHONDONTWRITEBYTECODE set (some shells and CI images set
    # it) each one compiled every module again, and a command's wall time was mostly that
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.time()
    results: Result = {
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick,
        "tiny": args.tiny,
        "command": " ".join(shlex.quote(a) for a in ["python", "bench/run.py", *argv]),
        "sizes": dataclasses.asdict(sizes),
    }
    with temp_dir(args.tmp_dir, args.keep_tmp) as tmp:
        results["machine"] = machine_info(tmp)
        for w in WORKLOADS:
            if w.NAME in args.only:
                progress(f"{w.NAME} ...")
                results[w.NAME] = w.run(tmp, sizes)
    results["machine"]["loadavg_end"] = loadavg()
    results["elapsed_s"] = time.time() - started
    return results


def picture_path(out: Path, name: str) -> Path:
    """A workload's SVG, next to the report: ``docs/performance-depth.svg`` for the history workload."""
    return out.with_name(f"{out.stem}-{name}.svg")


def write_pictures(results: Result, out: Path) -> list[Path]:
    """The SVG of every workload that draws one and ran; each result then names its picture."""
    written = []
    for w in WORKLOADS:
        name = getattr(w, "PICTURE", None)
        if name is None or not results.get(w.NAME):
            continue
        path = picture_path(out, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(w.picture(results[w.NAME]))  # type: ignore[attr-defined]
        results[w.NAME]["picture"] = path.name  # the report links it by this relative name
        written.append(path)
    return written


def keep_from(results: Result, earlier: Result) -> Result:
    """``results`` with every workload they lack taken from ``earlier`` (another run's raw
    results), and ``kept`` saying which and from when, one entry per run they come from (a
    workload ``earlier`` itself kept keeps its own run's); the report says so at its top."""
    names = [w.NAME for w in WORKLOADS if not results.get(w.NAME) and earlier.get(w.NAME)]
    if not names:
        return results
    m = earlier["machine"]
    own = {
        "workloads": [],
        "started": earlier["started"],
        "command": earlier["command"],
        "load": [m.get("loadavg_start"), m.get("loadavg_end")],
    }
    runs: list[dict[str, Any]] = [{**k, "workloads": []} for k in kept_runs(earlier)]
    for name in names:
        run = next((r for r, k in zip(runs, kept_runs(earlier), strict=True) if name in k["workloads"]), own)
        run["workloads"].append(name)
    kept = [*kept_runs(results), *(r for r in [*runs, own] if r["workloads"])]
    return {**results, **{name: earlier[name] for name in names}, "kept": kept}


def kept_runs(results: Result) -> list[dict[str, Any]]:
    """The earlier runs a report's kept workloads come from (one entry in reports before)."""
    kept = results.get("kept") or []
    return [kept] if isinstance(kept, dict) else list(kept)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    results = json.loads(args.from_json.read_text()) if args.from_json else run_all(args, argv)
    if args.keep_from:
        results = keep_from(results, json.loads(args.keep_from.read_text()))
    pictures = write_pictures(results, args.out)
    ran = [w for w in WORKLOADS if results.get(w.NAME)]
    rows = [row for w in ran for row in w.rows(results[w.NAME])]
    sections = [Section(w.TITLE, w.details(results[w.NAME], results["sizes"])) for w in ran]
    goals = check_goals(results)
    results["goals"] = [dataclasses.asdict(g) for g in goals]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_markdown(results, rows, goals, sections, NAMES))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    m = results["machine"]
    print(
        f"machine: {m['cpu_count']} CPUs, Python {m['python']}, {m['fs_type']} at {m['tmp_dir']}, "
        f"load {fmt_load(m['loadavg_start'])} -> {fmt_load(m['loadavg_end'])}"
    )
    print(summary(rows, goals))
    print(f"\nreport: {args.out}" + (f", json: {args.json}" if args.json else ""))
    for path in pictures:
        print(f"picture: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
