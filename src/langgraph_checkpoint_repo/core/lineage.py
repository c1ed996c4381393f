"""Which checkpoint continues a namespace: heads, recorded choices, and the one rule.

A *head* is a checkpoint no other checkpoint of its namespace names as its parent. A git
merge of two branches that both continued a thread, a checkout of an older commit and a
re-run, two processes continuing one thread at once, and LangGraph's own time travel leave
more than one. A *choice* is a checkpoint whose metadata holds ``{"chose": <head>, "over":
[<heads>]}`` under ``CHOICE_KEY`` and which is what ``RepoSaver.choose_head`` writes: a child
of the chosen head holding exactly its state (docs/forks.md). Anything else that claims to be
a choice (a hand edit, a pull request settling a fork in its own favour) is no choice.

The rule, used by every reader (``get_tuple`` without an id, ``heads``, prune's "latest", the
command line): **the newest head that no choice passed over continues**. It follows parent
links, not clocks: a turn written on a machine whose clock is behind (its checkpoint id is
older than its parent's) is still the head that continues, and a choice settles a fork
whatever the ids. Only among heads that are all in play does "newest" (the id, LangGraph's
time-ordered uuid6) decide, as with every LangGraph saver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import compress, repeat
from operator import is_not, itemgetter, lt
from typing import Any, NamedTuple

from .errors import FileFormatError
from .format import fields

CHOICE_KEY = "langgraph_repo_choice"
# a Node's parent and choice, taken of every link in one call (the rule reads every link
# of a namespace: 5,000 at 5,000 checkpoints, in a fresh read)
_PARENT, _CHOICE = itemgetter(0), itemgetter(1)


@dataclass(frozen=True)
class Choice:
    """One recorded choice: ``chose`` continues, the heads in ``over`` do not; the heads in
    ``merged`` (a subset of ``over``) had their new messages appended to ``chose``'s."""

    chose: str
    over: tuple[str, ...]
    merged: tuple[str, ...] = ()


class Node(NamedTuple):
    """What the rule needs of one checkpoint: its parent, and the choice it records (only a
    valid one; ``problem`` says why a recorded one is not). A named tuple, not a frozen
    dataclass: a fresh read of a long thread makes one per checkpoint from the derived index
    (5,000 at 5,000 checkpoints), and a frozen dataclass's ``__init__`` cost about seven
    times a tuple's there."""

    parent: str | None
    choice: Choice | None = None
    problem: str | None = None
    readable: bool = True  # False: its file does not read (its parent is unknown)
    # its metadata's source is one LangGraph writes only when a line is started on purpose:
    # "fork" (a run replaying from a past checkpoint) or "update" (update_state)
    deliberate: bool = False


@dataclass(frozen=True)
class HeadState:
    """A head of a namespace, and whether a choice has settled it."""

    checkpoint_id: str
    settled: bool


