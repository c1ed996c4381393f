"""The graphs behind the docs' examples: ``python docs/examples.py --build`` runs them and keeps
what RepoSaver wrote under docs/example-state/ (committed, so every example prints the same).

- ``demo`` (docs/cli.md): ``support-42`` a chat with a tool call (two turns, metadata
  ``customer=ada``); ``refund-7`` waits at an ``interrupt()``; ``onboarding-9`` its ``verify``
  subgraph waits at one; ``report-3`` a pipeline replayed from the middle and edited with
  ``update_state`` (two forks); ``batch-1`` a ``Send`` fan-out in which one of three tasks
  raised; ``payments-2`` a fan-out whose process died (``os._exit``) while a task ran;
  ``account-1`` the application's own pydantic model (``myapp.state.Customer``).
- ``forks`` (docs/forks.md): ``refund-7`` and ``notes-3``, each continued on two git branches
  that were then merged: two heads nobody chose.
- ``secrets`` (docs/secrets.md): thread ``t``, written with ``redact=False``, holding a made-up
  OpenAI key.
- ``review-1``, ``review-2``, ``review-3`` (docs/review.md): a ``create_agent`` agent
  (bench/agent_graphs.py, a fake chat model) after its first turn; the files its second turn
  added on branch ``work``; the files another second turn added on ``main`` meanwhile.
- ``profiles`` (docs/migrating.md): five customer threads of ``myapp.profiles`` (version 1 of
  its state: ``notes``, ``profile.name``), one turn each, for the state migration's example.
- ``desk-1`` ... ``desk-4`` (docs/review.md, the README): the support desk (bench/support_desk.py:
  a parent graph with a ``create_agent`` subgraph, an approval, a failing tool, a memory)
  after turns 1 and 2; the files turn 3 added, up to its question; the approval's; turns 4
  and 5's (the stock check fails again).
"""

from __future__ import annotations

import operator
import os
import shutil
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send, interrupt
from typing_extensions import TypedDict

from langgraph_checkpoint_repo import RepoSaver

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "example-state" / "project"))  # myapp, as the application imports it
sys.path.insert(0, str(HERE.parent))  # bench, for the review's agent

from myapp.state import Address, Color, Customer  # noqa: E402


def build_all(made: Path) -> None:
    demo(made / "demo")
    forks(made / "forks")
    secrets(made / "secrets")
    review(made / "review-1", made / "review-2", made / "review-3")
    desk(made, "desk-1", "desk-2", "desk-3", "desk-4")
    customers(made / "profiles")


# ----------------------------------------------------------------------------
# demo: docs/cli.md
# ----------------------------------------------------------------------------
def agent(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, HumanMessage) and "order" in str(last.content):
        call = {"name": "lookup_order", "args": {"order_id": "A-1009"}, "id": "call-1"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content="Your order A-1009 left the warehouse yesterday.")]}
    return {"messages": [AIMessage(content=f"Hello! You said: {last.content}")]}


def tools(state: MessagesState) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]  # type: ignore[attr-defined]
    return {
        "messages": [ToolMessage(content='{"status": "shipped"}', tool_call_id=call["id"], name=call["name"])]
    }


class Refund(TypedDict, total=False):
    amount: int
    approved: bool
    log: Annotated[list[str], operator.add]


def check(state: Refund) -> dict[str, Any]:
    return {"log": [f"checked refund of {state['amount']} EUR"]}


def approve(state: Refund) -> dict[str, Any]:
    ok = interrupt({"question": f"Approve a refund of {state['amount']} EUR?", "options": ["yes", "no"]})
    return {"approved": ok == "yes", "log": [f"approval: {ok}"]}


class Report(TypedDict):
    steps: Annotated[list[str], operator.add]


class Batch(TypedDict, total=False):
    files: list[str]
    done: Annotated[list[str], operator.add]


class Onboarding(TypedDict):
    log: Annotated[list[str], operator.add]


def request_id(state: Onboarding) -> dict[str, Any]:
    doc = interrupt("Please upload a photo ID")
    return {"log": [f"received {doc}"]}


class Account(TypedDict):
    customer: Customer


#: payments-2: the node charging the card waits until its sibling's writes are saved, then the
#: process dies before its own are (the test test_tasks_flags_a_task_that_may_have_run_... too)
CRASH = """
import operator, os, sys, time
from pathlib import Path
from typing import Annotated
from typing_extensions import TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from langgraph_checkpoint_repo import RepoSaver

root = Path(sys.argv[1])
writes = root / "threads" / "payments-2" / "writes"

class S(TypedDict, total=False):
    jobs: list
    results: Annotated[list, operator.add]

def run(job):
    if job["job"] == "charge card":
        while not (writes.is_dir() and len(os.listdir(writes)) >= 2):
            time.sleep(0.05)  # until the sibling's writes are saved
        os._exit(3)  # the card may be charged; this task's writes are never saved
    return {"results": [f"{job['job']}: ok"]}

b = StateGraph(S)
b.add_node("run", run)
b.add_conditional_edges(START, lambda s: [Send("run", {"job": j}) for j in s["jobs"]], ["run"])
b.add_edge("run", END)
b.compile(checkpointer=RepoSaver(root)).invoke(
    {"jobs": ["send receipt", "charge card"]}, {"configurable": {"thread_id": "payments-2"}}
)
"""


