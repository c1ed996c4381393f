"""Removing and copying checkpoints without losing what the others still use.

Every removal is planned, then carried out, by one code path whoever asks for it:
``plan_removal`` turns the checkpoints to remove into a ``PrunePlan`` (every file that goes,
and every value file the kept checkpoints need written first because their value sits inline
in a removed checkpoint); ``carry_out`` does exactly what the plan lists, under the caller's
exclusive thread lock. Which checkpoints go is a rule apart:

* ``plan_keep_latest``: ``RepoSaver.prune(strategy="keep_latest")``;
* ``plan_runs``: ``RepoSaver.delete_for_runs``;
* ``plan_prune``: the command line's ``prune --keep-last/--older-than``; its ``--dry-run``
  prints the plan that a real run carries out;
* ``plan_whole``: retention's ``delete`` of an expired thread (readmodel/retention.py, which
  also uses ``plan_prune`` for keep-last and ``plan_keep_latest``).

The rules read a checkpoint's metadata through a ``Metadata`` function the caller passes:
the saver's decoded metadata, or the stored tree for a reader that revives nothing (the
keys the rules read, ``run_id`` and ``counters_since_delta_snapshot``, are plain JSON).

What the kept checkpoints still use is ``format/needs.py``'s one walk; what it does not
reach goes with the checkpoints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import FileFormatError
from .format import fields
from .format.needs import needed_files
from .layout import LARGE, OBJECTS, encode_segment, value_file_kind
from .lineage import Lineage
from .threads import ThreadStore

#: (thread_id, checkpoint_ns, checkpoint_id) -> the checkpoint's metadata, read from its file
Metadata = Callable[[str, str, str], Mapping[str, Any]]


# ----------------------------------------------------------------------
# a removal: plan, then carry out
# ----------------------------------------------------------------------
@dataclass
class PrunePlan:
    """The checkpoints a removal takes and every file that goes or is written with them.

    Two plans of the same thread are equal when they would do the same, byte for byte."""

    thread_id: str
    skipped: str | None = None  # why the thread is left whole (a plan_prune rule)
    expired: str | None = None  # why the thread goes whole, its folder with it (plan_whole)
    doomed: dict[str, list[str]] = field(default_factory=dict)  # checkpoint ids per namespace
    checkpoints: list[Path] = field(default_factory=list)
    writes: list[Path] = field(default_factory=list)
    values: list[Path] = field(default_factory=list)  # value files nothing kept uses
    large: list[Path] = field(default_factory=list)  # large files nothing kept uses
    objects: list[Path] = field(default_factory=list)  # object files nothing kept uses
    rescued: list[Path] = field(default_factory=list)  # files written first
    # their contents, in batches each durable before the next (objects before what refers to them)
    rescue: list[list[tuple[Path, bytes]]] = field(default_factory=list, repr=False)
    removed_bytes: int = 0  # the sizes of the files that go, when planned
    written_bytes: int = 0  # the sizes of the files written first (kept when the plan is skipped)

    @property
    def removed(self) -> list[Path]:
        return sorted([*self.checkpoints, *self.writes, *self.values, *self.large, *self.objects])


def plan_removal(store: ThreadStore, thread_id: str, doomed: Mapping[str, Collection[str]]) -> PrunePlan:
    """Every file that removing ``doomed`` (checkpoint ids per namespace) takes with it: the
    checkpoints, their writes, and the value and large files no kept checkpoint uses; plus
    the value files to write first for kept checkpoints whose values sit in a doomed one."""
    layout = store.layout
    plan = PrunePlan(thread_id)
    keep: dict[str, set[str]] = {}
    for ns, ids in doomed.items():
        gone = set(ids)
        present = store.checkpoint_ids(thread_id, ns)
        if not gone & set(present):
            continue
        plan.doomed[ns] = [c for c in present if c in gone]
        keep[ns] = {c for c in present if c not in gone}
        plan.checkpoints.extend(layout.checkpoint_path(thread_id, ns, c) for c in plan.doomed[ns])
        owners = {encode_segment(c) for c in gone}
        plan.writes.extend(
            p
            for p in store.files.files_in(layout.writes_dir(thread_id, ns))
            if layout.writes_owner(p.name) in owners
        )
    if not plan.doomed:
        return plan
    need = needed_files(store, thread_id, keep)
    values = sorted(need.rescued)
    plan.rescued = sorted([*values, *(p for p, _ in need.rescued_first)])
    plan.rescue = [sorted(need.rescued_first), [need.rescued[p] for p in values]]
    for _, ns_dir in store.namespace_folders(layout.thread_dir(thread_id)):
        plan.values.extend(p for p in store.files.value_files(ns_dir) if p not in need.values)
    plan.large = [
        p for p in store.files.files_in(layout.thread_dir(thread_id) / LARGE) if p.name[:-5] not in need.large
    ]
    plan.objects = [
        p
        for p in store.files.files_in(layout.thread_dir(thread_id) / OBJECTS)
        if p.name[:-5] not in need.objects
    ]
    plan.removed_bytes = _sizes(plan.removed)
    plan.written_bytes = sum(len(data) for batch in plan.rescue for _, data in batch)
    return plan


def plan_whole(store: ThreadStore, thread_id: str, why: str) -> PrunePlan:
    """The whole thread goes (retention's ``delete`` of an expired thread): every checkpoint
    of every namespace, listed as ``plan_removal`` lists them, and ``carry_out`` removes the
    thread's folder as ``delete_thread`` does (renamed away first, so no reader sees half)."""
    doomed = {ns: store.checkpoint_ids(thread_id, ns) for ns in store.namespaces(thread_id)}
    plan = plan_removal(store, thread_id, doomed)
    plan.expired = why
    plan.rescued, plan.rescue, plan.written_bytes = [], [], 0  # nothing is kept to need them
    return plan


def _sizes(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.lstat(path).st_size
        except FileNotFoundError:
            continue  # gone already: the removal skips it too
    return total


def carry_out(store: ThreadStore, plan: PrunePlan) -> None:
    """Do what the plan lists, nothing else; the caller holds the thread's exclusive lock.

    The rescued value files first (readers fall back to them), then the checkpoint files
    (the commit points), then their writes and the files nothing kept uses. A file goes only
    after every file that refers to it: readers take no lock, and one that finds the file it
    reads gone looks again, but one that finds a file it refers to gone raises. So the
    checkpoints go newest first (a delta refers to its parent, an append to its parent's
    list, a message to the older checkpoint that first held it, in any namespace). A symlink
    anywhere in the thread refuses the whole removal before anything is written. A whole
    thread's plan (``plan_whole``) removes the thread's folder, as ``delete_thread`` does."""
    if not plan.doomed:
        return
    thread_id = plan.thread_id
    if plan.expired is not None:  # as delete_thread: renamed away first, refused over a symlink
        store.files.remove_tree(store.layout.thread_dir(thread_id))
        store.forget_thread(thread_id)
        return
    store.files.check_tree(store.layout.thread_dir(thread_id), f"remove checkpoints of thread {thread_id!r}")
    store.files.write(plan.rescue)
    store.files.remove_files(_newest_first(store, plan))
    store.files.remove_files(plan.writes)
    store.files.remove_files([*plan.values, *plan.large, *plan.objects])
    store.forget_thread(thread_id)


def _newest_first(store: ThreadStore, plan: PrunePlan) -> list[Path]:
    """The plan's checkpoint files in the order they may go: every checkpoint after its
    children, newest first across namespaces. A checkpoint's time is its id's, or its
    parent's when that is later (a line written by a machine whose clock was behind has
    ids older than its parent's), and of two at one time the one further down its line
    goes first."""
    order: dict[Path, tuple[str, int]] = {}
    for ns, doomed in plan.doomed.items():
        links = store.lineage(plan.thread_id, ns).links
        when: dict[str, tuple[str, int]] = {}  # id -> (its time, its depth in its line)
        for cid in doomed:
            line: list[str] = []
            up: str | None = cid
            while up is not None and up not in when and up in links and len(line) <= len(links):
                line.append(up)  # bounded: a cycle of parents (refused by the plan) ends here
                up = links[up].parent
            below = when.get(up, ("", 0)) if up is not None else ("", 0)
            for here in reversed(line):
                below = when[here] = (max(below[0], here), below[1] + 1)
            order[store.layout.checkpoint_path(plan.thread_id, ns, cid)] = when.get(cid, (cid, 0))
    return sorted(plan.checkpoints, key=lambda path: order.get(path, (path.name, 0)), reverse=True)


# ----------------------------------------------------------------------
# which checkpoints go
# ----------------------------------------------------------------------
def stored_metadata(store: ThreadStore) -> Metadata:
    """Metadata as stored (a JSON tree): for readers that construct no values."""
    return lambda thread_id, ns, cid: store.docs.header(thread_id, ns, cid)["metadata"]  # type: ignore[no-any-return]


def needed_for_latest(
    store: ThreadStore,
    metadata: Metadata,
    thread_id: str,
    ns: str,
    latest: str,
    explored: dict[str, set[str]] | None = None,
) -> set[str]:
    """The latest checkpoint plus the ancestors a DeltaChannel needs to rebuild its value:
    back to the nearest one holding a stored value (a snapshot) for each delta channel
    that is empty at the latest. Delta channels are the ones LangGraph counts in the
    metadata's ``counters_since_delta_snapshot``; other empty channels (consumed
    triggers) need nothing.

    ``explored`` (shared by the calls of one plan) remembers, per checkpoint, the channels
    already looked for from there up: a walk that reaches one stops, because what lies above
    is kept already. So the calls of a plan read each checkpoint at most once per channel,
    even when metadata claims a delta channel no checkpoint holds a snapshot of (each walk
    would otherwise go to the first checkpoint: quadratic in the history)."""
    ns_dir = store.layout.ns_dir(thread_id, ns)
    explored = {} if explored is None else explored
    keep = {latest}
    record = store.get(thread_id, ns, latest)
    delta = metadata(thread_id, ns, latest).get("counters_since_delta_snapshot") or {}
    unseeded = {
        ch
        for ch, ref in record.values.items()
        if ch in delta and store.values.value_entry(ns_dir, ch, record.channel_versions.get(ch), ref).empty
    }

    def explored_already(parent: str) -> bool:
        """An earlier walk looked for these channels from here up: all it needs is kept."""
        return unseeded <= explored.get(parent, set())

    for record in store.ancestors(thread_id, ns, latest, stop=explored_already) if unseeded else ():
        parent = record.checkpoint_id
        explored.setdefault(parent, set()).update(unseeded)
        keep.add(parent)
        for ch in list(unseeded):
            ref = record.values.get(ch)
            version = record.channel_versions.get(ch)
            if ref is not None and not store.values.value_entry(ns_dir, ch, version, ref).empty:
                unseeded.discard(ch)
        if not unseeded:
            break
    return keep


def plan_keep_latest(
    store: ThreadStore, metadata: Metadata, thread_id: str, *, allow_growth: bool = True
) -> PrunePlan:
    """``prune(strategy="keep_latest")``: per namespace the latest checkpoint and what a
    DeltaChannel needs of its ancestors (``needed_for_latest``) stay, the rest goes. Without
    ``allow_growth`` (retention's keep_latest) a thread the removal would make bigger is kept
    whole, as ``plan_prune`` keeps it; ``RepoSaver.prune``, LangGraph's call, asks for the
    removal itself and gets it."""
    doomed: dict[str, list[str]] = {}
    for ns in store.namespaces(thread_id):
        ids = store.checkpoint_ids(thread_id, ns)
        if ids:
            latest = store.current(thread_id, ns) or ids[-1]
            keep = needed_for_latest(store, metadata, thread_id, ns, latest)
            keep = no_new_heads(store.lineage(thread_id, ns), keep)
            doomed[ns] = [cid for cid in ids if cid not in keep]
    return unless_it_grows(plan_removal(store, thread_id, doomed), allow_growth)


def unless_it_grows(plan: PrunePlan, allow_growth: bool) -> PrunePlan:
    """``plan``, or (unless ``allow_growth``) the thread kept whole when what the plan writes
    first (values the kept checkpoints use of the removed ones) outweighs what it removes."""
    gone, written = plan_bytes(plan)
    if written <= gone or allow_growth:
        return plan
    return PrunePlan(
        plan.thread_id,
        skipped=f"pruning would grow it by {written - gone:,} bytes (removes {gone:,}, writes "
        f"{written:,}); --allow-growth prunes it anyway",
        removed_bytes=gone,
        written_bytes=written,
    )


def no_new_heads(lineage: Lineage, keep: set[str]) -> set[str]:
    """``keep`` grown so that the removal makes no checkpoint a head that was not one: a kept
    checkpoint whose children would all go keeps one of them (the newest), and so on down.
    Otherwise a line written by a machine whose clock was behind (its ids older than its
    parent's) would lose its link to what it continues, and the rule of which checkpoint
    continues (lineage.py) would pick the other line."""
    children: dict[str, list[str]] = {}
    for cid, node in lineage.links.items():
        if node.parent is not None:
            children.setdefault(node.parent, []).append(cid)
    keep = set(keep)
    todo = sorted(keep)
    while todo:
        cid = todo.pop()
        kids = children.get(cid)
        if kids and not any(k in keep for k in kids):
            newest = max(kids)
            keep.add(newest)
            todo.append(newest)
    return keep


def plan_runs(store: ThreadStore, metadata: Metadata, thread_id: str, run_ids: Collection[str]) -> PrunePlan:
    """``delete_for_runs``: the checkpoints whose metadata ``run_id`` is one of ``run_ids``
    (``metadata`` reads the files themselves: what decides a removal is never a cache)."""
    doomed = {
        ns: [
            cid
            for cid in store.checkpoint_ids(thread_id, ns)
            if metadata(thread_id, ns, cid).get("run_id") in run_ids
        ]
        for ns in store.namespaces(thread_id)
    }
    return plan_removal(store, thread_id, doomed)


def plan_prune(
    store: ThreadStore,
    thread_id: str,
    *,
    keep_last: int | None,
    older_than: float | None,
    now: datetime,
    waits_at: Collection[str] = (),
    allow_growth: bool = False,
) -> PrunePlan:
    """The command line's prune: which checkpoints go, and every file that goes with them.

    Per namespace a checkpoint goes when it is not among the newest ``keep_last`` and is
    older than ``older_than`` seconds (each rule only when given). The latest always stays,
    and so do the ancestors a DeltaChannel of a kept checkpoint needs. Only the oldest part
    of a namespace is cut (everything from the oldest kept checkpoint on stays), so history
    never gets a hole. A thread waiting on an interrupt (``waits_at``: the nodes it waits at,
    which the caller reads off its tasks) is not touched at all, nor (unless
    ``allow_growth``) one that pruning would make bigger: what the kept checkpoints still use
    of the removed ones is written first, and that can outweigh what goes.
    """
    if waits_at:
        return PrunePlan(thread_id, skipped=f"waits on an interrupt at {', '.join(sorted(set(waits_at)))}")
    metadata = stored_metadata(store)
    doomed: dict[str, list[str]] = {}
    for ns in (ns for ns in store.namespaces(thread_id) if store.checkpoint_ids(thread_id, ns)):
        ids = store.checkpoint_ids(thread_id, ns)
        keep = {store.current(thread_id, ns) or ids[-1]}
        for i, cid in enumerate(ids):
            recent = keep_last is not None and i >= len(ids) - keep_last
            young = older_than is not None and _age(store.docs.header(thread_id, ns, cid), now) < older_than
            if recent or young:
                keep.add(cid)
        explored: dict[str, set[str]] = {}
        for cid in sorted(keep, reverse=True):  # newest first: older walks stop where it went
            keep |= needed_for_latest(store, metadata, thread_id, ns, cid, explored)
        oldest = min(keep)
        keep = no_new_heads(store.lineage(thread_id, ns), keep | {c for c in ids if c >= oldest})
        doomed[ns] = [c for c in ids if c not in keep]
    return unless_it_grows(plan_removal(store, thread_id, doomed), allow_growth)


def plan_bytes(plan: PrunePlan) -> tuple[int, int]:
    """(bytes the plan removes, bytes it writes first): what the root loses and gains (or
    would, for a thread kept whole because it would grow)."""
    return plan.removed_bytes, plan.written_bytes


def parse_ts(ts: str) -> datetime | None:
    """A checkpoint's ``ts`` as an aware time (UTC when it names no zone), None if unreadable."""
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _age(doc: dict[str, Any], now: datetime) -> float:
    when = parse_ts(fields.ts(doc))
    return float("inf") if when is None else (now - when).total_seconds()


# ----------------------------------------------------------------------
# copy
# ----------------------------------------------------------------------
def copy_thread_files(store: ThreadStore, source_thread_id: str, target_thread_id: str) -> None:
    """Copy every file of a thread (whole parent chains, so DeltaChannels rebuild), rewriting
    the thread id; large files first, checkpoints (the commit points) last."""
    layout = store.layout
    src_dir = layout.thread_dir(source_thread_id)
    dst_dir = layout.thread_dir(target_thread_id)
    first, second = sorted((source_thread_id, target_thread_id))
    # both locks, in id order: the source must hold still while it is read
    with store.thread_lock(first, exclusive=True), store.thread_lock(second, exclusive=True):
        store.files.check_tree(src_dir, f"copy thread {source_thread_id!r}")
        large: list[tuple[Path, bytes]] = []
        for folder, kind in ((OBJECTS, "object"), (LARGE, "large_value")):
            for p in store.files.files_in(src_dir / folder):
                dst = dst_dir / folder / p.name
                if store.files.intact(dst, kind):
                    continue  # named by its content: the target's whole file is the same
                if not store.files.intact(p, kind):  # never over the target's, never a new unreadable one
                    raise FileFormatError(
                        str(p), "/sha256", "content does not match its sha256 name: refusing to copy it"
                    )
                large.append(store.files.prepare(kind, store.files.read_doc(p, kind), dst))
        values: list[tuple[Path, bytes]] = []
        writes: list[tuple[Path, bytes]] = []
        checkpoints: list[tuple[Path, bytes]] = []
        for ns, src_ns in store.namespace_folders(src_dir):
            dst_ns = layout.ns_dir(target_thread_id, ns)
            for path in store.files.value_files(src_ns):
                kind = value_file_kind(path)
                doc = store.files.read_doc(path, kind)
                if kind == "base":
                    doc = {**doc, "thread_id": target_thread_id}
                values.append(store.files.prepare(kind, doc, dst_ns / path.relative_to(src_ns)))
            for path in store.files.files_in(layout.writes_dir(source_thread_id, ns)):
                wdoc = {**store.files.read_doc(path, "writes"), "thread_id": target_thread_id}
                writes.append(store.files.prepare("writes", wdoc, dst_ns / path.relative_to(src_ns)))
            for cid in store.checkpoint_ids(source_thread_id, ns):
                store.docs.header(source_thread_id, ns, cid)  # names checked, and a delta's line whole
                cpath = layout.checkpoint_path(source_thread_id, ns, cid)
                cdoc = {**store.files.read_doc(cpath, "checkpoint"), "thread_id": target_thread_id}
                checkpoints.append(
                    store.files.prepare("checkpoint", cdoc, layout.checkpoint_path(target_thread_id, ns, cid))
                )
        store.files.write([large, values, writes, checkpoints])
        store.forget_thread(target_thread_id)
