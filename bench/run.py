"""Benchmark RepoSaver beside SqliteSaver (file database) and InMemorySaver, in one run.

Writes a Markdown report (default ``docs/performance.md``) and, with ``--json``,
the raw results. Machines are noisy, so every timing is a median over many
calls, savers are interleaved round-robin (the order rotates every round), and
comparisons are given as ratios measured in the same run.

Workloads:

1. chat: a two-node ``MessagesState`` graph, threads x turns, default durability;
   median wall time per turn, plus the saver calls each turn makes.
2. get_tuple latest in a thread of 5,000 checkpoints and in one of 10 (warm, and
   the first call of a fresh saver instance).
3. ``list(config, filter={"step": k})`` in the 5,000-checkpoint thread.
4. bytes on disk after the chat workload.
5. git growth: commit the saver's files to a fresh git repository after every turn.

Usage::

    python bench/run.py --quick                      # smoke run, small sizes
    python bench/run.py --out docs/performance.md --json bench/results.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import random
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langgraph_checkpoint_repo import RepoSaver

REPO = "RepoSaver"
REPO_FAST = "RepoSaver (durable=False)"
SQLITE = "SqliteSaver"
MEMORY = "InMemorySaver"
MAIN_SAVERS = (REPO, SQLITE, MEMORY)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
COUNTED_METHODS = ("get_tuple", "put", "put_writes", "list", "get_delta_channel_history")
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


@dataclass(frozen=True)
class Sizes:
    chat_threads: int
    chat_turns: int
    big_checkpoints: int
    small_checkpoints: int
    get_tuple_calls: int
    cold_repeats: int
    list_calls: int
    git_turns: int


FULL = Sizes(
    chat_threads=3,
    chat_turns=30,
    big_checkpoints=5000,
    small_checkpoints=10,
    get_tuple_calls=300,
    cold_repeats=7,
    list_calls=50,
    git_turns=30,
)
QUICK = Sizes(
    chat_threads=2,
    chat_turns=5,
    big_checkpoints=300,
    small_checkpoints=10,
    get_tuple_calls=30,
    cold_repeats=3,
    list_calls=10,
    git_turns=5,
)

WORKLOADS = ("chat", "depth", "git")  # chat includes bytes on disk; depth is get_tuple + list


# ----------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------
def ms(ns: float) -> float:
    return ns / 1e6


def median_ms(samples_ns: Sequence[int]) -> float:
    return ms(statistics.median(samples_ns))


def quantile_ms(samples_ns: Sequence[int], q: float) -> float:
    data = sorted(samples_ns)
    if not data:
        return float("nan")
    pos = min(len(data) - 1, max(0, round(q * (len(data) - 1))))
    return ms(data[pos])


def rotated(names: Sequence[str], k: int) -> list[str]:
    """Round-robin order that rotates every round, so no saver always goes first."""
    k %= len(names)
    return [*names[k:], *names[:k]]


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}x"


def dir_usage(path: Path, skip: Callable[[Path], bool] | None = None) -> dict[str, int]:
    """Apparent bytes (sum of file sizes), allocated bytes and file count under ``path``."""
    apparent = allocated = files = 0
    for folder, _, names in os.walk(path):
        for name in names:
            p = Path(folder) / name
            if skip is not None and skip(p):
                continue
            st = p.lstat()
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return {"apparent": apparent, "allocated": allocated, "files": files}


def files_usage(paths: Sequence[Path]) -> dict[str, int]:
    apparent = allocated = files = 0
    for p in paths:
        if p.exists():
            st = p.stat()
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return {"apparent": apparent, "allocated": allocated, "files": files}


def sqlite_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def run_cmd(args: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return out.stdout


def try_cmd(args: Sequence[str]) -> str:
    try:
        return run_cmd(args).strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"unavailable ({exc})"


def open_sqlite(path: Path) -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


def close_saver(saver: BaseCheckpointSaver[Any]) -> None:
    if isinstance(saver, SqliteSaver):
        saver.conn.close()


def progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# counting saver calls
# ----------------------------------------------------------------------------
class CallCounter:
    """Wraps a saver instance's methods to count calls and time spent in them."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.counts: Counter[str] = Counter()
        self.time_ns: Counter[str] = Counter()
        self._lock = threading.Lock()
        for name in COUNTED_METHODS:
            original = getattr(saver, name)
            setattr(saver, name, self._wrap(name, original))

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter_ns() - t0
                with self._lock:
                    self.counts[name] += 1
                    self.time_ns[name] += elapsed  # for list: only creating the generator

        return wrapper

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self.counts), Counter(self.time_ns)


