"""A small user project for the graph's-own-types tests (docs/types.md), and a way to run
a script of it in a fresh process: each scenario starts with nothing imported, the way a
user's second program does.

``myapp.state`` holds an Enum, a dataclass, a pydantic model with a timedelta, and four
state types: an enum state, a dataclass state, a pydantic state, and a nested one with a
DeltaChannel of dataclasses. ``myapp.agent`` compiles one graph per state type.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import helpers

STATE = """
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import Annotated, Optional, Sequence

from langgraph.channels import DeltaChannel
from pydantic import BaseModel
from typing_extensions import TypedDict


class Color(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Address:
    city: str
    zip: str


class Customer(BaseModel):
    name: str
    color: Color
    address: Address
    due: timedelta


class EnumState(TypedDict):
    color: Color
    n: int


@dataclass
class DcState:
    address: Optional[Address] = None
    n: int = 0


class PydState(BaseModel):
    customer: Optional[Customer] = None
    n: int = 0


def extend(state: list, writes: Sequence[list]) -> list:
    out = list(state)
    for items in writes:
        out.extend(items)
    return out


class NestedState(TypedDict):
    customers: dict[str, Customer]
    log: Annotated[list[Address], DeltaChannel(extend, snapshot_frequency=2)]
    n: int
"""

AGENT = """
from datetime import timedelta

from langgraph.graph import END, START, StateGraph

from myapp.state import Address, Color, Customer, DcState, EnumState, NestedState, PydState

ADA = Customer(name="ada", color=Color.RED, address=Address("Paris", "75001"), due=timedelta(days=14))


def _graph(state, step, saver, name):
    builder = StateGraph(state)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda s: END if _n(s) >= 3 else "step")
    return builder.compile(checkpointer=saver, name=name)


def _n(s):
    return s["n"] if isinstance(s, dict) else s.n


def enum_graph(saver):
    return _graph(EnumState, lambda s: {"color": Color.BLUE, "n": s["n"] + 1}, saver, "enum")


def dataclass_graph(saver):
    return _graph(DcState, lambda s: {"address": Address("Rome", str(s.n)), "n": s.n + 1}, saver, "dataclass")


def pydantic_graph(saver):
    return _graph(PydState, lambda s: {"customer": ADA, "n": s.n + 1}, saver, "pydantic")


def nested_graph(saver):
    def step(s):
        return {"customers": {"ada": ADA}, "log": [Address("Oslo", str(s["n"]))], "n": s["n"] + 1}

    return _graph(NestedState, step, saver, "nested")


GRAPHS = {
    "enum": enum_graph, "dataclass": dataclass_graph, "pydantic": pydantic_graph, "nested": nested_graph
}
INPUTS = {
    "enum": {"color": Color.RED, "n": 0},
    "dataclass": DcState(),
    "pydantic": PydState(),
    "nested": {"customers": {}, "log": [], "n": 0},
}
"""

# checks that a state read back holds the real types, per kind
CHECKS = """
from datetime import timedelta

from myapp.state import Address, Color, Customer


def check(kind, values):
    if kind == "enum":
        assert values["color"] is Color.BLUE, values
    elif kind == "dataclass":
        assert type(values["address"]) is Address, values
    elif kind == "pydantic":
        customer = values["customer"]
        assert type(customer) is Customer and customer.color is Color.RED, values
        assert customer.due == timedelta(days=14) and type(customer.address) is Address
    else:
        assert type(values["customers"]["ada"]) is Customer, values
        assert values["log"] and {type(a) for a in values["log"]} == {Address}, values
"""


def make_project(tmp_path: Path, *, pyproject: str = "") -> Path:
    """The project folder: pyproject.toml (with ``pyproject`` appended), myapp/, .langgraph."""
    project = tmp_path / "proj"
    (project / "myapp").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "myapp"\nversion = "0"\n' + pyproject, encoding="utf-8"
    )
    (project / "myapp" / "__init__.py").write_text("", encoding="utf-8")
    (project / "myapp" / "state.py").write_text(STATE, encoding="utf-8")
    (project / "myapp" / "agent.py").write_text(AGENT, encoding="utf-8")
    (project / "myapp" / "checks.py").write_text(CHECKS, encoding="utf-8")
    return project


def run_script(
    project: Path, name: str, body: str, *args: str, strict: bool = False, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Write ``body`` to ``project/name`` and run it with this interpreter in a fresh process;
    fails the test with its output when it does not exit 0."""
    script = project / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd or project,
        env=script_env(strict),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"{name} {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def script_env(strict: bool) -> dict[str, str]:
    """The environment of a script: LANGGRAPH_STRICT_MSGPACK set or removed, nothing else added."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGGRAPH_STRICT_MSGPACK", "PYTHONPATH")}
    if strict:
        env["LANGGRAPH_STRICT_MSGPACK"] = "true"
    return env


def cli(project: Path, *args: str, strict: bool = False) -> subprocess.CompletedProcess[str]:
    """``langgraph-repo`` run in the project folder, as a person would (helpers.cli: as a fresh
    process has it, none of the project's modules imported before). LangGraph reads
    LANGGRAPH_STRICT_MSGPACK when it is imported, so ``strict`` runs a fresh process."""
    env = {"LANGGRAPH_STRICT_MSGPACK": "true" if strict else None, "PYTHONPATH": None}
    run = helpers.cli_process if strict else helpers.cli
    return run(project / ".langgraph", *args, cwd=project, env=env)


WRITE = """
import sys
from langgraph_checkpoint_repo import RepoSaver
from myapp.agent import GRAPHS, INPUTS

saver = RepoSaver(".langgraph")
for kind in sys.argv[1:] or GRAPHS:
    GRAPHS[kind](saver).invoke(INPUTS[kind], {"configurable": {"thread_id": kind}})
print("written")
"""

# a script whose own classes are __main__.X to Python (docs/types.md, "Types of a script's __main__")
MAIN_WRITER = """
from dataclasses import dataclass
from enum import Enum

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from langgraph_checkpoint_repo import RepoSaver


class Tier(Enum):
    GOLD = "gold"


@dataclass
class Order:
    item: str
    tier: Tier


class State(TypedDict):
    order: Order
    n: int


def build(saver):
    builder = StateGraph(State)
    builder.add_node("step", lambda s: {"order": Order("tea", Tier.GOLD), "n": s["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    return builder.compile(checkpointer=saver)


if __name__ == "__main__":
    graph = build(RepoSaver(".langgraph"))
    config = {"configurable": {"thread_id": "main"}}
    before = graph.get_state(config).values.get("n", 0)  # a second run reads its own state back
    graph.invoke({"n": before}, config)
    assert type(graph.get_state(config).values["order"]) is Order
    print("wrote", graph.get_state(config).values["n"])
"""
