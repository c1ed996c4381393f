"""Every file a change touched under the root, accounted for: what explains it, or a flag.

The format says what may change (docs/format.md): files are added, never changed in place;
a writes file goes when the child checkpoint that took its writes is written; prune and
delete remove checkpoints and keep what the rest still reads (``values/``). A change the
review's turns, pending tasks and removals explain gets a line saying so; anything else is a
``Flag``: history rewritten in place, a file the layout does not define, pending writes that
no turn explains, a kept value that is not the removed one, a head that moved back. The
review reads both sides through ``Reader`` (the saver's documents), so what it compares is
what the app would load.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..core.checks import TRACKED_CACHE
from ..core.errors import RepoCheckpointError
from ..core.format import fields
from ..core.layout import (
    CACHE,
    CHECKPOINTS,
    GITIGNORE_TEXT,
    LARGE,
    NAMESPACES,
    NS_FOLDERS,
    OBJECTS,
    STORE,
    THREAD_FOLDERS,
    THREADS,
    VALUES,
    WRITES,
    Layout,
    is_temp_name,
    segment_name,
)
from ..core.threads import writes_key
from ..readmodel.reader import Reader
from .model import FileAccount, Flag, NamespaceReport, Report, ThreadReport
from .revisions import Changes

Sides = dict[str, tuple[Reader | None, Reader | None]]
NOT_IN_LAYOUT = "not a file of the state's layout (docs/format.md): the app never writes it"


def account_files(report: Report, found: Changes, sides: Sides, gitignore: bytes | None = None) -> None:
    """Fill ``report.files`` with every changed path and ``report.flags`` with what no part of
    the review explains (the threads, items and other files are already in ``report``);
    ``gitignore``: the head side's ``.gitignore`` of the root, when it changed."""
    threads = {t.folder: t for t in report.threads}
    items = {i.path: i for i in report.items}
    for t in report.threads:
        base, head = sides.get(t.folder, (None, None))
        report.flags.extend(_head_moves(t, base, head))
        for n in t.namespaces:
            report.flags.extend(_send_flags(t, n))
    for change, paths in (("added", found.added), ("removed", found.removed), ("modified", found.modified)):
        for path in sorted(paths):
            if path == ".gitignore" and change == "added" and gitignore == GITIGNORE_TEXT.encode():
                report.files.append(
                    FileAccount(path, change, "the root's .gitignore, as the saver writes it")
                )
                continue
            account, flag = _account(path, change, threads, items, sides)
            report.files.append(FileAccount(path, change, account, flagged=flag is not None))
            if flag is not None:
                report.flags.append(flag)


def _account(
    path: str, change: str, threads: dict[str, ThreadReport], items: dict[str, Any], sides: Sides
) -> tuple[str, Flag | None]:
    parts = path.split("/")
    if parts[0] == THREADS and len(parts) >= 3:
        thread = threads.get(parts[1])
        base, head = sides.get(parts[1], (None, None))
        if thread is None:
            return "", Flag("unexplained", path, "a file of a thread the review did not read")
        return _thread_file(path, parts[2:], change, thread, base, head)
    if parts[0] == STORE and path in items:
        item = items[path]
        return f"store item {'.'.join(item.namespace)} {item.key} ({item.status}, shown below)", None
    if parts[0] == STORE and len(parts) >= 3 and path.endswith(".json"):
        return "", Flag("unexplained", path, "a store file that reads as no item on either side")
    if parts[0] == CACHE:
        return "", Flag("layout", path, TRACKED_CACHE)
    if parts == [".gitignore"]:
        return "", Flag(
            "layout", path, "the root's .gitignore changed (the saver writes it to keep .cache/ out)"
        )
    return "", Flag("layout", path, NOT_IN_LAYOUT)


def _thread_file(
    path: str, rest: list[str], change: str, thread: ThreadReport, base: Reader | None, head: Reader | None
) -> tuple[str, Flag | None]:
    """One changed file of a thread folder (``rest``: its path below the thread folder)."""
    ns_seg = ""
    allowed: tuple[str, ...]
    if rest[0] == NAMESPACES and len(rest) == 4:
        ns_seg, folder, name = rest[1], rest[2], rest[3]
        allowed = NS_FOLDERS
    elif len(rest) == 2:
        folder, name = rest
        allowed = THREAD_FOLDERS
    else:
        return "", Flag("layout", path, NOT_IN_LAYOUT)
    if folder not in allowed or is_temp_name(name) or not name.endswith(".json"):
        return "", Flag("layout", path, NOT_IN_LAYOUT)
    if change == "modified":
        return "", Flag(
            "rewritten",
            path,
            f"this {_what(folder)} changed in place (state files are never changed once written): "
            "the app loads the new content",
        )
    ns = _ns_of(thread, ns_seg, head or base)
    part = next((n for n in thread.namespaces if n.ns == ns), None)
    if folder == CHECKPOINTS:
        side = head if change == "added" else base
        names = side.ids_by_file_name(thread.thread_id, ns) if side is not None else {}
        return _checkpoint_file(path, names.get(name, segment_name(name.removesuffix(".json"))), change, part)
    if folder == WRITES:
        return _writes_file(path, name, change, thread.thread_id, ns, part, base, head)
    if folder == VALUES:
        return _values_file(path, name, change, thread.thread_id, ns, base, head)
    if change == "added":
        return f"{_what(folder)}, named by its content; read through the checkpoints that name it", None
    return f"{_what(folder)} no longer kept", None