# ----------------------------------------------------------------------------
# machine info
# ----------------------------------------------------------------------------
def machine_info(tmp: Path) -> dict[str, Any]:
    versions: dict[str, str] = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    versions["sqlite (library)"] = sqlite3.sqlite_version
    versions["git"] = try_cmd(["git", "--version"]).removeprefix("git version ")
    probe = tmp / "probe.db"
    conn = sqlite3.connect(str(probe))
    SqliteSaver(conn).setup()
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    synchronous = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(
        conn.execute("PRAGMA synchronous").fetchone()[0], "?"
    )
    conn.close()
    for p in sqlite_files(probe):
        p.unlink(missing_ok=True)
    return {
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or _cpu_model(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "tmp_dir": str(tmp),
        "df_T": try_cmd(["df", "-T", str(tmp)]),
        "stat_f": try_cmd(["stat", "-f", "-c", "%T", str(tmp)]),
        "fs_type": _df_type(tmp),
        "loadavg_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "fs_probe_us": fs_probe(tmp),
        "sqlite_journal_mode": journal,
        "sqlite_synchronous": synchronous,
        "versions": versions,
    }


def fs_probe(tmp: Path, n: int = 200) -> dict[str, float]:
    """Median microseconds of the file operations a RepoSaver write is made of, on this filesystem:
    create a new file, write 2 KB, fsync it, rename it into place, fsync the folder."""
    folder = tmp / "fs-probe"
    folder.mkdir()
    samples: dict[str, list[int]] = {k: [] for k in ("create", "write", "fsync", "rename", "fsync_dir")}

    def timed(key: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter_ns()
        out = fn()
        samples[key].append(time.perf_counter_ns() - t0)
        return out

    for i in range(n):
        tmp_path, final = folder / f".f{i}.tmp", folder / f"f{i}.json"
        fd = timed("create", lambda p=tmp_path: os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        timed("write", lambda fd=fd: os.write(fd, b"x" * 2048))
        timed("fsync", lambda fd=fd: os.fsync(fd))
        os.close(fd)
        timed("rename", lambda a=tmp_path, b=final: os.replace(a, b))
        dfd = os.open(folder, os.O_RDONLY)
        timed("fsync_dir", lambda dfd=dfd: os.fsync(dfd))
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


# ----------------------------------------------------------------------------
# workload 1 and 4: chat, bytes on disk
# ----------------------------------------------------------------------------
def build_chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    def echo(state: MessagesState) -> dict[str, list[AnyMessage]]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(content=f"You said: {last.content}")]}

    def follow_up(state: MessagesState) -> dict[str, list[AnyMessage]]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"Anything else? ({n} messages so far)")]}

    builder = StateGraph(MessagesState)
    builder.add_node("echo", echo)
    builder.add_node("follow_up", follow_up)
    builder.add_edge(START, "echo")
    builder.add_edge("echo", "follow_up")
    builder.add_edge("follow_up", END)
    return builder.compile(checkpointer=checkpointer)


def user_text(thread: int, turn: int) -> str:
    return (
        f"Thread {thread}, turn {turn}: please summarise the open items for the release "
        f"and tell me which of them block the deploy."
    )


