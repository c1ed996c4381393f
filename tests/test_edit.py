"""``langgraph-repo edit``: a hand edit as a new checkpoint (the review issue's supported edit).

The state is shown readably, edited (``--file``, or ``$EDITOR``), and written as
``update_state`` writes: a checkpoint whose parent is the edited one. Nothing in place.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.agent_graphs import build_create_agent, user_message

from graphs import cfg, chat_graph
from helpers import checkpoint_files, cli, one_line_error
from langgraph_checkpoint_repo import RepoSaver

THREAD = "t"


@pytest.fixture(scope="module")
def thirty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 30-turn create_agent thread (read-only below: each test copies it)."""
    root = tmp_path_factory.mktemp("edit") / "root"
    agent = build_create_agent(RepoSaver(root, durable=False))
    for n in range(1, 31):
        agent.invoke({"messages": [user_message(n)]}, cfg(THREAD))
    return root


@pytest.fixture
def root(thirty: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "root"
    shutil.copytree(thirty, copy)
    return copy


def form(root: Path) -> dict[str, Any]:
    proc = cli(root, "edit", THREAD, "--show")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "threads").rglob("*.json")}


def test_edit_of_one_message_writes_one_checkpoint_that_validates_and_the_graph_goes_on(
    root: Path, tmp_path: Path
) -> None:
    before = files(root)
    latest = max(p.stem for p in checkpoint_files(root, THREAD))
    data = form(root)
    (message,) = [m for m in data["values"]["messages"] if m["id"] == "ai-answer-7"]
    message["content"] = "Good news: corrected by hand."
    edited = tmp_path / "form.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    proc = cli(root, "edit", THREAD, "--file", edited)
    assert proc.returncode == 0, proc.stderr
    new_id = proc.stdout.strip()
    added = files(root) - before
    # format 4: the changed message is an object held in the new checkpoint, no other file
    assert added == {f"threads/{THREAD}/checkpoints/{new_id}.json"}
    assert files(root) >= before  # nothing removed or renamed
    doc = json.loads((root / "threads" / THREAD / "checkpoints" / f"{new_id}.json").read_text())
    assert doc["parent_checkpoint_id"] == latest and doc["metadata"]["source"] == "update"
    assert set(doc["new_values"]) == {"messages"}
    held = [o for o in doc["objects"].values() if isinstance(o, dict) and "$fields" in o]
    assert [o["$fields"]["content"] for o in held] == ["Good news: corrected by hand."]  # the one new message
    assert cli(root, "validate").returncode == 0
    # a fresh process continues the thread from the edit
    code = (
        "import sys; sys.path[:0] = ['.', 'tests']\n"
        "from bench.agent_graphs import build_create_agent, user_message\n"
        "from graphs import cfg\n"
        "from langgraph_checkpoint_repo import RepoSaver\n"
        f"agent = build_create_agent(RepoSaver({str(root)!r}))\n"
        "out = agent.invoke({'messages': [user_message(31)]}, cfg('t'))\n"
        "print([m.content for m in out['messages'] if m.id == 'ai-answer-7'], len(out['messages']))\n"
    )
    top = Path(__file__).parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=top)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['Good news: corrected by hand.'] 124"


def test_edit_in_the_editor_and_nothing_changed_writes_nothing(root: Path, tmp_path: Path) -> None:
    """$EDITOR is run on the form; a form saved unchanged writes nothing."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import json, sys\n"
        "path = sys.argv[1]\n"
        "data = json.load(open(path))\n"
        "data['values']['messages'][0]['content'] = 'edited in the editor'\n"
        "json.dump(data, open(path, 'w'))\n",
        encoding="utf-8",
    )
    before = files(root)
    same = cli(root, "edit", THREAD, env={"EDITOR": "true", "VISUAL": None})
    assert same.returncode == 0 and "nothing written" in same.stderr and files(root) == before
    edited = cli(root, "edit", THREAD, env={"EDITOR": f"{sys.executable} {script}", "VISUAL": None})
    assert edited.returncode == 0, edited.stderr
    assert form(root)["values"]["messages"][0]["content"] == "edited in the editor"
    failing = cli(root, "edit", THREAD, env={"EDITOR": "false", "VISUAL": None})
    one_line_error(failing, 2, "exited with 1")


def test_edit_refuses_a_form_it_cannot_write_and_writes_nothing(root: Path, tmp_path: Path) -> None:
    before = files(root)
    for change, words in (
        (lambda d: d["values"].__setitem__("no_such", 1), "no channel 'no_such'"),
        (lambda d: d["values"]["messages"][0].__setitem__("role", "ai"), "keeps its role"),
        (lambda d: d["values"]["messages"].append({"role": "robot", "content": "x"}), "role must be one of"),
    ):
        data = form(root)
        change(data)
        path = tmp_path / "form.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        one_line_error(cli(root, "edit", THREAD, "--file", path), 2, words)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    one_line_error(cli(root, "edit", THREAD, "--file", broken), 2, "cannot read the edited form")
    assert files(root) == before


def test_edit_of_another_channel_and_a_new_message(tmp_path: Path) -> None:
    """A channel other than messages takes its edited JSON; a message without an id is added."""
    root = tmp_path / "root"
    graph = chat_graph(RepoSaver(root, durable=False))
    graph.invoke({"messages": [("user", "hi")]}, cfg(THREAD))
    data = form(root)
    data["values"]["messages"].append({"role": "human", "content": "added by hand"})
    path = tmp_path / "form.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert cli(root, "edit", THREAD, "--file", path).returncode == 0
    state = chat_graph(RepoSaver(root)).get_state(cfg(THREAD))
    assert [m.content for m in state.values["messages"]] == ["hi", "echo: hi", "added by hand"]
    assert state.metadata["source"] == "update"
