"""The graph's own types on every read path, whatever the order of calls (docs/types.md).

Each scenario runs in a fresh process, as a user's second program would: nothing of the
graph has been read before, so a read that only worked after ``get_state`` would fail here.
Every scenario runs with and without ``LANGGRAPH_STRICT_MSGPACK=true``: LangGraph passes a
graph's types to its checkpointer (``with_allowlist``) only in strict mode. The state the
reading scenarios start from is written once per mode by the same scripts, both in one
process of its own, and each scenario reads a copy of it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import crossed
from types_project import MAIN_WRITER, WRITE, make_project, run_script

STRICT = pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bool, Path], Path]:
    """``written(strict, tmp_path)``: a copy, at ``tmp_path/proj``, of the project after
    ``write.py`` (the four graphs) and ``two.py write`` (graph b of TWO_GRAPHS) ran with
    LANGGRAPH_STRICT_MSGPACK as ``strict`` says; each written once per mode, the two
    writers one after the other in one process (a start of LangGraph less: the readers
    are what must be fresh)."""
    made: dict[bool, Path] = {}

    def copy(strict: bool, tmp_path: Path) -> Path:
        if strict not in made:
            project = make_project(tmp_path_factory.mktemp("strict" if strict else "default"))
            (project / "write.py").write_text(WRITE, encoding="utf-8")
            (project / "two.py").write_text(TWO_GRAPHS, encoding="utf-8")
            out = run_script(project, "write_both.py", WRITE_BOTH, strict=strict).stdout
            assert out.split() == ["written", "written"], out
            made[strict] = project
        return Path(shutil.copytree(made[strict], tmp_path / "proj", symlinks=True))

    return copy


# write.py, then two.py write, as ``python write.py`` and ``python two.py write`` run them
WRITE_BOTH = """
import runpy
import sys

sys.argv = ["write.py"]
runpy.run_path("write.py", run_name="__main__")
sys.argv = ["two.py", "write"]
try:
    runpy.run_path("two.py", run_name="__main__")
except SystemExit as exc:
    assert exc.code is None, exc.code
"""


HISTORY_FIRST = """
import asyncio
import sys

from langgraph_checkpoint_repo import RepoSaver
from myapp.agent import GRAPHS
from myapp.checks import check

mode = sys.argv[1]
saver = RepoSaver(".langgraph")  # one saver for all four graphs


async def ahistory(graph, config):
    return [s async for s in graph.aget_state_history(config)]


for kind, make in GRAPHS.items():
    graph = make(saver)
    config = {"configurable": {"thread_id": kind}}
    if mode == "sync":
        history = list(graph.get_state_history(config))  # before any get_state
    else:
        history = asyncio.run(ahistory(graph, config))
    assert len(history) >= 4, (kind, len(history))
    check(kind, history[0].values)
    check(kind, history[1].values)
    # the saver's own reads, called by the graph's methods, then get_state last
    state = graph.get_state(config) if mode == "sync" else asyncio.run(graph.aget_state(config))
    check(kind, state.values)
print("ok")
"""


@crossed("mode,strict", ["sync", "async"], [False, True])
def test_history_before_get_state_revives_every_kind_of_state_type(
    written: Callable[[bool, Path], Path], tmp_path: Path, mode: str, strict: bool
) -> None:
    """get_state_history (and its async twin) in a fresh process, before any get_state, revives
    an Enum, a dataclass, a pydantic model and nested types (a dict of models, a DeltaChannel
    of dataclasses), for four graphs sharing one saver."""
    project = written(strict, tmp_path)
    proc = run_script(project, "history_first.py", HISTORY_FIRST, mode, strict=strict)
    assert proc.stdout.strip().endswith("ok")


TWO_GRAPHS = """
import sys
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_checkpoint_repo import RepoSaver, UnrevivableValueError
from myapp.agent import ADA, pydantic_graph
from myapp.checks import check


class Loose(TypedDict):
    payload: Any
    n: int


