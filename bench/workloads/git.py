"""Workload 5: git growth; commit the saver's files to a fresh git repository after every chat turn.

And git's view of them: a cold ``git log -p`` through the diff driver ``langgraph-repo
git-setup`` registers, over a longer thread (``git_log_turns``), per file version it converts,
and the driver's start alone beside the interpreter's.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from bench import goals
from bench.common import (
    REPO,
    SQLITE,
    Result,
    Sizes,
    close_saver,
    dir_usage,
    open_sqlite,
    progress,
    rotated,
    run_cmd,
    sqlite_wal_checkpoint,
)
from bench.report import Row, md_table
from bench.workloads.chat import build_chat_graph, user_text
from langgraph_checkpoint_repo import RepoSaver

NAME = "git"
TITLE = "Git growth in detail"


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        }
    )
    return env


def git(work: Path, env: dict[str, str], *args: str) -> str:
    return run_cmd(["git", "-c", "commit.gpgsign=false", "-c", "gc.auto=0", *args], cwd=work, env=env)


def parse_numstat(log: str) -> list[dict[str, Any]]:
    """``git log --reverse --numstat --format=@%s`` to per-commit added/deleted/binary counts."""
    commits: list[dict[str, Any]] = []
    for line in log.splitlines():
        if line.startswith("@"):
            commits.append({"subject": line[1:], "added": 0, "deleted": 0, "files": 0, "binary": 0})
        elif line.strip():
            added, deleted, _ = line.split("\t", 2)
            cur = commits[-1]
            cur["files"] += 1
            if added == "-" or deleted == "-":
                cur["binary"] += 1
            else:
                cur["added"] += int(added)
                cur["deleted"] += int(deleted)
    return commits


def run(tmp: Path, sizes: Sizes) -> Result:
    env = git_env(tmp)
    work = {REPO: tmp / "git-repo", SQLITE: tmp / "git-sqlite"}
    baseline: dict[str, int] = {}
    for name, folder in work.items():
        folder.mkdir()
        git(folder, env, "-c", "init.defaultBranch=main", "init", "-q")
        baseline[name] = dir_usage(folder / ".git")["apparent"]
    (work[SQLITE] / ".gitignore").write_text("*.db-wal\n*.db-shm\n")
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(work[REPO] / ".langgraph"),
        SQLITE: open_sqlite(work[SQLITE] / "chat.db"),
    }
    _play(savers, work, env, sizes.git_turns)
    close_saver(savers[SQLITE])
    per_saver = {
        name: _measure(folder, env, baseline[name], sizes.git_turns) for name, folder in work.items()
    }
    return {"turns": sizes.git_turns, "per_saver": per_saver, "driver": _driver(tmp, env, sizes)}


def _play(
    savers: dict[str, BaseCheckpointSaver[Any]], work: dict[str, Path], env: dict[str, str], turns: int
) -> None:
    """One chat thread, a commit of each saver's files after every turn."""
    graphs = {name: build_chat_graph(s) for name, s in savers.items()}
    config: RunnableConfig = {"configurable": {"thread_id": "git-chat"}}
    for turn in range(turns):
        for name in rotated(list(savers), turn):
            graphs[name].invoke({"messages": [HumanMessage(content=user_text(0, turn))]}, config)
            if name == SQLITE:
                sqlite_wal_checkpoint(savers[SQLITE])
            git(work[name], env, "add", "-A")
            git(work[name], env, "commit", "-q", "-m", f"turn {turn + 1}")


def _measure(folder: Path, env: dict[str, str], baseline: int, n: int) -> dict[str, Any]:
    """Lines and files per commit, then the size of .git before and after an aggressive gc."""
    commits = parse_numstat(git(folder, env, "log", "--reverse", "--numstat", "--format=@%s"))
    before_gc = dir_usage(folder / ".git")["apparent"]
    git(folder, env, "gc", "--aggressive", "--prune=now", "-q")
    after_gc = dir_usage(folder / ".git")["apparent"]
    objects = dict(
        line.split(": ", 1) for line in git(folder, env, "count-objects", "-v").splitlines() if ": " in line
    )
    added = [c["added"] for c in commits]

    def at(turn: int) -> int | None:
        return added[turn - 1] if 0 < turn <= len(added) else None

    return {
        "commits": len(commits),
        "git_dir_bytes_empty": baseline,
        "git_dir_bytes_before_gc": before_gc,
        "git_dir_bytes": after_gc,
        "kb_per_turn_raw": after_gc / n / 1024,
        "kb_per_turn_growth": (after_gc - baseline) / n / 1024,
        "pack_kib": int(objects.get("size-pack", "0")),
        "binary_entries": sum(c["binary"] for c in commits),
        "lines_added_turn3": at(3),
        "lines_added_last": at(n),
        "lines_added_max": max(added) if added else None,
        "files_changed_max": max((c["files"] for c in commits), default=None),
        "per_commit": commits,
    }