def _what(folder: str) -> str:
    return {
        CHECKPOINTS: "checkpoint",
        WRITES: "pending-writes file",
        VALUES: "kept value",
        LARGE: "large value",
        OBJECTS: "object",
    }.get(folder, "file")


def _ns_of(thread: ThreadReport, ns_seg: str, reader: Reader | None) -> str:
    if not ns_seg:
        return ""
    for n in thread.namespaces:
        if reader is not None and reader.layout.ns_dir(thread.thread_id, n.ns).name == ns_seg:
            return n.ns
    return segment_name(ns_seg)


def _checkpoint_file(
    path: str, cid: str, change: str, part: NamespaceReport | None
) -> tuple[str, Flag | None]:
    if change == "removed":
        return "checkpoint removed (prune, delete)", None
    on_lines = {c for line in (part.lines if part else []) for c in line.checkpoints}
    if cid in on_lines:
        return "checkpoint of a new turn (shown above)", None
    return "", Flag("unexplained", path, "a new checkpoint on no line the review could follow from its heads")


def _writes_file(
    path: str,
    name: str,
    change: str,
    thread_id: str,
    ns: str,
    part: NamespaceReport | None,
    base: Reader | None,
    head: Reader | None,
) -> tuple[str, Flag | None]:
    segment = Layout.writes_owner(name) if "~" in name else ""
    side = head if change == "added" else base
    names = side.ids_by_file_name(thread_id, ns) if side is not None else {}
    owner = names.get(segment + ".json", segment_name(segment)) if segment else ""
    key = writes_key(name) if "~" in name else ""
    taken_by = _taken_by(head, thread_id, ns, owner, key)
    if change == "added":
        if part is not None and part.next is not None and part.next.checkpoint_id == owner:
            return f"pending writes of {owner}, where the thread continues (shown under next)", None
        if taken_by:
            return f"not read: checkpoint {taken_by} holds these writes", None
        children = [
            s.checkpoint_id for line in (part.lines if part else []) for s in line.steps if s.parent == owner
        ]
        if children and not _took_writes(head, thread_id, ns, children):
            # kept beside the child made of them (format 3, or a root migrated from it); a child
            # that took its parent's writes (format 4) took every file there was
            return f"pending writes of {owner}, which a new checkpoint was made of (in --json)", None
        return "", Flag(
            "unexplained",
            path,
            f"pending writes added to checkpoint {owner}, which is not where the thread continues: "
            "a run from it takes them as its tasks' results",
        )
    if taken_by:
        return f"taken into checkpoint {taken_by} (its parent's writes)", None
    if part is not None and owner in part.removed:
        return "removed with its checkpoint", None
    return "", Flag(
        "unexplained",
        path,
        f"pending writes of checkpoint {owner} removed without a checkpoint that took them: "
        "the tasks they finished or answered run again",
    )


def _took_writes(head: Reader | None, thread_id: str, ns: str, children: list[str]) -> bool:
    """Whether a child checkpoint holds its parent's writes (``parent_writes``, format 4)."""
    if head is None:
        return True
    try:
        return any(head.get(thread_id, ns, c).parent_writes for c in children)
    except (RepoCheckpointError, OSError):
        return True


def _taken_by(head: Reader | None, thread_id: str, ns: str, owner: str, key: str) -> str:
    """The checkpoint on the head side that holds the writes of ``key`` as its parent's."""
    if head is None or not owner:
        return ""
    try:
        for record in head.store.writes_records(thread_id, ns, owner):
            if record.pointer == fields.parent_write_pointer(key):
                return segment_name(record.path.name.removesuffix(".json"))
    except (RepoCheckpointError, OSError):
        return ""
    return ""


def _values_file(
    path: str, name: str, change: str, thread_id: str, ns: str, base: Reader | None, head: Reader | None
) -> tuple[str, Flag | None]:
    """A kept value (prune: the value of a removed checkpoint that others still read) or a
    removed checkpoint's bookkeeping (``@<id>.json``): explained when what the kept
    checkpoints read through it is what they read before."""
    if change == "removed":
        return "kept value no longer needed", None
    if base is None or head is None:
        return "kept value of a new thread", None
    try:
        same = _reads_the_same(base, head, thread_id, ns, name)
    except (RepoCheckpointError, OSError) as exc:
        return "", Flag("unexplained", path, f"a kept value that does not read: {exc}")
    if same is None:
        return "kept value no checkpoint on both sides reads", None
    if same:
        return "kept value of a removed checkpoint, read the same as before", None
    return "", Flag(
        "rewritten",
        path,
        "the checkpoints that read this kept value read another value than before",
    )


