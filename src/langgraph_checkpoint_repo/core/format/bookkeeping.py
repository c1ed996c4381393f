"""LangGraph's bookkeeping in a checkpoint file, said once (format 4).

A checkpoint's ``channel_versions``, ``versions_seen`` and the references to where each
channel's value lives (``values``) are mostly what its parent had. Format 4 writes them whole
only every ``DELTA_EVERY`` checkpoints of a line; the others (``"delta": n``, n files back to a
whole one) hold only what changed since their parent:

* ``checkpoint.channel_versions``: the channels whose version changed; a channel in
  ``new_values`` is at the file's ``version`` (LangGraph gives all of one step's updates one
  version) unless listed here;
* ``checkpoint.versions_seen``: the nodes whose map changed (each map whole);
* ``values``: the references that differ from the parent's (a channel in ``new_values`` lives
  in the file itself);
* ``checkpoint.v``: only when it differs from the parent's.

Every reader gets the whole document (``materialize``; ``ThreadStore.header``): the parent's
whole bookkeeping with the changes applied. Reading the latest checkpoint therefore reads at
most ``DELTA_EVERY`` earlier files, however long the history. When prune removes a parent that
a kept checkpoint builds on, it first writes the parent's whole bookkeeping to
``values/@<checkpoint>.json`` (kind ``base``), and readers use that instead.

Whole documents keep the format-3 shape apart from ``version``: ``channel_versions`` lists every
channel not implied by ``version``, ``values`` every channel not held in the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..layout import Layout
from .records import CheckpointRecord

#: a whole copy after this many deltas in a row (the writer's rule; a read follows at most
#: MAX_DELTA_CHAIN)
DELTA_EVERY = 16
MAX_DELTA_CHAIN = 1024

Doc = dict[str, Any]


def depth(doc: Mapping[str, Any]) -> int:
    """How many deltas back to a whole document (0: this one is whole)."""
    got = doc.get("delta")
    return got if isinstance(got, int) and not isinstance(got, bool) else 0


def normalize(layout: Layout, doc: Any) -> Any:
    """A checkpoint document as it reads on its own, in place: every channel it holds
    (``new_values``) referred to the file itself, and at the file's ``version`` unless its
    ``channel_versions`` says otherwise. A whole document is then complete; a delta still
    needs its parent (``materialize``)."""
    if not isinstance(doc, dict) or doc.get("kind") != "checkpoint":
        return doc
    values = doc.setdefault("values", {})
    new_values = doc.get("new_values") or {}
    cp = doc["checkpoint"]
    if depth(doc):
        cp.setdefault("channel_versions", {})
        cp.setdefault("versions_seen", {})
    if new_values:
        own = layout.checkpoint_rel(doc["checkpoint_id"])
        versions = cp.setdefault("channel_versions", {})
        for channel in new_values:
            values.setdefault(channel, own)
            if "version" in doc:
                versions.setdefault(channel, doc["version"])
    return doc


def materialize(doc: Doc, parent: Mapping[str, Any]) -> Doc:
    """The whole document of a delta (``doc``, normalized) on top of its parent's whole
    bookkeeping (a whole checkpoint document, or a ``base`` file prune left in its place)."""
    pcp, cp = parent["checkpoint"], doc["checkpoint"]
    full_cp = dict(cp)
    full_cp["v"] = cp.get("v", pcp.get("v"))
    full_cp["channel_versions"] = {**pcp["channel_versions"], **cp["channel_versions"]}
    full_cp["versions_seen"] = {**pcp["versions_seen"], **cp["versions_seen"]}
    full = {k: v for k, v in doc.items() if k != "delta"}
    full["checkpoint"] = full_cp
    values = dict(parent["values"])
    values.update(doc["values"])
    full["values"] = values
    return full


def step_version(versions: Mapping[str, Any], channels: Any) -> Any:
    """The version most of ``channels`` are at (LangGraph gives one step's updates one
    version), the greatest counter on a tie; None when there are none."""
    counts = Counter(
        (type(versions[c]).__name__, versions[c])
        for c in channels
        if c in versions and _is_version(versions[c])  # anything else: the schema refuses it
    )
    if not counts:
        return None
    top = max(counts.values())
    candidates = [v for (_, v), n in counts.items() if n == top]
    return max(candidates, key=lambda v: (str(type(v).__name__), str(v)))


def compact(doc: Doc, parent: CheckpointRecord | None, parent_depth: int) -> Doc:
    """The document to write for a whole one (``doc``: format-3 shape, ``values`` without the
    channels it holds): a delta on ``parent`` (its whole document) when there is one to build
    on and the line has had fewer than ``DELTA_EVERY`` deltas, else whole; either way the
    versions of its new values said once, as ``version``. ``parent``: the parent, whole."""
    out = dict(doc)
    cp = dict(doc["checkpoint"])
    new_values = doc.get("new_values") or {}
    versions: dict[str, Any] = cp["channel_versions"]
    version = step_version(versions, new_values)
    implied = {c for c in new_values if c in versions and _same(versions[c], version)}
    explicit = {c: v for c, v in versions.items() if c not in implied}
    if version is not None:
        out["version"] = version
    seen: dict[str, Any] = cp["versions_seen"]
    refs: dict[str, Any] = doc["values"]
    if parent is not None and parent_depth < DELTA_EVERY and _extends(parent, versions, seen):
        pversions, pseen, prefs = parent.channel_versions, parent.versions_seen, parent.values
        cp["channel_versions"] = {
            c: v for c, v in explicit.items() if c in new_values or not _same(pversions.get(c), v)
        }
        cp["versions_seen"] = {n: m for n, m in seen.items() if not _same_map(pseen.get(n), m)}
        if _same(cp.get("v"), parent.checkpoint.get("v")):
            cp.pop("v", None)
        for key in ("channel_versions", "versions_seen"):
            if not cp[key]:
                del cp[key]
        out["values"] = {c: r for c, r in refs.items() if prefs.get(c) != r}
        if not out["values"]:
            del out["values"]
        out["delta"] = parent_depth + 1
    else:
        cp["channel_versions"] = explicit
    out["checkpoint"] = cp
    return out


def _extends(parent: CheckpointRecord, versions: Mapping[str, Any], seen: Mapping[str, Any]) -> bool:
    """A delta can only add and change: every channel and node of the parent is still there."""
    return set(parent.channel_versions) <= set(versions) and set(parent.versions_seen) <= set(seen)


def _is_version(v: Any) -> bool:
    return isinstance(v, str | int | float) and not isinstance(v, bool)


def _same_map(a: Any, b: Any) -> bool:
    return (
        isinstance(a, dict)
        and isinstance(b, dict)
        and a.keys() == b.keys()
        and all(_same(a[k], b[k]) for k in a)
    )


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type: 1, 1.0 and "1" are three versions (as their file names keep them)."""
    return type(a) is type(b) and a == b
