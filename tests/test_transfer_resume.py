"""Long copies that can be finished (issue 38, item 4): an interrupted ``import``/``export``
says what it copied and exits 130; ``--skip-copied`` finishes it, skipping the threads the
destination holds whole (compared checkpoint by checkpoint, not assumed from their ids) and
writing again the one it holds in part. A thread of the same id that is not a copy is still
refused."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from graphs import cfg, chat_graph
from helpers import cli, cli_env, sigint_as_at_a_terminal
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.transfer import OTHER, PART, WHOLE, CopyReport, copied_state, copy_threads
from test_transfer import assert_same, everything

THREADS = [f"t{i}" for i in range(6)]


def chats(saver: Any, threads: list[str] = THREADS, turns: int = 2) -> None:
    graph = chat_graph(saver)
    for t in threads:
        for i in range(turns):
            graph.invoke({"messages": [HumanMessage(content=f"{t} turn {i}")]}, cfg(t))


def stop_at(thread: str, checkpoint: int) -> Any:
    """A progress callback that interrupts the copy as Ctrl-C does, once ``thread`` has
    ``checkpoint`` checkpoints written."""

    def step(thread_id: str, done: int, total: int) -> None:
        if thread_id == thread and done == checkpoint:
            raise KeyboardInterrupt

    return step


def test_an_interrupted_copy_is_finished_by_skip_copied_and_equals_the_source(tmp_path: Path) -> None:
    source = InMemorySaver()
    chats(source)
    target = RepoSaver(tmp_path / "root")
    report = CopyReport()
    with pytest.raises(KeyboardInterrupt):
        copy_threads(source, target, progress=stop_at("t3", 2), report=report)
    assert report.threads == ["t0", "t1", "t2"] and report.current == "t3"
    part = [list(s.list(cfg("t3"))) for s in (source, target)]
    assert 0 < len(part[1]) < len(part[0]) and copied_state(*part) == PART
    assert copied_state(list(source.list(cfg("t0"))), list(target.list(cfg("t0")))) == WHOLE
    again = copy_threads(source, target, skip_copied=True)
    assert again.skipped == ["t0", "t1", "t2"]
    assert again.threads == ["t3", "t4", "t5"] and again.current is None
    assert_same(everything(source, THREADS), everything(RepoSaver(tmp_path / "root"), THREADS))


def test_skip_copied_refuses_a_thread_of_the_same_id_that_is_not_a_copy(tmp_path: Path) -> None:
    source, target = InMemorySaver(), RepoSaver(tmp_path / "root")
    chats(source, ["t0", "t1"])
    chats(target, ["t1"], turns=1)  # another conversation under the same id
    assert copied_state(list(source.list(cfg("t1"))), list(target.list(cfg("t1")))) == OTHER
    with pytest.raises(Exception, match="'t1' already exists in the target"):
        copy_threads(source, target, skip_copied=True)
    assert list(target.list(cfg("t0"))) == []  # refused before anything was written
    done = copy_threads(source, target, skip_copied=True, replace=True)
    assert done.threads == ["t0", "t1"]


def test_ctrl_c_during_an_import_says_what_was_copied_and_exits_130(tmp_path: Path) -> None:
    """A real SIGINT to a real process: the import blocks on the lock of the fourth thread,
    which this test holds, so the signal arrives mid-copy whatever the machine's speed."""
    db, root = tmp_path / "source.db", tmp_path / ".langgraph"
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        chats(SqliteSaver(conn))
    holder = RepoSaver(root)
    argv = [
        sys.executable,
        "-m",
        "langgraph_checkpoint_repo",
        "--root",
        str(root),
        "import",
        f"sqlite:///{db}",
    ]
    with holder.store.thread_lock("t3", exclusive=True):
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(),
            preexec_fn=sigint_as_at_a_terminal,
        )
        while len(list(holder.list(cfg("t2")))) < 3 * 2 and proc.poll() is None:  # two turns of three
            time.sleep(0.02)  # waiting for the third thread to be whole, not timing anything
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    # the signal lands while t3 waits for its lock, or (a loaded machine) just before t2 is
    # counted: either way the message names what was copied and the thread that is not whole
    said = re.search(r"interrupted: copied (\d) of 6 threads .*thread 't(\d)' was being copied", err.decode())
    assert said is not None and said.group(1) == said.group(2) in ("2", "3"), err
    assert "--skip-copied" in err.decode()
    finish = cli(root, "import", f"sqlite:///{db}", "--skip-copied")
    assert finish.returncode == 0, finish.stderr
    # t2 named as being copied may have had its last write before the signal, not yet counted:
    # the finish compares the threads and finds it whole then
    skipped = re.search(r"(\d) threads already there whole, skipped", finish.stdout)
    assert skipped is not None and skipped.group(1) in {said.group(1), "3"}, finish.stdout
    with closing(sqlite3.connect(db, check_same_thread=False)) as conn:
        assert_same(everything(SqliteSaver(conn), THREADS), everything(RepoSaver(root), THREADS))


