"""Heads of a namespace and the choice of which one continues (docs/forks.md).

A *head* is a checkpoint no other checkpoint of its namespace names as its parent. A git
merge of two branches that both continued a thread, a checkout of an older commit and a
re-run, two processes continuing one thread at once, and LangGraph's own time travel
(``update_state`` on an older config) all leave a namespace with more than one. The newest
id still continues, as with every LangGraph saver; what this module adds is seeing it.

A choice is a checkpoint whose metadata holds ``{"chose": <head>, "over": [<heads>]}``
under ``CHOICE_KEY``: the heads it lists under ``over`` (and the chosen one and its
ancestors) are *settled*. A namespace needs a choice while more than one head is unsettled.

``find_heads`` is the pure rule; ``scan`` reads it off the documents. Choosing (a new
checkpoint that records the choice) is the saver's: ``RepoSaver.choose_head``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checks import Problem, problem_text
from .documents import Documents
from .errors import FileFormatError

CHOICE_KEY = "langgraph_repo_choice"


@dataclass(frozen=True)
class Choice:
    """One recorded choice: ``chose`` continues, the heads in ``over`` do not."""

    chose: str
    over: tuple[str, ...]


@dataclass(frozen=True)
class HeadState:
    """A head of a namespace, and whether a choice has settled it."""

    checkpoint_id: str
    settled: bool


def choice_of(metadata: Mapping[str, Any], where: str) -> Choice | None:
    """The choice a checkpoint's metadata records, if any; a malformed one is an error
    naming the file (``where``), never read as no choice."""
    raw = metadata.get(CHOICE_KEY)
    if raw is None:
        return None
    over = raw.get("over") if isinstance(raw, Mapping) else None
    if (
        not isinstance(raw, Mapping)
        or not isinstance(raw.get("chose"), str)
        or not isinstance(over, list)
        or not all(isinstance(i, str) for i in over)
    ):
        raise FileFormatError(
            where,
            f"/metadata/{CHOICE_KEY}",
            'expected {"chose": <checkpoint id>, "over": [<checkpoint ids>]}',
        )
    return Choice(raw["chose"], tuple(over))


def find_heads(parents: Mapping[str, str | None], choices: Iterable[Choice]) -> list[HeadState]:
    """The heads of one namespace, newest first, each settled or not.

    ``parents`` maps every checkpoint id of the namespace to its parent id. A head is settled
    when a choice lists it under ``over``, or it is the chosen one or an ancestor of it."""
    named = {p for p in parents.values() if p is not None}
    settled: set[str] = set()
    for choice in choices:
        settled.update(choice.over)
        current: str | None = choice.chose
        while current is not None and current not in settled:
            settled.add(current)
            current = parents.get(current)
    return [HeadState(c, c in settled) for c in sorted(parents, reverse=True) if c not in named]


def unsettled(heads: Iterable[HeadState]) -> list[str]:
    """The ids of the heads no choice has settled; more than one: the namespace needs a choice."""
    return [h.checkpoint_id for h in heads if not h.settled]


def scan(store: Documents, thread_id: str, ns: str) -> list[HeadState]:
    """``find_heads`` over a namespace's checkpoint files (headers only, no values)."""
    parents: dict[str, str | None] = {}
    choices: list[Choice] = []
    for cid in store.checkpoint_ids(thread_id, ns):
        try:
            doc = store.header(thread_id, ns, cid)
        except FileNotFoundError:
            if store.layout.checkpoint_path(thread_id, ns, cid).exists():
                raise
            continue  # removed since it was listed (prune in another process)
        parents[cid] = doc["parent_checkpoint_id"]
        choice = choice_of(doc["metadata"], str(store.layout.checkpoint_path(thread_id, ns, cid)))
        if choice is not None:
            choices.append(choice)
    return find_heads(parents, choices)


def unsettled_namespaces(store: Documents, thread_id: str) -> dict[str, list[str]]:
    """Per namespace of a thread that needs a choice, its unsettled heads (newest first)."""
    out: dict[str, list[str]] = {}
    for ns in store.namespaces(thread_id):
        ids = unsettled(scan(store, thread_id, ns))
        if len(ids) > 1:
            out[ns] = ids
    return out


def where_of(thread_id: str, ns: str) -> str:
    """How a message names a namespace of a thread."""
    return f"thread {thread_id!r}" + (f" namespace {ns!r}" if ns else "")


def unsettled_problems(store: Documents, folders: list[Path] | None = None) -> list[Problem]:
    """``validate --heads``: one problem per namespace with more than one unsettled head,
    naming thread, namespace and heads (only the threads in ``folders``, when given). A choice
    record that cannot be read is a problem at its file and pointer."""
    wanted = None if folders is None else {f.resolve() for f in folders}
    out = []
    for thread_id in store.thread_ids():
        if wanted is not None and store.layout.thread_dir(thread_id).resolve() not in wanted:
            continue
        for ns in store.namespaces(thread_id):
            try:
                ids = unsettled(scan(store, thread_id, ns))
            except FileFormatError as exc:  # reported, not skipped: validate lists it
                out.append(Problem(exc.path, exc.pointer, problem_text(exc)))
                continue
            if len(ids) > 1:
                out.append(
                    Problem(
                        str(store.layout.checkpoints_dir(thread_id, ns)),
                        "/",
                        f"{where_of(thread_id, ns)} has {len(ids)} heads nobody chose: {', '.join(ids)} "
                        f"(the newest continues; choose one with: langgraph-repo heads {thread_id}"
                        + (f" --ns {ns}" if ns else "")
                        + " --choose ID)",
                    )
                )
    return out
