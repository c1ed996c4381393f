"""The examples in examples/ run with the one command the README gives, and do what they say.

Each runs once as a user runs it (``python examples/x.py``, its own second process included) in
a temporary folder, never in this checkout; its output must show the resumed thread, and the
files it wrote must read back and pass ``langgraph-repo validate``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from helpers import cli_env, cli_in_process
from langgraph_checkpoint_repo import RepoSaver

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, cwd: Path, *args: str) -> str:
    """``python examples/<name> args`` in ``cwd``; its standard output, once it exited 0."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert proc.returncode == 0, f"examples/{name} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def second_process_part(out: str, header: str) -> str:
    """What the example printed from the header of its second process on."""
    assert header in out, out
    return out[out.index(header) :]


def assert_validates(root: Path) -> None:
    assert (root / "threads").is_dir(), f"nothing written under {root}"
    result = cli_in_process("--root", root, "validate")
    assert result.exit_code == 0, result.output


def values(root: Path, thread_id: str) -> dict[str, object]:
    """The latest checkpoint's values, as a fresh saver reads them from the files."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    got = RepoSaver(root).get_tuple(config)
    assert got is not None, f"no checkpoint of thread {thread_id!r} under {root}"
    return dict(got.checkpoint["channel_values"])


def test_quickstart_resumes_in_a_fresh_process_into_the_git_work_tree_root(tmp_path: Path) -> None:
    """No root given: .langgraph/ at the top of the git work tree (a user's checkout)."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    out = run_example("quickstart.py", project / "src")
    resumed = second_process_part(out, "Second process resumed the thread.")
    assert "human: Hello! My name is Ada." in resumed
    assert "human: And what did I say first?" in resumed
    assert "I remember 2 message(s) from you" in resumed
    root = project / ".langgraph"
    assert f"Files under {root}" in out
    assert_validates(root)


def test_agent_calls_its_tool_and_a_fresh_process_resumes_the_conversation(tmp_path: Path) -> None:
    root = tmp_path / "state"
    out = run_example("agent.py", tmp_path, "--root", str(root))
    resumed = second_process_part(out, "Second process resumed the thread from the files.")
    # the first turn, read from the files by the second process, then the second turn
    for line in (
        "human: What is the weather in Paris?",
        "ai: calls get_weather({'city': 'Paris'})",
        "tool: get_weather returned 'Paris: sunny, 21 C'",
        "ai: The weather report says Paris: sunny, 21 C.",
        "human: And what is it like in Oslo?",
        "tool: get_weather returned 'Oslo: light snow, -3 C'",
        "ai: The weather report says Oslo: light snow, -3 C.",
    ):
        assert line in resumed, (line, out)
    assert "Checkpoint history (newest first):" in resumed
    assert f"Files under {root}" in out
    messages = values(root, "agent-demo")["messages"]
    assert isinstance(messages, list)
    kinds = [type(m) for m in messages]
    assert kinds == [HumanMessage, AIMessage, ToolMessage, AIMessage] * 2, kinds
    assert_validates(root)
    assert not (tmp_path / ".langgraph").exists()


def test_async_agent_interrupt_waits_in_the_files_and_a_fresh_process_resumes_it(tmp_path: Path) -> None:
    root = tmp_path / "state"
    out = run_example("async_agent.py", tmp_path, "--root", str(root))
    first, resumed = out.split("Second process read the thread from the files", 1)
    assert "interrupt waiting for a person: {'question': 'Refund $42 for order A-1001?'}" in first
    assert "next ('approve',)" in resumed
    assert "Command(resume='approved by Ada')" in resumed
    assert "'status': 'refund of $42 for A-1001 approved by Ada'" in resumed
    assert "aget_state_history: 5 checkpoints" in resumed
    assert values(root, "async-demo")["decision"] == "approved by Ada"
    assert_validates(root)
