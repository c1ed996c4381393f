"""The git diff driver on 1 MB state files of every shape a pull request can give one.

``python bench/textconv_shapes.py [--size BYTES] [--runs N] [--driver CMD]`` writes one file
per shape (deep lists and objects up to the depth the file reader accepts, deep tags and
messages, a wide object, long strings, many small values, many references, many messages)
into a temporary folder, runs the driver on each as git does (a fresh process per file,
the command git-setup registers for this install, or ``--driver``), and prints the best and median
wall time of ``--runs`` runs, the view's size and whether it is the view (``ok``) or the
file printed as it is (``raw``). tests/test_textconv_bounds.py forges the same shapes.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph_checkpoint_repo.core.jsonread import MAX_JSON_DEPTH

#: the deepest towers a file the reader accepts holds (the file's own levels above them: 5)
DEPTH = MAX_JSON_DEPTH - 6
MESSAGE = ["langchain_core.messages.ai", "AIMessage"]


def checkpoint(new_values: dict[str, Any], objects: dict[str, Any] | None = None) -> dict[str, Any]:
    """A checkpoint file (format 4) holding ``new_values`` and ``objects``."""
    doc: dict[str, Any] = {
        "checkpoint": {"ts": "2026-12-01T00:00:00+00:00", "updated_channels": sorted(new_values)},
        "checkpoint_id": "1f1edd02-45ab-6bd7-8004-6ae8c8064ee3",
        "checkpoint_ns": "",
        "delta": 1,
        "kind": "checkpoint",
        "metadata": {"parents": {}, "source": "loop", "step": 4},
        "new_values": new_values,
        "parent_checkpoint_id": "1f1edd02-459a-6742-8003-5653a7d63de1",
        "schema_version": 4,
        "thread_id": "t",
        "version": "00000005.49d92179",
    }
    if objects:
        doc["objects"] = objects
    return doc


def value(tree: Any) -> dict[str, Any]:
    return {"value": {"json": tree}}


def towers(size: int, tower: Callable[[int], Any]) -> list[Any]:
    """As many towers ``DEPTH`` deep as fill ``size`` bytes."""
    one = len(json.dumps(tower(DEPTH)))
    return [tower(DEPTH) for _ in range(max(1, size // one))]


def deep_list(depth: int) -> Any:
    tree: Any = 0
    for _ in range(depth):
        tree = [tree]
    return tree


def deep_object(depth: int) -> Any:
    tree: Any = 0
    for _ in range(depth):
        tree = {"a": tree}
    return tree


def deep_tags(depth: int) -> Any:
    tree: Any = 0
    for i in range(depth // 3):
        tree = (
            {"$map": [[f"k{i}", tree]]}
            if i % 2
            else {"$type": ["langgraph.types", "Send"], "$args": ["n", tree]}
        )
    return tree


def message(content: Any, calls: list[Any] | None = None) -> dict[str, Any]:
    fields = {
        "additional_kwargs": {},
        "content": content,
        "id": None,
        "invalid_tool_calls": [],
        "name": None,
        "response_metadata": {},
        "tool_calls": calls or [],
        "type": "ai",
        "usage_metadata": None,
    }
    return {"$fields": fields, "$method": "model_validate_json", "$pydantic": 2, "$type": MESSAGE}


def deep_messages(depth: int) -> Any:
    """A message whose tool call's arguments hold a message, and so on down (4 levels each)."""
    tree: Any = message("bottom")
    for i in range(depth // 6):
        tree = message(
            f"level {i}", [{"args": {"inner": tree}, "id": f"c{i}", "name": "f", "type": "tool_call"}]
        )
    return tree


def shapes(size: int) -> dict[str, dict[str, Any]]:
    """shape -> a checkpoint file of about ``size`` bytes."""
    wide = {f"key{i:07d}": i for i in range(size // 20)}
    small = list(range(size // 7))
    refs = [{"$id": f"m{i}", "$ref": f"{i:016x}"} for i in range(size // 45)]
    held = {f"{i:016x}": message(f"message {i} " + "word " * 20) for i in range(size // 400)}
    items = [{"$id": f"m{i}", "$ref": name} for i, name in enumerate(held)]
    return {
        "deep lists": checkpoint({"deep": value(towers(size, deep_list))}),
        "deep objects": checkpoint({"deep": value(towers(size, deep_object))}),
        "deep tags": checkpoint({"deep": value(towers(size, deep_tags))}),
        "deep messages": checkpoint({"deep": value(towers(size, deep_messages))}),
        "wide object": checkpoint({"wide": value(wide)}),
        "long string": checkpoint({"text": value("x" * size)}),
        "long message": checkpoint({"messages": value([message("word " * (size // 5))])}),
        "many small values": checkpoint({"numbers": value(small)}),
        "many references": checkpoint({"messages": {"append": {"base_length": 0, "items": refs}}}),
        "many messages": checkpoint({"messages": {"append": {"base_length": 0, "items": items}}}, held),
    }


def driver_command() -> list[str]:
    """The driver's command as git-setup registers it for this install (``--view`` included)."""
    from langgraph_checkpoint_repo.cli.gitsetup import driver_command as registered

    return shlex.split(registered())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes per file (about)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--driver", help="the driver's command (default: the installed one)")
    args = parser.parse_args()
    command = shlex.split(args.driver) if args.driver else driver_command()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'shape':<18} {'file':>10} {'best s':>8} {'median s':>9} {'view':>10}")
        for name, doc in shapes(args.size).items():
            path = Path(tmp) / f"{name.replace(' ', '-')}.json"
            path.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
            times, out = [], b""
            for _ in range(args.runs):
                start = time.perf_counter()
                out = subprocess.run(
                    [*command, str(path)], capture_output=True, check=True, timeout=600
                ).stdout
                times.append(time.perf_counter() - start)
            kind = "ok" if out.startswith(b"checkpoint ") else "raw"
            size = path.stat().st_size
            best, median = min(times), statistics.median(times)
            print(f"{name:<18} {size:>10,} {best:>8.3f} {median:>9.3f} {len(out):>9,} {kind}")


if __name__ == "__main__":
    main()
