"""``edit`` on a thread that waits (issue 35, item 8), and the one failure marker (item 3).

The support desk of bench/support_desk.py waits for a person to approve a refund: its
``create_agent`` subgraph's ``issue_refund`` tool called ``interrupt()``, and the call is a
``Send`` packet in the subgraph's checkpoint. An edit of that state used to drop the interrupt
silently and leave the packet as it was: the AI message said ``issue_refund(9.25)`` and the
refund issued after the approval was $18.50. ``edit`` now refuses such a thread, naming what
waits; ``--force`` writes the edit as ``update_state`` does, and every test of it compares the
states, next tasks, interrupts and scheduled calls, and what the graph then does, with
``update_state`` of the same edit on ``InMemorySaver`` (LangGraph's reference).

Every view marks a tool result that failed (``status: "error"``, turn 2's ``check_stock``)
and a task that failed (an ``__error__`` write) with ``ERROR_MARK`` (core/format/messages.py), words
``grep`` and a screen reader both find.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import TOOLS, ToolCallingFakeModel, user_message
from bench.support_desk import THREAD, approve, build_support_desk, config, user_turn
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Send

from graphs import ask_graph, cfg, chat_graph, fan_graph
from helpers import checkpoint_files, cli, file_bytes, one_line_error
from langgraph_checkpoint_repo import RepoSaver, ThreadWaitsError
from langgraph_checkpoint_repo.core.format.messages import ERROR_MARK
from langgraph_checkpoint_repo.edits import packet_calls

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
# what both savers are compared on
# ----------------------------------------------------------------------------
def message(m: Any) -> Any:
    """A message without its id (ToolNode gives a tool result a random one)."""
    calls = [(c["name"], c["args"], c["id"]) for c in getattr(m, "tool_calls", None) or []]
    return (m.type, m.content, calls, getattr(m, "status", None))


def snapshot(state: Any, saver: Any) -> dict[str, Any]:
    """What get_state says (values, next tasks, interrupts, each task's subgraph state) and
    the tool calls the checkpoint's Send packets make a node run."""
    tup = saver.get_tuple(state.config)  # None: a subgraph call that has not started
    sends = tup.checkpoint["channel_values"].get("__pregel_tasks") or [] if tup else []
    values = {k: [message(m) for m in v] if k == "messages" else v for k, v in state.values.items()}
    return {
        "values": values,
        "next": state.next,
        "interrupts": [i.value for i in state.interrupts],
        "scheduled": [(p.node, packet_calls(p.arg)) for p in sends if isinstance(p, Send)],
        "tasks": [
            (t.name, [i.value for i in t.interrupts], snapshot(t.state, saver) if t.state else None)
            for t in state.tasks
        ],
    }


def state_of(graph: Any, saver: Any, thread: str) -> dict[str, Any]:
    return snapshot(graph.get_state(cfg(thread), subgraphs=True), saver)


def said(out: dict[str, Any]) -> list[Any]:
    """What a run returned: the interrupts it stopped at, the messages."""
    return [[i.value for i in out.get("__interrupt__", [])], [message(m) for m in out["messages"]]]


def reference_desk(change: Callable[[Any, dict[str, Any]], tuple[Any, dict[str, Any]]]) -> tuple[Any, Any]:
    """The support desk on InMemorySaver with the same edit made through update_state."""
    saver = InMemorySaver()
    graph = desk(saver)
    where, values = change(graph, graph.get_state(config(), subgraphs=True))
    graph.update_state(where, values)
    return graph, saver


def refund_edit(amount: float) -> Callable[[Any, Any], tuple[Any, dict[str, Any]]]:
    """update_state of the agent call's AI message with the refund's amount changed."""

    def change(graph: Any, state: Any) -> tuple[Any, dict[str, Any]]:
        sub = state.tasks[0].state
        (ai,) = [m for m in sub.values["messages"] if m.id == "ai-call-3"]
        call = {**ai.tool_calls[0], "args": {**ai.tool_calls[0]["args"], "amount": amount}}
        return sub.config, {"messages": [ai.model_copy(update={"tool_calls": [call]})]}

    return change


# ----------------------------------------------------------------------------
# refused, naming what waits
# ----------------------------------------------------------------------------
def test_edit_refuses_the_desk_waiting_for_approval_naming_the_interrupt_and_the_call(root: Path) -> None:
    before = file_bytes(root)
    path = edited(root, THREAD, agent_ns(root), refund_of(9.25))
    line = one_line_error(
        cli(root, "edit", THREAD, "--ns", agent_ns(root), "--file", path),
        5,
        "interrupt at tools",
        "Approve a refund of $18.50 for A-1001?",
        "dropped: tools runs again from its first line and asks again",
        "scheduled tool call issue_refund({amount: 18.5, order_id: A-1001}) [id call-3]",
        "--force",
    )
    assert agent_ns(root) in line
    assert file_bytes(root) == before  # nothing written


def test_edit_of_the_parent_is_refused_before_the_editor_opens(root: Path, tmp_path: Path) -> None:
    """The parent's edit starts the agent call over: what waits below it is named, and the
    person is not given an editor to type into for nothing."""
    opened = tmp_path / "opened"
    editor = tmp_path / "editor.py"
    editor.write_text(f"open({str(opened)!r}, 'w').close()\n", encoding="utf-8")
    before = file_bytes(root)
    proc = cli(root, "edit", THREAD, env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": None})
    one_line_error(proc, 5, "interrupt at tools", "issue_refund", "dropped with the subgraph call")
    assert not opened.exists() and file_bytes(root) == before


def test_edit_refuses_an_agent_stopped_before_its_tools_naming_the_scheduled_call(root: Path) -> None:
    path = edited(root, FLAT, "", lambda d: call_of(d, "ai-call-1")["args"].update(order_id="A-9999"))
    one_line_error(
        cli(root, "edit", FLAT, "--file", path),
        5,
        "scheduled tool call lookup_order({order_id: A-1001}) [id call-1] (root namespace)",
        "runs as the edited AI message makes it",
    )


def test_edit_refuses_a_step_that_failed_half_way_naming_the_saved_writes(tmp_path: Path) -> None:
    """A fan-out where two tasks finished and one raised: their saved writes would be dropped
    (and the two tasks run again)."""
    root = tmp_path / "root"
    with pytest.raises(RuntimeError, match="boom on bad"):
        fan_graph(RepoSaver(root), fail=True).invoke({"items": ["a", "b", "bad"]}, cfg("fan"))
    path = edited(root, "fan", "", lambda d: d["values"].update(items=["a"]))
    line = one_line_error(cli(root, "edit", "fan", "--file", path), 5, "dropped: work runs again")
    assert line.count("saved writes of work [") == 2 and "results" in line


def test_a_thread_that_began_to_wait_while_the_editor_was_open_is_refused_and_the_form_kept(
    tmp_path: Path,
) -> None:
    """Stopped before ``ask`` (nothing waits: the edit may go on), the graph is resumed while
    the editor is open and ``ask`` raises its interrupt on the same checkpoint: the edit is
    refused once the editor closes, and what was typed is kept for --file."""
    root = tmp_path / "root"
    ask_graph(RepoSaver(root)).invoke({"log": []}, cfg("ask"), interrupt_before=["ask"])
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys\n"
        f"sys.path[:0] = [{str(Path(__file__).parent)!r}]\n"
        "from graphs import ask_graph, cfg\n"
        "from langgraph_checkpoint_repo import RepoSaver\n"
        f"ask_graph(RepoSaver({str(root)!r})).invoke(None, cfg('ask'))  # meanwhile: it asks\n"
        "data = json.load(open(sys.argv[1]))\n"
        "data['values']['question'] = 'Your name, please?'\n"
        "json.dump(data, open(sys.argv[1], 'w'))\n",
        encoding="utf-8",
    )
    proc = cli(root, "edit", "ask", env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": None})
    line = one_line_error(proc, 5, "interrupt at ask", "What is your name?", "can be given with --file")
    kept = Path(line.split("(kept in ")[1].split(")")[0])
    try:
        assert json.loads(kept.read_text(encoding="utf-8"))["values"]["question"] == "Your name, please?"
    finally:
        kept.unlink()  # the form the error kept for --file, in the system's temp folder


def test_python_edit_state_refuses_the_waiting_head_unless_force(root: Path) -> None:
    saver = RepoSaver(root)
    head = build_support_desk(saver).get_state(config(), subgraphs=True).tasks[0].state
    with pytest.raises(ThreadWaitsError, match="1 interrupt waiting for an answer") as info:
        saver.edit_state(head.config, {"messages": head.values["messages"]})
    assert "issue_refund (id call-3)" in str(info.value)
    assert saver.edit_state(head.config, {"messages": head.values["messages"]}, force=True)


# ----------------------------------------------------------------------------
# the form shows what waits; nothing of it is read back
# ----------------------------------------------------------------------------
def test_the_form_lists_what_waits_and_the_parser_ignores_it(root: Path) -> None:
    data = form(root, THREAD, agent_ns(root))
    assert "--force" in data["note"]
    assert [w.split(" (namespace")[0] for w in data["waiting"]] == [
        "interrupt at tools: {order: A-1001, question: Approve a refund of $18.50 for A-1001?}",
        "scheduled tool call issue_refund({amount: 18.5, order_id: A-1001}) [id call-3]",
    ]
    assert list(data)[-1] == "values"  # the section a person edits is last, as before
    before = file_bytes(root)
    data["waiting"] = ["nothing waits"]
    path = root.parent / "form.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    proc = cli(root, "edit", THREAD, "--ns", agent_ns(root), "--file", path, "--force")
    assert proc.returncode == 0 and "nothing changed: nothing written" in proc.stderr
    assert file_bytes(root) == before
    approve(build_support_desk(RepoSaver(root)))  # answered: nothing waits any more
    done = form(root, THREAD)
    assert "waiting" not in done and "--force" not in done["note"]


# ----------------------------------------------------------------------------
# --force: as update_state on InMemorySaver
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("resume", ["answer", "ask again"])
def test_forced_edit_of_the_waiting_refund_matches_update_state(root: Path, resume: str) -> None:
    """The refund's amount edited while it waits: the call that runs is the edited one, the
    interrupt is dropped and asked again; resumed with an answer, that answer is given to the
    question asked again (LangGraph's rule), resumed without one, the question is asked."""
    path = edited(root, THREAD, agent_ns(root), refund_of(9.25))
    proc = cli(root, "edit", THREAD, "--ns", agent_ns(root), "--file", path, "--force")
    assert proc.returncode == 0, proc.stderr
    assert cli(root, "validate").returncode == 0
    saver = RepoSaver(root)
    graph = build_support_desk(saver)
    ref_graph, ref_saver = reference_desk(refund_edit(9.25))
    ours, theirs = state_of(graph, saver, THREAD), state_of(ref_graph, ref_saver, THREAD)
    assert ours == theirs
    (agent,) = ours["tasks"]
    call = {"name": "issue_refund", "args": {"order_id": "A-1001", "amount": 9.25}, "id": "call-3"}
    assert agent[2]["scheduled"] == [("tools", [{**call, "type": "tool_call"}])]
    assert agent[2]["tasks"] == [("tools", [], None)]  # the subgraph's interrupt: dropped
    assert ours["interrupts"]  # the parent lists the old question until it is resumed, as LangGraph's

    def go(g: Any) -> Any:
        return approve(g) if resume == "answer" else g.invoke(None, config())

    after, expected = said(go(graph)), said(go(ref_graph))
    assert after == expected
    if resume == "answer":
        assert ("tool", "Refund of $9.25 for A-1001 issued.", [], "success") in after[1]
    else:
        assert after[0] == [{"question": "Approve a refund of $9.25 for A-1001?", "order": "A-1001"}]
        assert said(approve(graph)) == said(approve(ref_graph))


def test_forced_edit_of_the_parent_while_the_agent_waits_matches_update_state(root: Path) -> None:
    """The parent's channel edited: the agent's call starts over (its task id is the new
    checkpoint's), nothing is lost from what runs next, and the run goes on as LangGraph's."""
    path = edited(root, THREAD, "", lambda d: d["values"].update(category="billing"))
    proc = cli(root, "edit", THREAD, "--file", path, "--force")
    assert proc.returncode == 0, proc.stderr
    saver = RepoSaver(root)
    graph = build_support_desk(saver)
    ref_graph, ref_saver = reference_desk(lambda g, s: (config(), {"category": "billing"}))
    ours = state_of(graph, saver, THREAD)
    assert ours == state_of(ref_graph, ref_saver, THREAD)
    assert ours["next"] == ("agent",) and ours["interrupts"] == []
    # the agent runs again: it asks again (the answer given to the new question)
    after = said(approve(graph))
    assert after == said(approve(ref_graph))
    assert ("tool", "Refund of $18.50 for A-1001 issued.", [], "success") in after[1]


CHANGES: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "changed": lambda calls: [{**calls[0], "args": {"order_id": "A-9999"}}],
    "removed": lambda calls: [],
    "added": lambda calls: [
        *calls,
        {"name": "lookup_order", "args": {"order_id": "A-7777"}, "id": "call-extra"},
    ],
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_forced_edit_of_scheduled_calls_matches_update_state(root: Path, change: str) -> None:
    """create_agent stopped before its tools: a call the edit changed runs changed, one it
    removed does not run, one it added runs too, as under update_state."""

    def edit_form(data: dict[str, Any]) -> None:
        (ai,) = [m for m in data["values"]["messages"] if m["id"] == "ai-call-1"]
        ai["tool_calls"] = CHANGES[change](ai["tool_calls"])

    proc = cli(root, "edit", FLAT, "--file", edited(root, FLAT, "", edit_form), "--force")
    assert proc.returncode == 0, proc.stderr
    assert cli(root, "validate").returncode == 0
    saver, ref_saver = RepoSaver(root), InMemorySaver()
    graph, ref_graph = flat_graph(saver), flat(ref_saver)
    ai = ref_graph.get_state(cfg(FLAT)).values["messages"][-1]
    calls = [
        {**c, "type": "tool_call"} for c in CHANGES[change](list(ai.tool_calls))
    ]  # as LangChain makes them
    ref_graph.update_state(cfg(FLAT), {"messages": [ai.model_copy(update={"tool_calls": calls})]})
    ours = state_of(graph, saver, FLAT)
    assert ours == state_of(ref_graph, ref_saver, FLAT)
    asked = [c["args"]["order_id"] for _, calls in ours["scheduled"] for c in calls]
    assert asked == {"changed": ["A-9999"], "removed": [], "added": ["A-1001", "A-7777"]}[change]
    assert said(graph.invoke(None, cfg(FLAT))) == said(ref_graph.invoke(None, cfg(FLAT)))


def test_a_merge_of_a_head_stopped_before_a_node_still_runs_it(tmp_path: Path) -> None:
    """``heads --merge`` writes a continuation by hand too: it named only ``messages`` as
    updated, so LangGraph's loop never looked at the node the kept head stopped before (the
    same loss as an edit's), though get_state listed it as next."""
    root = tmp_path / "root"
    saver = RepoSaver(root)
    graph = chat_graph(saver)
    graph.invoke({"messages": [HumanMessage("one")]}, cfg("t"))
    graph.invoke({"messages": [HumanMessage("two")]}, cfg("t"), interrupt_before=["reply"])
    first = next(t for t in saver.list(cfg("t")) if t.metadata["step"] == 1)
    other = graph.update_state(first.config, {"messages": [HumanMessage("fork text")]})["configurable"]
    (line,) = {h.checkpoint_id for h in saver.heads(cfg("t"))} - {other["checkpoint_id"]}
    assert cli(root, "heads", "t", "--merge", line, other["checkpoint_id"]).returncode == 0
    merged = chat_graph(RepoSaver(root))
    assert merged.get_state(cfg("t")).next == ("reply",)
    said = [m.content for m in merged.invoke(None, cfg("t"))["messages"]]
    assert said == ["one", "echo: one", "two", "fork text", "echo: fork text"]


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
