"""Workload 8: the command line as people run it: wall time of whole ``langgraph-repo`` processes.

``--help``; ``threads`` on a small root (a few threads of a few chat turns); ``validate FILE...``
with the files one chat turn changed, as the pre-commit hook passes them, on a root of
``validate_threads`` x 100 checkpoints (5,000 in the full run: the root docs/cli.md measures);
and ``validate`` of that whole root. Each command is run ``cli_runs`` times, round-robin.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

from bench import goals
from bench.common import REPO, Result, Sizes, progress, rotated
from bench.report import Row, md_table
from bench.workloads.chat import build_chat_graph, user_text
from langgraph_checkpoint_repo import RepoSaver

NAME = "cli"
TITLE = "The command line in detail"

SMALL_THREADS, SMALL_TURNS = 3, 3
"""The small root of ``threads``: the chat workload's graph, threads x turns."""
COMMANDS = {
    "help": "`langgraph-repo --help`",
    "threads": "`langgraph-repo --root SMALL threads`",
    "precommit": "`langgraph-repo --root .langgraph validate FILE...` (one turn's files)",
    "validate": "`langgraph-repo --root .langgraph validate` (whole root)",
    "review": "`langgraph-repo review main..pr` (a branch of {review_turns} turns of one thread)",
}
REVIEW_TURNS = 30
"""Turns the reviewed branch adds to one thread of the validate root (a copy of it, in git)."""


def script() -> tuple[list[str], str]:
    """The ``langgraph-repo`` console script next to this Python, as users run it; else ``-m``."""
    exe = Path(sys.executable).with_name("langgraph-repo")
    if exe.exists():
        return [str(exe)], "the `langgraph-repo` console script"
    return [sys.executable, "-m", "langgraph_checkpoint_repo"], "`python -m langgraph_checkpoint_repo`"