@dataclass(frozen=True)
class Rule:
    """What the rule makes of one set of links (``Lineage.links``): the heads and the one that
    continues, and what a checkpoint added to them changes (``Rule.after``): the parents named
    but not there, the checkpoints a choice settled or passed over, a cycle."""

    links: dict[str, Node]
    heads: list[HeadState]
    current: str | None
    missing: frozenset[str]  # parents named by a link that has no link of its own
    settled: frozenset[str]
    over: frozenset[str]
    cyclic: bool
    forked: bool = False  # some checkpoint has two children (settled_by_forks judges the heads)
    by_fork: frozenset[str] = frozenset()  # the heads settled_by_forks settles

    @staticmethod
    def of(links: dict[str, Node]) -> Rule:
        """The rule over ``links``, computed from them all."""
        named = _named(links)
        forks = settled_by_forks(links)
        settled = settled_by_choices(links)
        heads = find_heads(links, settled, forks)
        cyclic = bool(links) and has_cycle(links)
        # parent links that go round (a hand edit) cannot say what continues: the newest
        # id does, as before, and the walks up its history name the cycle (validate too)
        current = max(links) if cyclic else current_of(links, heads)
        over = frozenset(passed_over(links))
        missing = frozenset(named - links.keys())
        by_fork = frozenset(forks or ())
        return Rule(
            links, heads, current, missing, frozenset(settled), over, cyclic, forks is not None, by_fork
        )

    def after(self, links: dict[str, Node], cid: str, link: Node) -> Rule:
        """The rule over ``links``: these links and ``cid``. A new checkpoint that records no
        choice, that no link names as its parent, that is not its own parent and that no
        choice names (a put continuing its thread) changes only its parent's place among the
        heads and takes its own, settled by forks as its parent was (no race above it begins
        or ends): O(heads) instead of every link again. Anything else: computed from them all."""
        if (
            cid in self.links
            or link.parent == cid  # its own parent: a cycle, which only the whole rule names
            or link.choice is not None
            or cid in self.missing
            or cid in self.settled
            or self.cyclic
            or not self.links
            or (self.forked and link.parent not in self.links)  # a new root beside a fork
            or link.deliberate
            or (link.parent in self.links and all(h.checkpoint_id != link.parent for h in self.heads))
        ):
            return Rule.of(links)
        parent = link.parent
        settled = parent in self.by_fork
        heads = sorted(
            [h for h in self.heads if h.checkpoint_id != parent] + [HeadState(cid, settled)],
            key=lambda h: h.checkpoint_id,
            reverse=True,
        )
        missing = self.missing if parent is None or parent in links else self.missing | {parent}
        current = next(
            (h.checkpoint_id for h in heads if h.checkpoint_id not in self.over), heads[0].checkpoint_id
        )
        by_fork = (self.by_fork - {parent}) | ({cid} if settled else set())
        return Rule(links, heads, current, missing, self.settled, self.over, False, self.forked, by_fork)


@dataclass
class Lineage:
    """The links of one namespace's checkpoints, and what the rule makes of them (computed
    once per set of links, and brought up to date as a writer adds one: ``Rule.after``).

    Shared by the threads of a process: a writer never changes ``links`` in place but puts a
    new dict in its place (``add``), and the rule is computed from one dict and kept beside
    it, so a reader in another thread always sees one consistent set of links and never a
    dict that changes while it iterates (LangGraph reads state while its tasks write)."""

    links: dict[str, Node] = field(default_factory=dict)
    keys: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # file stat keys, when settled
    _rule: Rule | None = None
    _children: tuple[dict[str, Node], dict[str, list[str]]] | None = None

    def add(self, cid: str, link: Node) -> None:
        """One checkpoint written since the links were read (copy on write, see above)."""
        before, rule = self.links, self._rule
        links = {**before, cid: link}
        if rule is not None and rule.links is before:
            self._rule = rule.after(links, cid, link)
        self.links = links

    def children(self, cid: str) -> list[str]:
        """The checkpoints that name ``cid`` as their parent, oldest first (kept with the links
        they were found in, as the rule is)."""
        links, cached = self.links, self._children
        if cached is None or cached[0] is not links:
            kids: dict[str, list[str]] = {}
            for child in sorted(links):
                parent = links[child].parent
                if parent is not None:
                    kids.setdefault(parent, []).append(child)
            cached = self._children = (links, kids)
        return cached[1].get(cid, [])

    def _computed(self) -> Rule:
        links, rule = self.links, self._rule
        if rule is None or rule.links is not links:
            rule = self._rule = Rule.of(links)
        return rule

    def heads(self) -> list[HeadState]:
        """The heads, newest first, each settled or not."""
        return self._computed().heads

    def current(self) -> str | None:
        """The checkpoint that continues (the rule above); None for an empty namespace."""
        return self._computed().current

    def chosen(self) -> frozenset[str]:
        """The checkpoints a choice settled (chose, passed over, or recorded it): the rest of
        the settled heads were settled by lines started on purpose (``settled_by_forks``)."""
        return self._computed().settled