def run_chat(tmp: Path, sizes: Sizes) -> dict[str, Any]:
    db = tmp / "chat.db"
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(tmp / "chat-repo"),
        REPO_FAST: RepoSaver(tmp / "chat-repo-fast", durable=False),
        SQLITE: open_sqlite(db),
        MEMORY: InMemorySaver(),
    }
    counters = {name: CallCounter(s) for name, s in savers.items()}
    graphs = {name: build_chat_graph(s) for name, s in savers.items()}
    names = list(savers)
    times: dict[str, list[int]] = {n: [] for n in names}
    turn_index: dict[str, list[int]] = {n: [] for n in names}
    per_turn_calls: dict[str, list[dict[str, int]]] = {n: [] for n in names}
    saver_ns: dict[str, list[int]] = {n: [] for n in names}
    rnd = 0
    for turn in range(sizes.chat_turns):
        for thread in range(sizes.chat_threads):
            for name in rotated(names, rnd):
                config: RunnableConfig = {"configurable": {"thread_id": f"chat-{thread}"}}
                before, before_t = counters[name].snapshot()
                t0 = time.perf_counter_ns()
                graphs[name].invoke({"messages": [HumanMessage(content=user_text(thread, turn))]}, config)
                elapsed = time.perf_counter_ns() - t0
                after, after_t = counters[name].snapshot()
                times[name].append(elapsed)
                turn_index[name].append(turn)
                per_turn_calls[name].append({m: after[m] - before[m] for m in COUNTED_METHODS})
                saver_ns[name].append(sum(after_t.values()) - sum(before_t.values()))
            rnd += 1
    # sanity: every saver holds the same conversation
    for name, graph in graphs.items():
        for thread in range(sizes.chat_threads):
            state = graph.get_state({"configurable": {"thread_id": f"chat-{thread}"}})
            got = len(state.values["messages"])
            if got != 3 * sizes.chat_turns:
                raise RuntimeError(f"{name}: thread {thread} has {got} messages, not {3 * sizes.chat_turns}")

    results: dict[str, Any] = {}
    k = max(1, sizes.chat_turns // 3)
    for name in names:
        samples = times[name]
        early = [t for t, i in zip(samples, turn_index[name], strict=True) if i < k]
        late = [t for t, i in zip(samples, turn_index[name], strict=True) if i >= sizes.chat_turns - k]
        calls = per_turn_calls[name]
        results[name] = {
            "turns": len(samples),
            "median_ms": median_ms(samples),
            "p10_ms": quantile_ms(samples, 0.1),
            "p90_ms": quantile_ms(samples, 0.9),
            "first_turn_ms": ms(samples[0]),
            "median_first_third_ms": median_ms(early),
            "median_last_third_ms": median_ms(late),
            "median_saver_ms": median_ms(saver_ns[name]),
            "calls_per_turn": {
                m: {
                    "median": statistics.median(c[m] for c in calls),
                    "min": min(c[m] for c in calls),
                    "max": max(c[m] for c in calls),
                }
                for m in COUNTED_METHODS
            },
        }

    # workload 4: bytes on disk after the chat workload
    sqlite_open = files_usage(sqlite_files(db))
    savers[SQLITE].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
    close_saver(savers[SQLITE])
    sqlite_closed = files_usage(sqlite_files(db))

    def in_cache(p: Path) -> bool:
        return ".cache" in p.parts

    disk = {
        REPO: dir_usage(tmp / "chat-repo"),
        REPO + " without .cache": dir_usage(tmp / "chat-repo", skip=in_cache),
        REPO_FAST: dir_usage(tmp / "chat-repo-fast"),
        SQLITE: sqlite_closed,
        SQLITE + " (open, before checkpoint)": sqlite_open,
    }
    return {"per_saver": results, "disk": disk}


# ----------------------------------------------------------------------------
# workloads 2 and 3: deep threads, get_tuple and list
# ----------------------------------------------------------------------------
Step = tuple[Checkpoint, CheckpointMetadata, ChannelVersions]


def make_chain(n: int, rng: random.Random) -> list[Step]:
    """A thread of ``n`` checkpoints: a counter and a trigger change every step, a status
    every 25 steps, a growing ``log`` list every 10 steps. Versions in InMemorySaver's shape."""
    counter = 0

    def next_version() -> str:
        nonlocal counter
        counter += 1
        return f"{counter:032}.{rng.random():016}"

    versions: dict[str, str] = {}
    values: dict[str, Any] = {}
    log: list[str] = []
    steps: list[Step] = []
    for i in range(n):
        changed = ["count", "branch:to:work"]
        values["count"] = i
        values["branch:to:work"] = None
        if i % 25 == 0:
            changed.append("status")
            values["status"] = f"phase {i // 25}: collecting results"
        if i % 10 == 0:
            changed.append("log")
            log = [*log, f"step {i}: checked {rng.randrange(1000)} items"][-20:]
            values["log"] = list(log)
        seen_work = versions.get("branch:to:work")
        new_versions: dict[str, str | int | float] = {}
        for ch in changed:
            versions[ch] = next_version()
            new_versions[ch] = versions[ch]
        checkpoint: Checkpoint = {
            "v": 4,
            "id": str(uuid6(clock_seq=i)),
            "ts": dt.datetime.now(dt.timezone.utc).isoformat(),
            "channel_values": dict(values),
            "channel_versions": dict(versions),
            "versions_seen": {"work": {"branch:to:work": seen_work} if seen_work else {}},
            "updated_channels": sorted(changed),
        }
        metadata: CheckpointMetadata = {"source": "loop", "step": i, "parents": {}}
        steps.append((checkpoint, metadata, new_versions))
    return steps


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def run_depth(tmp: Path, sizes: Sizes) -> dict[str, Any]:
    rng = random.Random(1234)
    small = make_chain(sizes.small_checkpoints, rng)
    big = make_chain(sizes.big_checkpoints, rng)
    repo_root = tmp / "depth-repo"
    db = tmp / "depth.db"
    fill_savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(repo_root),
        SQLITE: open_sqlite(db),
        MEMORY: InMemorySaver(),
    }
    names = list(fill_savers)
    put_ns: dict[str, list[int]] = {n: [] for n in names}
    rnd = 0
    for thread_id, chain in (("small", small), ("big", big)):
        configs = {n: thread_config(thread_id) for n in names}
        for checkpoint, metadata, new_versions in chain:
            for name in rotated(names, rnd):
                t0 = time.perf_counter_ns()
                configs[name] = fill_savers[name].put(configs[name], checkpoint, metadata, new_versions)
                put_ns[name].append(time.perf_counter_ns() - t0)
            rnd += 1
    progress("depth: filled")
    latest = {"big": big[-1][0]["id"], "small": small[-1][0]["id"]}

    # cold: the first call of a fresh instance (the OS page cache is warm)
    cold: dict[str, dict[str, list[int]]] = {REPO: {"big": [], "small": []}, SQLITE: {"big": [], "small": []}}
    openers: dict[str, Callable[[], BaseCheckpointSaver[Any]]] = {
        REPO: lambda: RepoSaver(repo_root),
        SQLITE: lambda: open_sqlite(db),
    }
    for rep in range(sizes.cold_repeats):
        for name in rotated(list(openers), rep):
            for thread_id in ("big", "small"):
                saver = openers[name]()
                t0 = time.perf_counter_ns()
                tup = saver.get_tuple(thread_config(thread_id))
                cold[name][thread_id].append(time.perf_counter_ns() - t0)
                assert tup is not None and tup.checkpoint["id"] == latest[thread_id], name
                close_saver(saver)

    # warm: many calls on one fresh instance each (InMemorySaver: the filled one)
    readers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(repo_root),
        SQLITE: open_sqlite(db),
        MEMORY: fill_savers[MEMORY],
    }
    warm: dict[str, dict[str, list[int]]] = {n: {"big": [], "small": []} for n in names}
    for rep in range(sizes.get_tuple_calls + 1):
        for name in rotated(names, rep):
            for thread_id in rotated(["big", "small"], rep):
                t0 = time.perf_counter_ns()
                tup = readers[name].get_tuple(thread_config(thread_id))
                elapsed = time.perf_counter_ns() - t0
                if rep == 0:
                    assert tup is not None and tup.checkpoint["id"] == latest[thread_id], name
                    chain = big if thread_id == "big" else small
                    want = {k: v for k, v in chain[-1][0]["channel_values"].items() if v is not None}
                    got = {k: v for k, v in tup.checkpoint["channel_values"].items() if v is not None}
                    assert got == want, (name, got, want)
                    continue  # the first call of an instance is the cold one, measured above
                warm[name][thread_id].append(elapsed)
    progress("depth: get_tuple done")

    # list with a metadata filter, on the same reader instances
    ks = [rng.randrange(sizes.big_checkpoints) for _ in range(sizes.list_calls + 1)]
    list_first: dict[str, int] = {}
    list_ns: dict[str, list[int]] = {n: [] for n in names}
    for rep, k in enumerate(ks):
        for name in rotated(names, rep):
            t0 = time.perf_counter_ns()
            found = list(readers[name].list(thread_config("big"), filter={"step": k}))
            elapsed = time.perf_counter_ns() - t0
            if len(found) != 1 or found[0].metadata["step"] != k:
                raise RuntimeError(f"{name}: list(filter step={k}) found {len(found)} checkpoints")
            if rep == 0:
                list_first[name] = elapsed
            else:
                list_ns[name].append(elapsed)
    progress("depth: list done")
    for saver in {id(s): s for s in [*fill_savers.values(), *readers.values()]}.values():
        close_saver(saver)

    out: dict[str, Any] = {
        "big_checkpoints": sizes.big_checkpoints,
        "small_checkpoints": sizes.small_checkpoints,
        "per_saver": {},
    }
    for name in names:
        entry: dict[str, Any] = {
            "put_median_ms": median_ms(put_ns[name]),
            "put_p90_ms": quantile_ms(put_ns[name], 0.9),
            "get_tuple_big_median_ms": median_ms(warm[name]["big"]),
            "get_tuple_big_p90_ms": quantile_ms(warm[name]["big"], 0.9),
            "get_tuple_small_median_ms": median_ms(warm[name]["small"]),
            "get_tuple_small_p90_ms": quantile_ms(warm[name]["small"], 0.9),
            "get_tuple_calls": len(warm[name]["big"]),
            "list_filter_median_ms": median_ms(list_ns[name]),
            "list_filter_p90_ms": quantile_ms(list_ns[name], 0.9),
            "list_filter_first_ms": ms(list_first[name]),
            "list_calls": len(list_ns[name]),
        }
        if name in cold:
            entry["get_tuple_big_cold_median_ms"] = median_ms(cold[name]["big"])
            entry["get_tuple_small_cold_median_ms"] = median_ms(cold[name]["small"])
            entry["get_tuple_big_cold_all_ms"] = [ms(x) for x in cold[name]["big"]]
            entry["get_tuple_small_cold_all_ms"] = [ms(x) for x in cold[name]["small"]]
        out["per_saver"][name] = entry
    out["repo_files"] = dir_usage(repo_root)
    return out


