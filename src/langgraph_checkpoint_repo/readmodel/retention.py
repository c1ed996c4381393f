"""Retention: which threads expire and what keep-last lets go (docs/reliability.md, "Retention").

The settings are LangGraph's ``checkpointer.ttl`` (``langgraph.json``): ``strategy``,
``default_ttl`` (minutes), ``sweep_interval_minutes``, ``sweep_limit``; plus ``keep_last``,
this package's own. The rules, one place for every caller (``RepoSaver.sweep`` and its
background sweeper, the Agent Server's factory, ``langgraph-repo prune --ttl/--retention``):

* a thread **expires** ``default_ttl`` minutes after its last checkpoint (the newest ``ts`` of
  its live states: the root namespace's latest and the subgraphs still running under it) or
  its last use by the sweeping saver's process (a run that saves only at its end reads first);
  then ``delete`` removes the thread whole, ``keep_latest`` its history but the latest
  state (``plan_keep_latest``, as ``prune(strategy="keep_latest")``);
* a thread that waits at an interrupt, whose latest step did not finish (pending writes:
  a failed task, a run stopped mid-step), or whose latest state has tasks to run (a run under
  way, one stopped between steps) **never expires**: resuming it needs the checkpoint and its
  writes. The plan names why it is kept, so the dry run shows every such thread;
* ``keep_last`` keeps the newest N checkpoints of each namespace of a thread that has not
  expired, by ``prune --keep-last``'s plan (``plan_prune``: never a thread waiting at an
  interrupt, never the latest or what it still needs, never a hole, never a thread made bigger).

Every removal is a ``PrunePlan`` carried out by ``carry_out`` under the thread's exclusive
lock, planned again under that lock: the same code, checks and refusals as ``prune``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..core.errors import BadInputError, NotFoundError, RepoCheckpointError
from ..core.plans import (
    PrunePlan,
    carry_out,
    parse_ts,
    plan_keep_latest,
    plan_prune,
    plan_whole,
    stored_metadata,
)
from .reader import Reader, ThreadSummary

STRATEGIES = ("delete", "keep_latest")
KEYS = ("strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit", "keep_last")


@dataclass(frozen=True)
class Retention:
    """A retention policy, checked: what expires, how often the sweeper runs, what keep-last keeps."""

    strategy: str = "delete"
    default_ttl: float | None = None  # minutes after a thread's last checkpoint
    sweep_interval_minutes: float | None = None  # a background sweep only when set
    sweep_limit: int | None = None  # at most this many threads changed by one sweep
    keep_last: int | None = None  # checkpoints kept per namespace of a thread that has not expired

    def describe(self) -> str:
        """One line for a log or the command line: what this policy removes."""
        parts = []
        if self.default_ttl is not None:
            what = "deleted whole" if self.strategy == "delete" else "cut to their latest state"
            parts.append(f"threads idle for {_minutes(self.default_ttl)} are {what}")
        if self.keep_last is not None:
            parts.append(f"the newest {self.keep_last} checkpoints of each namespace are kept")
        return "; ".join(parts) or "nothing is removed"


def _minutes(value: float) -> str:
    """A TTL as a person says it: ``1 minute``, ``12 hours``, ``30 days``."""
    count, unit = value, "minute"
    for size, name in ((1440, "day"), (60, "hour")):
        if value >= size and value % size == 0:
            count, unit = value / size, name
            break
    return f"{count:g} {unit}{'' if count == 1 else 's'}"


def retention_from(config: Mapping[str, Any] | None, where: str) -> Retention | None:
    """``parse_retention``, None for None (no retention)."""
    return None if config is None else parse_retention(config, where)


def parse_retention(config: Mapping[str, Any], where: str) -> Retention:
    """The policy a ``checkpointer.ttl`` object (or ``RepoSaver(ttl=...)``) sets, checked:
    ``where`` names it in the error (BadInputError) for a key or value it cannot take."""
    if not isinstance(config, Mapping):
        raise BadInputError(f"{where}: must be an object like {{'strategy': 'delete', 'default_ttl': 43200}}")
    unknown = sorted(set(config) - set(KEYS))
    if unknown:
        raise BadInputError(f"{where}: unknown key {unknown[0]!r} (it takes {', '.join(KEYS)})")
    strategy = config.get("strategy", "delete")
    if strategy not in STRATEGIES:
        choices = ", ".join(map(repr, STRATEGIES))
        raise BadInputError(f"{where} strategy: {strategy!r} is not one of {choices}")
    return Retention(
        strategy=strategy,
        default_ttl=_number(config, "default_ttl", where),
        sweep_interval_minutes=_number(config, "sweep_interval_minutes", where),
        sweep_limit=_whole_number(config, "sweep_limit", where),
        keep_last=_whole_number(config, "keep_last", where),
    )


# what a number of minutes may be: a sweep every ten seconds at most (a smaller interval from a
# pull request's langgraph.json would spin the server), a TTL or interval of a thousand years at
# most (a bigger one overflows the times and waits it is used in)
LEAST_MINUTES = {"sweep_interval_minutes": 1 / 6, "default_ttl": 1 / 60}
MOST_MINUTES = 1000 * 366 * 24 * 60


def _number(config: Mapping[str, Any], key: str, where: str) -> float | None:
    """A positive number of minutes within the bounds above, or None (absent or null)."""
    value = config.get(key)
    if value is None:
        return None
    least = LEAST_MINUTES.get(key, 0)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not least <= value <= MOST_MINUTES
        or value <= 0
    ):
        raise BadInputError(
            f"{where} {key}: expected a number of minutes from {least:g} to {MOST_MINUTES:,}, not {value!r}"
        )
    return float(value)


def _whole_number(config: Mapping[str, Any], key: str, where: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInputError(f"{where} {key}: expected a whole number of at least 1, not {value!r}")
    return value


# ----------------------------------------------------------------------
# one thread's plan
# ----------------------------------------------------------------------
def held(summary: ThreadSummary) -> str | None:
    """Why the thread must never expire, or None: it waits at an interrupt, its latest step
    did not finish (pending writes a resume needs), or its latest state has tasks to run: a
    run under way (a node running longer than the TTL: deleting the thread under it would
    leave its next put an orphan, and a DeltaChannel's history lost) or one stopped mid-step,
    which ``invoke(None, config)`` resumes."""
    if summary.waiting:
        return f"waits on an interrupt at {', '.join(sorted({i.task_name for i in summary.waiting}))}"
    pending = [v for v in summary.live.values() if v.writes]
    if pending:
        started = sorted({t.name for v in pending for t in v.tasks if t.status != "not started"})
        return f"its latest step did not finish (pending writes of {', '.join(started) or 'a task'})"
    if summary.next:
        return f"its latest state has tasks to run ({', '.join(summary.next)}): a run under way or stopped"
    return None


def last_written(summary: ThreadSummary) -> datetime | None:
    """When the thread was last written: the newest ``ts`` of its live states (None: a ``ts``
    that is not a time, so the thread's age is unknown)."""
    times = [parse_ts(view.ts) for view in summary.live.values()]
    return None if not times or any(t is None for t in times) else max(t for t in times if t is not None)


def plan_retention(
    reader: Reader,
    thread_id: str,
    policy: Retention,
    now: datetime,
    *,
    allow_growth: bool = False,
    used: datetime | None = None,
) -> PrunePlan:
    """What ``policy`` removes of one thread at ``now`` (nothing: an empty plan);
    ``allow_growth`` as ``prune --allow-growth`` for keep-last; ``used``: when the sweeping
    process last read or wrote the thread (a run that saves only at its end reads it first)."""
    store = reader.store
    summary = reader.summary(thread_id)
    keeps = held(summary)
    if policy.default_ttl is not None:
        last = last_written(summary)
        if last is None:
            return PrunePlan(thread_id, skipped="its latest ts is not a time: its age is unknown")
        last = max(last, used) if used is not None else last
        idle = now - last
        if idle >= timedelta(minutes=policy.default_ttl):
            when = last.isoformat(timespec="seconds")
            since = f"last written {when}, over the TTL of {_minutes(policy.default_ttl)}"
            if keeps is not None:
                return PrunePlan(thread_id, skipped=f"{keeps}: never expired ({since})")
            if policy.strategy == "delete":
                return plan_whole(store, thread_id, f"expired: {since}")
            return plan_keep_latest(store, stored_metadata(store), thread_id, allow_growth=allow_growth)
    if policy.keep_last is None:
        return PrunePlan(thread_id)
    waits = [i.task_name for i in summary.waiting]
    return plan_prune(
        store,
        thread_id,
        keep_last=policy.keep_last,
        older_than=None,
        now=now,
        waits_at=waits,
        allow_growth=allow_growth,
    )


# ----------------------------------------------------------------------
# a sweep over the root
# ----------------------------------------------------------------------
def sweep_threads(
    reader: Reader,
    policy: Retention,
    now: datetime,
    *,
    dry_run: bool = False,
    thread_ids: Iterable[str] | None = None,
    forget: Callable[[str], None] = lambda thread_id: None,
    used: Mapping[str, datetime] | None = None,
) -> list[PrunePlan]:
    """Each thread's plan (every thread of the root by default), carried out unless
    ``dry_run``: planned without a lock (most threads need nothing), then, for a thread with
    something to remove, planned again under its exclusive lock and carried out (so a run that
    wrote meanwhile is seen). A thread that cannot be read or locked is kept, its plan saying
    why; ``forget`` hears of each thread changed (the saver's caches); ``used``: when the
    sweeping saver's process last read or wrote a thread, which counts as a write of it."""
    plans: list[PrunePlan] = []
    changed = 0
    for thread_id in list(thread_ids) if thread_ids is not None else reader.thread_ids():
        if policy.sweep_limit is not None and changed >= policy.sweep_limit:
            break
        try:
            last_use = (used or {}).get(thread_id)
            plan = plan_retention(reader, thread_id, policy, now, used=last_use)
            if plan.doomed and not dry_run:
                with reader.store.thread_lock(thread_id, exclusive=True):
                    plan = plan_retention(reader, thread_id, policy, now, used=(used or {}).get(thread_id))
                    carry_out(reader.store, plan)
                forget(thread_id)
                changed += bool(plan.doomed)
        except (NotFoundError, FileNotFoundError):
            continue  # deleted meanwhile (another sweeper), or a folder with no checkpoint
        except (RepoCheckpointError, OSError) as exc:  # a damaged file, a busy lock: the next thread
            plan = PrunePlan(thread_id, skipped=f"not swept: {exc}")
        plans.append(plan)
    return plans
