"""What tripped a new user reviewing their own agent's branch (issue 35, a user's first hour).

A travel agent as a LangGraph user writes one: ``create_agent`` with a fake chat model and
three tools, ``get_weather`` (raises for a city it does not know: the run stops, a failed
task), ``book_flight`` (asks for approval with ``interrupt()``) and ``remember`` (a memory in
``RepoStore``), compiled with ``RepoSaver``, in a real git repository. ``main`` holds turn 1;
branch ``trip``:

    trip~3  turn 2 asks to book a flight (waits for the approval)
    trip~2  a hand edit while it waits (``edit --force``: the price 120 -> 99)
    trip~1  the approval, then turn 3, whose tool raised
    trip    turn 4 (a memory)
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from bench.agent_graphs import FakeToolModel
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from helpers import cli
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from test_git import commit_all, git, init_repo

THREAD = "trip-1"
CONFIG: RunnableConfig = {"configurable": {"thread_id": THREAD}}


@tool
def get_weather(city: str) -> str:
    """The weather of a city; the service does not know every city."""
    if city == "Atlantis":
        raise ValueError(f"weather service: unknown city {city!r}")
    return f"Sunny, 21 degrees in {city}."


@tool
def book_flight(city: str, price: float) -> str:
    """Book a flight once the traveller approved its price."""
    answer = interrupt({"question": f"Book the flight to {city} for {price:.0f} EUR?"})
    return f"Booked: flight to {city}, {price:.0f} EUR." if answer == "yes" else "Not booked."


@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the traveller."""
    assert runtime.store is not None
    runtime.store.put(("travellers", "ada"), "prefs", {"fact": fact})
    return f"Noted: {fact}"


