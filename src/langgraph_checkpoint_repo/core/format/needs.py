"""What checkpoints refer to: the one walk of the files a thread's kept checkpoints use.

Append chains and their base files, ``values/`` files, ``large/`` files, the objects a
reference names, the pending writes a child took in: all of them are the format's ways of
sharing data between files, so the walk lives with the format. Garbage is what it does not
reach: a removal plan (plans.py) takes it with the checkpoints, and fsck reports it as orphans.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import FileFormatError, MissingReferenceError
from ..layout import CHECKPOINTS
from ..threads import ThreadStore, writes_key
from . import fields
from .bookkeeping import depth
from .chains import Link, walk_chain
from .objects import REF, large_in, location_of, ref_nodes
from .storing import LARGE_VALUE_BYTES, Prepared, stored_node
from .validation import SCHEMA_VERSION


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
    store: ThreadStore, thread_id: str, keep: Mapping[str, Collection[str]] | None = None
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
            raw = store.files.read_doc(path, "checkpoint")
            doc = store.docs.header(thread_id, ns, cid)
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
            for _, wdoc in store.docs.writes(thread_id, ns, cid):
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
                ldoc = store.files.read_doc(layout.large_path(thread_id, digest), "large_value")
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


def _mark_base(store: ThreadStore, thread_id: str, ns: str, ns_dir: Path, parent: str, out: Needed) -> None:
    """A kept delta, or a kept checkpoint appending to its parent's list, whose parent goes
    (or is gone): the parent's whole bookkeeping, in the base file readers use in its place
    (bookkeeping.py, ThreadStore.implied_base), existing or written first."""
    bpath = ns_dir / store.layout.base_rel(parent)
    out.values.add(bpath)
    if bpath in out.rescued:
        return
    try:
        whole = store.docs.header(thread_id, ns, parent)
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
        if store.files.read_doc(bpath, "base") == doc:
            return  # written by an earlier removal, whole
    except (FileNotFoundError, FileFormatError):
        pass
    out.rescued[bpath] = store.files.prepare("base", doc, bpath)


def _mark_taken_writes(store: ThreadStore, thread_id: str, ns: str, kept: set[str], out: Needed) -> None:
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
        taken = store.files.read_doc(path, "checkpoint").get("parent_writes") or {}
        if not taken:
            continue
        held = store.files.read_doc(path, "checkpoint").get("objects") or {}
        have = {writes_key(p.name) for p, _ in store.docs.writes(thread_id, ns, parent)}
        for child in lineage.children(parent):
            if child in kept:
                cdoc = store.files.read_doc(layout.checkpoint_path(thread_id, ns, child), "checkpoint")
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
            out.rescued[wpath] = store.files.prepare("writes", doc, wpath)


def _mark_objects(store: ThreadStore, thread_id: str, kept_files: set[Path], out: Needed) -> None:
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
                    before_here = store.files.read_doc(target, "checkpoint").get("objects")
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
            if found is not None and digest not in out.pending and not store.files.intact(opath, "object"):
                doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": found}
                out.rescued_first.append(store.files.prepare("object", doc, opath))
                out.pending[digest] = found
            if found is None:
                found = out.pending.get(digest)
            if found is None:
                try:
                    found = store.files.read_doc(opath, "object")["tree"]
                except (FileNotFoundError, FileFormatError):
                    continue  # validate names what is missing
                before_here = None
            todo.append((found, None, before_here))


@dataclass
class _ChainMarks:
    """The walks of one channel's append chains in one namespace, for a removal: which files
    the kept checkpoints use, and what must be rescued for them (into ``out``)."""

    store: ThreadStore
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
            vdoc = store.files.read_doc(vpath, "value")
            out.roots.append((vdoc, None, None))
            return Link(version, ref, vpath, "", vdoc)
        pointer = f"/new_values/{channel}"
        host = store.files.read_doc(path, "checkpoint")
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
        entry = self.store.values.value_entry(self.ns_dir, self.channel, version, ref)
        node = {"json": entry.tree}  # format 4: a json node is msgpack's
        first: Prepared = []
        where = (str(vpath), "/value")
        stored, _ = stored_node(self.store.files, self.thread_id, node, LARGE_VALUE_BYTES, first, where)
        for path, data in first:
            doc = json.loads(data)
            self.out.pending[path.name[: -len(".json")]] = doc.get("tree", doc.get("value"))
        self.out.rescued_first.extend(first)
        return {"value": stored}


def _existing_value(
    store: ThreadStore,
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
        doc = store.files.read_doc(vpath, "value")
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


def _same_value(store: ThreadStore, ns_dir: Path, channel: str, version: Any, ref: str) -> bool:
    """Whether the value file of ``channel`` at ``version`` and the checkpoint ``ref`` hold
    the same value once each is resolved (a chain rebuilt, objects and large files read)."""
    try:
        inline = store.values.value_entry(ns_dir, channel, version, ref)
        stored = store.values.value_entry(ns_dir, channel, version, store.layout.value_rel(channel, version))
    except (FileFormatError, MissingReferenceError):
        return False
    return (inline.empty, inline.tree, inline.raw) == (stored.empty, stored.tree, stored.raw)


def _value_file(
    store: ThreadStore, vpath: Path, channel: str, version: Any, body: dict[str, Any]
) -> tuple[Path, bytes]:
    """The value file that takes the place of a removed checkpoint's inline value."""
    doc = {"schema_version": SCHEMA_VERSION, "kind": "value", "channel": channel, "version": version, **body}
    return store.files.prepare("value", doc, vpath)
