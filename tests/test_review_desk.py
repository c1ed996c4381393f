"""A review a person reads in twenty seconds, for the agents people really build (issue 35).

The support desk (bench/support_desk.py): a parent graph ``triage`` -> ``agent`` (a
``create_agent`` graph as a subgraph node: each call is a checkpoint namespace of its own,
handed the whole conversation) -> ``wrap_up``; its tools ask a human before a refund
(``interrupt()``), fail (a ``ToolMessage`` with ``status: "error"``) and write a memory
(``RepoStore``). In a real git repository: ``main`` holds turns 1 and 2 (an order looked up, a
stock check that fails); branch ``feature`` holds turn 3 (a refund: asked, then approved in a
commit of its own), 4 (a memory) and 5 (a stock check that fails again):

    feature~2  turn 3 asks for approval
    feature~1  the approval (the answer alone)
    feature    turns 4 and 5

The review of the branch is the conversation the branch added, once, in the order it
happened: each subgraph call under the turn and node that ran it (``agent (turn 3)``), never
the conversation it was handed nor a task uuid; the question before its answer, under the
tool call that asked; the tool error marked; each change under the turn and node that made
it; a verdict line first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bench.support_desk import approve, build_support_desk, config, user_turn
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from helpers import cli
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from test_git import commit_all, git, init_repo

QUESTION = "Approve a refund of $18.50 for A-1001?"
ANSWER = '{"approved":true}'
VERDICT = (
    "3 turns · 1 approval (resumed with approved=true) · 1 tool error · "
    + "1 memory change · 0 forks · 0 rewrites"
)
TEAPOT = "Is the red teapot in stock?"  # turn 5: the stock check fails on the branch too


@dataclass
class Desk:
    repo: Path
    main: list[BaseMessage]  # the conversation on main
    feature: list[BaseMessage]  # on the branch
    reviews: dict[tuple[str, ...], str] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.repo / ".langgraph"

    def new(self) -> list[BaseMessage]:
        """The messages the branch added."""
        old = {m.id for m in self.main}
        return [m for m in self.feature if m.id not in old]


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Desk:
    repo = init_repo(tmp_path_factory.mktemp("desk") / "repo")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def graph() -> Any:
        return build_support_desk(RepoSaver(root, durable=False), RepoStore(root))

    user_turn(graph(), 1)
    user_turn(graph(), 2)
    commit_all(repo, "turns 1 and 2")
    main = graph().get_state(config()).values["messages"]
    git(repo, "checkout", "-q", "-b", "feature")
    user_turn(graph(), 3)
    commit_all(repo, "turn 3 asks for approval")
    approve(graph())
    commit_all(repo, "approved")
    user_turn(graph(), 4)
    user_turn(graph(), 5, text=TEAPOT)
    commit_all(repo, "turns 4 and 5")
    return Desk(repo, main, graph().get_state(config()).values["messages"])


def review(desk: Desk, rng: str, *more: str) -> str:
    """``review RANGE`` of the desk's repository (each once: the repository does not change)."""
    key = (rng, *more)
    if key not in desk.reviews:
        proc = cli(desk.root, "review", rng, *more, cwd=desk.repo)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        desk.reviews[key] = proc.stdout
    return desk.reviews[key]


def said(message: BaseMessage) -> Iterator[str]:
    """What a review says of a message: its text, each tool call as ``name(args)``."""
    if isinstance(message.content, str) and message.content:
        yield message.content
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            yield f"{call['name']}({json.dumps(call['args'], sort_keys=True, separators=(',', ':'))})"


def shown(message: BaseMessage) -> str:
    """The text of a message's line in the review: its text, or its tool calls."""
    calls = [text for text in said(message) if text != message.content]
    return f"→ calls {', '.join(calls)}" if calls else str(message.content)


def event_texts(out: str) -> list[str]:
    """The text of each event line of a review (terminal ``label: text``, Markdown
    ``**label**: `text```), as it is said after its label."""
    texts = []
    for line in out.splitlines():
        m = re.match(r"^\s*(?:\d+\.|-) \*\*.+?\*\*: `+ ?(.*?) ?`+$", line) or re.match(
            r"^ {6,}[^:]+?: (.*)$", line
        )
        if m:
            texts.append(m.group(1))
    return texts