def choice_of(metadata: Mapping[str, Any], where: str) -> Choice | None:
    """The choice a checkpoint's metadata records, if any; a malformed one is an error
    naming the file (``where``), never read as no choice."""
    raw = metadata.get(CHOICE_KEY)
    if raw is None:
        return None
    over = raw.get("over") if isinstance(raw, Mapping) else None
    merged = raw.get("merged", []) if isinstance(raw, Mapping) else None
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("chose"), str)
        or not isinstance(over, list)
        or not all(isinstance(i, str) for i in over)
        or not isinstance(merged, list)
        or not all(isinstance(i, str) and i in over for i in merged)
        or set(raw) - {"chose", "over", "merged"}
    ):
        raise FileFormatError(
            where,
            f"/metadata/{CHOICE_KEY}",
            'expected {"chose": <checkpoint id>, "over": [<checkpoint ids>], "merged": [<some of over>]}',
        )
    return Choice(raw["chose"], tuple(over), tuple(merged))


def choice_problem(
    doc: dict[str, Any],
    choice: Choice,
    parent: dict[str, Any] | None,
    messages: tuple[Any, Any] | None = None,
) -> str | None:
    """Why a checkpoint recording ``choice`` is not a choice (None when it is one): a choice
    is a child of the chosen head (source ``fork``) holding the head's state unchanged, every
    channel at the head's version and referred to where the head reads it. A merge
    (``merged``) may change ``messages`` only, by adding to the kept head's list: ``messages``
    gives both lists (the head's, the merge's) as stored trees."""
    if fields.parent_id(doc) != choice.chose:
        return f"records a choice of {choice.chose} but continues {fields.parent_id(doc)}"
    if choice.chose in choice.over:
        return f"records a choice of {choice.chose} over itself"
    if parent is None:
        return f"records a choice of {choice.chose}, which is not there"
    changed = set(fields.new_values(doc))
    if choice.merged:
        return _merge_problem(doc, parent, changed, messages)
    if fields.source(doc) != "fork" or changed:
        return "records a choice but changes the state (a choice only continues the chosen head as it is)"
    if fields.channel_versions(doc) != fields.channel_versions(parent) or fields.value_refs(
        doc
    ) != fields.value_refs(parent):
        return "records a choice but holds another state than the chosen head's"
    return None


MERGED_CHANNEL = "messages"


def _merge_problem(
    doc: dict[str, Any], parent: dict[str, Any], changed: set[str], messages: tuple[Any, Any] | None
) -> str | None:
    """A merge (``heads --merge``) continues the kept head with the other heads' new messages
    added after its own: every other channel as the kept head has it, and ``messages``
    starting with the kept head's list (so nothing of it is lost)."""
    if fields.source(doc) != "fork" or changed != {MERGED_CHANNEL}:
        return "records a merge but changes more than the messages"
    versions, before = fields.channel_versions(doc), fields.channel_versions(parent)
    if {k: v for k, v in versions.items() if k != MERGED_CHANNEL} != {
        k: v for k, v in before.items() if k != MERGED_CHANNEL
    }:
        return "records a merge but holds other channel versions than the kept head's"
    kept, merged = messages if messages is not None else (None, None)
    if not (isinstance(kept, list) and isinstance(merged, list) and merged[: len(kept)] == kept):
        return "records a merge but its messages do not start with the kept head's"
    return None


def find_heads(
    links: Mapping[str, Node], settled: set[str] | None = None, forks: set[str] | None = None
) -> list[HeadState]:
    """The heads of one namespace, newest first, each settled or not.

    A head is settled when a valid choice lists it under ``over``, it is the chosen one or an
    ancestor of it, or it is itself a choice (``settled_by_choices``); or when lines started on
    purpose made it and no race is above it (``settled_by_forks``). ``settled``, ``forks``:
    those two, when the caller has them."""
    chosen = settled if settled is not None else settled_by_choices(links)
    forked = (forks if settled is not None else settled_by_forks(links)) or set()
    heads = sorted(links.keys() - _named(links), reverse=True)
    return [HeadState(c, c in chosen or c in forked) for c in heads]


def _named(links: Mapping[str, Node]) -> set[str]:
    """The parents the links name."""
    named: set[str] = set(map(_PARENT, links.values()))
    named.discard(None)  # type: ignore[arg-type]
    return named


def _choice_free(links: Mapping[str, Node]) -> bool:
    """Whether no link records a choice (the usual namespace)."""
    choices = list(map(_CHOICE, links.values()))
    return choices.count(None) == len(choices)