class StopsAt(RepoSaver):
    """A RepoSaver that is interrupted as Ctrl-C interrupts it, at its ``at``-th call of
    ``what`` (``put_writes``: between a checkpoint's put and its writes; ``copy_thread``: while
    a replacement is moved into place)."""

    def __init__(self, root: Path, what: str, at: int) -> None:
        super().__init__(root, durable=False)
        self.what, self.at, self.calls = what, at, 0

    def _count(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        if self.what == "put_writes":
            self._count()
        super().put_writes(*args, **kwargs)

    def copy_thread(self, *args: Any, **kwargs: Any) -> None:
        if self.what == "copy_thread":
            self._count()
        super().copy_thread(*args, **kwargs)


def test_a_copy_stopped_between_a_put_and_its_writes_is_finished(tmp_path: Path) -> None:
    source = InMemorySaver()
    chats(source, ["t0", "t1"])
    with pytest.raises(KeyboardInterrupt):
        copy_threads(source, StopsAt(tmp_path / "root", "put_writes", 4))
    target = RepoSaver(tmp_path / "root")
    part = [list(s.list(cfg("t0"))) for s in (source, target)]
    assert copied_state(*part) == PART
    assert copy_threads(source, target, skip_copied=True).threads == ["t0", "t1"]
    assert_same(everything(source, ["t0", "t1"]), everything(RepoSaver(tmp_path / "root"), ["t0", "t1"]))


def test_a_replacement_stopped_while_it_is_moved_leaves_a_staging_thread_that_skip_copied_removes(
    tmp_path: Path,
) -> None:
    source, root = InMemorySaver(), tmp_path / "root"
    chats(source, ["t0"])
    with pytest.raises(KeyboardInterrupt):  # a part of t0 there: replaced below
        copy_threads(source, StopsAt(root, "put_writes", 2))
    report = CopyReport()
    with pytest.raises(KeyboardInterrupt):
        copy_threads(source, StopsAt(root, "copy_thread", 1), skip_copied=True, report=report)
    staged = report.staging
    assert staged is not None and staged.startswith("t0.replacing-")
    assert staged in RepoSaver(root).store.thread_ids()
    again = copy_threads(source, RepoSaver(root), skip_copied=True)
    assert again.cleared == [staged] and again.threads == ["t0"]
    assert RepoSaver(root).store.thread_ids() == ["t0"]
    assert_same(everything(source, ["t0"]), everything(RepoSaver(root), ["t0"]))


def test_the_copy_is_compared_by_values_and_writes_not_by_ids_alone(tmp_path: Path) -> None:
    source = InMemorySaver()
    chats(source, ["t0"])
    theirs = list(source.list(cfg("t0")))
    other = [t._replace(checkpoint={**t.checkpoint, "channel_values": {}}) for t in theirs]
    assert copied_state(theirs, other) == OTHER  # the same ids, another conversation
    fewer = [t._replace(pending_writes=(t.pending_writes or [])[:-1]) for t in theirs]
    assert copied_state(theirs, fewer) == (PART if any(t.pending_writes for t in theirs) else WHOLE)
    extra = [t._replace(pending_writes=[*(t.pending_writes or []), ("x", "y", 1)]) for t in theirs]
    assert copied_state(theirs, extra) == OTHER
