"""Removing and copying checkpoints without losing what the others still use.

Every removal is planned, then carried out, by one code path whoever asks for it:
``plan_removal`` turns the checkpoints to remove into a ``PrunePlan`` (every file that goes,
and every value file the kept checkpoints need written first because their value sits inline
in a removed checkpoint); ``carry_out`` does exactly what the plan lists, under the caller's
exclusive thread lock. Which checkpoints go is a rule apart:

* ``plan_keep_latest``: ``RepoSaver.prune(strategy="keep_latest")``;
* ``plan_runs``: ``RepoSaver.delete_for_runs``;
* ``plan_prune``: the command line's ``prune --keep-last/--older-than``; its ``--dry-run``
  prints the plan that a real run carries out.

The rules read a checkpoint's metadata through a ``Metadata`` function the caller passes:
the saver's decoded metadata, or the stored tree for a reader that revives nothing (the
keys the rules read, ``run_id`` and ``counters_since_delta_snapshot``, are plain JSON).

``needed_files`` is the one walk of what checkpoints refer to (append chains, value files,
large files). Garbage is what it does not reach: a plan removes it with the checkpoints, and
fsck reports it as orphans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from .documents import Documents, writes_key
from .errors import FileFormatError, MissingReferenceError
from .format import fields
from .format.bookkeeping import depth
from .format.chains import Link, walk_chain
from .format.objects import REF, large_in, location_of, ref_nodes
from .format.storing import LARGE_VALUE_BYTES, Prepared, stored_node
from .format.validation import SCHEMA_VERSION
from .layout import CHECKPOINTS, LARGE, OBJECTS, encode_segment, value_file_kind
from .lineage import Lineage

#: (thread_id, checkpoint_ns, checkpoint_id) -> the checkpoint's metadata, read from its file
Metadata = Callable[[str, str, str], Mapping[str, Any]]


# ----------------------------------------------------------------------
# what checkpoints refer to
# ----------------------------------------------------------------------
@dataclass
class Needed:
    """The files the kept checkpoints use."""

    values: set[Path] = field(default_factory=set)  # value and base files read, existing or rescued
    # value, base and writes files a removal must write first (what they hold sits in a
    # removed checkpoint), validated and serialised
    rescued: dict[Path, tuple[Path, bytes]] = field(default_factory=dict)
    # the object and large files those files refer to that are not on disk yet (a compacted
    # list's chunks, the objects of a removed checkpoint), written before them; and the trees
    # they hold, by digest
    rescued_first: Prepared = field(default_factory=list)
    pending: dict[str, Any] = field(default_factory=dict)
    large: set[str] = field(default_factory=set)  # large-value digests
    objects: set[str] = field(default_factory=set)  # the objects/ files read, existing or rescued
    seen: set[tuple[Path, str, str]] = field(default_factory=set)  # links already followed
    # (what refers to objects, the objects the file holding it will hold, those it holds now):
    # every reference is followed as a reader will find it once the removal is done
    roots: list[tuple[Any, Mapping[str, Any] | None, Mapping[str, Any] | None]] = field(default_factory=list)


def needed_files(
    store: Documents, thread_id: str, keep: Mapping[str, Collection[str]] | None = None
) -> Needed:
    """What the kept checkpoints (per namespace; default: all) refer to, following append
    chains, deltas (format 4) and objects the way readers will once the others are gone."""
    layout = store.layout
    out = Needed()
    folders = store.namespace_folders(layout.thread_dir(thread_id))
    kept_by_ns: dict[str, set[str]] = {}
    for ns, _ in folders:
        ids = store.checkpoint_ids(thread_id, ns)
        kept_by_ns[ns] = set(keep.get(ns, ids)) if keep is not None else set(ids)
    kept_files = {layout.checkpoint_path(thread_id, ns, c) for ns, ids in kept_by_ns.items() for c in ids}
    for ns, ns_dir in folders:
        kept = kept_by_ns[ns]
        for cid in sorted(kept):
            path = layout.checkpoint_path(thread_id, ns, cid)
            raw = store.read_doc(path, "checkpoint")
            doc = store.header(thread_id, ns, cid)
            held = raw.get("objects") or {}
            for body in raw.get("new_values", {}).values():
                large_in(body, out.large)
            for record in (raw.get("parent_writes") or {}).values():
                for w in record["writes"]:
                    large_in(w, out.large)
            refs = [raw.get("new_values"), raw.get("parent_writes"), list(held.values())]
            out.roots.append((refs, held, held))
            parent = raw.get("parent_checkpoint_id")
            if parent and parent not in kept and (depth(raw) or _builds_on_parent(raw)):
                _mark_base(store, thread_id, ns, ns_dir, parent, out)
            versions = fields.channel_versions(doc)
            for channel, ref in doc["values"].items():
                _ChainMarks(store, thread_id, ns_dir, channel, kept, out).mark(versions.get(channel), ref)
            for _, wdoc in store.writes_docs(thread_id, ns, cid):
                wheld = wdoc.get("objects") or {}
                for w in wdoc["writes"]:
                    large_in(w, out.large)
                out.roots.append(([wdoc["writes"], list(wheld.values())], wheld, wheld))
        if keep is not None:
            _mark_taken_writes(store, thread_id, ns, kept, out)
    for digest in out.large:
        try:
            if digest in out.pending:
                out.roots.append((out.pending[digest], None, None))
            else:
                ldoc = store.read_doc(layout.large_path(thread_id, digest), "large_value")
                out.roots.append((ldoc, None, None))
        except FileNotFoundError:
            pass  # validate names the missing large file
    _mark_objects(store, thread_id, kept_files, out)
    return out


def _builds_on_parent(raw: Mapping[str, Any]) -> bool:
    """Whether a checkpoint's values build on its parent's bookkeeping: an append without
    ``base`` extends the list its parent holds (format 4), found through the parent's
    ``values`` even in a whole checkpoint (``delta`` 0), so the parent's base file must stay."""
    return any(
        isinstance(body, dict) and isinstance(body.get("append"), dict) and "base" not in body["append"]
        for body in (raw.get("new_values") or {}).values()
    )