# ----------------------------------------------------------------------------
# workload 5: git growth
# ----------------------------------------------------------------------------
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


def run_git(tmp: Path, sizes: Sizes) -> dict[str, Any]:
    env = git_env(tmp)
    work = {REPO: tmp / "git-repo", SQLITE: tmp / "git-sqlite"}
    baseline: dict[str, int] = {}
    for name, folder in work.items():
        folder.mkdir()
        git(folder, env, "-c", "init.defaultBranch=main", "init", "-q")
        baseline[name] = dir_usage(folder / ".git")["apparent"]
    (work[SQLITE] / ".gitignore").write_text("*.db-wal\n*.db-shm\n")
    db = work[SQLITE] / "chat.db"
    savers: dict[str, BaseCheckpointSaver[Any]] = {
        REPO: RepoSaver(work[REPO] / ".langgraph"),
        SQLITE: open_sqlite(db),
    }
    graphs = {name: build_chat_graph(s) for name, s in savers.items()}
    config: RunnableConfig = {"configurable": {"thread_id": "git-chat"}}
    for turn in range(sizes.git_turns):
        for name in rotated(list(savers), turn):
            graphs[name].invoke({"messages": [HumanMessage(content=user_text(0, turn))]}, config)
            if name == SQLITE:
                savers[SQLITE].conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
            git(work[name], env, "add", "-A")
            git(work[name], env, "commit", "-q", "-m", f"turn {turn + 1}")
    close_saver(savers[SQLITE])
    out: dict[str, Any] = {"turns": sizes.git_turns, "per_saver": {}}
    for name, folder in work.items():
        commits = parse_numstat(git(folder, env, "log", "--reverse", "--numstat", "--format=@%s"))
        before_gc = dir_usage(folder / ".git")["apparent"]
        git(folder, env, "gc", "--aggressive", "--prune=now", "-q")
        after_gc = dir_usage(folder / ".git")["apparent"]
        objects = dict(
            line.split(": ", 1)
            for line in git(folder, env, "count-objects", "-v").splitlines()
            if ": " in line
        )
        n = sizes.git_turns
        added = [c["added"] for c in commits]

        def at(turn: int, values: list[int] = added) -> int | None:
            return values[turn - 1] if 0 < turn <= len(values) else None

        out["per_saver"][name] = {
            "commits": len(commits),
            "git_dir_bytes_empty": baseline[name],
            "git_dir_bytes_before_gc": before_gc,
            "git_dir_bytes": after_gc,
            "kb_per_turn_raw": after_gc / n / 1024,
            "kb_per_turn_growth": (after_gc - baseline[name]) / n / 1024,
            "pack_kib": int(objects.get("size-pack", "0")),
            "binary_entries": sum(c["binary"] for c in commits),
            "lines_added_turn3": at(3),
            "lines_added_last": at(n),
            "lines_added_max": max(added) if added else None,
            "files_changed_max": max((c["files"] for c in commits), default=None),
            "per_commit": commits,
        }
    return out


