"""A background sweep: a daemon thread that calls one function every few minutes until stopped.

RepoStore's TTL sweeper (expired items) and RepoSaver's retention sweeper (expired threads,
checkpoints past keep-last) are the same loop around a different sweep, so they share it:
one failed sweep (a damaged file, a lock held too long) is logged and the next one runs;
``stop`` ends the loop between two sweeps, never inside one, and the future ``start``
returns is done when the thread has left.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

from .errors import BadInputError

# a sweep at most every 60 ms (a program's own choice; langgraph.json's checkpointer.ttl is held to
# ten seconds: readmodel/retention.py), and an interval of a thousand years at most
LEAST, MOST = 0.001, 1000 * 366 * 24 * 60

_log = logging.getLogger("langgraph_checkpoint_repo")


class Sweeper:
    """One daemon thread calling ``sweep`` (which returns how much it removed)."""

    def __init__(self, name: str, what: str, unit: str, sweep: Callable[[], int]) -> None:
        """``name``: the thread's; ``what`` and ``unit``: the log's words for one sweep and for
        what it removes (``"TTL sweep of <root>"``, ``"expired item(s)"``); ``sweep``: one
        sweep, returning how many it removed."""
        self.name = name
        self.what = what
        self.unit = unit
        self.sweep = sweep
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, minutes: float, *, at_once: bool = False) -> concurrent.futures.Future[None]:
        """Sweep every ``minutes`` (and first at once with ``at_once``) until ``stop``; a
        second start while one runs does nothing (its future is done already). An interval
        under 60 ms (a spinning sweeper) or over a thousand years (a wait that overflows and
        kills the thread) is refused, for the store's sweeper as the saver's."""
        if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not LEAST <= minutes <= MOST:
            raise BadInputError(
                f"{self.what}: sweep_interval_minutes must be from {LEAST:g} to {MOST:,} minutes, "
                f"not {minutes!r}"
            )
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self.running:
            done.set_result(None)
            return done
        self._stop.clear()

        def loop() -> None:
            try:
                if at_once:
                    self._once()
                while not self._stop.wait(float(minutes) * 60):
                    self._once()
            finally:
                done.set_result(None)

        self._thread = threading.Thread(target=loop, name=self.name, daemon=True)
        self._thread.start()
        return done

    def _once(self) -> None:
        """One sweep; its failure is logged, never the end of the thread."""
        try:
            removed = self.sweep()
        except Exception:  # a damaged file, a lock held too long: the next sweep tries again
            _log.exception("%s failed", self.what)
            return
        if removed:
            _log.info("%s removed %d %s", self.what, removed, self.unit)

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; True when it has stopped within ``timeout`` seconds."""
        if self._thread is None:
            return True
        self._stop.set()
        self._thread.join(timeout)
        stopped = not self._thread.is_alive()
        if stopped:
            self._thread = None
        return stopped
