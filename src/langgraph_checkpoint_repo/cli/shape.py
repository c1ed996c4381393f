"""The JSON shapes that ``--json`` prints, made from the same data as the text output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.checks import Finding
from ..core.plans import PrunePlan, plan_bytes
from ..readmodel.diff import ChannelChange
from ..readmodel.reader import HistoryRow, StateView, ThreadSummary
from ..readmodel.tasks import InterruptView, Raw, TaskView
from .output import record_json


def _interrupt_json(i: InterruptView) -> dict[str, Any]:
    return record_json(i, "node=task_name task_id interrupt_id=id value=tree")


def task_json(t: TaskView, ns: str) -> dict[str, Any]:
    error = next((w.tree for w in t.writes if w.channel == "__error__"), None)
    return record_json(
        t,
        "name id checkpoint_ns kind status runs_on_resume may_have_run answered "
        "derived_from_checkpoint=derived error interrupts writes",
        checkpoint_ns=ns,
        error=error,
        interrupts=[_interrupt_json(i) for i in t.interrupts],
        writes=[w.channel for w in t.writes],
    )


def summary_json(s: ThreadSummary) -> dict[str, Any]:
    return record_json(
        s,
        "thread_id namespaces checkpoints latest_checkpoint_id=latest_id latest_step last_updated "
        "forks next waiting",
        waiting=[_interrupt_json(i) for i in s.waiting],
    )


def history_json(r: HistoryRow) -> dict[str, Any]:
    return record_json(
        r,
        "checkpoint_id step source ts written_by=writers parent_checkpoint_id=parent_id parent_present "
        "children",
    )


def change_json(c: ChannelChange) -> dict[str, Any]:
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


def finding_json(f: Finding) -> dict[str, Any]:
    return record_json(f, "kind path message repairable repaired thread_id")


def plan_json(plan: PrunePlan, written: list[Path] | None = None) -> dict[str, Any]:
    gone, wrote = plan_bytes(plan)
    expired = {"expired": plan.expired} if plan.expired is not None else {}  # retention's delete
    return {
        "thread_id": plan.thread_id,
        "skipped": plan.skipped,
        **expired,
        "checkpoints": {ns: ids for ns, ids in plan.doomed.items()},
        "remove": [str(p) for p in plan.removed],
        "write": [str(p) for p in (written if written is not None else plan.rescued)],
        "remove_bytes": gone,
        "write_bytes": wrote,
    }


def state_json(
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
        "metadata": view.record.metadata,
        "values": {c: view.trees[c] for c in channels},
        "not_revived": {c: v.reason for c, v in view.values.items() if isinstance(v, Raw) and c in channels},
        "next": [task_json(t, ns) for t in view.tasks],
        "interrupts": [_interrupt_json(i) for i in view.interrupts],
        "pending_writes": [
            {"task_id": w.task_id, "task_path": w.task_path, "channel": w.channel, "value": w.tree}
            for w in view.writes
        ],
        "namespaces": subgraphs,
    }
