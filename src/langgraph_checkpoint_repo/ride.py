"""A step's writes ride in the file of the checkpoint that follows them: one durable write.

LangGraph saves a task's writes (``put_writes``) and, a moment later, the checkpoint the
step leads to (``put``). That checkpoint holds its parent's writes anyway (format 4,
``parent_writes``), so a writes file written, fsynced, read back and removed a moment later
costs two rounds of waiting for the disk for nothing (and, not durable, a file made, read and
removed). So a ``put_writes`` waits a little for the ``put`` of a child of its checkpoint
(``wait``): while a put of the thread is under way in this process, then ``GRACE`` more,
never more than ``LINGER`` in all.
The put takes the waiting calls (``claim``) and lets them go once its file is durable
(``settle``); a ``put_writes`` taken returns only then, so nothing is acknowledged before it
is on disk. When no put comes (an interrupt, an error, a graph whose put waits for the writes
first) or the put fails, the call writes its own file as before.

A thread whose put came just after a ``put_writes`` of its parent gave up waiting, ``STRIKES``
times in a row (LangGraph waits for the writes of a ``DeltaChannel`` or an error handler before
the next put), is not made to wait for ``ALONE_FOR`` seconds; one put that took a waiting call
clears the count (a slow moment of a loaded machine is not a graph that never lets it ride).
The rule of what is durable when is unchanged: see docs/reliability.md.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Key = tuple[str, str, str]  # thread id, namespace, checkpoint id
C = TypeVar("C")

# seconds a put_writes waits for its child's put once the thread's puts are over: LangGraph's
# step between the two (applying the writes, copying the state) takes a few ms on a loaded machine
GRACE = 0.02
LINGER = 1.0  # seconds a put_writes waits in all (a put under way ends sooner)
# a put that comes this soon after a put_writes of its parent gave up waiting was waiting for it
EVIDENCE = 0.25
# calls of one checkpoint that wait at once: the rest of a wide fan-out (Send) writes alone at
# once rather than hold a worker thread each (asyncio.to_thread's pool is small) for a put that
# comes only after its slowest task
WAITING = 2
STRIKES = 3  # that many in a row: the thread's put_writes stop waiting ...
ALONE_FOR = 60.0  # ... for this many seconds, then try again
_REMEMBERED = 4096  # keys and threads remembered in each of the notes below
# set by a caller that makes its puts and put_writes one after another (a copy, an import, a
# fork): no put of its can come while its put_writes waits. A context variable, so
# asyncio.to_thread (aput_writes) carries it to the worker thread
_ALONE: ContextVar[bool] = ContextVar("langgraph_checkpoint_repo_writes_alone", default=False)


@contextmanager
def writes_alone() -> Iterator[None]:
    """The ``put_writes`` calls made inside write their own files at once: for a caller whose
    next ``put`` comes only after its ``put_writes`` returned (the savers' own copies, a
    replay of recorded calls). Harmless around any other saver's calls."""
    token = _ALONE.set(True)
    try:
        yield
    finally:
        _ALONE.reset(token)


@dataclass(eq=False)
class Waiting(Generic[C]):
    """One ``put_writes`` call waiting for, or taken by, a child's put."""

    key: Key
    call: C
    state: str = "waiting"  # "claimed" by a put, then "done" (durable there) or "own"
    since: float = field(default_factory=time.monotonic)


