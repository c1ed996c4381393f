"""The thread lock across processes (core/lockfile.py), which replaced filelock on the hot
path: the cases a lock of our own could get wrong, with real processes: a lock file removed
between two puts while another process holds the new one, and a forked child.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.errors import LockTimeoutError

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""

TRY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(2)
"""


def _put(saver: RepoSaver, n: int) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["id"] = f"1f1f1f1f-0000-6000-8000-{n:012d}"
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saver.put(config, checkpoint, {"source": "input", "step": n}, {})


def test_a_lock_file_removed_between_two_puts_is_locked_where_it_is_now(
    tmp_path: Path,
) -> None:
    """``rm -r .cache`` or ``git clean -X`` between two puts: the next put must lock the file
    now at the path, which another process holds, never a file no longer there (two writers
    would then each hold "the" lock)."""
    saver = RepoSaver(tmp_path / "root", lock_timeout=0.3)
    _put(saver, 1)
    lock_path = saver.store.layout.lock_path("t")
    lock_path.unlink()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LockTimeoutError, match="another process is writing to it"):
            _put(saver, 2)
    finally:
        holder.communicate("")
    _put(saver, 2)
    assert [c.checkpoint["id"][-1] for c in saver.list({"configurable": {"thread_id": "t"}})] == ["2", "1"]


def test_a_forked_child_neither_holds_nor_lets_go_its_parents_lock(tmp_path: Path) -> None:
    """A child forked while its parent holds a thread's lock shares the parent's open lock
    file: it must not think it holds the lock (it waits, and times out here), and must not
    unlock the parent's hold when it lets its copy go."""
    saver = RepoSaver(tmp_path / "root", lock_timeout=0.2)
    _put(saver, 1)
    lock_path = saver.store.layout.lock_path("t")
    with saver.store.thread_lock("t"):
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only if the lock was refused to it
            code = 1
            try:
                with saver.store.thread_lock("t"):
                    pass
            except LockTimeoutError:
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the child took a lock its parent held"
        other = subprocess.run([sys.executable, "-c", TRY, str(lock_path)], check=False)
        assert other.returncode == 2, "the parent's lock was let go by its child"
    _put(saver, 2)