def _mark_base(store: Documents, thread_id: str, ns: str, ns_dir: Path, parent: str, out: Needed) -> None:
    """A kept delta, or a kept checkpoint appending to its parent's list, whose parent goes
    (or is gone): the parent's whole bookkeeping, in the base file readers use in its place
    (bookkeeping.py, Documents.implied_base), existing or written first."""
    bpath = ns_dir / store.layout.base_rel(parent)
    out.values.add(bpath)
    if bpath in out.rescued:
        return
    try:
        whole = store.header(thread_id, ns, parent)
    except FileNotFoundError:
        return  # gone already: its base file is what the delta reads (validate names a missing one)
    cp = whole["checkpoint"]
    doc = {
        "schema_version": SCHEMA_VERSION,
        "kind": "base",
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": parent,
        "checkpoint": {k: cp[k] for k in ("v", "channel_versions", "versions_seen") if k in cp},
        "values": whole["values"],
    }
    try:
        if store.read_doc(bpath, "base") == doc:
            return  # written by an earlier removal, whole
    except (FileNotFoundError, FileFormatError):
        pass
    out.rescued[bpath] = store.prepare("base", doc, bpath)


def _mark_taken_writes(store: Documents, thread_id: str, ns: str, kept: set[str], out: Needed) -> None:
    """The pending writes a removed checkpoint took from a kept parent (format 4:
    ``parent_writes``), written back to a writes file of the parent unless a kept file or
    child holds them too."""
    layout = store.layout
    lineage = store.lineage(thread_id, ns)
    for cid in store.checkpoint_ids(thread_id, ns):
        if cid in kept:
            continue
        parent = lineage.links[cid].parent if cid in lineage.links else None
        if parent is None or parent not in kept:
            continue
        path = layout.checkpoint_path(thread_id, ns, cid)
        taken = store.read_doc(path, "checkpoint").get("parent_writes") or {}
        if not taken:
            continue
        held = store.read_doc(path, "checkpoint").get("objects") or {}
        have = {writes_key(p.name) for p, _ in store.writes_docs(thread_id, ns, parent)}
        for child in lineage.children(parent):
            if child in kept:
                cdoc = store.read_doc(layout.checkpoint_path(thread_id, ns, child), "checkpoint")
                have.update(cdoc.get("parent_writes") or {})
        for key, record in taken.items():
            wpath = layout.writes_dir(thread_id, ns) / layout.writes_name(parent, key)
            if key in have or wpath in out.rescued:
                continue
            doc = {
                "schema_version": SCHEMA_VERSION,
                "kind": "writes",
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": parent,
                **{k: record[k] for k in ("task_id", "task_path", "writes")},
            }
            for w in record["writes"]:
                large_in(w, out.large)
            out.roots.append((record["writes"], None, held))
            out.rescued[wpath] = store.prepare("writes", doc, wpath)


