"""RepoStore against LangGraph's InMemoryStore: seeded random sequences of every operation.

Each run draws operations from a seed: puts (plain JSON and values the serializer builds,
per-item ``index``, TTLs), deletes, gets, searches (prefixes, filters with every operator and
nested keys, pagination, semantic queries through a deterministic fake embedding),
``list_namespaces`` (prefix, suffix, ``*``, ``max_depth``, limit, offset), mixed batches,
the async twins, the clock moving and TTL sweeps, over odd namespace labels and keys (case,
``/``, Windows device names, ``.py``, ``~``, ``%``, 130-character labels, emoji, empty keys).
Every result must equal the reference's (tests/storeref.py: InMemoryStore plus the model of
timestamps and TTL), an exception must be the same type in both, and at checkpoints along the
way and at the end a fresh ``RepoStore`` on the files, and a fresh process
(tests/store_child.py), must read back exactly the reference's state.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from helpers import LONG
from langgraph_checkpoint_repo import RepoStore
from storeref import DIMS, Clock, Reference, dump, fake_embed, shown

CHILD = Path(__file__).with_name("store_child.py")
LABELS = [
    "users",
    "Users",
    "a/b",
    "con",
    "nul",
    "x~y",
    "%41",
    "^up",
    "-",
    "_",
    " sp ",
    "日本",
    "🙂",
    "*",
    "L" * 130,
]
KEYS = [
    "k",
    "",
    "Key",
    "a/b",
    "..",
    ".",
    "con",
    "x.tmp",
    "y.py",
    "🙂",
    "k.json",
    "~",
    "K" * 200,
    "nul.txt",
    "%",
]
WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "yuzu"]
OPS_PER_RUN = 220
# (seed, index configured, omit_expired): every mode of the store once; the long mode runs each
# mode with a second seed
RUNS = [
    (1, False, False),
    (2, True, False),
    (3, True, True),
    (4, False, True),
    *([(5, True, False), (6, False, False), (7, True, True), (8, False, True)] if LONG else []),
]
COUNTED: list[int] = []  # operations compared, over every run (the module's last test reports it)


def namespace(rng: random.Random) -> tuple[str, ...]:
    return tuple(rng.choice(LABELS) for _ in range(rng.choice([1, 1, 2, 2, 3])))


def value(rng: random.Random, plain_only: bool) -> dict[str, Any]:
    # no text twice among an item's indexed fields: InMemoryStore then pairs embeddings with
    # the wrong fields and raises ("Number of embeddings (3) does not match ..."); RepoStore
    # embeds each text once and is tested for it apart (test_store.py)
    word = rng.choice(WORDS)
    out: dict[str, Any] = {
        "n": rng.choice([rng.randint(-5, 5), rng.random() * 10 - 5]),
        "s": rng.choice(WORDS),
        "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))),
        "meta": {"n": rng.randint(0, 3), "s": word},
    }
    if rng.random() < 0.3:
        out["tags"] = rng.sample([w for w in WORDS if w != word], rng.randint(0, 3))
    if rng.random() < 0.2:
        out["flag"] = rng.choice([True, False, None])
    if rng.random() < 0.1:
        out["$dollar"] = rng.choice(WORDS)  # not plain JSON: a $map tree
    if not plain_only and rng.random() < 0.2:
        out["when"] = rng.choice([date(2024, 1, rng.randint(1, 28)), uuid.UUID(int=rng.getrandbits(128))])
        out["set"] = set(rng.sample(range(10), 3))
        out["raw"] = bytes(rng.getrandbits(8) for _ in range(4))
    return out


def a_filter(rng: random.Random) -> dict[str, Any] | None:
    choices: list[dict[str, Any] | None] = [
        None,
        None,
        None,
        None,
        {"s": rng.choice(WORDS)},
        {"n": {rng.choice(["$gt", "$gte", "$lt", "$lte"]): rng.randint(-3, 3)}},
        {"n": {"$gt": -2, "$lte": 4}},
        {"s": {"$ne": rng.choice(WORDS)}},
        {"s": {"$eq": rng.choice(WORDS)}},
        {"meta": {"n": rng.randint(0, 3)}},
        {"meta": {"n": {"$gte": 1}}, "s": {"$ne": "fig"}},
        {"tags": rng.sample(WORDS, 2)},
        {"flag": rng.choice([True, False, None])},
        {"missing": None},
    ]
    return rng.choice(choices)


def an_op(rng: random.Random, names: list[tuple[tuple[str, ...], str]], indexed: bool) -> Any:
    """One operation: most touch names already used, so reads find things."""
    if names and rng.random() < 0.6:
        ns, key = rng.choice(names)
    else:
        ns, key = namespace(rng), rng.choice(KEYS)
    kind = rng.choices(["put", "delete", "get", "search", "list", "invalid"], weights=[40, 8, 15, 25, 12, 2])[
        0
    ]
    if kind == "invalid":  # refused by both before anything happens
        return Invalid(rng.choice([(), ("a.b",), ("",), ("ok", ""), ("langgraph", "x"), ("nul\x00",)]))
    if kind == "put":
        plain = not indexed or rng.random() < 0.7
        item_value = value(rng, plain_only=indexed)
        index = rng.choice([None, None, False, ["text"], ["meta.s", "tags[*]"]]) if indexed else None
        if indexed and not plain:
            index = False
        ttl = rng.choice([None, None, None, 1.0, 5.0, 0.5])
        return PutOp(ns, key, item_value, index=index, ttl=ttl)
    if kind == "delete":
        return PutOp(ns, key, None)
    if kind == "get":
        return GetOp(ns, key, refresh_ttl=rng.random() < 0.5)
    if kind == "search":
        prefix = ns[: rng.randint(0, len(ns))]
        query = " ".join(rng.sample(WORDS, 2)) if rng.random() < 0.5 else None
        return SearchOp(
            prefix, a_filter(rng), rng.randint(1, 12), rng.randint(0, 5), query, rng.random() < 0.5
        )
    conditions = []
    if rng.random() < 0.5:
        path = list(ns[: rng.randint(1, len(ns))])
        if rng.random() < 0.3:
            path[rng.randrange(len(path))] = "*"
        conditions.append(MatchCondition("prefix", tuple(path)))
    if rng.random() < 0.3:
        conditions.append(MatchCondition("suffix", (rng.choice([ns[-1], "*"]),)))
    return ListNamespacesOp(
        tuple(conditions) or None, rng.choice([None, None, 1, 2]), rng.randint(1, 20), rng.randint(0, 3)
    )


@dataclass(frozen=True)
class Invalid:
    """A put through the public method, with a namespace LangGraph refuses."""

    namespace: tuple[str, ...]

    def call(self, store: BaseStore) -> Any:
        try:
            store.put(self.namespace, "k", {"a": 1})
        except Exception as exc:
            return ("error", type(exc).__name__)
        return ("ok", None)


def compared(results: list[Any]) -> list[Any]:
    out = []
    for r in results:
        if isinstance(r, list) and r and not isinstance(r[0], tuple):
            out.append([shown(i) for i in r])
        elif isinstance(r, list):
            out.append([list(ns) for ns in r])
        else:
            out.append(shown(r))
    return out


def fresh_view(store: RepoStore, clock: Clock) -> dict[str, Any]:
    """What a new instance on the same files reads (no cache of the writer's), refreshing nothing."""
    again = RepoStore(store.root, clock=clock, ttl=store.ttl_config, durable=False)
    items = again.search((), limit=10**9, refresh_ttl=False)
    return {"items": dump(items), "namespaces": [list(n) for n in again.list_namespaces(limit=10**9)]}


def reference_view(ref: Reference) -> dict[str, Any]:
    ref._tidy()
    items = ref.batch([SearchOp((), None, 10**9, 0, None, False)])[0]
    spaces = ref.batch([ListNamespacesOp(None, None, 10**9, 0)])[0]
    return {"items": dump(items), "namespaces": [list(n) for n in spaces]}


def run_batch(store: RepoStore, ref: Reference, ops: list[Any], rng: random.Random) -> None:
    if isinstance(ops[0], Invalid):
        assert ops[0].call(store) == ops[0].call(ref.mem) != ("ok", None), ops
        return
    expected: Any
    try:
        expected = ("ok", compared(ref.batch(ops)))
    except Exception as exc:  # the same error type from both, nothing else compared
        expected = ("error", type(exc).__name__)
    try:
        if rng.random() < 0.25:
            got: Any = ("ok", compared(asyncio.run(store.abatch(ops))))
        else:
            got = ("ok", compared(store.batch(ops)))
    except Exception as exc:
        got = ("error", type(exc).__name__)
    assert got == expected, ops


@pytest.mark.parametrize(("seed", "indexed", "omit"), RUNS)
def test_repostore_answers_every_operation_as_the_reference(
    tmp_path: Path, seed: int, indexed: bool, omit: bool
) -> None:
    rng = random.Random(seed)
    clock = Clock()
    index = {"dims": DIMS, "embed": fake_embed, "fields": ["text", "meta.s"]} if indexed else None
    if indexed and seed % 2:
        index = {"dims": DIMS, "embed": fake_embed}  # the whole value ("$")
    ttl = {"omit_expired": omit}
    store = RepoStore(tmp_path / "root", index=index, ttl=ttl, clock=clock, durable=seed % 3 == 0)  # type: ignore[arg-type]
    ref = Reference(clock, index, omit)
    names: list[tuple[tuple[str, ...], str]] = []
    done = 0
    while done < OPS_PER_RUN:
        roll = rng.random()
        if roll < 0.08:
            clock.tick(minutes=rng.choice([0.2, 0.6, 1.5, 3.0]))
            continue
        if roll < 0.11:
            assert store.sweep_ttl() == ref.sweep()
            done += 1
            continue
        ops = [an_op(rng, names, indexed) for _ in range(rng.choice([1, 1, 1, 2, 4]))]
        ops = [op for op in ops if not isinstance(op, Invalid)] or ops[:1]
        for op in ops:
            if isinstance(op, PutOp) and op.value is not None:
                names.append((op.namespace, op.key))
        run_batch(store, ref, ops, rng)
        done += len(ops)
        if done % 50 < len(ops):
            assert fresh_view(store, clock) == reference_view(ref)
    assert fresh_view(store, clock) == reference_view(ref)
    child = subprocess.run(
        [sys.executable, str(CHILD), str(store.root), clock.now.isoformat(), "1" if omit else "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    seen = json.loads(child.stdout)
    want = reference_view(ref)
    assert seen["items"] == json.loads(json.dumps(want["items"]))
    assert seen["namespaces"] == want["namespaces"]
    assert seen["gets"] == sorted((i[:5] for i in json.loads(json.dumps(want["items"]))), key=repr)
    COUNTED.append(done)


def test_the_runs_compared_what_they_say() -> None:
    """Reports the operation count (pytest -s) and fails if a run above was skipped."""
    print(f"\ndifferential: {sum(COUNTED)} operations over {len(COUNTED)} runs")
    assert len(COUNTED) == len(RUNS) and sum(COUNTED) >= OPS_PER_RUN * len(RUNS)
