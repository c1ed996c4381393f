"""The one failure marker (issue 35, item 3) and ``edit`` on a thread that waits (item 8).

Every view marks a tool result that failed (``status: "error"``) and a task that failed (an
``__error__`` write) with ``ERROR_MARK`` (core/messages.py), words ``grep`` and a screen reader
both find. The support desk of bench/support_desk.py has both kinds of thread: turn 2's
``check_stock`` failed, turn 3 waits for a person to approve a refund.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import TOOLS, ToolCallingFakeModel, user_message
from bench.support_desk import THREAD, approve, build_support_desk, config, user_turn
from langchain.agents import create_agent

from graphs import cfg, fan_graph
from helpers import checkpoint_files, cli, one_line_error
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.messages import ERROR_MARK

FLAT = "flat"  # a create_agent stopped before its tools


def desk(saver: Any) -> Any:
    """The support desk after turns 1-3: turn 2's tool failed, turn 3 waits for approval."""
    graph = build_support_desk(saver)
    for n in (1, 2, 3):
        user_turn(graph, n)
    return graph


def flat_graph(saver: Any) -> Any:
    """A create_agent with interrupt_before=["tools"]."""
    return create_agent(ToolCallingFakeModel(), list(TOOLS), checkpointer=saver, interrupt_before=["tools"])


def flat(saver: Any) -> Any:
    """The create_agent after one user turn: stopped with lookup_order scheduled."""
    graph = flat_graph(saver)
    graph.invoke({"messages": [user_message(1)]}, cfg(FLAT))
    return graph


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both threads, written by the real graphs through RepoSaver (read-only: tests copy it)."""
    root = tmp_path_factory.mktemp("waiting") / "root"
    desk(RepoSaver(root, durable=False))
    flat(RepoSaver(root, durable=False))
    return root


@pytest.fixture
def root(written: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "root"
    shutil.copytree(written, copy)
    return copy


def agent_ns(root: Path) -> str:
    """The namespace of the support desk's waiting agent call."""
    (task,) = build_support_desk(RepoSaver(root)).get_state(config(), subgraphs=True).tasks
    return str(task.state.config["configurable"]["checkpoint_ns"])


def form(root: Path, thread: str, ns: str = "") -> dict[str, Any]:
    proc = cli(root, "edit", thread, "--ns", ns, "--show")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def call_of(data: dict[str, Any], message_id: str) -> dict[str, Any]:
    (message,) = [m for m in data["values"]["messages"] if m["id"] == message_id]
    return message["tool_calls"][0]  # type: ignore[no-any-return]


