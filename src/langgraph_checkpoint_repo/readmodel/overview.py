"""The rows of ``langgraph-repo threads``, from the roster (core/roster.py), not every file.

A row is made once from the files: the namespaces' lineage (the roster's, through the thread
store: forks, unsettled heads, the checkpoint that continues each namespace) and what
``Reader.live_states`` shows of the latest state (its step and time, the next tasks, the
interrupts waiting, the channels it holds), with the thread read as one snapshot so every
file it was made of is known. The roster keeps it with a digest of the links it was made
from (each checkpoint's id and stat key) and the stat key of every other file and folder its
state was read from (each namespace's checkpoints and writes folders among them). It is
reused while the roster's links are those (one lstat per checkpoint) and every other file
and folder has its key; otherwise it is made again from the files.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..core.caches import COARSE_NS, RACY_NS, StatKey, stat_key
from ..core.errors import InstallationError, NotFoundError, RepoCheckpointError
from ..core.heads import unsettled, unsettled_namespaces
from ..core.index import (
    MIN_NAMES,
    NsFacts,
    ThreadFacts,
    is_plain,
    kept_lineage_rows,
    lineage_rows,
    thread_row,
)
from ..core.layout import CHECKPOINTS, WRITES, encode_segment
from ..core.lineage import Lineage
from ..core.roster import Roster, key_of, roster_of
from .reader import Reader, ThreadSummary
from .tasks import InterruptView

ROW_VERSION = 1
_ROW_FIELDS = {
    "version",
    "namespaces",
    "links",
    "currents",
    "forks",
    "unsettled",
    "latest",
    "step",
    "ts",
    "next",
    "waiting",
    "channels",
    "deps",
}


@dataclass
class Overview:
    """One row of ``threads``: the thread's summary, and per namespace that needs a choice its
    unsettled heads (docs/forks.md)."""

    summary: ThreadSummary
    unsettled: dict[str, list[str]]


def overviews(
    reader: Reader, *, metadata: bool = False
) -> Iterator[tuple[str, Overview | RepoCheckpointError]]:
    """Every thread's row, in the order of its folder's name; a thread that cannot be read
    comes with its error instead, and a folder without checkpoints not at all (fsck reports
    it). Rows made again are written back to the roster when the rows are done.
    ``metadata``: the caller reads checkpoints' metadata (``metadata_trees``) too."""
    roster = roster_of(reader.store)
    for facts in roster.threads(seed_meta=metadata):
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
    row = thread_row(facts)
    kept = _kept(reader, roster, facts, spaces, row) if row is not None else None
    if kept is not None:
        return kept
    lineages = {ns.ns: roster.lineage(facts, ns) for ns in spaces}
    if any(not link.readable for lin in lineages.values() for link in lin.links.values()):
        # a checkpoint that does not read: the whole thread is read, which says what is wrong
        return Overview(reader.summary(facts.tid), unsettled_namespaces(reader.store, facts.tid))
    row, got = _made_row(reader, facts, spaces, lineages)
    roster.set_row(facts, row)
    return got


def _lineage_part(spaces: list[NsFacts], lineages: dict[str, Lineage]) -> dict[str, Any]:
    """What a row keeps of the namespaces' lineage: the links it was made from (a digest of
    each checkpoint's id and stat key), the checkpoint that continues each, the root's forks
    and the unsettled heads."""
    root = spaces[0].ns
    unsettled_heads = []
    for ns in spaces:
        ids = unsettled(lineages[ns.ns].heads())
        if len(ids) > 1:
            unsettled_heads.append([ns.ns, ids])
    return {
        "links": [_links_digest(lineage_rows(lineages[ns.ns])) for ns in spaces],
        "currents": [lineages[ns.ns].current() for ns in spaces],
        "forks": max(len(lineages[root].heads()) - 1, 0),
        "unsettled": unsettled_heads,
    }


def _links_digest(rows: list[list[Any]]) -> str:
    """A digest of which checkpoints a namespace's links were read from: ids and stat keys."""
    return hashlib.blake2b(orjson.dumps([row[:5] for row in rows]), digest_size=16).hexdigest()