def _mark_objects(store: Documents, thread_id: str, kept_files: set[Path], out: Needed) -> None:
    """The ``objects/`` files readers will read once the removal is done (``out.objects``),
    and those to write first (``out.rescued_first``): every reference is followed where a
    reader finds it then. One held by a kept checkpoint or writes file stays where it is; one
    held by a checkpoint that goes, or by a file whose objects do not move with what it
    holds (a value moved to ``values/``, writes moved back to ``writes/``), is read from
    ``objects/``, and copied there, as it is, when it is not there yet."""
    layout = store.layout
    tdir = layout.thread_dir(thread_id)
    todo = list(out.roots)
    while todo:
        tree, after, before = todo.pop()
        for node in ref_nodes(tree):
            digest = node[REF]
            loc = location_of(node)
            if loc is not None:
                target = layout.checkpoint_in(tdir, *loc)
                if target in kept_files:
                    continue  # held there, and followed from there
                before_here: Mapping[str, Any] | None
                try:
                    before_here = store.read_doc(target, "checkpoint").get("objects")
                except (FileNotFoundError, FileFormatError):
                    before_here = None
            else:
                if after is not None and digest in after:
                    continue  # held by the file that holds the reference, and followed from there
                before_here = before
            if digest in out.objects:
                continue
            out.objects.add(digest)
            opath = layout.object_path(thread_id, digest)
            found = before_here.get(digest) if before_here is not None else None
            if found is not None and digest not in out.pending and not store.intact(opath, "object"):
                doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": found}
                out.rescued_first.append(store.prepare("object", doc, opath))
                out.pending[digest] = found
            if found is None:
                found = out.pending.get(digest)
            if found is None:
                try:
                    found = store.read_doc(opath, "object")["tree"]
                except (FileNotFoundError, FileFormatError):
                    continue  # validate names what is missing
                before_here = None
            todo.append((found, None, before_here))


@dataclass
class _ChainMarks:
    """The walks of one channel's append chains in one namespace, for a removal: which files
    the kept checkpoints use, and what must be rescued for them (into ``out``)."""

    store: Documents
    thread_id: str
    ns_dir: Path
    channel: str
    kept: set[str]
    out: Needed

    def mark(self, version: Any, ref: str) -> None:
        """Mark every file one value's append chain uses (chains.walk_chain: a cycle raises)."""
        implied = partial(self.store.implied_base, self.channel)
        for link in walk_chain(self.link, version, ref, implied):
            if link.known:
                return  # this link and everything below it is marked already
            large_in(link.body, self.out.large)

    def link(self, version: Any, ref: str) -> Link:
        """One link, marked as used. A link in a removed checkpoint is read where readers find
        it afterwards: its value file, which is rescued when there is none."""
        store, ns_dir, channel, out = self.store, self.ns_dir, self.channel, self.out
        vpath = ns_dir / store.layout.value_rel(channel, version)
        in_checkpoint = ref.startswith(CHECKPOINTS + "/") and (ns_dir / ref).exists()
        path = ns_dir / ref if in_checkpoint else vpath
        seen = (ns_dir, channel, ref + "|" + repr(version))
        if seen in out.seen:
            return Link(version, ref, path, known=True)
        out.seen.add(seen)
        if not in_checkpoint:
            out.values.add(vpath)
            if vpath in out.rescued:
                return Link(version, ref, vpath, "", json.loads(out.rescued[vpath][1]))
            vdoc = store.read_doc(vpath, "value")
            out.roots.append((vdoc, None, None))
            return Link(version, ref, vpath, "", vdoc)
        pointer = f"/new_values/{channel}"
        host = store.read_doc(path, "checkpoint")
        body = host.get("new_values", {}).get(channel)
        if body is None:
            raise MissingReferenceError(str(path), pointer, f"holds no value of channel {channel!r}")
        if host["checkpoint_id"] in self.kept:
            return Link(version, ref, path, pointer, body, host)
        out.values.add(vpath)
        existing = _existing_value(store, ns_dir, vpath, channel, version, ref, body, path)
        if existing is not None:
            out.roots.append((existing, None, None))
            return Link(version, ref, vpath, "", existing)
        if vpath not in out.rescued:
            held = host.get("objects") or {}
            if isinstance(body, dict) and "append" in body:
                # the list whole, not this link and the removed links below it: what is kept
                # reads from a fixed number of files however long the chain was
                body = self.whole_list(version, ref, vpath)
                held = {}
            out.roots.append((body, None, held))
            out.rescued[vpath] = _value_file(store, vpath, channel, version, body)
        rescued = json.loads(out.rescued[vpath][1])
        return Link(version, ref, vpath, "", rescued, rescued)

    def whole_list(self, version: Any, ref: str, vpath: Path) -> dict[str, Any]:
        """The body of a list stored whole, rebuilt from its append chain, stored the way a put
        stores a whole value (core/format/storing.py: the same messages are the same objects); the
        objects and large file it needs that are not on disk join ``out.rescued_first``."""
        entry = self.store.value_entry(self.ns_dir, self.channel, version, ref)
        node = {"json": entry.tree}  # format 4: a json node is msgpack's
        first: Prepared = []
        where = (str(vpath), "/value")
        stored, _ = stored_node(self.store, self.thread_id, node, LARGE_VALUE_BYTES, first, where)
        for path, data in first:
            doc = json.loads(data)
            self.out.pending[path.name[: -len(".json")]] = doc.get("tree", doc.get("value"))
        self.out.rescued_first.extend(first)
        return {"value": stored}


