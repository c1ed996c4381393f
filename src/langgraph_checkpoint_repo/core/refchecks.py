"""validate's checks of what a checkpoint refers to: values, append chains, parents.

Each check reports through the ``Reporter`` it is given (checks.py's ``Validator``): one
problem per thing wrong, at the file and JSON pointer that is wrong, never stopping at the
first. Values are resolved the way the saver resolves them (``ThreadStore.value_entry``); a
missing one is explained by walking its chain (chains.walk_chain) to the first link that is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from .errors import FileFormatError, MissingReferenceError
from .format import fields
from .format.validation import pointer_part
from .layout import CHECKPOINTS, Layout, encode_segment
from .threads import ThreadStore


class Reporter(Protocol):
    """Where the checks report (checks.py's ``Validator``): one problem per thing wrong."""

    layout: Layout
    store: ThreadStore
    # per (namespace folder, channel, version, ref): whether that value is empty, or why it
    # does not read; consecutive checkpoints refer to the same values, and a chain is walked
    # once per run, not once per checkpoint that refers to it (only the flag is kept: whole
    # lists of every version would be quadratic in memory)
    entry_memo: dict[tuple[Path, str, Any, str], bool | Exception]

    def problem(self, path: Path | str, pointer: str, message: str) -> None: ...

    def reference(self, path: Path, pointer: str, check: Callable[[], object]) -> bool: ...


Docs = dict[str, tuple[Path, dict[str, Any]]]  # checkpoint id -> (file, document)


def checkpoint_refs(
    v: Reporter,
    ns_dir: Path,
    path: Path,
    doc: dict[str, Any],
    docs: Docs,
    present: set[str],
    *,
    oldest: str | None = None,
) -> None:
    """Every reference of one checkpoint: its values, where its new values say they are,
    and its parent (``present``: the checkpoint file stems of the namespace). ``oldest``: the
    namespace's oldest checkpoint id when ``docs`` does not hold them all (``validate FILE``)."""
    empty = _value_refs(v, ns_dir, path, doc)
    own = v.layout.checkpoint_rel(doc["checkpoint_id"])
    for channel in fields.new_values(doc):
        if doc["values"].get(channel) != own:
            v.problem(
                path, fields.new_value_pointer(channel), "value stored here but /values points elsewhere"
            )
    _parent_ref(v, path, doc, docs, present, empty, oldest)


def _value_refs(v: Reporter, ns_dir: Path, path: Path, doc: dict[str, Any]) -> set[str]:
    """Check each value a checkpoint refers to; the channels that are empty at it."""
    versions = fields.channel_versions(doc)
    empty: set[str] = set()
    for channel, ref in doc["values"].items():
        pointer = f"/values/{pointer_part(channel) if '~' in channel or '/' in channel else channel}"
        if channel not in versions:
            v.problem(path, pointer, f"channel {channel!r} has a value but no version")
            continue
        version = versions[channel]
        if not (ref.startswith(CHECKPOINTS + "/") and ref.endswith(".json")) and ref != v.layout.value_rel(
            channel, version
        ):
            v.problem(path, pointer, f"{ref!r} is neither a checkpoint nor this channel's value file")
            continue
        key = (ns_dir, channel, version, ref)
        got = v.entry_memo.get(key)
        if got is None:
            try:
                got = v.store.values.value_entry(ns_dir, channel, version, ref).empty
            except (MissingReferenceError, FileFormatError, OSError) as exc:
                got = exc
            v.entry_memo[key] = got
        if isinstance(got, MissingReferenceError):
            # say which checkpoint is gone (the store names the folder it looked in)
            gap = missing_link(v.store, ns_dir, channel, version, ref)
            if gap is None:
                v.reference(path, pointer, partial(_raise, got))
                continue
            missing, fallback, depth = gap
            how = "refers to" if depth == 0 else f"is a list appended onto (link {depth})"
            v.problem(path, pointer, f"{how} {missing}, which is missing (and there is no {fallback})")
        elif isinstance(got, Exception):
            v.reference(path, pointer, partial(_raise, got))
        elif got:
            empty.add(channel)
    return empty


def _parent_ref(
    v: Reporter,
    path: Path,
    doc: dict[str, Any],
    docs: Docs,
    present: set[str],
    empty: set[str],
    oldest: str | None,
) -> None:
    """A missing parent is a problem when a DeltaChannel empty here needs it, or when older
    checkpoints remain (a hole, not history cut by prune)."""
    parent = doc["parent_checkpoint_id"]
    if not parent or encode_segment(parent) in present:
        return
    delta = doc["metadata"].get("counters_since_delta_snapshot")
    needs = sorted(empty & set(delta)) if isinstance(delta, dict) else []
    if needs:
        v.problem(
            path,
            "/parent_checkpoint_id",
            f"parent {parent} is missing and DeltaChannel {', '.join(map(repr, needs))} "
            "needs it to rebuild its value",
        )
    elif (first := oldest if oldest is not None else min(docs, default=None)) is not None and parent > first:
        v.problem(
            path,
            "/parent_checkpoint_id",
            f"parent {parent} is missing while older checkpoints remain (a hole in the history)",
        )


def missing_link(
    store: ThreadStore, ns_dir: Path, channel: str, version: Any, ref: str
) -> tuple[str, str, int] | None:
    """The first checkpoint a value (or its append chain) needs that is gone with no value
    file in its place: (reference, value file it could have been, link depth). None for a
    chain that cycles, runs past MAX_APPEND_DEPTH or does not read (its own error says so)."""
    try:
        for depth, link in enumerate(store.chain(ns_dir, channel, version, ref)):
            if link.missing:
                return link.ref, store.layout.value_rel(channel, link.version), depth
    except (FileFormatError, OSError):
        return None  # reported where that file is checked
    return None


def parent_cycles(v: Reporter, docs: Docs) -> None:
    """Report each cycle of parent links once, at the file whose parent closes it: a walk
    up that history (a DeltaChannel's rebuild, prune) could never reach a start."""
    done: set[str] = set()
    for start in sorted(docs):
        walk: list[str] = []
        on_walk: set[str] = set()
        cid: str | None = start
        while cid is not None and cid in docs and cid not in done:
            if cid in on_walk:
                loop = [*walk[walk.index(cid) :], cid]
                v.problem(
                    docs[walk[-1]][0],
                    "/parent_checkpoint_id",
                    f"parent chain cycles back to checkpoint {cid} ({' -> '.join(loop)})",
                )
                break
            walk.append(cid)
            on_walk.add(cid)
            cid = docs[cid][1]["parent_checkpoint_id"]
        done |= on_walk


def _raise(exc: BaseException) -> None:
    raise exc
