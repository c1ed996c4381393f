"""Child processes forked from a parent that has imported LangGraph once (tests/test_crash.py,
tests/test_concurrency.py).

Those tests need real processes: several writers on one root, each with its own saver, its
own caches and its own file locks, and children killed by SIGKILL where they stand. Starting
each as a new interpreter costs more than the work it does (importing LangGraph); forking it
from a parent that has imported the test's module costs a few milliseconds and changes none
of that: the child has its own memory, its own saver and its own pid.

``python tests/forkserver.py FILE NAME`` loads the module FILE as NAME (tests/ first on
``sys.path``, as pytest has it), then reads one JSON request a line on stdin and answers one
JSON line on stdout:

* ``{"call": FUNCTION, "args": [...], "stdout": PATH, "stderr": PATH}``: forks a child that
  runs ``FUNCTION(*args)`` with stdin on /dev/null and stdout and stderr appended to the
  files, and exits 0 (or the int FUNCTION returned; 1 and the traceback on stderr when it
  raised); answers its pid;
* ``{"poll": PID}``: its exit code, or null while it runs;
* ``{"wait": PID}``: its exit code once it has one;
* ``{"kill": PID}``: SIGKILL, unless it has exited.

Exit codes are subprocess's: minus the signal that ended a child. The parent forks from its
one thread and reaps its children itself, so a pid it signals is always its own child's.
``Parent`` and ``Child`` drive it from a test, ``Child`` with what the tests use of
``subprocess.Popen``.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

WAIT_LIMIT = 300.0  # seconds for a parent to exit once its input ends (never reached when healthy)


class Parent:
    """A forking parent of ``module_file`` (loaded as ``name``), for one test or one module.
    Threads of the test may share it: one request and its answer at a time (a ``wait`` holds
    the others until its child exits; ``Child.wait(timeout)`` polls instead)."""

    def __init__(self, module_file: Path | str, name: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(module_file), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.outputs = Path(tempfile.mkdtemp(prefix="forkserver-"))
        self.numbers = itertools.count()
        self.lock = threading.Lock()

    def ask(self, request: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the forking parent exited with {self.proc.wait()}")
        return json.loads(line)

    def start(
        self, function: str, *args: Any, stdout: Path | None = None, stderr: Path | None = None
    ) -> Child:
        """A child running ``function(*args)``; its output goes to the files given, else to
        files of its own that ``Child.communicate`` reads."""
        return Child(self, function, list(args), stdout, stderr)

    def close(self) -> None:
        """End of input: the parent exits (a child still running is not waited for); the
        children's output files go with it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(WAIT_LIMIT)
        shutil.rmtree(self.outputs, ignore_errors=True)
        if code != 0:
            raise AssertionError(f"the forking parent exited with {code}")


class Child:
    """A forked child, with what the tests use of ``subprocess.Popen``."""

    def __init__(
        self, parent: Parent, function: str, args: list[Any], stdout: Path | None, stderr: Path | None
    ) -> None:
        self.parent = parent
        self.returncode: int | None = None
        base = parent.outputs / f"child-{next(parent.numbers)}"
        self.stdout_path = stdout or base.with_suffix(".out")
        self.stderr_path = stderr or base.with_suffix(".err")
        self.pid: int = parent.ask(
            {"call": function, "args": args, "stdout": str(self.stdout_path), "stderr": str(self.stderr_path)}
        )

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.parent.ask({"poll": self.pid})
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code; subprocess.TimeoutExpired after ``timeout`` seconds, as Popen."""
        if timeout is not None:
            deadline = time.monotonic() + timeout
            while self.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(f"forked {self.pid}", timeout)
                time.sleep(0.01)
        if self.returncode is None:
            self.returncode = self.parent.ask({"wait": self.pid})
        return self.returncode

    def kill(self) -> None:
        """SIGKILL, sent by the parent, which has not reaped the child: never another pid."""
        self.parent.ask({"kill": self.pid})

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        out, err = (
            p.read_text(errors="replace") if p.exists() else "" for p in (self.stdout_path, self.stderr_path)
        )
        return out, err


def serve(module_file: str, name: str) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(module_file)))
    spec = importlib.util.spec_from_file_location(name, module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    codes: dict[int, int] = {}

    def reap(pid: int, flags: int) -> int | None:
        if pid not in codes:
            done, status = os.waitpid(pid, flags)
            if done == 0:
                return None
            codes[pid] = os.waitstatus_to_exitcode(status)
        return codes[pid]

    for line in sys.stdin:
        request = json.loads(line)
        answer: Any = None
        if "call" in request:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child never returns into this loop
                _child(module, request)
            answer = pid
        elif "poll" in request:
            answer = reap(request["poll"], os.WNOHANG)
        elif "wait" in request:
            answer = reap(request["wait"], 0)
        elif "kill" in request:
            if request["kill"] not in codes:  # not reaped: the pid is still the child's
                os.kill(request["kill"], signal.SIGKILL)
        print(json.dumps(answer), flush=True)
    return 0


def _child(module: Any, request: dict[str, Any]) -> None:
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        os.dup2(null, 0)
        os.dup2(os.open(request["stdout"], flags, 0o644), 1)
        os.dup2(os.open(request["stderr"], flags, 0o644), 2)
        sys.stdin = open(0, closefd=False)  # the parent's reader of its requests is not the child's
        returned = getattr(module, request["call"])(*request["args"])
        code = returned if isinstance(returned, int) else 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


if __name__ == "__main__":
    sys.exit(serve(*sys.argv[1:]))