def reply_graph(saver: RepoSaver) -> Any:
    """The one-node chat graph of docs/cli.md's 5,000-checkpoint root: three checkpoints a turn."""

    def reply(state: MessagesState) -> dict[str, list[AnyMessage]]:
        last = state["messages"][-1]
        return {"messages": [AIMessage(content=f"You said {last.content!r}. " + "Noted. " * 20)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def thread(i: int) -> RunnableConfig:
    return {"configurable": {"thread_id": f"user-{i:03d}"}}


def validate_root(root: Path, sizes: Sizes) -> None:
    """``validate_threads`` threads of a one-node chat graph, ``validate_turns`` turns and one
    ``update_state`` each, made fast:
    thread 0 is played by the graph (``durable=False``), the others are ``copy_thread`` copies
    of it (same files, their own thread ids)."""
    saver = RepoSaver(root, durable=False)
    graph = reply_graph(saver)
    for turn in range(sizes.validate_turns):
        graph.invoke({"messages": [HumanMessage(content=f"message {turn} of thread 0")]}, thread(0))
    graph.update_state(thread(0), {"messages": [HumanMessage(content="note added by a reviewer")]})
    for i in range(1, sizes.validate_threads):
        saver.copy_thread("user-000", f"user-{i:03d}")


def snapshot(root: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``root`` but ``.cache/``: its size and mtime."""
    out: dict[Path, tuple[int, int]] = {}
    for p in root.rglob("*"):
        if p.is_file() and ".cache" not in p.relative_to(root).parts:
            st = p.stat()
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def one_turn(root: Path, i: int) -> list[Path]:
    """One more turn of thread ``i`` by a default (durable) RepoSaver: the files it added or changed."""
    before = snapshot(root)
    reply_graph(RepoSaver(root)).invoke({"messages": [HumanMessage(content="one more question")]}, thread(i))
    after = snapshot(root)
    return sorted(p for p, key in after.items() if before.get(p) != key)


def review_repo(work: Path, dest: Path, turns: int, i: int) -> Path:
    """A copy of the validate root's checkout as a git repository: ``main`` holds it, branch
    ``pr`` adds ``turns`` turns of thread ``i`` (what a pull request of an agent's work holds)."""
    shutil.copytree(work, dest, ignore=shutil.ignore_patterns(".cache"))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "add", "-A")
    git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "main")
    git("checkout", "-q", "-b", "pr")
    graph = reply_graph(RepoSaver(dest / ".langgraph", durable=False))
    for turn in range(turns):
        graph.invoke({"messages": [HumanMessage(content=f"question {turn} of the branch")]}, thread(i))
    git("add", "-A")
    git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "pr")
    return dest


def small_root(root: Path) -> None:
    graph = build_chat_graph(RepoSaver(root))
    for t in range(SMALL_THREADS):
        for turn in range(SMALL_TURNS):
            cfg: RunnableConfig = {"configurable": {"thread_id": f"chat-{t}"}}
            graph.invoke({"messages": [HumanMessage(content=user_text(t, turn))]}, cfg)


def count_checkpoints(root: Path) -> int:
    return sum(1 for p in root.rglob("*.json") if p.parent.name == "checkpoints")


def run(tmp: Path, sizes: Sizes) -> Result:
    cmd, how = script()
    small = tmp / "cli-small" / ".langgraph"
    small_root(small)
    work = tmp / "cli-big"  # the checkout: the root is ``.langgraph`` in it, as pre-commit sees it
    root = work / ".langgraph"
    t0 = time.perf_counter()
    validate_root(root, sizes)
    progress(f"cli: validate root written in {time.perf_counter() - t0:.0f} s")
    changed = [str(p.relative_to(work)) for p in one_turn(root, sizes.validate_threads // 2)]
    turns = min(REVIEW_TURNS, sizes.validate_turns)
    reviewed = review_repo(work, tmp / "cli-review", turns, sizes.validate_threads // 3)
    commands: dict[str, tuple[list[str], Path]] = {
        "help": ([*cmd, "--help"], tmp),
        "threads": ([*cmd, "--root", str(small), "threads"], tmp),
        "precommit": ([*cmd, "--root", ".langgraph", "validate", *changed], work),
        "validate": ([*cmd, "--root", ".langgraph", "validate"], work),
        "review": ([*cmd, "--root", ".langgraph", "review", "main..pr"], reviewed),
    }
    return {
        "script": how,
        "small_checkpoints": count_checkpoints(small),
        "checkpoints": count_checkpoints(root),
        "root_files": len(snapshot(root)),
        "changed_files": len(changed),
        "changed": changed,
        "review_turns": turns,
        "commands": _time(commands, sizes.cli_runs),
    }


def _time(commands: dict[str, tuple[list[str], Path]], runs: int) -> dict[str, Any]:
    """Wall time of each command's process, ``runs`` times round-robin; each must exit 0."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    outputs: dict[str, str] = {}
    for rep in range(runs):
        for name in rotated(list(commands), rep):
            args, cwd = commands[name]
            t0 = time.perf_counter_ns()
            proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
            walls[name].append((time.perf_counter_ns() - t0) / 1e9)
            if proc.returncode != 0:
                raise RuntimeError(f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
            outputs[name] = _gist(name, proc)
    return {
        name: {"median_s": statistics.median(w), "all_s": w, "output": outputs[name]}
        for name, w in walls.items()
    }


def _gist(name: str, proc: subprocess.CompletedProcess[str]) -> str:
    """What the command said, in a few words: validate's summary line (on stderr), else a line count."""
    said = (proc.stderr if name in ("precommit", "validate") else proc.stdout).strip().splitlines()
    if name in ("precommit", "validate") and said:
        return said[-1]
    return f"{len(said)} lines of output"


_GOALS = {
    "help": goals.CLI_HELP,
    "threads": goals.CLI_THREADS,
    "precommit": goals.CLI_PRECOMMIT,
    "validate": goals.CLI_VALIDATE,
    "review": goals.CLI_REVIEW,
}


def rows(result: Result) -> list[Row]:
    return [
        Row(
            "8 command line",
            f"{COMMANDS[name].format(review_turns=result.get('review_turns', REVIEW_TURNS))}, wall, median",
            {REPO: c["median_s"]},
            "s",
            _GOALS[name].column(result),
            3,
            show_ratio=False,
        )
        for name, c in result["commands"].items()
    ]


def details(result: Result, sizes: dict[str, Any]) -> str:
    intro = (
        f"Each command is a new process of {result['script']} (wall time from start to exit, median of "
        f"{sizes['cli_runs']}, commands round-robin). `threads`: a root of {SMALL_THREADS} threads x "
        f"{SMALL_TURNS} turns of the chat workload's graph ({result['small_checkpoints']} checkpoints). "
        f"validate: a root of {result['checkpoints']:,} checkpoints and {result['root_files']:,} files "
        "(a one-node chat graph on `MessagesState` (bench/workloads/cli.py), "
        f"{sizes['validate_turns']} turns and one `update_state` a thread; thread 0 played by the graph "
        f"with `durable=False`, the other {sizes['validate_threads'] - 1} threads `copy_thread` copies of "
        "it), then one more turn of one thread by a default `RepoSaver`: the files it added or changed "
        f"(listing the root before and after, `.cache/` aside) are the {result['changed_files']} paths "
        "given to `validate FILE...`, relative to the checkout, as pre-commit passes them. The OS page "
        "cache is warm. review: a copy of that checkout as a git repository, `main` holding it and a "
        "branch `pr` adding turns to one thread (the review reads both sides from git's objects and "
        "validates the changed thread).\n"
    )
    table = md_table(
        ["Command", "median s", "runs s", "output"],
        "lrll",
        [
            [
                COMMANDS[name].format(review_turns=result.get("review_turns", REVIEW_TURNS)),
                f"{c['median_s']:.3f}",
                ", ".join(f"{s:.2f}" for s in c["all_s"]),
                c["output"],
            ]
            for name, c in result["commands"].items()
        ],
    )
    kinds = Counter(Path(p).parent.name for p in result["changed"])
    files = ", ".join(f"{n} in `{kind}/`" for kind, n in sorted(kinds.items()))
    return "\n".join([intro, table + "\n", f"The files of the one turn: {files}.\n", _WHERE_NOTE])


_WHERE_NOTE = (
    "Where a command's time goes (`python -X importtime`, cProfile; docs/cli.md, 'Speed of the CLI'): "
    "the interpreter, typer and rich are all `--help` loads (no reader, no LangGraph); a command that "
    "runs adds the core (documents, caches, index, validation). typer is held below 0.29, which "
    "converts every command's parameters through pydantic (docs/cli.md, 'Speed of the CLI'). "
    "`threads`, `heads`, `history`, `tasks`, `validate` and `fsck` "
    "import no LangGraph (`tests/test_layers.py` fails if one does); `show`, `diff`, `render` and "
    "`export` import it to revive values. A full `validate` spends most of its time resolving and "
    "parsing every value and object file (`resolve.value_entry`, `jsonread.load_json`).\n"
)
