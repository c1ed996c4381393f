"""What a pull request did to the state: per thread, the new turns as a conversation, and an
account of every file it changed.

The rule (docs/review.md, "What the review covers"): **everything the app can load from the
head side is either shown or flagged.** Both sides are read as they are in git's objects
(review/revisions.py: no ``.gitattributes`` applies) and through the same documents the saver
reads (``Reader``). For each thread with a changed file: was it added or removed; per
namespace the checkpoints added and removed; each new line of checkpoints (a new head back to
where the other side left off) as ``turns.Event``s in order, other channels old -> new at the
checkpoint that changed them; what runs next from the head that continues (tasks, the
``Send`` packets they run, pending writes, interrupts); the heads in play; and what
``validate`` finds. Then every changed file is accounted for (``account.py``): what explains
it, or a flag (history rewritten, a file the layout does not define, pending writes no turn
explains, a head that moved back).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from ..core.checks import Problem, Validator
from ..core.digest import short_digest
from ..core.errors import FileFormatError, RepoCheckpointError
from ..core.format.messages import Message, read_message
from ..core.format.tree import model_fields
from ..core.layout import (
    CHECKPOINTS,
    GITIGNORE_TEXT,
    NAMESPACES,
    STORE,
    THREADS,
    is_hashed_segment,
    segment_name,
)
from ..core.lineage import Lineage
from ..core.sends import TASKS, send_problems
from ..readmodel.calls import Site, count_users, handed, nest, site_of
from ..readmodel.diff import diff_trees
from ..readmodel.reader import Reader, StateView
from ..readmodel.tasks import CONTROL_WRITES, ERROR, NULL_TASK_ID, RESUME, START, is_internal
from ..readmodel.turns import events_along, line_to, state_channels
from .model import (
    FieldChange,
    Flag,
    ItemReport,
    Line,
    NamespaceReport,
    Next,
    PendingTask,
    Report,
    Step,
    ThreadReport,
)
from .revisions import Changes, Range, changed_files, changes, git_top, materialize, root_replaced
from .verdict import mark_saved, tie_memories, verdict_of


def review(root: Path, rng: Range | None = None, spec: str | None = None) -> Report:
    """Compare the two sides of ``rng`` (or of ``spec``, parsed as git's range) for ``root``."""
    from .account import account_files
    from .revisions import parse_range

    top = git_top(root)
    rel = root.resolve().relative_to(top.resolve()).as_posix()
    rng = rng or parse_range(top, spec, rel)
    found = changes(top, rel, rng)
    report = Report(range=rng, root=rel)
    report.flags.extend(_attributes(top, rel, rng))
    report.flags.extend(Flag("root", "", why) for why in root_replaced(top, rel, rng))
    by_thread = _by_thread(found, report)
    _store_items(root, top, rel, rng, found, report)
    sides: dict[str, tuple[Reader | None, Reader | None]] = {}
    with tempfile.TemporaryDirectory(prefix="langgraph-review-") as tmp:
        if by_thread:
            folders = [f"{THREADS}/{t}" for t in sorted(by_thread)]
            base_root, head_root = _both_sides(report, top, rng, rel, folders, Path(tmp), root)
            base = Reader(base_root) if (base_root / THREADS).is_dir() else None
            head = Reader(head_root) if (head_root / THREADS).is_dir() else None
            for folder in sorted(by_thread):
                report.threads.append(_thread(base, head, folder, by_thread[folder], report))
                sides[folder] = (base, head)
        gitignore = None
        if ".gitignore" in found.added:
            if rng.head is None:
                kept = root / ".gitignore"
            else:
                kept = (
                    materialize(top, rng.head, rel, [".gitignore"], Path(tmp) / "gitignore").root
                    / ".gitignore"
                )
            gitignore = _small_file(kept, len(GITIGNORE_TEXT) + 1)
        account_files(report, found, sides, gitignore)
    report.flags = sorted(set(report.flags), key=_flag_order)
    tie_memories(report)
    mark_saved(report)
    report.verdict = verdict_of(report)
    return report


def _small_file(path: Path, limit: int) -> bytes | None:
    """The first ``limit`` bytes of a regular file (never through a link), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


_FLAG_ORDER = ("root", "rewritten", "head", "send", "unexplained", "layout", "attributes", "not-read")


def _flag_order(flag: Flag) -> tuple[int, str, str]:
    kind = _FLAG_ORDER.index(flag.kind) if flag.kind in _FLAG_ORDER else len(_FLAG_ORDER)
    return kind, flag.path, flag.message


def _not_read(report: Report, skipped: dict[str, str], side: str) -> None:
    for path, why in sorted(skipped.items()):
        report.flags.append(Flag("not-read", path, f"not read on the {side} side: {why}"))


def _attributes(top: Path, rel: str, rng: Range) -> list[Flag]:
    """``.gitattributes`` files that apply to the root and changed in the range: they decide
    how a checkout writes the files the app then reads (line endings, ``ident``, filters,
    encodings), which the review, reading git's objects, does not see."""
    folders = [""]
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    folders += ["/".join(parts[: i + 1]) for i in range(len(parts))]
    paths = [f"{f}/.gitattributes" if f else ".gitattributes" for f in folders]
    changed = changed_files(top, rng, paths)
    return [
        Flag(
            "attributes",
            "",
            f"{p} changed: its attributes decide how a checkout writes the state files the app reads",
        )
        for p in changed
    ]


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
        return segment_name(folder)
    try:
        for tid in reader.thread_ids():
            if reader.layout.thread_dir(tid).name == folder:
                return tid
    except RepoCheckpointError:
        return None
    return None


def _thread(
    base: Reader | None, head: Reader | None, folder: str, changed: Changes, report: Report
) -> ThreadReport:
    thread_id = _thread_id(head, folder) or _thread_id(base, folder) or folder
    in_base = base is not None and (base.layout.threads_dir / folder).is_dir()
    in_head = head is not None and (head.layout.threads_dir / folder).is_dir()
    status = "changed" if in_base and in_head else ("added" if in_head else "removed")
    out = ThreadReport(thread_id=thread_id, status=status, folder=folder)
    namespaces: dict[str, NamespaceReport] = {}
    for ns_rel, added, removed in _checkpoints_by_ns(changed):
        ns = _ns_name(head if in_head else base, thread_id, ns_rel)
        now = head.ids_by_file_name(thread_id, ns) if head is not None else {}
        then = base.ids_by_file_name(thread_id, ns) if base is not None else {}
        namespaces[ns] = NamespaceReport(
            ns=ns,
            added=sorted(now.get(n, segment_name(n.removesuffix(".json"))) for n in added),
            removed=sorted(then.get(n, segment_name(n.removesuffix(".json"))) for n in removed),
        )
    if in_head and head is not None:
        _guarded(
            out, report, folder, lambda: _head_side(head, base if in_base else None, thread_id, namespaces)
        )
    out.namespaces = sorted(namespaces.values(), key=lambda n: (n.ns != "", n.ns))
    if in_head and head is not None:
        out.problems = _problems(head, folder)
    return out


def _guarded(out: ThreadReport, report: Report, folder: str, work: Any) -> None:
    """Run one reading of the head side; a file that does not read is a problem of the
    thread (validate names it too), never a review that stops."""
    try:
        work()
    except (RepoCheckpointError, OSError) as exc:
        report.flags.append(
            Flag("unexplained", f"{THREADS}/{folder}", "the thread does not read (see its problems)")
        )
        del exc


def _head_side(
    head: Reader, base: Reader | None, thread_id: str, namespaces: dict[str, NamespaceReport]
) -> None:
    """The lines of new checkpoints, each subgraph call's nested where it ran (readmodel/calls.py),
    and what runs next from the head that continues, per namespace."""
    known = _namespaces(head, thread_id)
    top = _root_ns(head, thread_id)
    sites: dict[str, Site] = {}
    for ns, part in namespaces.items():
        if part.added and ns in known:
            site = site_of(head, thread_id, ns, top)
            if site is not None:
                sites[ns] = site
            given = handed(head, site, thread_id) if site is not None else None
            _lines(head, base, thread_id, ns, part, given)
    live = head.live_states(thread_id, known, top)
    for ns, view in live.items():
        nxt = _next(head, thread_id, ns, view.checkpoint_id)
        if nxt is None:
            continue
        if base is not None and _same_next(base, thread_id, ns, nxt):
            continue  # waiting where it waited before, for the same: nothing new to review
        namespaces.setdefault(ns, NamespaceReport(ns=ns)).next = nxt
    for ns, part in namespaces.items():
        site = sites.get(ns) or (site_of(head, thread_id, ns, top) if ns in known else None)
        if site is not None:
            sites[ns] = site
            part.label = site.label
    returned = {
        ns: _messages_at(head, thread_id, ns, namespaces[ns].current or namespaces[ns].lines[0].head)
        for ns in sites
        if namespaces[ns].lines
    }
    moved = nest({ns: part.lines for ns, part in namespaces.items()}, sites, returned)
    for part in namespaces.values():
        for line in part.lines:
            if id(line) in moved:
                line.call = moved[id(line)].label


def _messages_at(reader: Reader, thread_id: str, ns: str, cid: str) -> list[Any]:
    got = reader.state(thread_id, ns, cid, revive=False).trees.get("messages")
    return got if isinstance(got, list) else []


def _namespaces(reader: Reader, thread_id: str) -> list[str]:
    try:
        return reader.namespaces(thread_id)
    except RepoCheckpointError:
        return []


def _root_ns(reader: Reader, thread_id: str) -> str:
    namespaces = _namespaces(reader, thread_id)
    return "" if "" in namespaces or not namespaces else namespaces[0]


def _same_next(base: Reader, thread_id: str, ns: str, nxt: Next) -> bool:
    """Whether the base side waited at the same checkpoint with the same pending tasks."""
    try:
        if base.resolve(thread_id, ns, None) != nxt.checkpoint_id:
            return False
        return _next(base, thread_id, ns, nxt.checkpoint_id) == nxt
    except RepoCheckpointError:
        return False


def _next(reader: Reader, thread_id: str, ns: str, cid: str) -> Next | None:
    """The tasks of the step after ``cid``, which the thread takes up when it continues: first
    the writes LangGraph applies before that step (the null task's: a ``Command``'s update,
    ``goto`` sends and resume values), then each task with its ``Send`` packet (checked
    against the tool calls it answers), pending writes (a finished task's are applied as they
    are, its node does not run again), interrupts and the answer saved for them; None when
    there is none."""
    view = reader.state(thread_id, ns, cid, revive=False)
    sends = view.trees.get(TASKS)
    mismatches = dict(send_problems(view.trees))
    null = [w for w in view.writes if w.task_id == NULL_TASK_ID]
    given = next((w.tree for w in null if w.channel == RESUME), None)
    tasks = []
    if null:
        packets = [
            p for w in null if w.channel == TASKS for p in (w.tree if isinstance(w.tree, list) else [w.tree])
        ]
        why = [m for _, m in send_problems({**view.trees, TASKS: packets})] if packets else []
        tasks.append(
            PendingTask(
                name="(applied first)",
                kind="null",
                status="applied to the state before the next step runs",
                writes=[(w.channel, w.tree) for w in null if w.channel != RESUME],
                answer=given,
                answered=given is not None,
                mismatch="; ".join(why),
                replaces=_replaced(view.trees, [w for w in null if w.channel != RESUME]),
            )
        )
    for task in view.tasks:
        packet = None
        if task.kind.startswith("push ") and isinstance(sends, list):
            idx = int(task.kind.split()[1])
            packet = sends[idx] if idx < len(sends) else None
            mismatch = mismatches.get(idx, "")
        else:
            mismatch = ""
        answer = next((w.tree for w in task.writes if w.channel == RESUME), None)
        tasks.append(
            PendingTask(
                name=task.name,
                kind=task.kind,
                status=task.status if task.derived else "unmatched",
                packet=packet,
                input=view.trees.get(START) if task.name == START else None,
                writes=[(w.channel, w.tree) for w in task.writes if w.channel not in CONTROL_WRITES],
                interrupts=[i.tree for i in task.interrupts],
                interrupt_ids=[i.id or "" for i in task.interrupts],
                error=next((w.tree for w in task.writes if w.channel == ERROR), None),
                answer=answer if answer is not None or not task.interrupts else given,
                answered=task.answered,
                mismatch=mismatch,
                task_id=task.id or "",
                replaces=_replaced(view.trees, task.writes),
            )
        )
    return Next(checkpoint_id=cid, tasks=tasks) if tasks else None


def _message_id(tree: Any) -> str | None:
    fields_ = model_fields(tree)
    mid = fields_.get("id") if fields_ is not None else None
    return mid if isinstance(mid, str) else None


def _replaced(trees: dict[str, Any], writes: Any) -> dict[str, Any]:
    """The messages a task's writes replace: a written message whose id a message of the
    channel already has (``add_messages`` merges by id: the old one is replaced in place)."""
    out: dict[str, Any] = {}
    for w in writes:
        held = trees.get(w.channel)
        if not isinstance(held, list):
            continue
        by_id = {mid: t for t in held if (mid := _message_id(t)) is not None}
        for item in w.tree if isinstance(w.tree, list) else [w.tree]:
            mid = _message_id(item)
            if mid is not None and mid in by_id:
                out[mid] = by_id[mid]
    return out


def _checkpoints_by_ns(changed: Changes) -> list[tuple[str, set[str], set[str]]]:
    """(namespace folder below the thread, or "", checkpoint file names added, removed)."""
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
            if not parts[-1].endswith(".json"):
                continue
            got = out.setdefault(ns_rel, (set(), set()))
            (got[0] if kind == "added" else got[1]).add(parts[-1])
    return [(ns_rel, a, r) for ns_rel, (a, r) in sorted(out.items())]


def _ns_name(reader: Reader | None, thread_id: str, ns_rel: str) -> str:
    if not ns_rel or reader is None:
        return ""
    if not is_hashed_segment(ns_rel):
        return segment_name(ns_rel)
    for ns in _namespaces(reader, thread_id):
        if reader.layout.ns_dir(thread_id, ns).name == ns_rel:
            return ns
    return ns_rel


def _lines(
    head: Reader,
    base: Reader | None,
    thread_id: str,
    ns: str,
    part: NamespaceReport,
    given: StateView | None = None,
) -> None:
    """Each new head's line back to where the base left off, and the heads in play; ``given``:
    a subgraph call's input (its parent's state), which is not the call's own."""
    present = set(head.checkpoint_ids(thread_id, ns))
    added = [c for c in part.added if c in present]
    part.added = added
    new = set(added)
    parents = {c: head.get(thread_id, ns, c).parent_id for c in added}
    named = {p for p in parents.values() if p is not None}
    lineage = head.store.lineage(thread_id, ns)
    part.current = lineage.current()
    if len(lineage.heads()) > 1 and len([h for h in lineage.heads() if not h.settled]) > 1:
        part.heads = lineage.heads()
    shown: set[str] = set()  # new checkpoints a line already holds: a later line forks from them
    tips = sorted((c for c in added if c not in named), reverse=True)
    for tip in sorted(tips, key=lambda c: c != part.current):
        ids = line_to(head, thread_id, ns, tip, [c for c in present if c not in new or c in shown])
        shown.update(ids)
        start = parents.get(ids[0]) if ids else None
        start = start if start in present else None
        seen = None if start in new else _seen_writes(base, thread_id, ns, start)
        part.lines.append(_line(head, thread_id, ns, part, lineage, tip, ids, start, given, seen))
    part.lines.sort(key=lambda line: not line.continues)


def _line(
    head: Reader,
    thread_id: str,
    ns: str,
    part: NamespaceReport,
    lineage: Lineage,
    tip: str,
    ids: list[str],
    start: str | None,
    given: StateView | None,
    start_seen: set[tuple[str, str, int]] | None,
) -> Line:
    """One line of new checkpoints (``ids``, from just after ``start`` to ``tip``) as the review
    shows it: its events and steps, every other channel from its start to its head, where it
    stands among the heads; what its checkpoints hold that a run would take otherwise goes to
    ``part`` (``_flag_sends``, ``_flag_unlike``). ``start_seen``: as ``events_along`` takes it."""
    views: list[StateView] = []
    events = events_along(head, thread_id, ns, ids, start, views, given=given, start_seen=start_seen)
    _flag_sends(part, views)
    before = head.state(thread_id, ns, start, revive=False) if start else None
    _flag_unlike(part, before, views)
    old = state_channels(before.trees) if before is not None else {}
    now = state_channels(head.state(thread_id, ns, tip, revive=False).trees)
    state = {h.checkpoint_id: h for h in lineage.heads()}.get(tip)
    priors = [before.ts if before is not None else "", *(v.ts for v in views)]
    return Line(
        head=tip,
        start=start,
        checkpoints=ids,
        events=events,
        channels=diff_trees(old, now),
        continues=tip == part.current,
        settled=state.settled if state is not None else True,
        steps=[_step(v, prior) for v, prior in zip(views, priors, strict=False)],
        turns_before=count_users(before.trees.get("messages")) if before is not None else 0,
        forks=len(lineage.children(start)) - 1 if start else 0,
        start_step=_step(before) if before is not None else None,
    )


def _flag_sends(part: NamespaceReport, views: list[StateView]) -> None:
    """The ``Send`` packets a line's checkpoints stored that would not run as stored
    (``part.sends``): each checkpoint that wrote the packets channel is looked at."""
    for view in views:
        if TASKS in view.record.new_values:
            part.sends.extend((view.checkpoint_id, why) for _, why in send_problems(view.trees))


def _flag_unlike(part: NamespaceReport, before: StateView | None, views: list[StateView]) -> None:
    """The steps of a line whose parent's pending writes are not what the step holds
    (``part.unlike``): a run replayed from the parent would take those writes. ``before``:
    the checkpoint the line continues, None from the thread's beginning."""
    for parent, child in zip([before, *views], views, strict=False):
        if parent is not None and child.parent_id == parent.checkpoint_id:
            part.unlike.extend((child.checkpoint_id, why) for why in _writes_unlike(parent, child))


def _writes_unlike(parent: StateView, child: StateView) -> list[str]:
    """The messages the parent's pending writes put in ``messages`` that the child does not
    hold as written (``add_messages``: a write of an id replaces the message of that id, the
    last write winning; a message without an id is appended under a new one; a chunk becomes
    its message, so messages are compared by what LangChain builds: role, content, calls,
    name, tool call id, status): the child was not made of these writes, yet a run replayed
    from the parent (or its history's task results) takes them as stored."""
    held = child.trees.get("messages")
    if not isinstance(held, list):
        return []
    have = {m.id: _said(m) for t in held if isinstance(m := read_message(t), Message) and m.id}
    before = parent.trees.get("messages")
    old = (
        {m.id for t in before if isinstance(m := read_message(t), Message)}
        if isinstance(before, list)
        else set()
    )
    wrote: dict[str, Message] = {}
    anonymous: list[Message] = []
    for w in parent.writes:
        if w.channel == "messages":
            for tree in w.tree if isinstance(w.tree, list) else [w.tree]:
                m = read_message(tree)
                if not isinstance(m, Message) or m.role == "remove":
                    continue
                if m.id:
                    wrote[m.id] = m
                else:
                    anonymous.append(m)
    out = [
        f"the writes of its parent {parent.checkpoint_id} put message {mid!r} in messages "
        f"{'as another message than it holds' if mid in have else 'and it does not hold it'}"
        for mid, m in sorted(wrote.items())
        if have.get(mid) != _said(m)
    ]
    new = [said for mid, said in have.items() if mid not in old and mid not in wrote]
    for m in anonymous:  # appended under an id add_messages gave it
        if _said(m) in new:
            new.remove(_said(m))
        else:
            out.append(
                f"the writes of its parent {parent.checkpoint_id} add the {m.role} message "
                f"{m.text[:60]!r}, which it does not hold"
            )
    return [f"{why}: a run replayed from the parent takes the writes as its tasks' results" for why in out]


def _said(m: Message) -> str:
    """What a message says, as LangChain builds it (not its id, nor chunk or class)."""
    said = (m.role, m.content, m.calls, m.invalid, m.name, m.tool_call_id, m.status, m.speaker)
    return json.dumps(said, sort_keys=True, default=repr)


def _seen_writes(
    base: Reader | None, thread_id: str, ns: str, start: str | None
) -> set[tuple[str, str, int]]:
    """The pending writes the base had at the checkpoint a line continues (an answer saved
    there since is part of the range)."""
    if base is None or start is None:
        return set()
    try:
        return {
            (w.task_id, w.channel, w.idx) for w in base.pending_writes(thread_id, ns, start, revive=False)
        }
    except (RepoCheckpointError, OSError):
        return set()


def _step(view: StateView, parent_ts: str = "") -> Step:
    kept = view.record.scheduling
    writes = [(w.task_id, w.task_path, w.channel, w.tree) for w in view.writes]
    internal = {c: short_digest(t) for c, t in sorted(view.trees.items()) if is_internal(c)}
    return Step(
        view.checkpoint_id,
        view.parent_id,
        view.record.metadata,
        short_digest(kept),
        writes,
        internal,
        ts=view.ts,
        parent_ts=parent_ts,
    )


def _problems(head: Reader, folder: str) -> list[Problem]:
    """What validate finds in the changed thread, whole: a change can break what an unchanged
    file refers to (a removed object or writes file), and a file the layout does not define
    anywhere in the folder is a problem."""
    validator = Validator(head.root)
    validator.run([head.layout.threads_dir / folder])
    return relative(validator.problems, head.root)


def relative(problems: list[Problem], root: Path) -> list[Problem]:
    """Problems with the paths of a root (a temporary one for a revision) said below it, as
    every path of the report is."""
    prefixes = sorted({str(root) + "/", str(root.resolve()) + "/"}, key=len, reverse=True)

    def cut(text: str) -> str:
        for prefix in prefixes:
            text = text.replace(prefix, "")
        return text

    return sorted({Problem(cut(p.path), p.pointer, cut(p.message)) for p in problems})


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
        base_root, head_root = _both_sides(report, top, rng, rel, paths, Path(tmp), root)
        for path in paths:
            old, _ = _item_doc(base_root, path)
            new, problems = _item_doc(head_root, path)
            doc = new or old
            status = "changed" if old and new else "added" if new else "removed"
            if new is not None and problems:
                status += ", refused by validate"
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
                namespace=tuple(doc["namespace"]),
                key=doc["key"],
                path=path,
                status=status,
                problems=problems,
                updated_at=str((new or {}).get("updated_at") or ""),
            )
            item.fields = item_changes(old, new)
            report.items.append(item)