def _existing_value(
    store: Documents,
    ns_dir: Path,
    vpath: Path,
    channel: str,
    version: Any,
    ref: str,
    body: dict[str, Any],
    host: Path,
) -> dict[str, Any] | None:
    """The value file already at ``vpath``, when it holds the value the removed checkpoint
    ``host`` holds inline (readers then find the same value there; one prune may have stored
    whole what this checkpoint holds as an append); None when there is none or it does not
    read (damaged: rescued again, atomically). One that reads but holds another value is
    refused, naming it: removing the checkpoint would change what the kept ones read."""
    try:
        doc = store.read_doc(vpath, "value")
    except FileNotFoundError:
        return None
    except FileFormatError:
        return None  # damaged: the rescue writes it again from the checkpoint's inline value
    held = {k: v for k, v in doc.items() if k not in ("schema_version", "kind", "channel", "version")}
    if held != body and not _same_value(store, ns_dir, channel, version, ref):
        raise FileFormatError(
            str(vpath),
            "/",
            f"holds another value of channel {channel!r} at {version} than {host}, which is to be "
            "removed: refusing to remove it (the kept checkpoints would read this file instead)",
        )
    return doc


def _same_value(store: Documents, ns_dir: Path, channel: str, version: Any, ref: str) -> bool:
    """Whether the value file of ``channel`` at ``version`` and the checkpoint ``ref`` hold
    the same value once each is resolved (a chain rebuilt, objects and large files read)."""
    try:
        inline = store.value_entry(ns_dir, channel, version, ref)
        stored = store.value_entry(ns_dir, channel, version, store.layout.value_rel(channel, version))
    except (FileFormatError, MissingReferenceError):
        return False
    return (inline.empty, inline.tree, inline.raw) == (stored.empty, stored.tree, stored.raw)


def _value_file(
    store: Documents, vpath: Path, channel: str, version: Any, body: dict[str, Any]
) -> tuple[Path, bytes]:
    """The value file that takes the place of a removed checkpoint's inline value."""
    doc = {"schema_version": SCHEMA_VERSION, "kind": "value", "channel": channel, "version": version, **body}
    return store.prepare("value", doc, vpath)


# ----------------------------------------------------------------------
# a removal: plan, then carry out
# ----------------------------------------------------------------------
@dataclass
class PrunePlan:
    """The checkpoints a removal takes and every file that goes or is written with them.

    Two plans of the same thread are equal when they would do the same, byte for byte."""

    thread_id: str
    skipped: str | None = None  # why the thread is left whole (a plan_prune rule)
    doomed: dict[str, list[str]] = field(default_factory=dict)  # checkpoint ids per namespace
    checkpoints: list[Path] = field(default_factory=list)
    writes: list[Path] = field(default_factory=list)
    values: list[Path] = field(default_factory=list)  # value files nothing kept uses
    large: list[Path] = field(default_factory=list)  # large files nothing kept uses
    objects: list[Path] = field(default_factory=list)  # object files nothing kept uses
    rescued: list[Path] = field(default_factory=list)  # files written first
    # their contents, in batches each durable before the next (objects before what refers to them)
    rescue: list[list[tuple[Path, bytes]]] = field(default_factory=list, repr=False)

    @property
    def removed(self) -> list[Path]:
        return sorted([*self.checkpoints, *self.writes, *self.values, *self.large, *self.objects])