DELIBERATE_SOURCES = frozenset({"fork", "update"})


def is_deliberate(metadata: Any) -> bool:
    """Whether a checkpoint's stored metadata says LangGraph started its line on purpose."""
    return isinstance(metadata, dict) and metadata.get("source") in DELIBERATE_SOURCES


def settled_by_forks(links: Mapping[str, Node]) -> set[str] | None:
    """The heads that lines started on purpose settle (None when no checkpoint has two
    children): all of them, except those below a checkpoint that two or more plain children
    continue (two writers that both went on from it: a race, or a merge of two branches),
    which wait for a choice. A child is plain unless LangGraph marked it deliberate
    (``Node.deliberate``: a replay from the past, ``update_state``)."""
    parents = list(filter(partial(is_not, None), map(_PARENT, links.values())))
    if len(set(parents)) == len(parents):
        return None  # no parent named twice: no checkpoint has two children
    kids: dict[str, list[str]] = {}
    for cid, link in links.items():
        if link.parent is not None and link.parent != cid:
            kids.setdefault(link.parent, []).append(cid)
    if all(len(children) < 2 for children in kids.values()):
        return None
    raced = []
    for children in kids.values():
        plain = [c for c in children if not links[c].deliberate]
        if len(plain) > 1:
            raced += plain
    below: set[str] = set()
    while raced:
        cid = raced.pop()
        if cid not in below:
            below.add(cid)
            raced += kids.get(cid, [])
    return {cid for cid in links if cid not in kids and cid not in below}


def settled_by_choices(links: Mapping[str, Node]) -> set[str]:
    """Every checkpoint a valid choice settles: itself, the heads it passed over, the one it
    chose and that one's ancestors."""
    settled: set[str] = set()
    if _choice_free(links):
        return settled
    for cid, link in links.items():
        if link.choice is None:
            continue
        settled.add(cid)  # the choice itself: its line is the one chosen
        settled.update(link.choice.over)
        walk: str | None = link.choice.chose
        while walk is not None and walk not in settled:
            settled.add(walk)
            walk = links[walk].parent if walk in links else None
    return settled


def where_of(thread_id: str, ns: str) -> str:
    """How a message names a namespace of a thread."""
    return f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")


def has_cycle(links: Mapping[str, Node]) -> bool:
    """Whether following parents from some checkpoint comes back to it (linear time: each
    checkpoint is marked with the walk that reached it first, and a walk stops at a mark; a
    mark of its own walk is a cycle). Links whose every parent is an older id than its child
    (the usual uuid6 ids, whatever clock skew did not reorder) go round nowhere: one pass of
    comparisons says so without a walk."""
    parents = list(map(_PARENT, links.values()))
    named = list(map(is_not, parents, repeat(None)))
    if all(map(lt, compress(parents, named), compress(links, named))):
        return False  # each step up a history goes to a smaller id, so none comes back
    mark: dict[str, int] = {}
    for walk_no, start in enumerate(links):
        walk: str | None = start
        while walk is not None:
            seen = mark.get(walk)
            if seen is not None:
                if seen == walk_no:
                    return True
                break
            link = links.get(walk)
            if link is None:
                break
            mark[walk] = walk_no
            walk = link.parent
    return False


def passed_over(links: Mapping[str, Node]) -> set[str]:
    """Every checkpoint a valid choice passed over."""
    if _choice_free(links):
        return set()
    return {h for link in links.values() if link.choice is not None for h in link.choice.over}


def current_of(links: Mapping[str, Node], heads: list[HeadState]) -> str | None:
    """The newest head no choice passed over (the newest head when a choice passed over all;
    the newest checkpoint when parent links make a cycle and leave no head: reading it names
    the cycle, where a walk up the history meets it)."""
    if not heads:
        return max(links) if links else None
    over = passed_over(links)
    return next((h.checkpoint_id for h in heads if h.checkpoint_id not in over), heads[0].checkpoint_id)


def unsettled(heads: Iterable[HeadState]) -> list[str]:
    """The ids of the heads no choice has settled; more than one: the namespace needs a choice."""
    return [h.checkpoint_id for h in heads if not h.settled]