class WritesRide(Generic[C]):
    """The ``put_writes`` calls of one saver waiting for their checkpoint's child put."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout  # how long a put waits for put_writes writing their own files
        self._cond = threading.Condition()
        self._waiting: dict[Key, list[Waiting[C]]] = {}
        self._own: Counter[Key] = Counter()  # put_writes writing their own file
        self._puts: Counter[str] = Counter()  # puts of a thread under way
        self._put_ended: dict[str, float] = {}
        self._claimed: dict[Key, None] = {}  # keys a child put has taken: later calls write alone
        self._gave_up: dict[Key, float] = {}
        self._strikes: dict[str, int] = {}  # puts in a row that came just after a call gave up
        self._alone: dict[str, float] = {}  # threads whose puts wait for their writes first: until

    @contextmanager
    def writes(self, key: Key, call: C, *, wait: bool) -> Iterator[bool]:
        """True: the call's writes are durable in a child checkpoint. False: write its own
        file inside the block (the puts of its checkpoint's children wait for it)."""
        rode = self._wait(key, call, wait)
        try:
            yield rode
        finally:
            if not rode:
                with self._cond:
                    self._own[key] -= 1
                    if self._own[key] <= 0:
                        del self._own[key]
                    self._cond.notify_all()

    def _wait(self, key: Key, call: C, wait: bool) -> bool:
        thread = key[0]
        with self._cond:
            waiting = self._waiting.get(key, ())
            alone = _ALONE.get() or self._is_alone(thread)
            if not wait or alone or key in self._claimed or len(waiting) >= WAITING:
                self._own[key] += 1
                return False
            me = Waiting(key, call)
            self._waiting.setdefault(key, []).append(me)
            while True:
                if me.state == "done":
                    return True
                if me.state == "own":
                    self._own[key] += 1
                    return False
                timeout: float | None = None
                if me.state == "waiting":
                    now = time.monotonic()
                    left = me.since + LINGER
                    if not self._puts[thread]:
                        left = min(left, max(me.since, self._put_ended.get(thread, 0.0)) + GRACE)
                    if now >= left:
                        self._drop_waiting(me)
                        self._remember(self._gave_up, key, now)
                        self._own[key] += 1
                        return False
                    timeout = left - now
                self._cond.wait(timeout)

    def _is_alone(self, thread: str) -> bool:
        until = self._alone.get(thread)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        del self._alone[thread]
        return False

    def _drop_waiting(self, me: Waiting[C]) -> None:
        queue = self._waiting[me.key]
        queue.remove(me)
        if not queue:
            del self._waiting[me.key]

    @contextmanager
    def putting(self, thread: str) -> Iterator[None]:
        """A put of ``thread`` under way: waiting calls keep waiting meanwhile."""
        with self._cond:
            self._puts[thread] += 1
        try:
            yield
        finally:
            with self._cond:
                self._puts[thread] -= 1
                if self._puts[thread] <= 0:
                    del self._puts[thread]
                self._remember(self._put_ended, thread, time.monotonic())
                self._cond.notify_all()

    def claim(self, key: Key) -> list[Waiting[C]]:
        """Take the calls waiting for a child of ``key``'s checkpoint (oldest first), then wait
        for those writing their own files: the put takes them from disk. ``settle`` after."""
        with self._cond:
            taken = self._waiting.pop(key, [])
            for w in taken:
                w.state = "claimed"
            self._remember(self._claimed, key, None)
            self._count_strike(key[0], self._gave_up.pop(key, None), bool(taken))
            self._cond.wait_for(lambda: self._own[key] <= 0, timeout=self.timeout)
            return taken

    def _count_strike(self, thread: str, gave_up: float | None, took: bool) -> None:
        now = time.monotonic()
        if took:  # a step that let one call ride (a slow sibling's) is not a graph that never does
            self._strikes.pop(thread, None)
        elif gave_up is not None and now - gave_up < EVIDENCE:
            strikes = self._strikes.get(thread, 0) + 1
            self._remember(self._strikes, thread, strikes)
            if strikes >= STRIKES:
                self._strikes.pop(thread, None)
                self._remember(self._alone, thread, now + ALONE_FOR)

    def settle(self, taken: list[Waiting[C]], *, ok: bool) -> None:
        """Let taken calls go: their writes are durable in the put's file (``ok``), or they
        write their own."""
        if not taken:
            return
        with self._cond:
            for w in taken:
                w.state = "done" if ok else "own"
            self._cond.notify_all()

    @staticmethod
    def _remember(notes: dict[Any, Any], key: object, value: object) -> None:
        notes.pop(key, None)
        notes[key] = value
        while len(notes) > _REMEMBERED:
            del notes[next(iter(notes))]
