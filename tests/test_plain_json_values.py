"""Values that are plain JSON are stored as JSON (issue 39, item 4; docs/format.md "Value bodies").

LangGraph's serializer gives ``None`` (every trigger channel's value, ``branch:to:<node>``,
and its writes) as its own ``null`` payload type with no bytes. It used to be stored as
``{"base64": "", "serde": "null"}`` (15 of 49 files of a small app); it is JSON, so it is now
``{"json": null}``. Files in repositories keep the old spelling and must read as before.

Every thread is written by a real compiled graph through RepoSaver into ``.langgraph`` at the
top of a real git repository, and compared with InMemorySaver, the reference.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from graphs import cfg, chat_graph
from helpers import cli
from langgraph_checkpoint_repo import RepoSaver

NEW = '{"json": null}'
OLD = '{"base64": "", "serde": "null"}'


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose state folder (``.langgraph``, RepoSaver's default) holds a
    thread of two chat turns, committed."""
    top = tmp_path / "app"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    saver = RepoSaver(top / ".langgraph", durable=False)
    graph = chat_graph(saver)
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}", id=f"u{i}")]}, cfg("t"))
    git(top, "add", "-A")
    git(top, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "two turns")
    return top


def state_files(top: Path) -> list[Path]:
    return sorted((top / ".langgraph" / "threads").rglob("*.json"))


def triggers(saver: Any) -> list[tuple[dict[str, Any], list[tuple[str, Any]]]]:
    """Per checkpoint, newest first: LangGraph's trigger channels and every pending write's
    (channel, value) but the messages' (their ids are minted per run)."""
    out = []
    for tup in saver.list(cfg("t")):
        values = tup.checkpoint["channel_values"]
        branch = {k: v for k, v in values.items() if k.startswith("branch:to:")}
        writes = [(channel, value) for _, channel, value in tup.pending_writes or [] if channel != "messages"]
        out.append((branch, writes))
    return out


def test_trigger_values_are_written_as_json_and_read_back_as_in_memory_saver(repo: Path) -> None:
    """No file holds the base64 spelling of None; the triggers are ``{"json": null}`` (in the
    checkpoints' values and in the writes they took), every file validates, and each
    checkpoint's triggers and pending writes read back equal to InMemorySaver's."""
    texts = [p.read_text(encoding="utf-8") for p in state_files(repo)]
    assert not any('"serde": "null"' in t for t in texts)
    assert sum(t.count(NEW) for t in texts) >= 4  # two turns: a trigger value and its write each
    memory = InMemorySaver()
    graph = chat_graph(memory)
    for i in range(2):
        graph.invoke({"messages": [HumanMessage(content=f"turn {i}", id=f"u{i}")]}, cfg("t"))
    saver = RepoSaver(repo / ".langgraph", durable=False)
    got, want = triggers(saver), triggers(memory)
    assert got == want and any(branch for branch, _ in got)
    assert any(("branch:to:reply", None) in writes for _, writes in got)
    proc = cli(repo / ".langgraph", "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_old_base64_null_files_still_load_as_the_new_spelling(repo: Path) -> None:
    """A root whose files hold None as ``{"base64": "", "serde": "null"}`` (every file written
    before the change) reads exactly as the new spelling: get_tuple and list, ``validate``,
    and ``show`` print the same, ``branch:to:reply: null``."""
    root = repo / ".langgraph"
    before = triggers(RepoSaver(root, durable=False))
    shown = cli(root, "show", "t", "-c", "latest~1", "--all")
    assert shown.returncode == 0 and "branch:to:reply: null" in shown.stdout
    changed = 0
    for path in state_files(repo):
        text = path.read_text(encoding="utf-8")
        if NEW in text:
            path.write_text(text.replace(NEW, OLD), encoding="utf-8")
            changed += 1
    assert changed >= 2
    saver = RepoSaver(root, durable=False)
    assert triggers(saver) == before
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None and [m.content for m in latest.checkpoint["channel_values"]["messages"]] == [
        "turn 0",
        "echo: turn 0",
        "turn 1",
        "echo: turn 1",
    ]
    assert cli(root, "validate").returncode == 0
    again = cli(root, "show", "t", "-c", "latest~1", "--all")
    assert again.stdout == shown.stdout


def test_an_encrypted_none_stays_ciphertext(tmp_path: Path) -> None:
    """With EncryptedSerializer None is ``null+aes`` ciphertext: it stays base64 (never a
    ``{"json": null}`` in the clear, which that saver refuses to read), and reads back."""
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    saver = RepoSaver(tmp_path / "root", serde=serde, durable=False)
    chat_graph(saver).invoke({"messages": [HumanMessage(content="hi")]}, cfg("t"))
    texts = [p.read_text(encoding="utf-8") for p in sorted((tmp_path / "root").rglob("*.json"))]
    assert not any(NEW in t for t in texts)
    nodes = [json.loads(t) for t in texts if '"null+aes"' in t]
    assert nodes
    assert triggers(saver) == triggers(RepoSaver(tmp_path / "root", serde=serde, durable=False))
