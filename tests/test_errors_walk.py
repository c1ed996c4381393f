"""Errors of the package everywhere (issue 38, item 6): every command and every saver method,
over a root with one file removed, or cut in half, at each position, ends in an error of the
package naming what it could not read (or in a result), never a bare ``FileNotFoundError``,
``Errno`` or traceback, never exit 6 ("any other error") or 7 (a bug).

The root holds a chat, a subgraph waiting at an interrupt, a relay whose long message list is
chunked into ``objects/``, and a prune's base and value files, so every kind of file is at some
position. The default run pairs each position with one command and one saver method in turn
(every command and method meets several positions, every position one of each); the long
mode runs every pair."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from graphs import cfg, chat_graph, invoke_in_order, question, relay_graph, sub_graph
from helpers import LONG, cli
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.cli.exits import FAILED
from langgraph_checkpoint_repo.core.errors import RepoCheckpointError

COMMANDS: list[tuple[str, ...]] = [
    ("threads",),
    ("history", "chat"),
    ("show", "relay"),
    ("show", "sub", "--all"),
    ("tasks", "sub"),
    ("heads", "chat"),
    ("validate",),
    ("fsck",),
    ("fsck", "--repair"),
    ("diff", "chat"),
    ("render", "relay"),
    ("prune", "--keep-last", "1", "--dry-run"),
    ("prune", "--keep-last", "1", "--yes"),
    ("copy", "relay", "relay-2"),
    ("delete", "chat", "--yes"),
    ("migrate", "--dry-run"),
    ("export", "sqlite:///{tmp}/out.db"),
    ("threads", "--json"),
    ("history", "sub", "--json"),
    ("heads", "relay", "--json"),
    ("validate", "--heads"),
    ("render", "chat", "--html", "{tmp}/page.html"),
    ("show", "chat", "-c", "latest~2"),
    ("diff", "relay", "--from", "latest~3"),
]

Method = Callable[[RepoSaver], Any]
METHODS: list[tuple[str, Method]] = [
    ("get_tuple", lambda s: s.get_tuple(cfg("relay"))),
    ("list", lambda s: list(s.list(cfg("chat")))),
    ("list across threads", lambda s: list(s.list(None, filter={"source": "loop"}))),
    ("get_state", lambda s: chat_graph(s).get_state(cfg("chat"))),
    ("get_state_history", lambda s: list(chat_graph(s).get_state_history(cfg("chat")))),
    ("a turn", lambda s: relay_graph(s).invoke({"messages": [question(9)]}, cfg("relay"))),
    ("subgraph state", lambda s: sub_graph(s).get_state(cfg("sub"), subgraphs=True)),
    ("prune", lambda s: s.prune(["chat", "relay"])),
    ("copy_thread", lambda s: s.copy_thread("relay", "relay-2")),
    ("delete_thread", lambda s: s.delete_thread("chat")),
]


def build(root: Path) -> None:
    """The root, the same 44 files whatever the load (``invoke_in_order``: on a loaded machine a
    step's writes saved after the next checkpoint made it 46)."""
    saver = RepoSaver(root, durable=False)
    chat = chat_graph(saver)
    for i in range(3):
        invoke_in_order(chat, {"messages": [HumanMessage(content=f"hi {i}")]}, cfg("chat"))
    invoke_in_order(sub_graph(saver), {"log": []}, cfg("sub"))
    relay = relay_graph(saver)
    for turn in range(1, 4):
        invoke_in_order(relay, {"messages": [question(turn)]}, cfg("relay"))
    assert cli(root, "prune", "--keep-last", "4", "--yes").returncode == 0  # base and value files
    for i in range(3, 5):
        invoke_in_order(chat, {"messages": [HumanMessage(content=f"hi {i}")]}, cfg("chat"))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("walk") / ".langgraph"
    build(root)
    return root


def positions(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".cache" not in p.parts
    )


def damaged(base: Path, tmp: Path, rel: str, how: str) -> Path:
    """A copy of the root with the file at ``rel`` removed or cut in half."""
    root = tmp / ".langgraph"
    shutil.copytree(base, root)
    path = root / rel
    if how == "removed":
        path.unlink()
    else:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    return root


def pairs(count: int, items: list[Any]) -> list[tuple[int, str, Any]]:
    """(position, removed or cut, item): every triple in the long mode; else each position
    with the next item, removed and cut in turn."""
    hows = ["removed", "cut"]
    if LONG:
        return [(i, how, item) for i in range(count) for how in hows for item in items]
    return [(i, hows[i % 2], items[i % len(items)]) for i in range(max(count, len(items)))]


def _named(rel: str, said: str) -> bool:
    """Whether an error names the damaged file: its path, or the id or digest its name holds."""
    stem = Path(rel).name.removesuffix(".json").split("@")[-1].split("~")[-1]
    return rel in said or stem in said


def ids(value: Any) -> str:
    """A command by its words, a saver method by its name."""
    if not isinstance(value, tuple):
        return str(value)
    return str(value[0]) if callable(value[-1]) else "-".join(value)


WALKED = 44  # the root's files (checked below): one test per position of the default run


@pytest.mark.parametrize("at,how,command", pairs(WALKED, COMMANDS), ids=ids)
def test_every_command_over_a_missing_or_cut_file_is_an_error_of_the_package(
    base: Path, tmp_path: Path, how: str, at: int, command: tuple[str, ...]
) -> None:
    files = positions(base)
    assert len(files) == WALKED, files
    rel = files[at % len(files)]
    root = damaged(base, tmp_path, rel, how)
    out = cli(root, *(arg.format(tmp=tmp_path) for arg in command))  # exit 7 fails here
    said = out.stdout + out.stderr
    assert out.returncode != FAILED, f"{rel} {how}: {said}"
    assert "Errno" not in said and "Traceback" not in said, f"{rel} {how}: {said}"
    if out.returncode == 4:  # a file that does not read: named, or what it holds (its id, digest)
        assert str(root) in out.stderr and _named(rel, out.stderr), f"{rel} {how}: {out.stderr}"


@pytest.mark.parametrize("at,how,method", pairs(WALKED, METHODS), ids=ids)
def test_every_saver_method_over_a_missing_or_cut_file_raises_only_errors_of_the_package(
    base: Path, tmp_path: Path, how: str, at: int, method: tuple[str, Method]
) -> None:
    files = positions(base)
    rel = files[at % len(files)]
    root = damaged(base, tmp_path, rel, how)
    try:
        method[1](RepoSaver(root, durable=False))
    except RepoCheckpointError as exc:
        assert _named(rel, str(exc)) or "thread" in str(exc), f"{rel} {how}: {exc}"


def test_the_export_of_a_walked_root_is_a_real_database(base: Path, tmp_path: Path) -> None:
    """The walk's export writes a real SQLite file: the command it runs is not a no-op."""
    root = damaged(base, tmp_path, positions(base)[0], "cut")
    cli(root, "export", f"sqlite:///{tmp_path}/out.db", "-t", "relay")
    with closing(sqlite3.connect(tmp_path / "out.db")) as conn:
        assert conn.execute("select count(*) from checkpoints").fetchone()[0] > 0