# ----------------------------------------------------------------------------
# the diff driver: a cold git log -p, and its start alone
# ----------------------------------------------------------------------------
CACHE = "refs/notes/textconv/langgraph-repo"
"""git's cache of the driver's text (``cachetextconv``): removed before each cold run."""


def _driver(tmp: Path, env: dict[str, str], sizes: Sizes) -> Result:
    """A thread of ``git_log_turns`` chat turns (RepoSaver alone, a commit each), set up by
    ``langgraph-repo git-setup``; a cold ``git log -p`` through the driver it registers, and the
    driver's start alone on the thread's newest checkpoint."""
    folder = tmp / "git-driver"
    folder.mkdir()
    git(folder, env, "-c", "init.defaultBranch=main", "init", "-q")
    progress(f"git: {sizes.git_log_turns} turns for git log -p through the driver ...")
    _play({REPO: RepoSaver(folder / ".langgraph", durable=False)}, {REPO: folder}, env, sizes.git_log_turns)
    run_cmd([sys.executable, "-m", "langgraph_checkpoint_repo", "git-setup"], cwd=folder, env=env)
    command = git(folder, env, "config", "--get", "diff.langgraph-repo.textconv").strip()
    versions = _versions(folder, env)
    logs = _cold_logs(folder, env, sizes.git_log_runs)
    newest = sorted((folder / ".langgraph" / "threads" / "git-chat" / "checkpoints").glob("*.json"))[-1]
    starts = _starts(shlex.split(command), newest, sizes.driver_starts)
    return {
        "turns": sizes.git_log_turns,
        "versions": versions,
        "command": command,
        **logs,
        "per_version_ms": statistics.median(logs["log_p_ms"]) / max(versions, 1),
        "starts_ms": starts,
    }


