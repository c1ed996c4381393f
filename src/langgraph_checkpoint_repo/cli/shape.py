"""The JSON shapes that ``--json`` prints, made from the same data as the text output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.checks import Finding
from ..core.plans import PrunePlan
from ..readmodel.diff import ChannelChange
from ..readmodel.reader import HistoryRow, StateView, ThreadSummary
from ..readmodel.tasks import InterruptView, Raw, TaskView


def _interrupt_json(i: InterruptView) -> dict[str, Any]:
    return {"node": i.task_name, "task_id": i.task_id, "interrupt_id": i.id, "value": i.tree}


def _task_json(t: TaskView, ns: str) -> dict[str, Any]:
    error = next((w.tree for w in t.writes if w.channel == "__error__"), None)
    return {
        "name": t.name,
        "id": t.id,
        "checkpoint_ns": ns,
        "kind": t.kind,
        "status": t.status,
        "runs_on_resume": t.runs_on_resume,
        "may_have_run": t.may_have_run,
        "answered": t.answered,
        "derived_from_checkpoint": t.derived,
        "error": error,
        "interrupts": [_interrupt_json(i) for i in t.interrupts],
        "writes": [w.channel for w in t.writes],
    }


def _summary_json(s: ThreadSummary) -> dict[str, Any]:
    return {
        "thread_id": s.thread_id,
        "namespaces": s.namespaces,
        "checkpoints": s.checkpoints,
        "latest_checkpoint_id": s.latest_id,
        "latest_step": s.latest_step,
        "last_updated": s.last_updated,
        "forks": s.forks,
        "next": s.next,
        "waiting": [_interrupt_json(i) for i in s.waiting],
    }


def _history_json(r: HistoryRow) -> dict[str, Any]:
    return {
        "checkpoint_id": r.checkpoint_id,
        "step": r.step,
        "source": r.source,
        "ts": r.ts,
        "written_by": r.writers,
        "parent_checkpoint_id": r.parent_id,
        "parent_present": r.parent_present,
        "children": r.children,
    }


def _change_json(c: ChannelChange) -> dict[str, Any]:
    data: dict[str, Any] = {"channel": c.channel, "kind": c.kind}
    if c.kind in ("added", "changed"):
        data["new"] = c.new
    if c.kind in ("removed", "changed"):
        data["old"] = c.old
    if c.kind == "list":
        data["added"] = [{"index": i, "value": v} for i, v in c.added]
        data["removed"] = [{"index": i, "value": v} for i, v in c.removed]
    if c.kind == "keys":
        data["keys_added"] = c.keys_added
        data["keys_changed"] = {k: {"old": a, "new": b} for k, (a, b) in c.keys_changed.items()}
        data["keys_removed"] = c.keys_removed
    return data


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "path": f.path,
        "message": f.message,
        "repairable": f.repairable,
        "repaired": f.repaired,
        "thread_id": f.thread_id,
    }


def _plan_json(plan: PrunePlan, written: list[Path] | None = None) -> dict[str, Any]:
    return {
        "thread_id": plan.thread_id,
        "skipped": plan.skipped,
        "checkpoints": {ns: ids for ns, ids in plan.doomed.items()},
        "remove": [str(p) for p in plan.removed],
        "write": [str(p) for p in (written if written is not None else plan.rescued)],
    }


def _state_json(
    thread: str, ns: str, cid: str, view: StateView, channels: list[str], subgraphs: list[str]
) -> dict[str, Any]:
    """What ``show --json`` prints: the state at checkpoint ``cid``."""
    return {
        "thread_id": thread,
        "checkpoint_ns": ns,
        "checkpoint_id": cid,
        "parent_checkpoint_id": view.parent_id,
        "step": view.step,
        "source": view.source,
        "ts": view.ts,
        "file": str(view.path),
        "metadata": view.doc["metadata"],
        "values": {c: view.trees[c] for c in channels},
        "not_revived": {c: v.reason for c, v in view.values.items() if isinstance(v, Raw) and c in channels},
        "next": [_task_json(t, ns) for t in view.tasks],
        "interrupts": [_interrupt_json(i) for i in view.interrupts],
        "pending_writes": [
            {"task_id": w.task_id, "task_path": w.task_path, "channel": w.channel, "value": w.tree}
            for w in view.writes
        ],
        "namespaces": subgraphs,
    }
