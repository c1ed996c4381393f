"""The rows of ``langgraph-repo threads``, from the roster (core/roster.py), not every file.

A row's namespaces, checkpoint counts, forks and unsettled heads come from the roster and the
lineage it keeps, each checked against the files by stat key (a folder per namespace, a file
per checkpoint). What a row shows of the latest state (its step and time, the next tasks, the
interrupts waiting, the channels it holds) is made by ``Reader.live_states`` with the thread
read as one snapshot, so every file it was made of is known, and kept in the roster with the
stat key of each of those files and of each namespace's checkpoints and writes folders. It
is reused while all of them are unchanged and the checkpoint that continues each namespace in
play is still the one it was made for; otherwise it is made again from the files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.caches import COARSE_NS, RACY_NS, StatKey, stat_key
from ..core.errors import InstallationError, NotFoundError, RepoCheckpointError
from ..core.heads import unsettled, unsettled_namespaces
from ..core.index import NsFacts, ThreadFacts, is_plain
from ..core.layout import CHECKPOINTS, WRITES, encode_segment
from ..core.roster import Roster, key_of, roster_of
from .reader import Reader, ThreadSummary
from .tasks import InterruptView

ROW_VERSION = 1
_ROW_FIELDS = {"version", "namespaces", "latest", "step", "ts", "next", "waiting", "channels", "deps"}


@dataclass
class Overview:
    """One row of ``threads``: the thread's summary, and per namespace that needs a choice its
    unsettled heads (docs/forks.md)."""

    summary: ThreadSummary
    unsettled: dict[str, list[str]]


def overviews(reader: Reader) -> Iterator[tuple[str, Overview | RepoCheckpointError]]:
    """Every thread's row, in the order of its folder's name; a thread that cannot be read
    comes with its error instead, and a folder without checkpoints not at all (fsck reports
    it). Rows made again are written back to the roster when the rows are done."""
    roster = roster_of(reader.store)
    for facts in roster.threads(seed_meta=True):
        try:
            got = _overview(reader, roster, facts)
        except NotFoundError:
            continue
        except InstallationError:
            raise  # not the thread's fault: said once, for the whole command
        except RepoCheckpointError as exc:
            yield facts.tid, exc
            continue
        yield facts.tid, got
    roster.persist()


def metadata_trees(reader: Reader, thread_id: str, ns: str) -> Iterator[Any]:
    """The stored metadata of a namespace's checkpoints, kept per checkpoint while its file
    is unchanged (``ThreadStore.metadata``, seeded from the roster)."""
    for cid in reader.checkpoint_ids(thread_id, ns):
        yield reader.store.metadata(thread_id, ns, cid, _stored_metadata)


def _stored_metadata(record: Any, path: Path) -> Any:
    return record.metadata


def _overview(reader: Reader, roster: Roster, facts: ThreadFacts) -> Overview:
    spaces = [ns for ns in facts.namespaces if ns.ids]
    if not spaces:
        raise NotFoundError(f"thread {facts.tid!r} has no checkpoints")
    lineages = {ns.ns: roster.lineage(facts, ns) for ns in spaces}
    if any(not link.readable for lin in lineages.values() for link in lin.links.values()):
        # a checkpoint that does not read: the whole thread is read, which says what is wrong
        return Overview(reader.summary(facts.tid), unsettled_namespaces(reader.store, facts.tid))
    root = "" if spaces[0].ns == "" else spaces[0].ns
    currents = {ns: lin.current() for ns, lin in lineages.items()}
    row = facts.row
    summary = _from_row(reader, facts, spaces, currents, row) if row is not None else None
    if summary is None:
        row, summary = _made_row(reader, facts, spaces, root)
        roster.set_row(facts, row)
    summary.forks = max(len(lineages[root].heads()) - 1, 0)
    waits: dict[str, list[str]] = {}
    for ns, lin in lineages.items():
        ids = unsettled(lin.heads())
        if len(ids) > 1:
            waits[ns] = ids
    return Overview(summary, waits)


def _made_row(
    reader: Reader, facts: ThreadFacts, spaces: list[NsFacts], root: str
) -> tuple[dict[str, Any] | None, ThreadSummary]:
    """A thread's summary made from its files, and the row that keeps it (None when it may
    not be kept: a file changed while it was read, or a tree that names a type)."""
    store = reader.store
    names = [ns.ns for ns in spaces]
    folders = _folders(reader, facts, spaces)
    before = [key_of(f) for f in folders]
    start = time.time_ns()
    with store.snapshot():
        live = reader.live_states(facts.tid, names, root)
        read = sorted({path for path, _kind in store.files.snapshot.read}) if store.files.snapshot else []
    latest = live[root]
    summary = ThreadSummary(
        thread_id=facts.tid,
        namespaces=names,
        checkpoints=sum(len(ns.ids) for ns in spaces),
        latest_id=latest.checkpoint_id,
        latest_step=latest.step,
        last_updated=latest.ts,
        forks=0,
        next=sorted({t.name for s in live.values() for t in s.tasks if t.runs_on_resume}),
        waiting=list(latest.interrupts),
        channels=frozenset(latest.trees),
    )
    deps = _deps(reader.root, read, folders, before, start)
    if deps is None:
        return None, summary
    row = {
        "version": ROW_VERSION,
        "namespaces": names,
        "latest": [[ns, view.checkpoint_id] for ns, view in sorted(live.items())],
        "step": summary.latest_step,
        "ts": summary.last_updated,
        "next": summary.next,
        "waiting": [[i.id, i.task_name, i.task_id, i.tree] for i in summary.waiting],
        "channels": sorted(summary.channels),
        "deps": deps,
    }
    return (row if is_plain(row) else None), summary


def _folders(reader: Reader, facts: ThreadFacts, spaces: list[NsFacts]) -> list[str]:
    """The folders a row depends on: each namespace's checkpoints folder (a checkpoint added
    or removed) and writes folder (a pending write added or taken)."""
    out = []
    for ns in spaces:
        folder = ns.folder or str(reader.layout.checkpoints_dir(facts.tid, ns.ns))
        out.append(folder)
        out.append(folder[: -len(CHECKPOINTS)] + WRITES)
    return out


def _quiet_since(st: os.stat_result, start: int) -> bool:
    """Whether a file last changed (mtime and ctime) well before ``start`` (caches.settled):
    so what was read of it after ``start`` is what it holds while its stat key is this one."""
    for changed in (st.st_mtime_ns, st.st_ctime_ns):
        coarse = changed % 1_000_000_000 == 0
        if start - changed <= (COARSE_NS if coarse else RACY_NS):
            return False
    return True


def _deps(
    root: Path, read: list[str], folders: list[str], before: list[StatKey | None], start: int
) -> list[list[Any]] | None:
    """``[path below the root, stat key or None]`` of every file read and folder listed, or
    None when one changed while the row was made (or too lately to tell)."""
    out: list[list[Any]] = []
    head = str(root) + os.sep
    for path, was in zip(folders, before, strict=True):
        key = key_of(path)
        if key != was:
            return None
        if key is not None and not _quiet_since(os.lstat(path), start):
            return None
        out.append([path[len(head) :], list(key) if key is not None else None])
    for path in read:
        if not path.startswith(head):
            return None
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if not _quiet_since(st, start):
            return None
        out.append([path[len(head) :], list(stat_key(st))])
    return out


def _from_row(
    reader: Reader, facts: ThreadFacts, spaces: list[NsFacts], currents: dict[str, str | None], row: Any
) -> ThreadSummary | None:
    """The summary a kept row holds while it still holds (see the module's docstring), else None."""
    names = [ns.ns for ns in spaces]
    if type(row) is not dict or set(row) != _ROW_FIELDS or row["version"] != ROW_VERSION:
        return None
    if row["namespaces"] != names or not _latest_holds(row["latest"], currents):
        return None
    root_ns = "" if names[0] == "" else names[0]
    latest = dict(row["latest"]).get(root_ns)
    if not isinstance(latest, str) or not _deps_hold(reader, row["deps"], facts, spaces, row["latest"]):
        return None
    waiting = _waiting(row["waiting"])
    step, ts, nxt, channels = row["step"], row["ts"], row["next"], row["channels"]
    if waiting is None or not (step is None or type(step) is int) or type(ts) is not str:
        return None
    if not _strings(nxt) or not _strings(channels):
        return None
    return ThreadSummary(
        thread_id=facts.tid,
        namespaces=names,
        checkpoints=sum(len(ns.ids) for ns in spaces),
        latest_id=latest,
        latest_step=step,
        last_updated=ts,
        forks=0,
        next=list(nxt),
        waiting=waiting,
        channels=frozenset(channels),
    )


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _latest_holds(latest: Any, currents: dict[str, str | None]) -> bool:
    """Each namespace the row was made in play is still continued by the same checkpoint."""
    if type(latest) is not list or not latest:
        return False
    for pair in latest:
        if type(pair) is not list or len(pair) != 2 or type(pair[1]) is not str:
            return False
        if pair[0] not in currents or currents[pair[0]] != pair[1]:
            return False
    return True


def _deps_hold(
    reader: Reader, deps: Any, facts: ThreadFacts, spaces: list[NsFacts], latest: list[list[str]]
) -> bool:
    """Every file and folder the row was made of still has its stat key, and these include
    each namespace's folders and the checkpoint file that continues each namespace in play (a
    row that names no file of the thread, forged or damaged, is never used)."""
    if type(deps) is not list:
        return False
    head = str(reader.root) + os.sep
    named: set[str] = set()
    for dep in deps:
        if type(dep) is not list or len(dep) != 2 or type(dep[0]) is not str:
            return False
        key = dep[1]
        if key is not None and not (type(key) is list and len(key) == 4 and all(type(k) is int for k in key)):
            return False
        if key_of(head + dep[0]) != (tuple(key) if key is not None else None):
            return False
        named.add(head + dep[0])
    need = set(_folders(reader, facts, spaces))
    folders = {ns.ns: ns.folder for ns in spaces}
    for ns, cid in latest:
        folder = folders.get(ns)
        if not folder:
            return False
        need.add(f"{folder}{os.sep}{encode_segment(cid)}.json")
    return need <= named


def _waiting(rows: Any) -> list[InterruptView] | None:
    if type(rows) is not list:
        return None
    out = []
    for row in rows:
        if type(row) is not list or len(row) != 4:
            return None
        iid, name, task_id, tree = row
        if not (iid is None or type(iid) is str) or type(name) is not str or type(task_id) is not str:
            return None
        out.append(InterruptView(id=iid, value=tree, tree=tree, task_name=name, task_id=task_id))
    return out
