"""One writer of tests/test_strict_turns.py: ``turns`` chat turns on thread ``race`` with
strict turns on; prints each turn's user text it had acknowledged, and REFUSED for each
turn the saver refused."""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
from graphs import cfg, chat_graph
from langgraph_checkpoint_repo import ConcurrentTurnError, RepoSaver

root, name, turns = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
graph = chat_graph(RepoSaver(root, durable=False, strict_turns=True))
for i in range(turns):
    text = f"{name} turn {i}"
    try:
        graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("race"))
    except ConcurrentTurnError:
        print("REFUSED", flush=True)
    else:
        print(text, flush=True)