def plan_removal(store: Documents, thread_id: str, doomed: Mapping[str, Collection[str]]) -> PrunePlan:
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
            for p in store.files_in(layout.writes_dir(thread_id, ns))
            if layout.writes_owner(p.name) in owners
        )
    if not plan.doomed:
        return plan
    need = needed_files(store, thread_id, keep)
    values = sorted(need.rescued)
    plan.rescued = sorted([*values, *(p for p, _ in need.rescued_first)])
    plan.rescue = [sorted(need.rescued_first), [need.rescued[p] for p in values]]
    for _, ns_dir in store.namespace_folders(layout.thread_dir(thread_id)):
        plan.values.extend(p for p in store.value_files(ns_dir) if p not in need.values)
    plan.large = [
        p for p in store.files_in(layout.thread_dir(thread_id) / LARGE) if p.name[:-5] not in need.large
    ]
    plan.objects = [
        p for p in store.files_in(layout.thread_dir(thread_id) / OBJECTS) if p.name[:-5] not in need.objects
    ]
    return plan


def carry_out(store: Documents, plan: PrunePlan) -> None:
    """Do what the plan lists, nothing else; the caller holds the thread's exclusive lock.

    The rescued value files first (readers fall back to them), then the checkpoint files
    (the commit points), then their writes and the files nothing kept uses. A symlink
    anywhere in the thread refuses the whole removal before anything is written."""
    if not plan.doomed:
        return
    thread_id = plan.thread_id
    store.check_tree(store.layout.thread_dir(thread_id), f"remove checkpoints of thread {thread_id!r}")
    store.write(plan.rescue)
    store.remove_files(plan.checkpoints)
    store.remove_files(plan.writes)
    store.remove_files([*plan.values, *plan.large, *plan.objects])
    store.forget_thread(thread_id)


# ----------------------------------------------------------------------
# which checkpoints go
# ----------------------------------------------------------------------
def parent_of(store: Documents, doc: dict[str, Any], walked: set[str]) -> str | None:
    """The parent to go to next on a walk up the history; one the walk has been through
    closes a cycle, which would walk forever: a FileFormatError naming the file instead."""
    walked.add(doc["checkpoint_id"])
    parent: str | None = doc["parent_checkpoint_id"]
    if parent is not None and parent in walked:
        path = store.layout.checkpoint_path(doc["thread_id"], doc["checkpoint_ns"], doc["checkpoint_id"])
        raise FileFormatError(
            str(path), "/parent_checkpoint_id", f"parent chain cycles back to checkpoint {parent}"
        )
    return parent


def stored_metadata(store: Documents) -> Metadata:
    """Metadata as stored (a JSON tree): for readers that construct no values."""
    return lambda thread_id, ns, cid: store.header(thread_id, ns, cid)["metadata"]  # type: ignore[no-any-return]