def _made_row(
    reader: Reader, facts: ThreadFacts, spaces: list[NsFacts], lineages: dict[str, Lineage]
) -> tuple[dict[str, Any] | None, Overview]:
    """A thread's row made from its files, and what keeps it (None when it may not be kept:
    a file changed while it was read, or a tree that names a type)."""
    store = reader.store
    names = [ns.ns for ns in spaces]
    folders = _folders(spaces)
    before = [key_of(f) for f in folders]
    start = time.time_ns()
    with store.snapshot():
        live = reader.live_states(facts.tid, names, names[0])
        read = sorted({path for path, _kind in store.files.snapshot.read}) if store.files.snapshot else []
    part = _lineage_part(spaces, lineages)
    covered = {  # checkpoint files the row's links cover (each checked by its stat key on use)
        f"{ns.folder}{os.sep}{cid}.json": key for ns in spaces for cid, key in lineages[ns.ns].keys.items()
    }
    latest = live[names[0]]
    row = {
        "version": ROW_VERSION,
        "namespaces": names,
        **part,
        "latest": [[ns, view.checkpoint_id] for ns, view in sorted(live.items())],
        "step": latest.step,
        "ts": latest.ts,
        "next": sorted({t.name for s in live.values() for t in s.tasks if t.runs_on_resume}),
        "waiting": [[i.id, i.task_name, i.task_id, i.tree] for i in latest.interrupts],
        "channels": sorted(latest.trees),
    }
    got = _from_fields(facts, spaces, row)
    assert got is not None
    deps = _deps(reader.root, read, folders, before, start, covered)
    if deps is None or not is_plain(row):
        return None, got
    return {**row, "deps": deps}, got


def _folders(spaces: list[NsFacts]) -> list[str]:
    """The folders a row depends on: each namespace's checkpoints folder (a checkpoint added
    or removed) and writes folder (a pending write added or taken)."""
    out = []
    for ns in spaces:
        folder = ns.folder  # set as the roster checked the namespace
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
    root: Path,
    read: list[str],
    folders: list[str],
    before: list[StatKey | None],
    start: int,
    covered: dict[str, StatKey],
) -> list[list[Any]] | None:
    """``[path below the root, stat key or None]`` of every file read and folder listed but
    the checkpoint files the row's links cover (``covered``: still with the stat key the
    links were read with), or None when one changed while the row was made (or too lately
    to tell)."""
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
        if covered.get(path) == stat_key(st):
            continue  # unchanged since its link was read, before the row was
        if not _quiet_since(st, start):
            return None
        out.append([path[len(head) :], list(stat_key(st))])
    return out


def _kept(
    reader: Reader, roster: Roster, facts: ThreadFacts, spaces: list[NsFacts], row: Any
) -> Overview | None:
    """The row kept for a thread while it still holds (the module's docstring), else None:
    each namespace's links are the ones it was made from (their files' stat keys unchanged:
    the roster's, or for a namespace too big for it the lineage's own index), and so is every
    file and folder its state was read from."""
    if type(row) is not dict or set(row) != _ROW_FIELDS or row["version"] != ROW_VERSION:
        return None
    links = row["links"]
    if row["namespaces"] != [ns.ns for ns in spaces] or type(links) is not list or len(links) != len(spaces):
        return None
    checked: dict[str, StatKey] = {}  # files whose stat key was taken just now
    for ns, digest in zip(spaces, links, strict=True):
        if _links_unchanged(ns, digest, checked):
            continue
        if len(ns.ids) < MIN_NAMES:
            return None
        rows = lineage_rows(roster.lineage(facts, ns))  # the big namespace's own index
        if _links_digest(rows) != digest or not _keys_hold(ns, rows, checked):
            return None
    got = _from_fields(facts, spaces, row)  # its fields' shapes first: ``latest`` names the deps
    if got is None or not _deps_hold(reader, row["deps"], spaces, row["latest"], checked):
        return None
    return got


def _links_unchanged(ns: NsFacts, digest: Any, checked: dict[str, StatKey]) -> bool:
    """Whether a namespace's kept links are one per checkpoint listed, each file still has
    the stat key it was read with, and they are the links the row was made from."""
    rows = kept_lineage_rows(ns)
    if ns.key is None or type(rows) is not list or len(rows) != len(ns.ids):
        return False
    head, lstat = ns.folder + os.sep, os.lstat
    for row, cid in zip(rows, ns.ids, strict=True):  # one lstat per checkpoint: this loop is the cost
        if type(row) is not list or len(row) < 5 or row[0] != cid:
            return False
        path = f"{head}{cid}.json"
        try:
            st = lstat(path)
        except OSError:
            return False
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        if key[0] != row[1] or key[1] != row[2] or key[2] != row[3] or key[3] != row[4]:
            return False
        checked[path] = key
    return bool(_links_digest(rows) == digest)


