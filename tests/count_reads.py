"""A fresh process's get_tuple of thread "t" and the checkpoint files it opened
(tests/test_format4.py): run in a child forked from a parent that imported this module (and
so LangGraph and the saver) once (tests/forkserver.py). The child has no saver, cache or
file of its parent's: only the imports are shared, as a new interpreter would make them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from langgraph_checkpoint_repo import RepoSaver


def count_reads(root: str, given: str) -> None:
    """Print [checkpoint files opened, length of the log channel, id read] as JSON."""
    opened: set[str] = set()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and isinstance(args[0], str) and "/checkpoints/" in args[0]:
            opened.add(args[0])

    saver = RepoSaver(Path(root))
    sys.addaudithook(hook)
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    if given != "-":
        config["configurable"]["checkpoint_id"] = given
    tup = saver.get_tuple(config)
    assert tup is not None
    print(json.dumps([len(opened), len(tup.checkpoint["channel_values"]["log"]), tup.checkpoint["id"]]))