def needed_for_latest(
    store: Documents,
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
    doc = store.header(thread_id, ns, latest)
    versions = fields.channel_versions(doc)
    delta = metadata(thread_id, ns, latest).get("counters_since_delta_snapshot") or {}
    unseeded = {
        ch
        for ch, ref in doc["values"].items()
        if ch in delta and store.value_entry(ns_dir, ch, versions.get(ch), ref).empty
    }
    walked: set[str] = set()
    parent = parent_of(store, doc, walked) if unseeded else None
    while unseeded and parent:
        if unseeded <= explored.get(parent, set()):
            break  # an earlier walk looked for these channels from here up: all it needs is kept
        explored.setdefault(parent, set()).update(unseeded)
        try:
            doc = store.header(thread_id, ns, parent)
        except FileNotFoundError:
            break
        keep.add(parent)
        versions = fields.channel_versions(doc)
        for ch in list(unseeded):
            ref = doc["values"].get(ch)
            if ref is not None and not store.value_entry(ns_dir, ch, versions.get(ch), ref).empty:
                unseeded.discard(ch)
        parent = parent_of(store, doc, walked) if unseeded else None
    return keep


def plan_keep_latest(store: Documents, metadata: Metadata, thread_id: str) -> PrunePlan:
    """``prune(strategy="keep_latest")``: per namespace the latest checkpoint and what a
    DeltaChannel needs of its ancestors (``needed_for_latest``) stay, the rest goes."""
    doomed: dict[str, list[str]] = {}
    for ns in store.namespaces(thread_id):
        ids = store.checkpoint_ids(thread_id, ns)
        if ids:
            latest = store.current(thread_id, ns) or ids[-1]
            keep = needed_for_latest(store, metadata, thread_id, ns, latest)
            keep = no_new_heads(store.lineage(thread_id, ns), keep)
            doomed[ns] = [cid for cid in ids if cid not in keep]
    return plan_removal(store, thread_id, doomed)


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


def plan_runs(store: Documents, metadata: Metadata, thread_id: str, run_ids: Collection[str]) -> PrunePlan:
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
    store: Documents,
    thread_id: str,
    *,
    keep_last: int | None,
    older_than: float | None,
    now: datetime,
    waits_at: Collection[str] = (),
) -> PrunePlan:
    """The command line's prune: which checkpoints go, and every file that goes with them.

    Per namespace a checkpoint goes when it is not among the newest ``keep_last`` and is
    older than ``older_than`` seconds (each rule only when given). The latest always stays,
    and so do the ancestors a DeltaChannel of a kept checkpoint needs. Only the oldest part
    of a namespace is cut (everything from the oldest kept checkpoint on stays), so history
    never gets a hole. A thread waiting on an interrupt (``waits_at``: the nodes it waits at,
    which the caller reads off its tasks) is not touched at all.
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
            young = older_than is not None and _age(store.header(thread_id, ns, cid), now) < older_than
            if recent or young:
                keep.add(cid)
        explored: dict[str, set[str]] = {}
        for cid in sorted(keep, reverse=True):  # newest first: older walks stop where it went
            keep |= needed_for_latest(store, metadata, thread_id, ns, cid, explored)
        oldest = min(keep)
        keep = no_new_heads(store.lineage(thread_id, ns), keep | {c for c in ids if c >= oldest})
        doomed[ns] = [c for c in ids if c not in keep]
    return plan_removal(store, thread_id, doomed)


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
def copy_thread_files(store: Documents, source_thread_id: str, target_thread_id: str) -> None:
    """Copy every file of a thread (whole parent chains, so DeltaChannels rebuild), rewriting
    the thread id; large files first, checkpoints (the commit points) last."""
    layout = store.layout
    src_dir = layout.thread_dir(source_thread_id)
    dst_dir = layout.thread_dir(target_thread_id)
    first, second = sorted((source_thread_id, target_thread_id))
    # both locks, in id order: the source must hold still while it is read
    with store.thread_lock(first, exclusive=True), store.thread_lock(second, exclusive=True):
        store.check_tree(src_dir, f"copy thread {source_thread_id!r}")
        large: list[tuple[Path, bytes]] = []
        for folder, kind in ((OBJECTS, "object"), (LARGE, "large_value")):
            for p in store.files_in(src_dir / folder):
                dst = dst_dir / folder / p.name
                if store.intact(dst, kind):
                    continue  # named by its content: the target's whole file is the same
                if not store.intact(p, kind):  # never over the target's, never a new unreadable one
                    raise FileFormatError(
                        str(p), "/sha256", "content does not match its sha256 name: refusing to copy it"
                    )
                large.append(store.prepare(kind, store.read_doc(p, kind), dst))
        values: list[tuple[Path, bytes]] = []
        writes: list[tuple[Path, bytes]] = []
        checkpoints: list[tuple[Path, bytes]] = []
        for ns, src_ns in store.namespace_folders(src_dir):
            dst_ns = layout.ns_dir(target_thread_id, ns)
            for path in store.value_files(src_ns):
                kind = value_file_kind(path)
                doc = store.read_doc(path, kind)
                if kind == "base":
                    doc = {**doc, "thread_id": target_thread_id}
                values.append(store.prepare(kind, doc, dst_ns / path.relative_to(src_ns)))
            for path in store.files_in(layout.writes_dir(source_thread_id, ns)):
                wdoc = {**store.read_doc(path, "writes"), "thread_id": target_thread_id}
                writes.append(store.prepare("writes", wdoc, dst_ns / path.relative_to(src_ns)))
            for cid in store.checkpoint_ids(source_thread_id, ns):
                store.header(source_thread_id, ns, cid)  # names checked, and a delta's line whole
                cpath = layout.checkpoint_path(source_thread_id, ns, cid)
                cdoc = {**store.read_doc(cpath, "checkpoint"), "thread_id": target_thread_id}
                checkpoints.append(
                    store.prepare("checkpoint", cdoc, layout.checkpoint_path(target_thread_id, ns, cid))
                )
        store.write([large, values, writes, checkpoints])
        store.forget_thread(target_thread_id)