class TravelModel(FakeToolModel):
    """Calls the tool the user's words ask for, then answers from its result."""

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        n = sum(isinstance(m, HumanMessage) for m in messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(content=f"Here you go: {last.content}", id=f"ai-{n}-answer")
        text = str(last.content)
        if "weather" in text:
            name, args = "get_weather", {"city": text.rsplit(" ", 1)[-1].strip("?")}
        elif "book" in text:
            name, args = "book_flight", {"city": "Paris", "price": 120}
        else:
            name, args = "remember", {"fact": text}
        call = {"name": name, "args": args, "id": f"call-{n}"}
        return AIMessage(content="", tool_calls=[call], id=f"ai-{n}-call")


@dataclass
class Trip:
    repo: Path

    @property
    def root(self) -> Path:
        return self.repo / ".langgraph"

    def run(self, *args: str, code: int = 0) -> str:
        proc = cli(self.root, *args, cwd=self.repo)
        assert proc.returncode == code, proc.stdout + proc.stderr
        return proc.stdout


def _agent(root: Path) -> Any:
    return create_agent(
        TravelModel(),
        [get_weather, book_flight, remember],
        checkpointer=RepoSaver(root, durable=False),
        store=RepoStore(root),
    )


def _say(root: Path, text: str) -> None:
    _agent(root).invoke({"messages": [("user", text)]}, CONFIG)


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> Trip:
    repo = init_repo(tmp_path_factory.mktemp("newuser") / "app")
    t = Trip(repo)
    _say(t.root, "What is the weather in Paris?")
    commit_all(repo, "turn 1")
    git(repo, "checkout", "-q", "-b", "trip")
    _say(t.root, "Please book a flight to Paris")
    commit_all(repo, "turn 2 asks to book")
    form = json.loads(t.run("edit", THREAD, "--show"))
    for message in form["values"]["messages"]:
        for call in message.get("tool_calls", []):
            if call["name"] == "book_flight":
                call["args"]["price"] = 99
    edited = repo.parent / "form.json"
    edited.write_text(json.dumps(form), encoding="utf-8")
    t.run("edit", THREAD, "--file", str(edited), "--force")
    commit_all(repo, "hand edit: the price")
    _agent(t.root).invoke(Command(resume="yes"), CONFIG)
    with pytest.raises(ValueError, match="Atlantis"):
        _say(t.root, "What is the weather in Atlantis?")
    commit_all(repo, "approved; turn 3 fails")
    _say(t.root, "Remember I like window seats")
    commit_all(repo, "turn 4 remembers")
    return t


def test_json_verdict_counts_the_hand_edit_the_verdict_line_counts(trip: Trip) -> None:
    """``--json``'s verdict is "its line and each count": the line said ``1 hand edit`` and
    the JSON had no count of it."""
    verdict = json.loads(trip.run("review", "main...trip", "--json"))["verdict"]
    assert "1 hand edit" in verdict["line"] and "1 failed task" in verdict["line"], verdict
    assert verdict["hand_edits"] == 1 and verdict["failed_tasks"] == 1, verdict
    # a range with no edit counts none
    assert json.loads(trip.run("review", "trip~1..trip", "--json"))["verdict"]["hand_edits"] == 0


def _page_turns(page: str) -> list[str]:
    return re.findall(r"<h3>(turn [^<]*)</h3>", page)


@pytest.mark.parametrize(
    ("rng", "turns"),
    [
        ("main...trip", ["turn 2", "turn 3", "turn 4"]),
        ("trip~2..trip~1", ["turn 2 (continued)", "turn 3"]),
    ],
)
def test_html_page_numbers_the_turns_as_the_thread_and_the_terminal_do(
    trip: Trip, tmp_path: Path, rng: str, turns: list[str]
) -> None:
    """The page numbered each line's turns from 1 (``turn 1`` for the branch's first turn,
    the thread's turn 2); the terminal and the comment number them as the thread's."""
    page = tmp_path / "review.html"
    text = trip.run("review", rng, "--html", str(page))
    assert re.findall(r"^ {4}(turn .*)$", text, re.M) == turns, text
    assert _page_turns(page.read_text(encoding="utf-8")) == turns


def test_git_setup_says_to_commit_gitattributes_on_the_default_branch_as_review_flags_it(
    trip: Trip, tmp_path: Path
) -> None:
    """``git-setup`` said "commit .gitattributes"; a user who committed it with the branch's
    turns got a review flagged ``attributes changed`` (exit 1, a red CI job). It now says
    where: on the default branch, on its own; done so, the branch's review is clean."""
    repo = tmp_path / "clone"
    git(trip.repo, "clone", "-q", "-b", "main", str(trip.repo), str(repo))
    for line in ("user.name Test Author", "user.email test@example.invalid", "commit.gpgsign false"):
        git(repo, "config", *line.split(" ", 1))
    git(repo, "checkout", "-q", "trip")
    said = cli(repo / ".langgraph", "git-setup", cwd=repo)
    assert said.returncode == 0, said.stderr
    advice = said.stdout.strip().splitlines()[-1]
    assert "default branch" in advice and "attributes changed" in advice, advice
    # the user's mistake: committed with the branch's work, the review is flagged
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "git-setup on the branch")
    flagged = cli(repo / ".langgraph", "review", "main...trip", cwd=repo)
    assert flagged.returncode == 1 and "attributes changed" in flagged.stdout, flagged.stdout
    # as advised: on main, on its own; the branch's review says nothing of it
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    git(repo, "checkout", "-q", "main")
    assert cli(repo / ".langgraph", "git-setup", cwd=repo).returncode == 0
    commit_all(repo, "git-setup")
    git(repo, "checkout", "-q", "trip")
    clean = cli(repo / ".langgraph", "review", "main...trip", cwd=repo)
    assert clean.returncode == 0 and "none flagged" in clean.stdout, clean.stdout


def test_render_html_numbers_the_turns_of_each_head_to_settle_as_the_threads(
    trip: Trip, tmp_path: Path
) -> None:
    """``render --html``'s heads to settle numbered each branch's turns from 1: run again
    from the end of turn 1, the new branch's turn read ``turn 1`` and the old one's ``turn 1,
    2, 3``; they are the thread's turns 2, and 2 to 4."""
    repo = tmp_path / "app"
    shutil.copytree(trip.repo, repo)
    at_main = max(
        Path(name).stem
        for name in git(
            repo, "ls-tree", "--name-only", "main", f".langgraph/threads/{THREAD}/checkpoints/"
        ).stdout.split()
    )
    forked: RunnableConfig = {"configurable": {"thread_id": THREAD, "checkpoint_id": at_main}}
    _agent(repo / ".langgraph").invoke({"messages": [("user", "What is the weather in Rome?")]}, forked)
    page = tmp_path / "render.html"
    proc = cli(repo / ".langgraph", "render", THREAD, "--html", str(page), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    branches = text[text.index('<section id="branches">') :]
    per_head = [_page_turns(part) for part in branches.split('<h3 id="branch-')[1:]]
    assert per_head == [["turn 2"], ["turn 2", "turn 3", "turn 4"]], per_head
    # the conversation of the line that continues: from the thread's start
    assert _page_turns(text[: text.index('<section id="branches">')]) == ["turn 1", "turn 2"]


def test_validate_counts_one_store_item_in_the_singular(trip: Trip) -> None:
    """The app's one memory: validate said ``1 store items``."""
    proc = cli(trip.root, "validate", cwd=trip.repo)
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"ok: \d+ files, 1 store item, \d+ checkpoints valid\n", proc.stderr), proc.stderr