def edited(root: Path, thread: str, ns: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """The form of the head of ``thread``/``ns`` with ``change`` made, in a file for --file."""
    data = form(root, thread, ns)
    change(data)
    path = root.parent / "form.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def refund_of(amount: float) -> Callable[[dict[str, Any]], None]:
    return lambda data: call_of(data, "ai-call-3")["args"].update(amount=amount)


# ----------------------------------------------------------------------------
# validate: a packet that runs what the conversation no longer asks
# ----------------------------------------------------------------------------
def test_validate_refuses_an_edited_call_whose_packet_still_runs_the_old_one(root: Path) -> None:
    """The AI message's call edited in a new checkpoint that carries the packet as it was (what
    ``edit`` wrote before): approving would run the old call. validate checked the packets only
    of a checkpoint that added packets, so it passed."""
    saver = RepoSaver(root)
    head = saver.get_tuple(cfg(FLAT))
    assert head is not None
    values = head.checkpoint["channel_values"]
    ai = values["messages"][-1]
    call = {**ai.tool_calls[0], "args": {"order_id": "A-9999"}}
    messages = [*values["messages"][:-1], ai.model_copy(update={"tool_calls": [call]})]
    version = saver.get_next_version(str(head.checkpoint["channel_versions"]["messages"]), None)
    forged: Any = {
        **head.checkpoint,
        "id": "1f200000-0000-6000-8002-000000000001",
        "channel_values": {**values, "messages": messages},
        "channel_versions": {**head.checkpoint["channel_versions"], "messages": version},
        "updated_channels": ["messages"],
    }
    saver.put(head.config, forged, {"source": "update", "step": 2, "parents": {}}, {"messages": version})
    proc = cli(root, "validate")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = [x for x in (proc.stdout + proc.stderr).splitlines() if forged["id"] in x]
    assert "/new_values/messages" in line and "'lookup_order' (id 'call-1')" in line
    # the threat is real: the graph runs the packet, not the message
    after = flat_graph(RepoSaver(root)).invoke(None, cfg(FLAT))
    assert "Order A-1001: shipped" in after["messages"][-2].content


# ----------------------------------------------------------------------------
# one marker for a failure, in every view
# ----------------------------------------------------------------------------
def test_every_view_marks_the_tool_error(root: Path) -> None:
    """Turn 2's check_stock failed (its ToolMessage has status "error"): show, render, diff
    and the edit form mark it with the one marker, and nothing else."""
    failed = "Warehouse API timed out while checking 'blue mug'."
    show = cli(root, "show", THREAD).stdout
    render = cli(root, "render", THREAD).stdout
    (before, after) = [p.stem for p in checkpoint_files(root, THREAD)][7:9]  # agent's turn-2 output
    diff = cli(root, "diff", THREAD, "--from", before, "--to", after).stdout
    for text in (show, render, diff):
        (line,) = [x for x in text.splitlines() if ERROR_MARK in x]
        assert f"tool[check_stock] {ERROR_MARK}: {failed}" in line
    (marked,) = [m for m in form(root, THREAD)["values"]["messages"] if m.get("status")]
    assert marked["status"] == ERROR_MARK and marked["content"] == failed


def test_a_failed_task_is_marked_in_show_tasks_and_render(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with pytest.raises(RuntimeError, match="boom on bad"):
        fan_graph(RepoSaver(root), fail=True).invoke({"items": ["a", "b", "bad"]}, cfg("fan"))
    boom = "RuntimeError('boom on bad')"
    for args, lines in (
        (("tasks", "fan"), 2),  # the task's row, the line under the table
        (("show", "fan"), 2),  # the task's row, its __error__ write
        (("render", "fan"), 1),  # the task's row
    ):
        text = cli(root, *args).stdout
        marked = [x for x in text.splitlines() if ERROR_MARK in x]
        assert len(marked) == lines and all(boom in x for x in marked), (args, text)


def test_the_form_round_trips_a_tool_error(root: Path) -> None:
    """The form's ``"status": "✗ error"`` reads back as the status it shows: an edit of the
    text keeps the error, ``success`` clears it, anything else is refused."""

    def status(value: str | None, content: str) -> Callable[[dict[str, Any]], None]:
        def change(data: dict[str, Any]) -> None:
            (m,) = [m for m in data["values"]["messages"] if m.get("status")]
            m["content"] = content
            if value is not None:
                m["status"] = value

        return change

    def statuses() -> list[Any]:
        state = build_support_desk(RepoSaver(root)).get_state(config())
        return [(m.content, m.status) for m in state.values["messages"] if m.type == "tool"][1:2]

    approve(build_support_desk(RepoSaver(root)))  # nothing waits: the edits are not refused
    path = edited(root, THREAD, "", status(None, "Timed out (text edited)."))
    assert cli(root, "edit", THREAD, "--file", path).returncode == 0
    assert statuses() == [("Timed out (text edited).", "error")]
    path = edited(root, THREAD, "", status("success", "In stock after all."))
    assert cli(root, "edit", THREAD, "--file", path).returncode == 0
    assert statuses() == [("In stock after all.", "success")]
    assert "status" not in [m for m in form(root, THREAD)["values"]["messages"] if m["role"] == "tool"][1]
    path = edited(root, THREAD, "", lambda d: d["values"]["messages"][7].update(status="failed"))
    one_line_error(
        cli(root, "edit", THREAD, "--file", path), 2, "messages[7]: status must be success or error"
    )
