"""The review's records: what ``report.review`` finds and the command line draws."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.checks import Problem
from ..core.lineage import HeadState
from ..readmodel.diff import ChannelChange
from ..readmodel.turns import Event
from .revisions import Range


@dataclass(frozen=True, order=True)
class Flag:
    """Something the app would load that the review does not explain: shown first, in red."""

    kind: str  # rewritten | unexplained | layout | attributes | not-read | head | send | problem
    path: str  # below the root ("" when it is no one file)
    message: str


@dataclass(frozen=True)
class Step:
    """One checkpoint of a line as the app loads it, beside what the turns show of it: its
    metadata, a digest of LangGraph's bookkeeping (channel versions, versions seen) and of
    each of LangGraph's own channels (an input waiting in ``__start__``, the ``Send`` packets),
    and the pending writes it was left with (what its child was made of)."""

    checkpoint_id: str
    parent: str | None
    metadata: Any
    bookkeeping: str
    writes: list[tuple[str, str, str, Any]]  # (task id, task path, channel, stored tree)
    internal: dict[str, str] = field(default_factory=dict)  # LangGraph's own channels: digests
    ts: str = ""  # when it was taken
    parent_ts: str = ""  # when its parent was (a step's writes happened between the two)


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
    steps: list[Step] = field(default_factory=list)
    start_step: Step | None = (
        None  # the checkpoint the line continues: its pending writes made the first step
    )
    turns_before: int = 0  # user messages at ``start``: the thread's turn the line continues
    call: str = ""  # a subgraph call's line: the call (``agent (turn 3)``) whose events hold it
    forks: int = 0  # other children ``start`` has: the line forks from it


@dataclass(kw_only=True)
class PendingTask:
    """A task that runs when the thread continues, and what its pending writes say already."""

    name: str
    kind: str  # pull | push N | the stored task path
    status: str
    packet: Any = None  # a push task's Send argument, as stored
    input: Any = None  # the graph's input a ``__start__`` task applies, as stored
    triggers: list[str] = field(default_factory=list)
    writes: list[tuple[str, Any]] = field(default_factory=list)  # (channel, stored tree)
    interrupts: list[Any] = field(default_factory=list)  # values asked
    interrupt_ids: list[str] = field(default_factory=list)  # their ids ("" when not stored)
    error: Any = None  # what it failed with (its ``__error__`` write)
    answer: Any = None  # the resume value saved for it
    answered: bool = False
    mismatch: str = ""  # why its packet is not what the conversation asked for
    task_id: str = ""  # a subgraph namespace it runs is ``name:<task_id>``
    #: message id -> the message the state holds under it, for each written message with that
    #: id: ``add_messages`` replaces it in place (it is not appended)
    replaces: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class Next:
    """What runs when the thread continues from ``checkpoint_id``."""

    checkpoint_id: str
    tasks: list[PendingTask] = field(default_factory=list)


@dataclass(kw_only=True)
class NamespaceReport:
    ns: str
    label: str = ""  # a subgraph call's namespace: by node and turn, ``agent (turn 3)``
    added: list[str] = field(default_factory=list)  # checkpoint ids
    removed: list[str] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    heads: list[HeadState] = field(default_factory=list)  # when more than one is in play
    current: str | None = None
    next: Next | None = None
    sends: list[tuple[str, str]] = field(default_factory=list)  # (checkpoint, why) of a Send on a line
    #: (checkpoint, why) of a step whose parent's writes (what a replay from the parent takes
    #: as its tasks' results) are not what the step holds
    unlike: list[tuple[str, str]] = field(default_factory=list)


@dataclass(kw_only=True)
class ThreadReport:
    thread_id: str
    status: str  # added | removed | changed
    folder: str = ""  # the thread's folder below threads/
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
    updated_at: str = ""  # the head side's, to tie the write to the step that made it
    shown_in: tuple[str, str, str] | None = None  # (thread, namespace, checkpoint) of the step


@dataclass(kw_only=True)
class Verdict:
    """What the range holds, counted, and what needs a person, for the first lines."""

    turns: int = 0
    answers: list[Any] = field(default_factory=list)  # resume values given (approvals)
    saved: list[Any] = field(default_factory=list)  # answers saved, applied when the thread continues
    tool_errors: int = 0
    failures: int = 0  # tasks that failed (an ``__error__`` write)
    edits: int = 0  # checkpoints written by ``update_state`` (a hand edit, ``edit``)
    migrations: int = 0  # of ``edits``, those whose metadata names a ``migrate-state`` migration
    memories: int = 0
    forks: int = 0
    rewrites: int = 0
    threads_removed: int = 0  # threads the range deletes
    removed: int = 0  # checkpoints removed from the threads that stay (prune, a head moved back)
    waiting: list[tuple[str, str, Any]] = field(default_factory=list)  # (thread, where, question)
    unsettled: list[tuple[str, str]] = field(default_factory=list)  # (thread, where): heads to settle


@dataclass(frozen=True)
class FileAccount:
    """One changed file under the root and what the review says of it."""

    path: str  # below the root
    change: str  # added | removed | modified
    account: str  # what explains it ("" when flagged)
    flagged: bool = False


@dataclass(kw_only=True)
class Report:
    range: Range
    root: str  # the root, relative to the top of the repository
    threads: list[ThreadReport] = field(default_factory=list)
    items: list[ItemReport] = field(default_factory=list)  # store items (RepoStore)
    other: list[str] = field(default_factory=list)  # changed files under the root, not in a thread
    flags: list[Flag] = field(default_factory=list)
    files: list[FileAccount] = field(default_factory=list)
    verdict: Verdict = field(default_factory=Verdict)

    @property
    def problems(self) -> list[Problem]:
        return [p for t in self.threads for p in t.problems] + [p for i in self.items for p in i.problems]
