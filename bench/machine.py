"""What the benchmark ran on: CPUs, platform, versions, SQLite settings, and a filesystem probe."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from langgraph.checkpoint.sqlite import SqliteSaver

from bench.common import loadavg, sqlite_files, try_cmd

T = TypeVar("T")

PACKAGES = (
    "langgraph-checkpoint-repo",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langchain-core",
    "orjson",
    "ormsgpack",
    "jsonschema-rs",
    "jsonschema",
    "filelock",
)


def machine_info(tmp: Path) -> dict[str, Any]:
    journal, synchronous = sqlite_settings(tmp)
    return {
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or _cpu_model(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        # a process that may not write .pyc files compiles every module it imports, each time:
        # the fresh-process and command-line rows then include that
        "bytecode_written": not sys.dont_write_bytecode,
        "tmp_dir": str(tmp),
        "df_T": try_cmd(["df", "-T", str(tmp)]),
        "stat_f": try_cmd(["stat", "-f", "-c", "%T", str(tmp)]),
        "fs_type": _df_type(tmp),
        "loadavg_start": loadavg(),
        "fs_probe_us": fs_probe(tmp),
        "sqlite_journal_mode": journal,
        "sqlite_synchronous": synchronous,
        "versions": versions(),
    }


def versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for pkg in PACKAGES:
        try:
            found[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            found[pkg] = "not installed"
    found["sqlite (library)"] = sqlite3.sqlite_version
    found["git"] = try_cmd(["git", "--version"]).removeprefix("git version ")
    return found


def sqlite_settings(tmp: Path) -> tuple[str, str]:
    """journal_mode and synchronous of a database SqliteSaver has set up."""
    probe = tmp / "probe.db"
    conn = sqlite3.connect(str(probe))
    SqliteSaver(conn).setup()
    journal = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    synchronous = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
        conn.execute("PRAGMA synchronous").fetchone()[0], "?"
    )
    conn.close()
    for p in sqlite_files(probe):
        p.unlink(missing_ok=True)
    return journal, synchronous


def fs_probe(tmp: Path, n: int = 200) -> dict[str, float]:
    """Median microseconds of the file operations a RepoSaver write is made of, on this filesystem:
    create a new file, write 2 KB, fsync it, rename it into place, fsync the folder."""
    folder = tmp / "fs-probe"
    folder.mkdir()
    samples: dict[str, list[int]] = {k: [] for k in ("create", "write", "fsync", "rename", "fsync_dir")}

    def timed(key: str, fn: Callable[..., T], *args: Any) -> T:
        t0 = time.perf_counter_ns()
        out = fn(*args)
        samples[key].append(time.perf_counter_ns() - t0)
        return out

    for i in range(n):
        tmp_path, final = folder / f".f{i}.tmp", folder / f"f{i}.json"
        fd = timed("create", os.open, tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        timed("write", os.write, fd, b"x" * 2048)
        timed("fsync", os.fsync, fd)
        os.close(fd)
        timed("rename", os.replace, tmp_path, final)
        dfd = os.open(folder, os.O_RDONLY)
        timed("fsync_dir", os.fsync, dfd)
        os.close(dfd)
    shutil.rmtree(folder)
    return {k: statistics.median(v) / 1e3 for k, v in samples.items()}


def _df_type(path: Path) -> str:
    lines = try_cmd(["df", "-T", str(path)]).splitlines()
    if len(lines) >= 2 and len(lines[1].split()) > 1:
        return lines[1].split()[1]
    return "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"
