"""Workload 5: git growth; commit the saver's files to a fresh git repository after every chat turn."""

from __future__ import annotations

import os
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
    return {"turns": sizes.git_turns, "per_saver": per_saver}


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
    for label, key in (
        ("turn 3", "lines_added_turn3"),
        (f"turn {n}", "lines_added_last"),
        ("max over turns", "lines_added_max"),
    ):
        out.append(
            Row("5 git growth", f"lines added, {label}", {REPO: per[REPO][key]}, "lines", "", 0, False)
        )
    return out


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
    return "\n".join([intro, table + "\n", f"RepoSaver lines added / files changed per turn: {commits}.\n"])
