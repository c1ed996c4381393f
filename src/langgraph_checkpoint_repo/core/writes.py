"""A checkpoint's pending writes as stored, merged as LangGraph's savers merge them.

LangGraph's rules, read off the files: per task and ``idx`` the first regular write
(``idx >= 0``) wins and a special one (``idx < 0``: error, interrupt, resume, scheduled) is
replaced by a later one; the result is ordered as live execution applied the writes
(``writes_sort_key``). The saver, the command line and the review all merge here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .threads import ThreadStore

#: LangGraph's WRITES_IDX_MAP (langgraph.checkpoint.base): the idx of each special channel;
#: a test checks it equals LangGraph's
SPECIAL_WRITE_IDX = {"__error__": -1, "__scheduled__": -2, "__interrupt__": -3, "__resume__": -4}


def write_idx(channel: str, position: int) -> int:
    """The idx a write of ``channel`` at ``position`` in its ``put_writes`` call is stored under."""
    return SPECIAL_WRITE_IDX.get(channel, position)


def writes_sort_key(task_path: str, task_id: str = "", idx: int = 0) -> tuple[str, str, int]:
    """LangGraph's order of one super-step's writes (``langgraph.checkpoint.base.writes_sort_key``):
    replayed in another order, an order-sensitive reducer rebuilds a different value."""
    return (task_path, task_id, idx)


@dataclass(frozen=True, kw_only=True)
class StoredWrite:
    """One pending write as stored, before its value is revived."""

    task_id: str
    task_path: str
    channel: str
    idx: int
    node: dict[str, Any]  # the stored value node (it may name a large file)
    path: Path  # the writes file, or the child checkpoint that took it (format 4)
    index: int  # its place in that record's ``writes``
    record: str = ""  # the JSON pointer of the record in ``path`` ("": the whole file)

    @property
    def pointer(self) -> str:
        """The JSON pointer of the write's value node in ``path``."""
        return f"{self.record}/writes/{self.index}/value"


def merged_writes(store: ThreadStore, thread_id: str, ns: str, cid: str) -> list[StoredWrite]:
    """A checkpoint's pending writes as ``get_tuple`` returns them: per task and ``idx`` the
    first regular write (``idx >= 0``) wins and a special one (``idx < 0``) is replaced by a
    later one, as the other savers do; ordered by LangGraph's ``writes_sort_key``."""
    merged: dict[tuple[str, int], StoredWrite] = {}
    for found in store.writes_records(thread_id, ns, cid):
        task = found.task
        for i, w in enumerate(task.writes):
            key = (task.task_id, w["idx"])
            if w["idx"] >= 0 and key in merged:
                continue
            merged[key] = StoredWrite(
                task_id=task.task_id,
                task_path=task.task_path,
                channel=w["channel"],
                idx=w["idx"],
                node=w["value"],
                path=found.path,
                index=i,
                record=found.pointer,
            )
    return [merged[k] for k in sorted(merged, key=lambda k: writes_sort_key(merged[k].task_path, *k))]
