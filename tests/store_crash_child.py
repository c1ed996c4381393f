"""The process tests/test_store_crash.py kills: puts, deletes and compare-and-swap increments
through ``RepoStore(durable=True)``.

Run as ``python tests/store_crash_child.py ROOT LOG READY SEED OPS``. Before each write it logs
(fsynced) what it is about to do, and after the write returns it logs that it returned, so
the parent knows, for every item, the last value the store acknowledged and the one that may
have been in flight when the process was killed. READY is created once the store is open.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

from langgraph_checkpoint_repo import ItemChangedError, RepoStore

KEYS = 12
NAMESPACES = (("mem", "a"), ("mem", "b"), ("other",))


def main(argv: list[str]) -> int:
    root, log_path, ready, seed, ops = argv
    rng = random.Random(int(seed))
    store = RepoStore(root)  # durable: fsync of every file and folder
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log(entry: dict[str, Any]) -> None:
        os.write(fd, (json.dumps(entry) + "\n").encode())
        os.fsync(fd)

    Path(ready).touch()
    for n in range(int(ops)):
        ns = rng.choice(NAMESPACES)
        key = f"k{rng.randrange(KEYS)}"
        tag = f"{seed}-{n}"
        roll = rng.random()
        if roll < 0.15:
            log({"begin": tag, "ns": ns, "key": key, "value": None})
            store.delete(ns, key)
            log({"ack": tag})
        elif roll < 0.3:
            while True:  # an increment that must never be lost nor applied twice
                item = store.get(("counter",), "c")
                count = item.value["n"] if item else 0
                log({"begin": tag, "ns": ["counter"], "key": "c", "value": {"n": count + 1}})
                try:
                    store.put(
                        ("counter",), "c", {"n": count + 1}, if_updated_at=item.updated_at if item else None
                    )
                except ItemChangedError:
                    log({"ack": tag, "refused": True})
                    continue
                log({"ack": tag})
                break
        else:
            value = {"tag": tag, "pad": "x" * rng.randrange(4000)}
            log({"begin": tag, "ns": ns, "key": key, "value": value})
            store.put(ns, key, value)
            log({"ack": tag})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