def loose_graph(saver):
    builder = StateGraph(Loose)
    builder.add_node("step", lambda s: {"payload": ADA, "n": s["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=saver, name="loose")


saver = RepoSaver(".langgraph")
a, b = pydantic_graph(saver), loose_graph(saver)
if sys.argv[1] == "write":
    b.invoke({"payload": None, "n": 0}, {"configurable": {"thread_id": "b"}})
    print("written")
    raise SystemExit


def read_b():
    try:
        b.get_state({"configurable": {"thread_id": "b"}})
    except UnrevivableValueError as exc:
        return str(exc)
    raise AssertionError("graph b revived a type it never declared")


order = sys.argv[1]
if order == "a-first":
    check("pydantic", a.get_state({"configurable": {"thread_id": "pydantic"}}).values)
    print("REFUSED", read_b())
else:
    print("REFUSED", read_b())
    check("pydantic", a.get_state({"configurable": {"thread_id": "pydantic"}}).values)
# the saver itself, outside any graph, constructs none of them either
try:
    saver.get_tuple({"configurable": {"thread_id": "pydantic"}})
except UnrevivableValueError as exc:
    print("OUTSIDE", exc)
else:
    raise AssertionError("the saver revived a graph's type outside the graph")
print("ok")
"""


@crossed("order,strict", ["a-first", "b-first"], [False, True])
def test_two_graphs_on_one_saver_do_not_share_types(
    written: Callable[[bool, Path], Path], tmp_path: Path, order: str, strict: bool
) -> None:
    """Graph a declares Customer; graph b (state ``payload: Any``) stored one. After a has read
    its own state, b still may not construct Customer, and neither may the saver outside both;
    the errors name the type, the file and pointer, and the fix for where the read came from."""
    project = written(strict, tmp_path)
    out = run_script(project, "two.py", TWO_GRAPHS, order, strict=strict).stdout
    refused = next(line for line in out.splitlines() if line.startswith("REFUSED"))
    assert (
        "refusing to construct myapp.state.Color, myapp.state.Customer: "
        "not in the msgpack allowlist (named at " in refused
    )
    assert ".json at /new_values/payload/value/json/$fields/color)" in refused
    assert "The graph 'loose' reading it does not name them in its state" in refused
    outside = next(line for line in out.splitlines() if line.startswith("OUTSIDE"))
    assert "refusing to construct myapp.state.Color, myapp.state.Customer" in outside
    assert "To allow: RepoSaver(allowlist=[('myapp.state', 'Color'), ('myapp.state', 'Customer')])" in outside
    assert out.strip().endswith("ok")


SAVER_READS = """
import asyncio

from langgraph_checkpoint_repo import RepoSaver
from myapp.state import Address, Color, Customer

saver = RepoSaver(".langgraph", allowlist=[("myapp.state", "*")])
RepoSaver(".langgraph").copy_thread("nested", "nested-copy")  # constructs nothing: copies files


def latest(thread):
    return next(iter(saver.list({"configurable": {"thread_id": thread}}))).checkpoint["channel_values"]


assert latest("enum")["color"] is Color.BLUE
assert type(latest("dataclass")["address"]) is Address
assert type(latest("pydantic")["customer"]) is Customer
assert type(latest("nested")["customers"]["ada"]) is Customer


async def alist(config):
    return [t async for t in saver.alist(config)]


tuples = asyncio.run(alist({"configurable": {"thread_id": "nested-copy"}}))
assert type(tuples[0].checkpoint["channel_values"]["customers"]["ada"]) is Customer
print("ok")
"""


def test_outside_a_graph_the_explicit_allowlist_reads_every_path(
    written: Callable[[bool, Path], Path], tmp_path: Path
) -> None:
    """A script without a graph reads with ``RepoSaver(allowlist=[("myapp.state", "*")])``:
    list and alist revive every kind, and a copied thread reads like its source."""
    project = written(False, tmp_path)
    assert run_script(project, "saver_reads.py", SAVER_READS).stdout.strip().endswith("ok")


IMPORTER = """
import sys

from langgraph_checkpoint_repo import RepoSaver

sys.path.insert(0, sys.argv[2])
module = __import__(sys.argv[1], fromlist=["build"])
graph = module.build(RepoSaver(".langgraph"))
config = {"configurable": {"thread_id": "main"}}
history = list(graph.get_state_history(config))
assert type(history[0].values["order"]) is module.Order, history[0].values
assert history[0].values["order"].tier is module.Tier.GOLD
print("ok", sys.modules[module.Order.__module__].__name__)
"""


@crossed("how,strict", ["script", "module"], [False, True])
def test_main_writer_is_read_by_an_importing_program(tmp_path: Path, how: str, strict: bool) -> None:
    """State written by ``python agent.py`` (or ``python -m tools.agent``) names the types by
    the module's importable name, not ``__main__``: another program that imports the module
    and compiles the same graph reads it, and the writer reads its own state on a second run."""
    project = make_project(tmp_path)
    if how == "script":
        runner = "agent"
        run_script(project, "agent.py", MAIN_WRITER, strict=strict)
        again = run_script(project, "agent.py", MAIN_WRITER, strict=strict)
    else:
        runner = "tools.agent"
        (project / "tools").mkdir()
        (project / "tools" / "__init__.py").write_text("", encoding="utf-8")
        launcher = f"import runpy\nrunpy.run_module({runner!r}, run_name='__main__', alter_sys=True)\n"
        (project / "tools" / "agent.py").write_text(MAIN_WRITER, encoding="utf-8")
        run_script(project, "launch.py", launcher, strict=strict)
        again = run_script(project, "launch.py", launcher, strict=strict)
    assert again.stdout.strip() == "wrote 2"
    stored = "".join(p.read_text("utf-8") for p in (project / ".langgraph").rglob("*.json"))
    assert json.dumps([runner, "Order"]).replace(" ", "") in stored.replace(" ", "").replace("\n", "")
    assert "__main__" not in stored
    out = run_script(project, f"read_{how}.py", IMPORTER, runner, str(project), strict=strict).stdout
    assert out.split() == ["ok", runner]


CAN_NOT_TELL = """
import subprocess, sys
from langgraph_checkpoint_repo import RepoSaver, UnrevivableValueError

code = open("agent.py").read()
subprocess.run([sys.executable, "-c", code], check=True)  # no file: its name cannot be told
sys.path.insert(0, ".")
import agent

try:
    agent.build(RepoSaver(".langgraph")).get_state({"configurable": {"thread_id": "main"}})
except UnrevivableValueError as exc:
    print("REFUSED", exc)
"""


def test_main_writer_whose_name_cannot_be_told_keeps_main_and_says_so(tmp_path: Path) -> None:
    """``python -c``: the types stay ``__main__.X``; an importing reader is refused with an
    error that says why and what to do, not "compile the graph with this checkpointer"."""
    project = make_project(tmp_path)
    (project / "agent.py").write_text(MAIN_WRITER, encoding="utf-8")
    out = run_script(project, "cannot.py", CAN_NOT_TELL).stdout
    assert '"__main__"' in "".join(p.read_text("utf-8") for p in (project / ".langgraph").rglob("*.json"))
    refused = next(line for line in out.splitlines() if line.startswith("REFUSED"))
    assert "refusing to construct __main__." in refused
    assert "run the writer as python -m package.module or from inside its project" in refused
    assert "compile the graph with this checkpointer" not in refused