def _versions(folder: Path, env: dict[str, str]) -> int:
    """The file versions a cold ``git log -p`` converts: every blob a state file had (with
    ``cachetextconv`` git converts each once: the new side of one commit is the old of the next)."""
    raw = git(folder, env, "log", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", ".langgraph")
    blobs = set()
    for line in raw.splitlines():
        if line.startswith(":"):
            blobs.update(b for b in line.split()[2:4] if b.strip("0"))
    return len(blobs)


def _timed(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    """Wall milliseconds of one process, its output read and dropped."""
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def _cold_logs(folder: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    """``git log -p`` with git's cache of the driver's text removed first, alternating with
    ``git log -p --no-textconv`` (the raw JSON: git's own share)."""
    out: dict[str, list[float]] = {"log_p_ms": [], "log_p_no_textconv_ms": []}
    for i in range(runs):
        for key in rotated(list(out), i):
            if key == "log_p_ms":
                git(folder, env, "update-ref", "-d", CACHE)
                out[key].append(_timed(["git", "log", "-p"], folder, env))
            else:
                out[key].append(_timed(["git", "log", "-p", "--no-textconv"], folder, env))
    return out


def _starts(driver: list[str], path: Path, runs: int) -> dict[str, list[float]]:
    """Start-to-exit milliseconds of the driver on one file, of the ``langgraph-repo-textconv``
    script on it (with ``site``: what git-setup registered before the entry), and of the bare
    interpreter both ways, round-robin."""
    commands = {
        "driver": [*driver, str(path)],
        "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    script = Path(sys.executable).with_name("langgraph-repo-textconv")
    if script.exists():
        commands["langgraph-repo-textconv script"] = [str(script), *driver[-2:], str(path)]
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        for name in rotated(list(commands), i):
            times[name].append(_timed(commands[name]))
    return times


def rows(g: Result) -> list[Row]:
    per = g["per_saver"]
    n = g["turns"]

    def both(key: str) -> dict[str, float | None]:
        return {name: per[name][key] for name in (REPO, SQLITE)}

    out = [
        Row(
            "5 git growth",
            f"(.git after gc - empty .git) / {n} turns",
            both("kb_per_turn_growth"),
            "KB/turn",
            goals.GIT_GROWTH.column(g),
        ),
        Row(
            "5 git growth",
            f".git size after gc / {n} turns (incl. empty-repo overhead)",
            both("kb_per_turn_raw"),
            "KB/turn",
        ),
        Row(
            "5 git growth",
            "binary entries in git log --numstat",
            both("binary_entries"),
            "count",
            goals.GIT_TEXT.column(g),
            0,
            show_ratio=False,
        ),
    ]
    out += _driver_rows(g)
    for label, key in (
        ("turn 3", "lines_added_turn3"),
        (f"turn {n}", "lines_added_last"),
        ("max over turns", "lines_added_max"),
    ):
        out.append(
            Row("5 git growth", f"lines added, {label}", {REPO: per[REPO][key]}, "lines", "", 0, False)
        )
    return out


def _driver_rows(g: Result) -> list[Row]:
    """The diff driver's rows: per file version of a cold ``git log -p``, and one start."""
    d = g["driver"]
    return [
        Row(
            "5 git growth",
            f"cold `git log -p` through the diff driver, {d['versions']:,} file versions: per version",
            {REPO: d["per_version_ms"]},
            "ms",
            goals.GIT_LOG_DRIVER.column(g),
            1,
            show_ratio=False,
        ),
        Row(
            "5 git growth",
            "the diff driver on one checkpoint file, start to exit (median)",
            {REPO: statistics.median(d["starts_ms"]["driver"])},
            "ms",
            "",
            1,
            show_ratio=False,
        ),
    ]


def details(g: Result, sizes: dict[str, int]) -> str:
    per = g["per_saver"]
    intro = (
        f"One thread, {g['turns']} chat turns; after each turn `git add -A && git commit` of the "
        "RepoSaver root (`.langgraph` in a fresh repository) or of the SQLite file (after "
        "`PRAGMA wal_checkpoint(TRUNCATE)`), then `git gc --aggressive --prune=now`. Growth subtracts "
        "the size of the freshly initialised `.git` (hook samples etc.).\n"
    )
    sizes_kb = ("git_dir_bytes_empty", "git_dir_bytes_before_gc", "git_dir_bytes")
    table = md_table(
        [
            "Saver",
            "empty .git KB",
            "before gc KB",
            "after gc KB",
            "pack KiB",
            "growth KB/turn",
            "binary entries",
        ],
        "lrrrrrr",
        [
            [
                name,
                *(f"{r[k] / 1024:,.1f}" for k in sizes_kb),
                f"{r['pack_kib']:,}",
                f"{r['kb_per_turn_growth']:.2f}",
                r["binary_entries"],
            ]
            for name, r in per.items()
        ],
    )
    commits = ", ".join(f"{c['added']}/{c['files']}" for c in per[REPO]["per_commit"])
    return "\n".join(
        [
            intro,
            table + "\n",
            f"RepoSaver lines added / files changed per turn: {commits}.\n",
            _driver_details(g),
        ]
    )


def _driver_details(g: Result) -> str:
    """The diff driver: the cold ``git log -p`` runs, and the starts beside the interpreter's."""
    d = g["driver"]
    runs = ", ".join(f"{ms / 1000:.1f} s" for ms in d["log_p_ms"])
    raw = ", ".join(f"{ms / 1000:.2f} s" for ms in d["log_p_no_textconv_ms"])
    intro = (
        f"**The diff driver.** A thread of {d['turns']} chat turns (RepoSaver alone, a commit each: "
        f"{d['versions']:,} file versions), set up by `langgraph-repo git-setup`; git's cache of the "
        f"driver's text removed before each cold `git log -p`: {runs} "
        f"({d['per_version_ms']:.1f} ms per file version); `git log -p --no-textconv`: {raw}. "
        "Start to exit of one process on the thread's newest checkpoint, round-robin:\n"
    )
    table = md_table(
        ["Process", "median ms", "min ms", "runs"],
        "lrrr",
        [
            [
                f"`{name}`" if "pass" in name else name,
                f"{statistics.median(ms):.1f}",
                f"{min(ms):.1f}",
                len(ms),
            ]
            for name, ms in d["starts_ms"].items()
        ],
    )
    return intro + "\n" + table + "\n"