# ----------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------
@dataclass
class Row:
    workload: str
    metric: str
    values: dict[str, float | None]
    unit: str
    goal: str = ""
    digits: int = 2
    show_ratio: bool = True

    def cell(self, name: str) -> str:
        v = self.values.get(name)
        if v is None:
            return "n/a"
        return f"{v:,.{self.digits}f}"

    def ratio_cell(self) -> str:
        if not self.show_ratio:
            return ""
        return fmt_ratio(ratio(self.values.get(REPO), self.values.get(SQLITE)))


@dataclass
class Goal:
    text: str
    measured: str
    met: bool | None


def build_rows(results: dict[str, Any]) -> tuple[list[Row], list[Goal]]:
    rows: list[Row] = []
    goals: list[Goal] = []
    chat = results.get("chat")
    if chat:
        per = chat["per_saver"]
        turns = per[REPO]["turns"]
        rows.append(
            Row(
                "1 chat",
                f"median turn ({turns} turns, durability=async)",
                {n: per[n]["median_ms"] for n in MAIN_SAVERS},
                "ms",
                "RepoSaver <= 1.2x SqliteSaver",
            )
        )
        turn_ratio = ratio(per[REPO]["median_ms"], per[SQLITE]["median_ms"])
        goals.append(
            Goal(
                "Chat turn (median, full fsync durability) <= 1.2x SqliteSaver",
                f"{per[REPO]['median_ms']:.2f} ms vs {per[SQLITE]['median_ms']:.2f} ms"
                f" ({fmt_ratio(turn_ratio)})",
                turn_ratio is not None and turn_ratio <= 1.2,
            )
        )
        rows.append(
            Row(
                "1 chat",
                "median turn, RepoSaver(durable=False) in the RepoSaver column",
                {REPO: per[REPO_FAST]["median_ms"], SQLITE: per[SQLITE]["median_ms"]},
                "ms",
            )
        )
        rows.append(
            Row(
                "1 chat",
                "median time inside saver calls per turn (summed; calls overlap)",
                {n: per[n]["median_saver_ms"] for n in MAIN_SAVERS},
                "ms",
            )
        )
        disk = chat["disk"]
        rows.append(
            Row(
                "4 bytes on disk",
                "after chat: sum of file sizes (Sqlite: db+wal+shm, closed)",
                {REPO: disk[REPO]["apparent"] / 1024, SQLITE: disk[SQLITE]["apparent"] / 1024},
                "KB",
                "RepoSaver <= SqliteSaver",
                1,
            )
        )
        rows.append(
            Row(
                "4 bytes on disk",
                "after chat: allocated blocks (du)",
                {REPO: disk[REPO]["allocated"] / 1024, SQLITE: disk[SQLITE]["allocated"] / 1024},
                "KB",
                "",
                1,
            )
        )
        r = ratio(disk[REPO]["apparent"], disk[SQLITE]["apparent"])
        goals.append(
            Goal(
                "Bytes on disk after chat: RepoSaver <= SqliteSaver",
                f"{disk[REPO]['apparent'] / 1024:,.1f} KB vs {disk[SQLITE]['apparent'] / 1024:,.1f} KB"
                f" ({fmt_ratio(r)})",
                r is not None and r <= 1.0,
            )
        )
    depth = results.get("depth")
    if depth:
        per = depth["per_saver"]
        nb, ns = depth["big_checkpoints"], depth["small_checkpoints"]

        def col(key: str) -> dict[str, float | None]:
            return {n: per[n].get(key) for n in MAIN_SAVERS}

        rows.append(
            Row(
                "2 get_tuple",
                f"latest, {nb:,} checkpoints, warm median",
                col("get_tuple_big_median_ms"),
                "ms",
                "RepoSaver < 1 ms",
                3,
            )
        )
        rows.append(
            Row(
                "2 get_tuple",
                f"latest, {ns} checkpoints, warm median",
                col("get_tuple_small_median_ms"),
                "ms",
                "",
                3,
            )
        )
        rows.append(
            Row(
                "2 get_tuple",
                f"latest, {nb:,} checkpoints, first call of a fresh instance",
                col("get_tuple_big_cold_median_ms"),
                "ms",
                "",
                3,
            )
        )
        rows.append(
            Row(
                "2 get_tuple",
                f"latest, {ns} checkpoints, first call of a fresh instance",
                col("get_tuple_small_cold_median_ms"),
                "ms",
                "",
                3,
            )
        )
        rows.append(
            Row(
                "2 put",
                f"direct put while filling ({ns} + {nb:,} checkpoints), median",
                col("put_median_ms"),
                "ms",
                "",
                3,
            )
        )
        rows.append(
            Row(
                "3 list",
                f"filter step=k in {nb:,} checkpoints, median of {per[REPO]['list_calls']}",
                col("list_filter_median_ms"),
                "ms",
                "RepoSaver <= 2x SqliteSaver",
                3,
            )
        )
        rows.append(
            Row("3 list", "filter, first call of the instance", col("list_filter_first_ms"), "ms", "", 3)
        )
        big = per[REPO]["get_tuple_big_median_ms"]
        small = per[REPO]["get_tuple_small_median_ms"]
        goals.append(
            Goal(f"get_tuple latest at {nb:,} checkpoints (warm) < 1 ms", f"{big:.3f} ms", big < 1.0)
        )
        rr = ratio(big, small)
        goals.append(
            Goal(
                f"get_tuple at {nb:,} <= 2x get_tuple at {ns} (RepoSaver)",
                f"{big:.3f} ms vs {small:.3f} ms ({fmt_ratio(rr)})",
                rr is not None and rr <= 2.0,
            )
        )
        lr = ratio(per[REPO]["list_filter_median_ms"], per[SQLITE]["list_filter_median_ms"])
        goals.append(
            Goal(
                "list(filter={'step': k}) <= 2x SqliteSaver",
                f"{per[REPO]['list_filter_median_ms']:.3f} ms vs "
                f"{per[SQLITE]['list_filter_median_ms']:.3f} ms ({fmt_ratio(lr)})",
                lr is not None and lr <= 2.0,
            )
        )
    g = results.get("git")
    if g:
        per = g["per_saver"]
        n = g["turns"]
        rows.append(
            Row(
                "5 git growth",
                f"(.git after gc - empty .git) / {n} turns",
                {REPO: per[REPO]["kb_per_turn_growth"], SQLITE: per[SQLITE]["kb_per_turn_growth"]},
                "KB/turn",
                "RepoSaver <= 6 KB/turn",
            )
        )
        rows.append(
            Row(
                "5 git growth",
                f".git size after gc / {n} turns (incl. empty-repo overhead)",
                {REPO: per[REPO]["kb_per_turn_raw"], SQLITE: per[SQLITE]["kb_per_turn_raw"]},
                "KB/turn",
            )
        )
        rows.append(
            Row(
                "5 git growth",
                "binary entries in git log --numstat",
                {REPO: per[REPO]["binary_entries"], SQLITE: per[SQLITE]["binary_entries"]},
                "count",
                "RepoSaver: 0",
                0,
                show_ratio=False,
            )
        )
        for label, key in (
            ("turn 3", "lines_added_turn3"),
            (f"turn {n}", "lines_added_last"),
            ("max over turns", "lines_added_max"),
        ):
            rows.append(
                Row("5 git growth", f"lines added, {label}", {REPO: per[REPO][key]}, "lines", "", 0, False)
            )
        growth = per[REPO]["kb_per_turn_growth"]
        raw = per[REPO]["kb_per_turn_raw"]
        goals.append(
            Goal(
                "git growth <= 6 KB per turn (RepoSaver)",
                f"{growth:.2f} KB/turn growth; {raw:.2f} KB/turn counting the whole .git",
                growth <= 6.0,
            )
        )
        goals.append(
            Goal(
                "every RepoSaver change is text in git",
                f"{per[REPO]['binary_entries']} binary numstat entries "
                f"(SqliteSaver: {per[SQLITE]['binary_entries']})",
                per[REPO]["binary_entries"] == 0,
            )
        )
    return rows, goals