def demo(root: Path) -> None:
    saver = RepoSaver(root)

    # a support chat with a tool call
    b = StateGraph(MessagesState)
    b.add_node("agent", agent)
    b.add_node("tools", tools)
    b.add_edge(START, "agent")
    b.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    b.add_edge("tools", "agent")
    chat = b.compile(checkpointer=saver)
    for text in ("hi there", "where is my order?"):
        config: Any = {"configurable": {"thread_id": "support-42"}, "metadata": {"customer": "ada"}}
        chat.invoke({"messages": [HumanMessage(content=text)]}, config)

    # a refund that waits for a person
    r = StateGraph(Refund)
    r.add_node("check", check)
    r.add_node("approve", approve)
    r.add_edge(START, "check")
    r.add_edge("check", "approve")
    r.add_edge("approve", END)
    r.compile(checkpointer=saver).invoke(
        {"amount": 120, "log": []}, {"configurable": {"thread_id": "refund-7"}}
    )

    # a report pipeline, replayed from the middle and edited: a history with forks
    p = StateGraph(Report)
    for name in ("fetch", "summarise", "publish"):
        p.add_node(name, lambda s, n=name: {"steps": [n]})
    p.add_edge(START, "fetch")
    p.add_edge("fetch", "summarise")
    p.add_edge("summarise", "publish")
    p.add_edge("publish", END)
    pipeline = p.compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": "report-3"}}
    pipeline.invoke({"steps": []}, cfg)
    history = list(pipeline.get_state_history(cfg))
    pipeline.invoke(None, history[2].config)
    pipeline.update_state(history[3].config, {"steps": ["fetch (edited by hand)"]})

    # a batch where one parallel task failed, after the other two finished
    finished = threading.Event()
    count: list[str] = []

    def convert(arg: dict[str, str]) -> dict[str, Any]:
        if arg["file"] == "broken.pdf":
            finished.wait(30)
            raise ValueError("broken.pdf: not a PDF")
        count.append(arg["file"])
        if len(count) == 2:
            finished.set()
        return {"done": [arg["file"]]}

    f = StateGraph(Batch)
    f.add_node("convert", convert)
    f.add_conditional_edges(START, lambda s: [Send("convert", {"file": x}) for x in s["files"]], ["convert"])
    f.add_edge("convert", END)
    try:
        f.compile(checkpointer=saver).invoke(
            {"files": ["a.pdf", "broken.pdf", "c.pdf"]}, {"configurable": {"thread_id": "batch-1"}}
        )
    except ValueError:
        pass

    # onboarding whose "verify" subgraph waits for a document
    inner = StateGraph(Onboarding)
    inner.add_node("screen", lambda s: {"log": ["screened name"]})
    inner.add_node("request_id", request_id)
    inner.add_edge(START, "screen")
    inner.add_edge("screen", "request_id")
    inner.add_edge("request_id", END)
    outer = StateGraph(Onboarding)
    outer.add_node("welcome", lambda s: {"log": ["welcome mail sent"]})
    outer.add_node("verify", inner.compile())
    outer.add_edge(START, "welcome")
    outer.add_edge("welcome", "verify")
    outer.add_edge("verify", END)
    outer.compile(checkpointer=saver).invoke({"log": []}, {"configurable": {"thread_id": "onboarding-9"}})

    # a state with the application's own type: the graph revives it, the command line shows
    # its stored JSON unless --allow names it
    def upgrade(state: Account) -> dict[str, Any]:
        return {"customer": state["customer"].model_copy(update={"tier": "gold"})}

    a = StateGraph(Account)
    a.add_node("upgrade", upgrade)
    a.add_edge(START, "upgrade")
    a.add_edge("upgrade", END)
    ada = Customer(
        name="Ada",
        tier="silver",
        color=Color.RED,
        address=Address(city="Paris", zip="75001"),
        due=timedelta(days=14),
    )
    a.compile(checkpointer=saver).invoke({"customer": ada}, {"configurable": {"thread_id": "account-1"}})

    # a process that dies in the middle of a step
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", CRASH, str(root)], env=env, check=False)
    assert done.returncode == 3, done


# ----------------------------------------------------------------------------
# forks: docs/forks.md, the heads section of docs/cli.md
# ----------------------------------------------------------------------------
def echo(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"echo: {state['messages'][-1].content}")]}