FORMATS = [pytest.param((), id="terminal"), pytest.param(("--markdown",), id="markdown")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_text_from_main_appears_in_the_review_of_the_branch(desk: Desk, fmt: tuple[str, ...]) -> None:
    """Each subgraph call is handed the whole conversation; the review shows only what the
    call added: nothing main holds (and the branch did not say again) is in it."""
    out = review(desk, "main..feature", *fmt)
    again = {text for m in desk.new() for text in said(m)}
    old = {text for m in desk.main for text in said(m)} - again
    assert old and not [text for text in old if text in out], out


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_new_message_the_question_and_the_answer_appear_once_question_first(
    desk: Desk, fmt: tuple[str, ...]
) -> None:
    """Each message the branch added exactly once (a subgraph's answer is not shown again
    where its parent takes it); the approval's question and answer once each, after the tool
    call that asked and before the tool's result."""
    out = review(desk, "main..feature", *fmt)
    texts = [shown(m) for m in desk.new()]
    lines = event_texts(out)
    wrong = {t: lines.count(t) for t in texts if lines.count(t) != texts.count(t)}
    assert len(texts) == 15 and not wrong, out
    assert out.count(QUESTION) == 1 and out.count(ANSWER) == 1, out
    asked = out.index('issue_refund({"amount":18.5,"order_id":"A-1001"})')
    result = out.index("Refund of $18.50 for A-1001 issued.")
    assert asked < out.index(QUESTION) < out.index(ANSWER) < result, out


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_tool_error_is_marked_where_grep_and_a_screen_reader_find_it(
    desk: Desk, fmt: tuple[str, ...]
) -> None:
    out = review(desk, "main..feature", *fmt)
    (line,) = [line for line in out.splitlines() if "✗ error" in line]
    assert "check_stock" in line and "Warehouse API timed out while checking 'red teapot'." in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_verdict_line_comes_first(desk: Desk, fmt: tuple[str, ...]) -> None:
    """Turns, approvals with their answer, tool errors, memories, forks, rewrites: the first
    line of the terminal's review, the first paragraph of the Markdown after its title."""
    out = review(desk, "main..feature", *fmt)
    lines = [line for line in out.splitlines() if line and not line.startswith("#")]
    first = re.sub(r"`|\*\*", "", lines[0])
    assert first == VERDICT, out


@pytest.mark.parametrize("fmt", FORMATS)
def test_at_most_40_lines_per_turn(desk: Desk, fmt: tuple[str, ...]) -> None:
    out = review(desk, "main..feature", *fmt)
    start = r"^\d+\. " if fmt else r"^    turn \d+"
    turns = re.split(start, out, flags=re.M)[1:]
    assert len(turns) == 3 and all(len(t.splitlines()) <= 40 for t in turns), out


def test_each_subgraph_call_is_a_section_of_its_turn_named_by_node_and_turn(desk: Desk) -> None:
    """``agent (turn 3)`` under turn 3, in the order things happened; no task uuid anywhere
    (the namespaces' ``agent:<task uuid>``)."""
    out = review(desk, "main..feature")
    calls = [line.strip() for line in out.splitlines() if line.strip().startswith("agent (")]
    assert calls == ["agent (turn 3)", "agent (turn 4)", "agent (turn 5)"], out
    turns = re.split(r"^    turn \d+", out, flags=re.M)[1:]
    assert all(f"agent (turn {n})" in turn for n, turn in zip((3, 4, 5), turns, strict=True))
    uuids = [p.name.split("%3a")[-1] for p in (desk.root / "threads" / "desk-1" / "ns").iterdir()]
    markdown = review(desk, "main..feature", "--markdown")
    assert len(uuids) == 5 and not [u for u in uuids if u in out or u in markdown]


def test_the_approval_alone_shows_the_answer(desk: Desk) -> None:
    """The commit that approves holds only the answer (the resume written where the thread
    waited, and what ran after it): its review says what was asked and what was answered,
    once each, and counts the approval."""
    for fmt in ((), ("--markdown",)):
        out = review(desk, "feature~2..feature~1", *fmt)
        assert out.count(QUESTION) == 1 and out.count(ANSWER) == 1, out
        assert out.index(QUESTION) < out.index(ANSWER) < out.index("Refund of $18.50 for A-1001 issued.")
        assert "0 turns · 1 approval (resumed with " in out


def test_a_thread_waiting_for_a_human_says_what_it_waits_for(desk: Desk) -> None:
    """Turn 3 before the approval: the verdict counts it, the line right under it says the
    question, and the next section shows the question under the call and tool that ask it,
    once (not again under the parent's task that runs the call)."""
    out = review(desk, "main..feature~2")
    lines = out.splitlines()
    assert lines[0].endswith("· 1 waiting")
    assert f"waiting: {QUESTION} (issue_refund in agent (turn 3))" in lines[:5], out
    nxt = out[out.index("next, when the thread continues") :]
    assert "agent (turn 3) continues from" in nxt and nxt.count(QUESTION) == 1, out
    assert nxt.index("agent (turn 3)") < nxt.index("calls issue_refund") < nxt.index(QUESTION)


def test_changes_show_under_the_turn_and_the_node_or_tool_that_made_them(desk: Desk) -> None:
    """``triage`` setting ``category`` in each turn, old -> new; the memory the ``remember``
    tool wrote, in turn 4 right after the tool's result (its ``updated_at`` falls in the tool's
    step), and not again in the list of store items."""
    out = review(desk, "main..feature")
    turns = re.split(r"^    turn \d+", out, flags=re.M)[1:]
    assert "triage set category: stock → refund" in turns[0]
    assert "triage set category: refund → account" in turns[1]
    tool = turns[1].index("tool remember: Remembered: prefers email updates")
    memory = turns[1].index(
        "memory customers.ada preferences (added by remember): /value/fact: null → prefers"
    )
    assert tool < memory and "store item" not in out, out
    data = json.loads(review(desk, "main..feature", "--json"))
    (item,) = data["items"]
    assert item["shown_in"]["thread_id"] == "desk-1" and item["shown_in"]["checkpoint_ns"].startswith(
        "agent:"
    )


def test_json_keeps_its_keys_and_adds_the_verdict_and_where_each_event_is(desk: Desk) -> None:
    """``--json`` for scripts: every key it had (issue 34), the verdict beside them, and each
    event with its namespace, the node that wrote it and its depth in the calls."""
    data = json.loads(review(desk, "main..feature", "--json"))
    assert {"base", "head", "range", "root", "threads", "items", "other_files", "flags", "files"} < set(data)
    assert data["verdict"]["line"] == VERDICT and data["verdict"]["approvals"] == [{"approved": True}]
    (top,) = [n for n in data["threads"][0]["namespaces"] if n["checkpoint_ns"] == ""]
    events = top["lines"][0]["events"]
    calls = [e for e in events if e["kind"] == "call"]
    assert [e["text"] for e in calls] == ["agent (turn 3)", "agent (turn 4)", "agent (turn 5)"]
    assert {e["node"] for e in events if e["kind"] == "channel"} == {"triage"}
    assert all(
        e.get("depth", 0) >= 1 for e in events if e.get("ns", "").startswith("agent:") and e["kind"] != "call"
    )
    held = [n for n in data["threads"][0]["namespaces"] if n["checkpoint_ns"].startswith("agent:")]
    assert len(held) == 3 and all(
        line["call"].startswith("agent (turn ") for n in held for line in n["lines"]
    )


def test_a_hand_edit_shows_the_old_text_and_the_new(desk: Desk, tmp_path: Path) -> None:
    """``edit`` (``update_state``) replacing the last answer: the review of the edit shows
    the text before and after, both in sight when they are long, and counts the edit."""
    repo = tmp_path / "repo"
    git(desk.repo, "worktree", "add", "-q", "-b", "fix", str(repo), "feature")
    root = repo / ".langgraph"
    old = "Sorry, I could not check the red teapot right now: the warehouse is not answering."
    new = (
        "The red teapot is out of stock until Friday; "
        + "we will write to you by email when it is back. " * 3
    )
    form = cli(root, "edit", "desk-1", "--show", cwd=repo).stdout.replace(old, new.strip())
    (tmp_path / "form.json").write_text(form, encoding="utf-8")
    assert cli(root, "edit", "desk-1", "--file", str(tmp_path / "form.json"), cwd=repo).returncode == 0
    commit_all(repo, "a hand fix")
    out = cli(root, "review", "feature..fix", cwd=repo).stdout
    (line,) = [line for line in out.splitlines() if "ai (edited)" in line]
    assert old[:40] in line and "⟶ The red teapot is out of stock until Friday" in line, out
    assert out.splitlines()[0].startswith("0 turns · 0 approvals · 0 tool errors · 1 hand edit")


# ----------------------------------------------------------------------------
# the same agent as the graph itself (no subgraph), and render's branches
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The desk's agent as the graph itself (``create_agent``, no parent): main, turn 1;
    branch ``feature``, the refund asked (``feature~1``) then approved (``feature``)."""
    from bench.support_desk import TOOLS, DeskModel
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command

    repo = init_repo(tmp_path_factory.mktemp("flat") / "repo")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def graph() -> Any:
        return create_agent(DeskModel(), list(TOOLS), checkpointer=RepoSaver(root, durable=False))

    graph().invoke({"messages": [HumanMessage("Where is my order A-1001?", id="user-1")]}, config())
    commit_all(repo, "turn 1")
    git(repo, "checkout", "-q", "-b", "feature")
    refund = HumanMessage("Please refund order A-1001, it arrived broken: $18.50.", id="user-2")
    graph().invoke({"messages": [refund]}, config())
    commit_all(repo, "turn 2 asks")
    graph().invoke(Command(resume={"approved": True}), config())
    commit_all(repo, "approved")
    return repo


@pytest.mark.parametrize("rng", ["main..feature", "feature~1..feature"])
def test_the_answer_given_to_the_graph_and_taken_by_its_task_is_shown_once(flat: Path, rng: str) -> None:
    """``Command(resume=...)`` is saved twice: for the thread (the value) and by the task that
    took it (a list of the values its ``interrupt()`` calls took, ``[{…}]``). One answer."""
    proc = cli(flat / ".langgraph", "review", rng, cwd=flat)
    out = proc.stdout
    assert out.count(QUESTION) == 1 and out.count(ANSWER) == 1 and "[{" not in out, out
    assert out.index(QUESTION) < out.index(ANSWER) < out.index("Refund of $18.50 for A-1001 issued.")
    assert out.startswith(("1 turn · 1 approval (resumed with approved=true)", "0 turns · 1 approval"))


def test_render_nests_each_branchs_subgraph_calls_under_the_turn_that_ran_them(tmp_path: Path) -> None:
    """Two branches continue turn 2 and both are merged: render's heads to settle shows each
    branch's agent call as a section of its own (``agent (turn 3)``), its messages under it."""
    repo = init_repo(tmp_path / "repo")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def graph() -> Any:
        return build_support_desk(RepoSaver(root, durable=False), RepoStore(root))

    user_turn(graph(), 1)
    commit_all(repo, "turn 1")
    for branch, n in (("left", 2), ("right", 3)):
        git(repo, "checkout", "-q", "-b", branch, "main")
        user_turn(graph(), n, text="Where is my order A-1002?" if n == 3 else None)
        commit_all(repo, branch)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-edit", "left", "right")
    out = cli(root, "render", "desk-1", cwd=repo).stdout
    heads = out[out.index("## Heads to settle") : out.index("## State")]
    calls = [line for line in heads.splitlines() if line.strip().startswith("- **`agent (turn 2)`**")]
    assert len(calls) == 2, heads
    assert "    - **ai**: `→ calls check_stock" in heads and "    - **ai**: `→ calls lookup_order" in heads
    assert "Where is my order A-1001?" not in heads  # the conversation a call was handed


def test_a_memory_written_between_runs_stays_in_the_list_of_store_items(desk: Desk, tmp_path: Path) -> None:
    """A script's write to the store before a turn runs is no step's: it is listed after the
    turns, not put in the turn that follows it. The run's own metadata (on each of its 10
    checkpoints, the subgraph call's too) is said once, in its turn after the user's message."""
    repo = tmp_path / "repo"
    git(desk.repo, "worktree", "add", "-q", "-b", "script", str(repo), "feature")
    root = repo / ".langgraph"
    RepoStore(root).put(("customers", "ada"), "tier", {"level": "gold"})
    graph = build_support_desk(RepoSaver(root, durable=False), RepoStore(root))
    run = {**config(), "metadata": {"channel": "web"}}  # shown on each checkpoint, the input's too
    graph.invoke({"messages": [HumanMessage("Where is my order A-1006?", id="user-6")]}, run)
    commit_all(repo, "a script's memory, then a turn")
    out = cli(root, "review", "feature..script", cwd=repo).stdout
    turn = out[out.index("    turn 6") : out.index("store item")]
    assert "memory" not in turn and "store item customers.ada tier (added)" in out, out
    assert out.count('metadata: {"channel":"web"}') == 1 and turn.index("user: ") < turn.index(
        "metadata: "
    ), out


def test_a_failed_task_is_marked_as_a_failed_tool_is_and_counted(tmp_path: Path) -> None:
    """A node that raised (its ``__error__`` write): marked in its turn and in what runs next,
    counted in the verdict."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        order: str

    def charge(state: State) -> State:
        raise ValueError(f"the payment service refused {state['order']}")

    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    builder = StateGraph(State)
    builder.add_node("charge", charge)
    builder.add_edge(START, "charge")
    builder.add_edge("charge", END)
    graph = builder.compile(checkpointer=RepoSaver(repo / ".langgraph", durable=False))
    with pytest.raises(ValueError):
        graph.invoke({"order": "A-1001"}, {"configurable": {"thread_id": "pay-1"}})
    commit_all(repo, "a charge that failed")
    for fmt in ((), ("--markdown",)):
        out = cli(repo / ".langgraph", "review", "HEAD~1..HEAD", *fmt, cwd=repo).stdout
        marked = [line for line in out.splitlines() if "✗ error" in line]
        assert len(marked) == 2 and all("charge" in line for line in marked), out
        assert (
            "the payment service refused A-1001" in marked[0]
            and "1 failed task" in out.splitlines()[0 if not fmt else 2]
        )