def table(rows: list[Row]) -> str:
    head = "| Workload | Metric | Unit | RepoSaver | SqliteSaver | InMemorySaver | Repo/Sqlite | Goal |"
    lines = [head, "|---|---|---|--:|--:|--:|--:|---|"]
    for r in rows:
        lines.append(
            f"| {r.workload} | {r.metric} | {r.unit} | {r.cell(REPO)} | {r.cell(SQLITE)} | "
            f"{r.cell(MEMORY)} | {r.ratio_cell()} | {r.goal} |"
        )
    return "\n".join(lines)


def goals_table(goals: list[Goal]) -> str:
    lines = ["| Goal | Measured | Met |", "|---|---|---|"]
    for g in goals:
        met = "n/a" if g.met is None else ("yes" if g.met else "**NO**")
        lines.append(f"| {g.text} | {g.measured} | {met} |")
    return "\n".join(lines)


def render_markdown(results: dict[str, Any], rows: list[Row], goals: list[Goal]) -> str:
    m = results["machine"]
    sizes = results["sizes"]
    out: list[str] = []
    out.append("# Performance\n")
    out.append(
        "Generated by `bench/run.py` — do not edit by hand; rerun the benchmark instead. "
        f"Run at {results['started']} ({results['elapsed_s']:.0f} s)"
        f"{' with `--quick` (small sizes; not representative)' if results['quick'] else ''}.\n"
    )
    out.append(
        "RepoSaver is measured beside `SqliteSaver` (a database file in the same temp folder) and "
        "`InMemorySaver` in one process. Timings are medians of wall-clock time; savers are interleaved "
        "round-robin and the order rotates every round, so drifts in machine load hit all of them alike. "
        "Compare the ratios rather than the absolute numbers across machines. RepoSaver runs with its "
        "default `durable=True` (fsync of every file and folder) unless noted; SqliteSaver runs with "
        f"journal_mode={m['sqlite_journal_mode']}, synchronous={m['sqlite_synchronous']}.\n"
    )
    out.append("## Goals\n")
    out.append(goals_table(goals) + "\n")
    out.append("## Results\n")
    out.append(table(rows) + "\n")
    chat = results.get("chat")
    if chat:
        per = chat["per_saver"]
        out.append("### Chat turns in detail\n")
        out.append(
            f"{sizes['chat_threads']} threads x {sizes['chat_turns']} turns; a turn is one `invoke` of a "
            "two-node graph (`echo` then `follow_up`, each appending an `AIMessage`) with LangGraph's "
            "default durability. Saver time is the wall time spent inside the wrapped saver methods "
            "(with async durability some of it overlaps the graph's own work).\n"
        )
        lines = [
            "| Saver | median ms | p10 ms | p90 ms | first third ms | last third ms | first turn ms "
            "| saver ms/turn |",
            "|---|--:|--:|--:|--:|--:|--:|--:|",
        ]
        for name, r in per.items():
            lines.append(
                f"| {name} | {r['median_ms']:.2f} | {r['p10_ms']:.2f} | {r['p90_ms']:.2f} | "
                f"{r['median_first_third_ms']:.2f} | {r['median_last_third_ms']:.2f} | "
                f"{r['first_turn_ms']:.1f} | {r['median_saver_ms']:.2f} |"
            )
        out.append("\n".join(lines) + "\n")
        out.append("Saver calls per turn (median; min-max when it varies):\n")
        lines = ["| Saver | " + " | ".join(COUNTED_METHODS) + " |", "|---|" + "--:|" * len(COUNTED_METHODS)]
        for name, r in per.items():
            cells = []
            for meth in COUNTED_METHODS:
                c = r["calls_per_turn"][meth]
                cell = f"{c['median']:g}"
                if c["min"] != c["max"]:
                    cell += f" ({c['min']}-{c['max']})"
                cells.append(cell)
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines) + "\n")
        lines = ["| Store after chat | files | sum of sizes KB | allocated KB |", "|---|--:|--:|--:|"]
        for name, d in chat["disk"].items():
            lines.append(
                f"| {name} | {d['files']} | {d['apparent'] / 1024:,.1f} | {d['allocated'] / 1024:,.1f} |"
            )
        out.append("\n".join(lines) + "\n")
    depth = results.get("depth")
    if depth:
        per = depth["per_saver"]
        out.append("### Deep threads in detail\n")
        out.append(
            f"Threads of {depth['big_checkpoints']:,} and {depth['small_checkpoints']} checkpoints "
            "written with `put` in a parent chain (the same checkpoints for every saver: `count` "
            "and a trigger channel change every step, `status` every 25, a 20-item `log` list every 10; "
            "metadata `{source: loop, step: i, parents: {}}`). Warm: the median of "
            f"{per[REPO]['get_tuple_calls']} calls on one instance after its first call. "
            f"Fresh instance: the first call of a new saver object (median of {sizes['cold_repeats']}); "
            "the OS page cache is warm. "
            f"list: `list(config, filter={{'step': k}})` with {per[REPO]['list_calls']} random k.\n"
        )
        lines = [
            "| Saver | get_tuple big p90 ms | get_tuple small p90 ms | list p90 ms | put p90 ms |",
            "|---|--:|--:|--:|--:|",
        ]
        for name, r in per.items():
            lines.append(
                f"| {name} | {r['get_tuple_big_p90_ms']:.3f} | {r['get_tuple_small_p90_ms']:.3f} | "
                f"{r['list_filter_p90_ms']:.3f} | {r['put_p90_ms']:.3f} |"
            )
        out.append("\n".join(lines) + "\n")
        rf = depth["repo_files"]
        out.append(
            f"RepoSaver files for both threads: {rf['files']:,} files, {rf['apparent'] / 1024:,.0f} KB "
            f"(allocated {rf['allocated'] / 1024:,.0f} KB).\n"
        )
    g = results.get("git")
    if g:
        per = g["per_saver"]
        out.append("### Git growth in detail\n")
        out.append(
            f"One thread, {g['turns']} chat turns; after each turn `git add -A && git commit` of the "
            "RepoSaver root (`.langgraph` in a fresh repository) or of the SQLite file (after "
            "`PRAGMA wal_checkpoint(TRUNCATE)`), then `git gc --aggressive --prune=now`. Growth subtracts "
            "the size of the freshly initialised `.git` (hook samples etc.).\n"
        )
        lines = [
            "| Saver | empty .git KB | before gc KB | after gc KB | pack KiB | growth KB/turn | "
            "binary entries |",
            "|---|--:|--:|--:|--:|--:|--:|",
        ]
        for name, r in per.items():
            lines.append(
                f"| {name} | {r['git_dir_bytes_empty'] / 1024:,.1f} | "
                f"{r['git_dir_bytes_before_gc'] / 1024:,.1f} | "
                f"{r['git_dir_bytes'] / 1024:,.1f} | {r['pack_kib']:,} | {r['kb_per_turn_growth']:.2f} | "
                f"{r['binary_entries']} |"
            )
        out.append("\n".join(lines) + "\n")
        commits = per[REPO]["per_commit"]
        out.append(
            "RepoSaver lines added / files changed per turn: "
            + ", ".join(f"{c['added']}/{c['files']}" for c in commits)
            + ".\n"
        )
    out.append("## Notes on method\n")
    out.append(
        "- Savers run in one process, round-robin; each saver has its own graph, temp folder or database.\n"
        "- Chat: LangGraph's default durability (`async`) runs `put` in a background thread, so saver "
        "calls overlap each other and the graph; the summed saver time can exceed the turn time. "
        "Calls are counted by wrapping the saver instance's methods.\n"
        "- 'First call of a fresh instance' is the first `get_tuple`/`list` of a new saver object on "
        "files that are already in the OS page cache: it shows the in-process caches being built, "
        "not disk reads.\n"
        "- Bytes on disk: the sum of file sizes; 'allocated' counts whole filesystem blocks, which "
        "penalises many small files.\n"
        "- `cProfile` only sees the main thread; to profile `put` during a chat, call the saver "
        "directly or wrap each call in its own profiler.\n"
        "- The filesystem probe times the steps of one durable write (create a temp file, write, "
        "fsync, rename, fsync the folder) on the temp folder, for comparing machines.\n"
    )
    out.append("## Machine\n")
    lines = [
        f"- CPUs: {m['cpu_count']} (usable: {m['affinity_cpus']}), {m['processor']}, {m['machine']}",
        f"- Platform: {m['platform']}",
        f"- Python: {m['python']} ({m['python_implementation']})",
        f"- Temp folder: `{m['tmp_dir']}`, filesystem {m['fs_type']} (`stat -f`: {m['stat_f']})",
        "- Filesystem probe (median µs, 2 KB files): "
        + ", ".join(f"{k} {v:,.0f}" for k, v in m["fs_probe_us"].items()),
        f"- Load average at start / end: {_fmt_load(m.get('loadavg_start'))} / "
        f"{_fmt_load(m.get('loadavg_end'))}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()),
    ]
    out.append("\n".join(lines) + "\n")
    out.append("```\n$ df -T <temp folder>\n" + m["df_T"] + "\n```\n")
    out.append("## Sizes\n")
    out.append("\n".join(f"- {k}: {v:,}" for k, v in sizes.items()) + "\n")
    out.append("## How to reproduce\n")
    out.append(
        "```sh\n"
        "pip install -e '.[dev]'            # langgraph-checkpoint-sqlite comes with the test extra\n"
        "python bench/run.py --quick --out /tmp/perf-quick.md   # smoke run, a few seconds\n"
        "python bench/run.py --out docs/performance.md --json bench/results.json\n"
        "python -m cProfile -s cumtime bench/run.py --quick --only depth --out /tmp/p.md | head -60\n"
        "```\n\n"
        "Temp data goes to `--tmp-dir` (default: a `bench-tmp` folder next to the checkout, so it sits on "
        "the same filesystem as the work tree) and is removed at the end. `--only chat,depth,git` runs a "
        f"subset. This run: `{results['command']}`.\n"
    )
    return "\n".join(out)