def _reads_the_same(base: Reader, head: Reader, thread_id: str, ns: str, name: str) -> bool | None:
    """Whether every checkpoint kept on both sides that reads the kept file ``name`` reads
    the same state through it (None: no such checkpoint)."""
    before = set(base.checkpoint_ids(thread_id, ns))
    kept = [c for c in head.checkpoint_ids(thread_id, ns) if c in before]
    read: Callable[[Reader, str], Any]
    if name.startswith("@"):  # the bookkeeping the removed checkpoint's children build on
        removed = segment_name(name[1:].removesuffix(".json"))
        readers = [c for c in kept if head.get(thread_id, ns, c).parent_id == removed]
        read = partial(_bookkeeping, thread_id, ns)
    else:  # a value: what the checkpoints at its version read
        doc = head.store.files.read_doc(head.layout.ns_dir(thread_id, ns) / VALUES / name, "value")
        channel, version = doc["channel"], doc["version"]
        readers = [c for c in kept if _version(head, thread_id, ns, c, channel) == version]
        read = partial(_channel, thread_id, ns, channel)
    if not readers:
        return None
    return all(read(base, c) == read(head, c) for c in readers)  # each: a fork reads its own chain


def _version(reader: Reader, thread_id: str, ns: str, cid: str, channel: str) -> Any:
    return reader.get(thread_id, ns, cid).channel_versions.get(channel)


def _bookkeeping(thread_id: str, ns: str, reader: Reader, cid: str) -> Any:
    """What a child of a removed checkpoint reads through its base file: the bookkeeping it
    builds on and the values the file refers to (its state)."""
    state = reader.state(thread_id, ns, cid, revive=False)
    record = reader.get(thread_id, ns, cid)
    return (record.checkpoint, record.extra), state.trees


def _channel(thread_id: str, ns: str, channel: str, reader: Reader, cid: str) -> Any:
    return reader.state(thread_id, ns, cid, revive=False).trees.get(channel)


def _head_moves(thread: ThreadReport, base: Reader | None, head: Reader | None) -> list[Flag]:
    """A namespace that continues from a checkpoint that is neither where it continued
    before nor a later one on its line: a pull request that removed the newest checkpoints
    or made an older one newest changes what the app resumes."""
    if base is None or head is None or thread.status != "changed":
        return []
    out = []
    namespaces = set(_namespaces(base, thread.thread_id)) & set(_namespaces(head, thread.thread_id))
    for ns in sorted(namespaces):  # a namespace new on the head side continued nothing before
        where = f" namespace {ns}" if ns else ""
        try:
            before = base.resolve(thread.thread_id, ns, None)
            after = head.resolve(thread.thread_id, ns, None)
            if before == after or _descends(head, thread.thread_id, ns, after, before):
                continue
        except (RepoCheckpointError, OSError):
            why = f"thread {thread.thread_id}{where}: where it continues does not read (its problems say why)"
            out.append(Flag("unexplained", f"{THREADS}/{thread.folder}", why))
            continue
        out.append(
            Flag(
                "head",
                f"{THREADS}/{thread.folder}",
                f"thread {thread.thread_id}{where} now continues from {after}, which does not follow "
                f"{before}, where it continued before",
            )
        )
    return out + _live_removed(thread, base, head)


def _live_removed(thread: ThreadReport, base: Reader, head: Reader) -> list[Flag]:
    """A namespace the base side was to continue (the root, or a subgraph call of a task
    still to run) that the head side no longer has: the call starts over, its steps (model
    calls, tools) run again."""
    before = _namespaces(base, thread.thread_id)
    gone = set(before) - set(_namespaces(head, thread.thread_id))
    if not gone:
        return []
    try:
        live = base.live_states(thread.thread_id, before, "" if "" in before else before[0])
    except (RepoCheckpointError, OSError):
        live = {}
    return [
        Flag(
            "head",
            f"{THREADS}/{thread.folder}",
            f"thread {thread.thread_id}{f' namespace {ns}' if ns else ''} was to continue from "
            f"{live[ns].checkpoint_id} and is removed: it starts over, its steps run again",
        )
        for ns in sorted(gone)
        if ns in live
    ]


def _namespaces(reader: Reader, thread_id: str) -> list[str]:
    try:
        return reader.namespaces(thread_id)
    except RepoCheckpointError:
        return []


def _descends(reader: Reader, thread_id: str, ns: str, cid: str, ancestor: str) -> bool:
    present = set(reader.checkpoint_ids(thread_id, ns))
    if cid not in present:
        return False
    if cid == ancestor:
        return True
    for record in reader.ancestors(thread_id, ns, cid, lambda c: c not in present):
        if record.checkpoint_id == ancestor:
            return True
    return False


def _send_flags(thread: ThreadReport, part: NamespaceReport) -> list[Flag]:
    out = []
    where = f"{THREADS}/{thread.folder}"
    for cid, message in part.sends:
        out.append(Flag("send", where, f"checkpoint {cid}: {message}"))
    for cid, message in part.unlike:
        out.append(Flag("unexplained", where, f"checkpoint {cid}: {message}"))
    if part.next is not None:
        for task in part.next.tasks:
            if task.mismatch:
                out.append(Flag("send", where, f"runs next from {part.next.checkpoint_id}: {task.mismatch}"))
    return out