def _keys_hold(ns: NsFacts, rows: list[list[Any]], checked: dict[str, StatKey]) -> bool:
    """Whether each checkpoint file of ``rows`` still has the stat key they hold (taken now:
    what a lineage kept in process holds was not)."""
    head = ns.folder + os.sep
    for row in rows:
        path, key = f"{head}{encode_segment(row[0])}.json", tuple(row[1:5])
        if key_of(path) != key:
            return False
        checked[path] = key  # type: ignore[assignment]
    return True


def _from_fields(facts: ThreadFacts, spaces: list[NsFacts], row: dict[str, Any]) -> Overview | None:
    """The overview a row's fields say, or None when one is off (damaged, forged)."""
    names = [ns.ns for ns in spaces]
    currents, latest = row["currents"], row["latest"]
    waiting, unsettled_heads = _waiting(row["waiting"]), row["unsettled"]
    step, ts, nxt, channels, forks = row["step"], row["ts"], row["next"], row["channels"], row["forks"]
    if type(currents) is not list or len(currents) != len(names) or not _pairs_hold(latest, names, currents):
        return None
    if waiting is None or not (step is None or type(step) is int) or type(ts) is not str:
        return None
    if (
        not _strings(nxt)
        or not _strings(channels)
        or type(forks) is not int
        or type(unsettled_heads) is not list
    ):
        return None
    if not all(type(p) is list and len(p) == 2 and p[0] in names and _strings(p[1]) for p in unsettled_heads):
        return None
    summary = ThreadSummary(
        thread_id=facts.tid,
        namespaces=names,
        checkpoints=sum(len(ns.ids) for ns in spaces),
        latest_id=currents[0],
        latest_step=step,
        last_updated=ts,
        forks=forks,
        next=list(nxt),
        waiting=waiting,
        channels=frozenset(channels),
    )
    return Overview(summary, {ns: list(ids) for ns, ids in unsettled_heads})


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _pairs_hold(latest: Any, names: list[str], currents: list[Any]) -> bool:
    """The root namespace is in play, and each namespace in play is continued by the checkpoint
    its state was read at."""
    if type(latest) is not list or not latest or type(currents[0]) is not str:
        return False
    by_name = dict(zip(names, currents, strict=True))
    if not any(type(p) is list and p[:1] == [names[0]] for p in latest):
        return False
    for pair in latest:
        if type(pair) is not list or len(pair) != 2 or type(pair[1]) is not str:
            return False
        if by_name.get(pair[0], None) != pair[1]:
            return False
    return True


def _deps_hold(
    reader: Reader, deps: Any, spaces: list[NsFacts], latest: list[list[str]], checked: dict[str, StatKey]
) -> bool:
    """Every file and folder the row was made of still has its stat key (``checked``: the
    checkpoint files its links cover, whose keys were just taken), and these include each
    namespace's folders and the checkpoint file that continues each namespace in play (a row
    that names no file of the thread, forged or damaged, is never used)."""
    if type(deps) is not list:
        return False
    head = str(reader.root) + os.sep
    named: set[str] = set()
    for dep in deps:
        if type(dep) is not list or len(dep) != 2 or type(dep[0]) is not str:
            return False
        path, key = head + dep[0], dep[1]
        if key is None:
            if key_of(path) is not None:
                return False
        elif type(key) is not list or (checked.get(path) != tuple(key) and key_of(path) != tuple(key)):
            return False  # a key that is no stat key (not four integers) equals none
        named.add(path)
    need = set(_folders(spaces))
    folders = {ns.ns: ns.folder for ns in spaces}
    for ns, cid in latest:
        folder = folders.get(ns)
        if not folder:
            return False
        path = f"{folder}{os.sep}{encode_segment(cid)}.json"
        if path not in checked:  # covered by the links, or else named here
            need.add(path)
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