def _fmt_load(load: list[float] | None) -> str:
    return "n/a" if not load else " ".join(f"{x:.2f}" for x in load)


def summary(rows: list[Row], goals: list[Goal]) -> str:
    return table(rows) + "\n\n" + goals_table(goals)


# ----------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------
@contextmanager
def temp_dir(parent: Path, keep: bool) -> Iterator[Path]:
    created = not parent.exists()
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="bench-", dir=parent))
    try:
        yield path
    finally:
        if keep:
            progress(f"kept temp data in {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)
            if created:
                try:
                    parent.rmdir()
                except OSError:
                    pass


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
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
        default=",".join(WORKLOADS),
        help=f"comma-separated subset of {','.join(WORKLOADS)} (chat includes bytes on disk)",
    )
    p.add_argument("--keep-tmp", action="store_true", help="leave the temp data for inspection")
    args = p.parse_args(argv)
    args.only = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(args.only) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    started = time.time()
    results: dict[str, Any] = {
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick,
        "command": " ".join(shlex.quote(a) for a in ["python", "bench/run.py", *(argv or sys.argv[1:])]),
        "sizes": sizes.__dict__,
    }
    with temp_dir(args.tmp_dir, args.keep_tmp) as tmp:
        results["machine"] = machine_info(tmp)
        if "chat" in args.only:
            progress("chat ...")
            results["chat"] = run_chat(tmp, sizes)
        if "depth" in args.only:
            progress("depth ...")
            results["depth"] = run_depth(tmp, sizes)
        if "git" in args.only:
            progress("git ...")
            results["git"] = run_git(tmp, sizes)
    results["machine"]["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    results["elapsed_s"] = time.time() - started
    rows, goals = build_rows(results)
    results["goals"] = [g.__dict__ for g in goals]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_markdown(results, rows, goals))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    m = results["machine"]
    print(
        f"machine: {m['cpu_count']} CPUs, Python {m['python']}, {m['fs_type']} at {m['tmp_dir']}, "
        f"load {_fmt_load(m['loadavg_start'])} -> {_fmt_load(m['loadavg_end'])}"
    )
    print(summary(rows, goals))
    print(f"\nreport: {args.out}" + (f", json: {args.json}" if args.json else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