def _both_sides(
    report: Report, top: Path, rng: Range, rel: str, paths: list[str], tmp: Path, root: Path
) -> tuple[Path, Path]:
    """The base's and the head's copies of ``paths`` read from git's objects into ``tmp`` (the
    work tree itself when the range ends there); what could not be read is flagged."""
    made = materialize(top, rng.base, rel, paths, tmp / "base")
    _not_read(report, made.skipped, "base")
    if rng.head is None:
        return made.root, root
    head = materialize(top, rng.head, rel, paths, tmp / "head")
    _not_read(report, head.skipped, "head")
    return made.root, head.root


def _item_place(path: str) -> tuple[tuple[str, ...], str]:
    """The namespace and key an item's path names (``store/<ns>.../<key>.json``), for an item
    whose file says nothing trustworthy; a segment that does not decode is shown as it is."""

    *namespace, key = path.removesuffix(".json").split("/")[1:]
    return tuple(segment_name(s) for s in namespace), segment_name(key)


def _item_doc(root: Path, path: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The item document at ``path`` below ``root`` as the store reads it (None when absent or
    unreadable), and what validate finds in it."""
    file = root / path
    if not file.is_file() or file.is_symlink():
        return None, []
    validator = Validator(root, secrets=True)
    validator.item_file(file)
    problems = relative(validator.problems, root)
    try:
        doc = validator.store.files.read_doc(file, "item")
    except (FileFormatError, OSError):
        return None, problems
    return doc, problems  # what validate finds is shown beside what the store loads


def item_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[FieldChange]:
    """The fields that differ: the value key by key through nested objects (anything else is
    one field), then the TTL and index, then the times when they are not what a plain write
    makes (``created_at`` kept, ``updated_at`` later, ``expires_at`` following it)."""
    out: list[FieldChange] = []
    _diff("/value", (old or {}).get("value", _ABSENT), (new or {}).get("value", _ABSENT), out)
    for name in ("ttl_minutes", "index"):
        _diff(f"/{name}", (old or {}).get(name, _ABSENT), (new or {}).get(name, _ABSENT), out)
    for name in _odd_times(old, new):
        _diff(f"/{name}", (old or {}).get(name, _ABSENT), (new or {}).get(name, _ABSENT), out)
    return out


TIMES = ("created_at", "updated_at", "expires_at")


def _odd_times(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """The time fields a plain write would not have made: on a new item, ``created_at`` other
    than ``updated_at``; on a changed one, ``created_at`` moved, ``updated_at`` not later; and
    ``expires_at`` other than ``updated_at`` plus the TTL (times compared as instants: a
    time in another offset can be later as text and earlier in fact)."""
    if new is None:
        return []
    odd = []
    if old is None:
        if new.get("created_at") != new.get("updated_at"):
            odd += ["created_at", "updated_at"]
    else:
        if new.get("created_at") != old.get("created_at"):
            odd.append("created_at")
        if not _later(new.get("updated_at"), old.get("updated_at")) and new != old:
            odd.append("updated_at")
    if not _plain_expiry(new):
        odd.append("expires_at")
    return odd


def _later(new: Any, old: Any) -> bool:
    """Whether the ISO time ``new`` is a later instant than ``old`` (False when either does
    not read as a time with its offset)."""
    from datetime import datetime

    try:
        after, before = datetime.fromisoformat(str(new)), datetime.fromisoformat(str(old))
        return after.tzinfo is not None and before.tzinfo is not None and after > before
    except (TypeError, ValueError):
        return False


def _plain_expiry(doc: dict[str, Any]) -> bool:
    """Whether ``expires_at`` is what a write gives an item: none without a TTL, else its
    ``updated_at`` plus the TTL, within a second (a refresh on read moves it later)."""
    from datetime import datetime, timedelta

    ttl, expires = doc.get("ttl_minutes"), doc.get("expires_at")
    if ttl is None:
        return expires is None
    try:
        start = datetime.fromisoformat(str(doc.get("updated_at")))
        end = datetime.fromisoformat(str(expires))
        return abs((end - start) - timedelta(minutes=float(ttl))) <= timedelta(seconds=1)
    except (TypeError, ValueError, OverflowError):
        return False


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