def test_markdown_and_json_together_are_refused_with_exit_2(tmp_path: Path) -> None:
    """The synopsis gives them as alternatives (``[--markdown | --json]``): both at once printed
    JSON without a word; now a usage error, exit 2, naming both."""
    repo = init_repo(tmp_path / "repo")
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    proc = cli(repo / ".langgraph", "review", "HEAD", "--markdown", "--json", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--markdown and --json" in proc.stderr and not proc.stdout


def test_a_tool_that_raises_inside_a_subgraph_call_is_one_failed_task(tmp_path: Path) -> None:
    """A parent graph runs the agent as a node; the agent's tool raises, so LangGraph records
    the failure for the tool's task and again for the parent's ``agent`` task. The verdict
    said ``2 failed tasks`` for one failure; it counts it once, where it happened."""
    repo = init_repo(tmp_path / "app")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")

    def parent() -> Any:
        agent = create_agent(TravelModel(), [get_weather, book_flight, remember])
        builder = StateGraph(MessagesState)
        builder.add_node("agent", agent)
        builder.add_edge(START, "agent")
        builder.add_edge("agent", END)
        return builder.compile(checkpointer=RepoSaver(root, durable=False), store=RepoStore(root))

    with pytest.raises(ValueError, match="Atlantis"):
        parent().invoke({"messages": [("user", "What is the weather in Atlantis?")]}, CONFIG)
    commit_all(repo, "the tool raised")
    proc = cli(root, "review", "HEAD~1..HEAD", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = proc.stdout.splitlines()[0]
    assert "1 failed task" in verdict and "2 failed tasks" not in verdict, proc.stdout
    assert proc.stdout.count("✗ error") >= 1, proc.stdout


def test_the_driver_says_by_only_for_a_step_that_applied_its_parents_writes(
    trip: Trip, tmp_path: Path
) -> None:
    """The hand edit and the input after the failed turn were labelled ``source update by a
    Send`` and ``source input by a Send``: the writes of the parent's tasks are kept in the
    child's file, but only a ``loop`` step applies them. Now an input or an edit names them as
    its parent's tasks."""
    repo = tmp_path / "app"
    shutil.copytree(trip.repo, repo, symlinks=True)  # git-setup changes the clone's config
    proc = cli(repo / ".langgraph", "git-setup", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = git(repo, "diff", "main...trip").stdout
    heads = [line for line in out.splitlines() if line.startswith("+checkpoint ")]
    assert any(" source update (its parent's tasks: " in line for line in heads), heads
    assert not any(re.search(r" source (update|input|fork) by ", line) for line in heads), heads
    assert any(" source loop by " in line for line in heads), heads


def test_a_node_failing_with_the_same_words_as_an_earlier_subgraph_call_is_its_own_failure(
    tmp_path: Path,
) -> None:
    """The count above merges a call's failure with the task that ran the call, and nothing
    else: a subgraph call failing in one turn and a plain node failing with the same words in
    the next are two failures (a check by text alone counted them as one)."""

    class Mode(TypedDict):
        mode: str

    def boom(state: Mode) -> dict[str, Any]:
        raise ValueError("boom")

    inner = StateGraph(Mode)
    inner.add_node("inner", boom)
    inner.add_edge(START, "inner")
    builder = StateGraph(Mode)
    builder.add_node("sub", inner.compile())
    builder.add_node("plain", boom)
    builder.add_conditional_edges(START, lambda s: s["mode"], ["sub", "plain"])
    repo = init_repo(tmp_path / "app")
    root = repo / ".langgraph"
    (repo / "README.md").write_text("app\n", encoding="utf-8")
    commit_all(repo, "start")
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    for mode in ("sub", "plain"):
        with pytest.raises(ValueError, match="boom"):
            graph.invoke({"mode": mode}, CONFIG)
    commit_all(repo, "two failures")
    proc = cli(root, "review", "HEAD~1..HEAD", "--json", cwd=repo)
    assert json.loads(proc.stdout)["verdict"]["failed_tasks"] == 2, proc.stdout
