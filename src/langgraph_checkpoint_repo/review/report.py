"""What a pull request did to the state: per thread, the new turns as a conversation.

For each thread with a changed file: was it added or removed; per namespace the checkpoints
added and removed; each new line of checkpoints (a new head back to where the other side left
off) as ``turns.Event``s in order; the channels other than ``messages`` that changed along it
(old -> new); the heads of the namespace when more than one is in play (each branch's turns,
which one continues); and what ``validate`` finds in the changed files. Only the checkpoints
the change added are read, plus each line's starting point and the namespace's lineage.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import fields
from ..core.checks import Problem, Validator
from ..core.errors import FileFormatError
from ..core.filechecks import check_files
from ..core.layout import CHECKPOINTS, NAMESPACES, STORE, THREADS, decode_segment, is_hashed_segment
from ..core.lineage import HeadState
from ..readmodel.diff import ChannelChange, diff_trees
from ..readmodel.reader import Reader
from ..readmodel.turns import Event, events_along, line_to, state_channels
from .revisions import Changes, Range, changes, git_top, materialize


@dataclass(kw_only=True)
class Line:
    """A run of new checkpoints: from just after ``start`` (None: the thread's beginning) to ``head``."""

    head: str
    start: str | None
    checkpoints: list[str]
    events: list[Event]
    channels: list[ChannelChange]
    continues: bool = False
    settled: bool = True


@dataclass(kw_only=True)
class NamespaceReport:
    ns: str
    added: list[str] = field(default_factory=list)  # checkpoint ids
    removed: list[str] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    heads: list[HeadState] = field(default_factory=list)  # when more than one is in play
    current: str | None = None


@dataclass(kw_only=True)
class ThreadReport:
    thread_id: str
    status: str  # added | removed | changed
    namespaces: list[NamespaceReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def unsettled(self) -> bool:
        return any(sum(not h.settled for h in n.heads) > 1 for n in self.namespaces)


@dataclass(frozen=True)
class FieldChange:
    """One field of a store item: its JSON pointer, before and after (None: absent)."""

    pointer: str
    old: Any
    new: Any


@dataclass(kw_only=True)
class ItemReport:
    """A store item the change added, removed or changed, as field changes."""

    namespace: tuple[str, ...]
    key: str
    path: str  # below the root
    status: str  # added | removed | changed
    fields: list[FieldChange] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass(kw_only=True)
class Report:
    range: Range
    root: str  # the root, relative to the top of the repository
    threads: list[ThreadReport] = field(default_factory=list)
    items: list[ItemReport] = field(default_factory=list)  # store items (RepoStore)
    other: list[str] = field(default_factory=list)  # changed files under the root, not in a thread


def review(root: Path, rng: Range | None = None, spec: str | None = None) -> Report:
    """Compare the two sides of ``rng`` (or of ``spec``, parsed as git's range) for ``root``."""
    from .revisions import parse_range

    top = git_top(root)
    rel = root.resolve().relative_to(top.resolve()).as_posix()
    rng = rng or parse_range(top, spec)
    found = changes(top, rel, rng)
    report = Report(range=rng, root=rel)
    by_thread = _by_thread(found, report)
    _store_items(root, top, rel, rng, found, report)
    if not by_thread:
        return report
    with tempfile.TemporaryDirectory(prefix="langgraph-review-") as tmp:
        folders = [f"{THREADS}/{t}" for t in sorted(by_thread)]
        base_root = materialize(top, rng.base, rel, folders, Path(tmp) / "base")
        head_root = root if rng.head is None else materialize(top, rng.head, rel, folders, Path(tmp) / "head")
        base = Reader(base_root) if (base_root / THREADS).is_dir() else None
        head = Reader(head_root) if (head_root / THREADS).is_dir() else None
        for folder in sorted(by_thread):
            report.threads.append(_thread(base, head, folder, by_thread[folder]))
    return report


def _by_thread(found: Changes, report: Report) -> dict[str, Changes]:
    """The changed files grouped by thread folder (paths below the thread folder)."""
    out: dict[str, Changes] = {}
    for kind in ("added", "removed", "modified"):
        for path in sorted(getattr(found, kind)):
            parts = path.split("/")
            if parts[0] == STORE and len(parts) >= 3 and path.endswith(".json"):
                continue  # a store item (_store_items)
            if len(parts) < 3 or parts[0] != THREADS:
                report.other.append(path)
                continue
            got = out.setdefault(parts[1], Changes())
            getattr(got, kind).add("/".join(parts[2:]))
    return out


def _thread_id(reader: Reader | None, folder: str) -> str | None:
    if reader is None:
        return None
    if not is_hashed_segment(folder):
        return decode_segment(folder)
    for tid in reader.thread_ids():
        if reader.layout.thread_dir(tid).name == folder:
            return tid
    return None


def _thread(base: Reader | None, head: Reader | None, folder: str, changed: Changes) -> ThreadReport:
    thread_id = _thread_id(head, folder) or _thread_id(base, folder) or folder
    in_base = base is not None and (base.layout.threads_dir / folder).is_dir()
    in_head = head is not None and (head.layout.threads_dir / folder).is_dir()
    status = "changed" if in_base and in_head else ("added" if in_head else "removed")
    report = ThreadReport(thread_id=thread_id, status=status)
    for ns_rel, added, removed in _checkpoints_by_ns(changed):
        ns = _ns_name(head if in_head else base, thread_id, ns_rel)
        part = NamespaceReport(ns=ns, added=sorted(added), removed=sorted(removed))
        if in_head and head is not None and added:
            _lines(head, thread_id, ns, part)
        report.namespaces.append(part)
    report.namespaces.sort(key=lambda n: (n.ns != "", n.ns))
    if in_head and head is not None:
        report.problems = _problems(head, folder, changed)
    return report


def _checkpoints_by_ns(changed: Changes) -> list[tuple[str, set[str], set[str]]]:
    """(namespace folder below the thread, or "", checkpoint ids added, ids removed)."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for kind, paths in (("added", changed.added), ("removed", changed.removed)):
        for path in paths:
            parts = path.split("/")
            if parts[:1] == [CHECKPOINTS] and len(parts) == 2:
                ns_rel = ""
            elif parts[:1] == [NAMESPACES] and len(parts) == 4 and parts[2] == CHECKPOINTS:
                ns_rel = parts[1]
            else:
                continue
            stem = parts[-1].removesuffix(".json")
            got = out.setdefault(ns_rel, (set(), set()))
            (got[0] if kind == "added" else got[1]).add(stem)
    return [(ns_rel, a, r) for ns_rel, (a, r) in sorted(out.items())]


def _ns_name(reader: Reader | None, thread_id: str, ns_rel: str) -> str:
    if not ns_rel or reader is None:
        return ""
    if not is_hashed_segment(ns_rel):
        return decode_segment(ns_rel)
    for ns in reader.namespaces(thread_id):
        if reader.layout.ns_dir(thread_id, ns).name == ns_rel:
            return ns
    return ns_rel


def _lines(head: Reader, thread_id: str, ns: str, part: NamespaceReport) -> None:
    """Each new head's line back to where the base left off, and the heads in play."""
    present = set(head.checkpoint_ids(thread_id, ns))
    added = [c for c in part.added if c in present]
    part.added = added
    new = set(added)
    parents = {c: fields.parent_id(head.header(thread_id, ns, c)) for c in added}
    named = {p for p in parents.values() if p is not None}
    lineage = head.store.lineage(thread_id, ns)
    states = {h.checkpoint_id: h for h in lineage.heads()}
    part.current = lineage.current()
    if len(lineage.heads()) > 1 and len([h for h in lineage.heads() if not h.settled]) > 1:
        part.heads = lineage.heads()
    for tip in sorted((c for c in added if c not in named), reverse=True):
        ids = line_to(head, thread_id, ns, tip, [c for c in present if c not in new])
        start = parents.get(ids[0]) if ids else None
        start = start if start in present else None
        events = events_along(head, thread_id, ns, ids, start)
        old = state_channels(head.state(thread_id, ns, start, revive=False).trees) if start else {}
        now = state_channels(head.state(thread_id, ns, tip, revive=False).trees)
        state = states.get(tip)
        part.lines.append(
            Line(
                head=tip,
                start=start,
                checkpoints=ids,
                events=events,
                channels=diff_trees(old, now),
                continues=tip == part.current,
                settled=state.settled if state is not None else True,
            )
        )
    part.lines.sort(key=lambda line: not line.continues)


def _problems(head: Reader, folder: str, changed: Changes) -> list[Problem]:
    """What validate finds in the files the change added or modified (and what they refer to)."""
    tdir = head.layout.threads_dir / folder
    files = [tdir / p for p in sorted(changed.added | changed.modified) if (tdir / p).is_file()]
    if not files:
        return []
    validator = Validator(head.root)
    check_files(validator, files)
    return sorted(set(validator.problems))


# ----------------------------------------------------------------------
# store items (RepoStore): each changed file as the fields that changed
# ----------------------------------------------------------------------
def _store_items(root: Path, top: Path, rel: str, rng: Range, found: Changes, report: Report) -> None:
    """The store items the change touched: read on both sides (validated, as the store reads
    them; a file that does not read is a problem on its side), compared field by field."""
    paths = sorted(
        p
        for kind in ("added", "removed", "modified")
        for p in getattr(found, kind)
        if p.split("/")[0] == STORE and p.count("/") >= 2 and p.endswith(".json")
    )
    if not paths:
        return
    with tempfile.TemporaryDirectory(prefix="langgraph-review-store-") as tmp:
        base_root = materialize(top, rng.base, rel, paths, Path(tmp) / "base")
        head_root = root if rng.head is None else materialize(top, rng.head, rel, paths, Path(tmp) / "head")
        for path in paths:
            old, _ = _item_doc(base_root, path)
            new, problems = _item_doc(head_root, path)
            doc = new or old
            status = "changed" if old and new else "added" if new else "removed"
            if doc is None and problems:  # refused on the head: its problems, never dropped
                namespace, key = _item_place(path)
                report.items.append(
                    ItemReport(namespace=namespace, key=key, path=path, status="refused", problems=problems)
                )
                continue
            if doc is None:  # not on either side as an item (a file of another kind)
                report.other.append(path)
                continue
            item = ItemReport(
                namespace=tuple(doc["namespace"]), key=doc["key"], path=path, status=status, problems=problems
            )
            item.fields = item_changes(old, new)
            report.items.append(item)


def _item_place(path: str) -> tuple[tuple[str, ...], str]:
    """The namespace and key an item's path names (``store/<ns>.../<key>.json``), for an item
    whose file says nothing trustworthy; a segment that does not decode is shown as it is."""

    def name(segment: str) -> str:
        try:
            return segment if is_hashed_segment(segment) else decode_segment(segment)
        except ValueError:
            return segment

    *namespace, key = path.removesuffix(".json").split("/")[1:]
    return tuple(name(s) for s in namespace), name(key)


def _item_doc(root: Path, path: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The item document at ``path`` below ``root`` (None when absent or unreadable), and what
    validate finds in it."""
    file = root / path
    if not file.is_file() or file.is_symlink():
        return None, []
    validator = Validator(root, secrets=True)
    validator.item_file(file)
    problems = sorted(set(validator.problems))
    try:
        doc = validator.store.read_doc(file, "item")
    except (FileFormatError, OSError):
        return None, problems
    return (None if problems else doc), problems


def item_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[FieldChange]:
    """The fields that differ: the value key by key through nested objects (anything else is
    one field), then the TTL and index; the timestamps are not listed (every write moves them)."""
    out: list[FieldChange] = []
    _diff("/value", (old or {}).get("value", _ABSENT), (new or {}).get("value", _ABSENT), out)
    for name in ("ttl_minutes", "index"):
        _diff(f"/{name}", (old or {}).get(name, _ABSENT), (new or {}).get(name, _ABSENT), out)
    return out


_ABSENT: Any = object()


def _diff(pointer: str, old: Any, new: Any, out: list[FieldChange]) -> None:
    if old is _ABSENT and new is _ABSENT:
        return
    if old is not _ABSENT and new is not _ABSENT and _json(old) == _json(new):
        return
    plain = [x for x in (old, new) if x is not _ABSENT]
    if plain and all(isinstance(x, dict) and not any(str(k).startswith("$") for k in x) for x in plain):
        before = old if old is not _ABSENT else {}
        after = new if new is not _ABSENT else {}
        for key in sorted(set(before) | set(after)):
            part = str(key).replace("~", "~0").replace("/", "~1")
            _diff(f"{pointer}/{part}", before.get(key, _ABSENT), after.get(key, _ABSENT), out)
        return
    out.append(FieldChange(pointer, None if old is _ABSENT else old, None if new is _ABSENT else new))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