def git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def forks(root: Path) -> None:
    """Two branches of a git repository each continue both threads; merging them leaves two
    heads per thread (every file name is unique, so git merges without a conflict)."""
    repo = root.parent / "forks-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")

    def turn(thread: str, text: str) -> None:
        b = StateGraph(MessagesState)
        b.add_node("reply", echo)
        b.add_edge(START, "reply")
        b.add_edge("reply", END)
        graph = b.compile(checkpointer=RepoSaver(repo / ".langgraph"))
        graph.invoke({"messages": [HumanMessage(content=text)]}, {"configurable": {"thread_id": thread}})

    turn("refund-7", "I would like a refund for order A-7")
    turn("notes-3", "note: the customer prefers email")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first turns")
    git(repo, "checkout", "-q", "-b", "approve")
    turn("refund-7", "approve the refund")
    turn("notes-3", "note: refund approved by Ada")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "approved")
    git(repo, "checkout", "-q", "main")
    turn("refund-7", "deny the refund")
    turn("notes-3", "note: asked for the receipt")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "denied")
    git(repo, "merge", "-q", "--no-edit", "approve")
    shutil.copytree(repo / ".langgraph", root, ignore=shutil.ignore_patterns(".cache"))


# ----------------------------------------------------------------------------
# profiles: docs/migrating.md
# ----------------------------------------------------------------------------
CUSTOMERS = ("Ada Lovelace", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Alan Kay")
QUESTIONS = ("where is my invoice?", "can I change my plan?", "is my order shipped?", "my login fails", "hi")


def customers(root: Path) -> None:
    """``customer-1`` ... ``customer-5``: one turn each of version 1 of ``myapp.profiles``
    (docs/example_profiles.py: the example project gets it as that)."""
    from example_profiles import graph

    app = graph(1, RepoSaver(root))
    for n, (name, question) in enumerate(zip(CUSTOMERS, QUESTIONS, strict=True), 1):
        user = {"messages": [HumanMessage(question, id=f"user-{n}")], "profile": {"name": name}}
        app.invoke(user, {"configurable": {"thread_id": f"customer-{n}"}})


# ----------------------------------------------------------------------------
# secrets: docs/secrets.md
# ----------------------------------------------------------------------------
def secrets(root: Path) -> None:
    b = StateGraph(MessagesState)
    b.add_node("reply", echo)
    b.add_edge(START, "reply")
    b.add_edge("reply", END)
    graph = b.compile(checkpointer=RepoSaver(root, redact=False))
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"  # made up
    graph.invoke(
        {"messages": [HumanMessage(content=f"here is my key {key}")]}, {"configurable": {"thread_id": "t"}}
    )


# ----------------------------------------------------------------------------
# review: docs/review.md and the README's first screen
# ----------------------------------------------------------------------------
def review(first: Path, second: Path, third: Path) -> None:
    """``first``: the root after the agent's first turn; ``second``: only the files the turn
    of branch ``work`` added; ``third``: only the files another turn, on ``main``, added
    meanwhile (a saver never changes a file it wrote)."""
    from bench.agent_graphs import build_create_agent, user_message
    from langchain_core.messages import HumanMessage as User

    config: Any = {"configurable": {"thread_id": "support-1"}}
    work = first.parent / "review-work"
    build_create_agent(RepoSaver(work)).invoke({"messages": [user_message(1)]}, config)
    shutil.copytree(work, first, ignore=shutil.ignore_patterns(".cache"))
    main = first.parent / "review-main"
    shutil.copytree(first, main)
    build_create_agent(RepoSaver(work)).invoke({"messages": [user_message(2)]}, config)
    asked = User(content="Is order A-1002 insured?", id="user-2-main")
    build_create_agent(RepoSaver(main)).invoke({"messages": [asked]}, config)
    added(first, work, second)
    added(first, main, third)


def added(before: Path, after: Path, into: Path) -> None:
    """Copy into ``into`` the files of ``after`` that ``before`` lacks."""
    for path in sorted(after.rglob("*")):
        rel = path.relative_to(after)
        if path.is_file() and ".cache" not in rel.parts:
            if (before / rel).exists():
                assert (before / rel).read_bytes() == path.read_bytes(), rel
                continue
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / rel)


# ----------------------------------------------------------------------------
# desk: docs/review.md's support desk and the README's first screen
# ----------------------------------------------------------------------------
def desk(made: Path, *names: str) -> None:
    """The support desk of issue 35 (bench/support_desk.py), one root in ``made / "desk"``; into
    each of ``names`` go the files one stage added: turns 1 and 2; turn 3 up to its question;
    the approval; turns 4 and 5."""
    from bench.support_desk import approve, build_support_desk, user_turn

    from langgraph_checkpoint_repo import RepoStore

    root = made / "desk"

    def graph() -> Any:
        return build_support_desk(RepoSaver(root), RepoStore(root))

    stages = [
        lambda: (user_turn(graph(), 1), user_turn(graph(), 2)),
        lambda: user_turn(graph(), 3),
        lambda: approve(graph()),
        lambda: (user_turn(graph(), 4), user_turn(graph(), 5, text="Is the red teapot in stock?")),
    ]
    before = made / "desk-before"
    before.mkdir()
    for name, stage in zip(names, stages, strict=True):
        stage()
        added(before, root, made / name)
        shutil.copytree(made / name, before, dirs_exist_ok=True)
