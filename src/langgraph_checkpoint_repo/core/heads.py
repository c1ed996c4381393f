"""Heads of a namespace as the checks and the command line see them (docs/forks.md).

The rule of which checkpoint continues, what a head and a choice are, is lineage.py's; this
module reads it off the documents for ``threads``, ``heads`` and ``validate --heads``.
"""

from __future__ import annotations

from pathlib import Path

from .checks import Problem
from .lineage import CHOICE_KEY, HeadState, unsettled, where_of
from .threads import ThreadStore

__all__ = [
    "CHOICE_KEY",
    "HeadState",
    "scan",
    "unsettled",
    "unsettled_namespaces",
    "unsettled_problems",
    "where_of",
]


def scan(store: ThreadStore, thread_id: str, ns: str) -> list[HeadState]:
    """The heads of a namespace, newest first (headers only, no values)."""
    return store.lineage(thread_id, ns).heads()


def unsettled_namespaces(store: ThreadStore, thread_id: str) -> dict[str, list[str]]:
    """Per namespace of a thread that needs a choice, its unsettled heads (newest first)."""
    out: dict[str, list[str]] = {}
    for ns in store.namespaces(thread_id):
        ids = unsettled(scan(store, thread_id, ns))
        if len(ids) > 1:
            out[ns] = ids
    return out


def unsettled_problems(store: ThreadStore, folders: list[Path] | None = None) -> list[Problem]:
    """``validate --heads``: one problem per namespace with more than one unsettled head,
    naming thread, namespace and heads (only the threads in ``folders``, when given). A
    recorded choice that is malformed or is not what a choice writes is a problem at its file
    and pointer: it settles nothing."""
    wanted = None if folders is None else {f.resolve() for f in folders}
    out = []
    for thread_id in store.thread_ids():
        if wanted is not None and store.layout.thread_dir(thread_id).resolve() not in wanted:
            continue
        for ns in store.namespaces(thread_id):
            lineage = store.lineage(thread_id, ns)
            for cid, node in sorted(lineage.links.items()):
                if node.problem is not None:
                    path = str(store.layout.checkpoint_path(thread_id, ns, cid))
                    message = f"{node.problem}: it settles nothing"
                    out.append(Problem(path, f"/metadata/{CHOICE_KEY}", message))
            ids = unsettled(lineage.heads())
            if len(ids) > 1:
                out.append(
                    Problem(
                        str(store.layout.checkpoints_dir(thread_id, ns)),
                        "/",
                        f"{where_of(thread_id, ns)} has {len(ids)} heads nobody chose: {', '.join(ids)} "
                        f"({lineage.current()} continues; choose one with: langgraph-repo heads {thread_id}"
                        + (f" --ns {ns}" if ns else "")
                        + " --choose ID)",
                    )
                )
    return out
