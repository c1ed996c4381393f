"""Property-based checks of the two promises the format rests on.

* Ids to paths (whole paths, not single segments: test_layout.py covers those): the file of
  (thread_id, checkpoint_ns, checkpoint_id) is always inside the root, one path per triple, and the
  ids can be read back from the path; a real put writes exactly that file and nothing elsewhere,
  and reading by the same ids gives it back.
* Values: whatever JsonPlusSerializer stores, RepoSaver returns exactly what InMemorySaver returns
  (InMemorySaver is the reference because the serde itself normalises some types, e.g. tuples),
  whole, as a large/ file, and as a list grown by appends.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import tempfile
import uuid
from datetime import datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from graphs import cfg, make_checkpoint
from helpers import examples
from langgraph_checkpoint_repo import InvalidWriteError, RepoSaver
from langgraph_checkpoint_repo.core.layout import (
    CHECKPOINTS,
    NAMESPACES,
    THREADS,
    Layout,
    decode_segment,
    encode_segment,
    is_hashed_segment,
)
from langgraph_checkpoint_repo.ride import writes_alone


def tuned(max_examples: int) -> settings:
    """Moderate example counts (ten times as many in the long mode), no deadline: each example
    makes real files."""
    return settings(
        max_examples=examples(max_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ids: any text without lone surrogates (JSON files cannot hold those), tricky characters weighted
TRICKY = st.sampled_from([*"aAzZ09.-_~%^/\\:|\x00 \té\u0301\U0001f600", "..", "../", ".tmp"])
ID_TEXT = st.one_of(
    st.text(max_size=30),
    st.lists(TRICKY, max_size=12).map("".join),
    st.text(min_size=110, max_size=200),  # around the length where segments become hashes
)
IDS = st.tuples(ID_TEXT, ID_TEXT, ID_TEXT.filter(bool))  # checkpoint_id "" means "latest"


def ids_of_path(root: Path, path: Path) -> tuple[str, str, str] | None:
    """(thread_id, checkpoint_ns, checkpoint_id) read back from a checkpoint path; None if hashed."""
    parts = path.relative_to(root).parts
    assert parts[0] == THREADS and parts[-2] == CHECKPOINTS and parts[-1].endswith(".json")
    segs = [parts[1], parts[-1][: -len(".json")]]
    if len(parts) == 6:
        assert parts[2] == NAMESPACES
        segs.insert(1, parts[3])
    else:
        assert len(parts) == 4
        segs.insert(1, "%")  # the root namespace "" lives in the thread folder
    if any(is_hashed_segment(s) for s in segs):
        return None
    return (decode_segment(segs[0]), decode_segment(segs[1]), decode_segment(segs[2]))


# ---------------------------------------------------------------------------
# ids to paths, through Layout
# ---------------------------------------------------------------------------
@tuned(400)
@given(IDS)
def test_checkpoint_path_is_inside_the_root_and_gives_back_its_ids(triple: tuple[str, str, str]) -> None:
    """Every part of the path is one plain segment under root/threads, and decoding gives the ids."""
    root = Path("/srv/state/.langgraph")
    layout = Layout(root)
    path = layout.checkpoint_path(*triple)
    assert os.path.normpath(path) == str(path)
    assert path.is_relative_to(root) and layout.contains(path)
    for part in path.relative_to(root).parts:
        assert part not in ("", ".", "..") and "/" not in part and "\x00" not in part
        assert len(part.encode()) <= 255 and part.isascii()
    back = ids_of_path(root, path)
    assert back is None or back == triple
    if back is None:  # hashed: the ids are kept inside the file, and the segment is the sha256
        assert any(len(encode_segment(x)) == 65 for x in triple)


@tuned(400)
@given(IDS, IDS)
def test_distinct_ids_never_share_a_checkpoint_path(a: tuple[str, str, str], b: tuple[str, str, str]) -> None:
    """Two different (thread, namespace, checkpoint) triples get two different files."""
    layout = Layout(Path("/r"))
    assert (layout.checkpoint_path(*a) == layout.checkpoint_path(*b)) == (a == b)
    assert (layout.writes_dir(*a[:2]) == layout.writes_dir(*b[:2])) == (a[:2] == b[:2])


@tuned(300)
@given(ID_TEXT, ID_TEXT.filter(bool), st.uuids())
def test_writes_file_name_gives_back_its_checkpoint(ns: str, checkpoint_id: str, unique: uuid.UUID) -> None:
    """writes/<checkpoint>~<uuid>.json: the owner read from the name is the checkpoint's segment."""
    name = Layout.writes_name(checkpoint_id, str(unique))
    assert "/" not in name and len(name.encode()) <= 255
    assert Layout.writes_owner(name) == encode_segment(checkpoint_id)


VERSIONS = st.one_of(st.text(max_size=40), st.integers(-(2**63), 2**63), st.floats(allow_nan=False))


@tuned(300)
@given(st.tuples(ID_TEXT, VERSIONS), st.tuples(ID_TEXT, VERSIONS))
def test_value_file_of_channel_and_version_is_one_per_pair(
    a: tuple[str, str | int | float], b: tuple[str, str | int | float]
) -> None:
    """values/<channel>@<version>.json: one name per (channel, version); 1, 1.0 and "1" stay apart."""
    layout = Layout(Path("/r"))
    rel_a, rel_b = layout.value_rel(*a), layout.value_rel(*b)
    assert len(PurePosixPath(rel_a).parts) == 2 and ".." not in rel_a.split("/")
    same_key = a[0] == b[0] and type(a[1]) is type(b[1]) and repr(a[1]) == repr(b[1])
    assert (rel_a == rel_b) == same_key


# ---------------------------------------------------------------------------
# ids to paths, through a real put
# ---------------------------------------------------------------------------
@tuned(60)
@given(st.lists(IDS, min_size=1, max_size=4, unique=True))
def test_put_writes_only_its_own_file_inside_the_root_and_reads_back(
    triples: list[tuple[str, str, str]],
) -> None:
    """Each put lands at Layout's path inside the root, nothing is created elsewhere, and a fresh saver
    gives every checkpoint (and its pending write) back by the same ids; list(None) finds all of them."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "a" / "root"
        saver = RepoSaver(root, durable=False)
        for n, (thread_id, ns, cid) in enumerate(triples):
            versions = {"marker": f"{n + 1:032d}.0"}
            stored = saver.put(
                cfg(thread_id, checkpoint_ns=ns),
                make_checkpoint(cid, {"marker": n}, versions),
                {"source": "loop", "step": n, "parents": {}},
                versions,
            )
            assert stored == cfg(thread_id, checkpoint_ns=ns, checkpoint_id=cid)
            with writes_alone():  # no child put follows: not waited for (ride.py)
                saver.put_writes(stored, [("marker", f"write {n}")], "task", "~path")
            assert saver.store.layout.checkpoint_path(thread_id, ns, cid).is_file()
        everything = {p for p in base.rglob("*")}
        assert {p for p in everything if not p.is_relative_to(root)} == {base / "a"}
        assert not any(p.is_symlink() for p in everything)
        checkpoint_files = {p for p in everything if p.parent.name == CHECKPOINTS}
        assert checkpoint_files == {saver.store.layout.checkpoint_path(*t) for t in triples}
        fresh = RepoSaver(root)
        for n, (thread_id, ns, cid) in enumerate(triples):
            tup = fresh.get_tuple(cfg(thread_id, checkpoint_ns=ns, checkpoint_id=cid))
            assert tup is not None
            assert tup.config == cfg(thread_id, checkpoint_ns=ns, checkpoint_id=cid)
            assert tup.checkpoint["id"] == cid and tup.checkpoint["channel_values"] == {"marker": n}
            assert tup.pending_writes == [("task", "marker", f"write {n}")]
        listed = sorted(
            (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])
            for c in (t.config["configurable"] for t in fresh.list(None))
        )
        assert listed == sorted(triples)


# ---------------------------------------------------------------------------
# values: RepoSaver returns what InMemorySaver returns
# ---------------------------------------------------------------------------
UTC_OFFSETS = st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
MESSAGES = st.one_of(
    st.builds(HumanMessage, content=st.text(max_size=20), id=st.uuids().map(str)),
    st.builds(
        AIMessage, content=st.text(max_size=20), id=st.uuids().map(str), name=st.none() | st.text(max_size=5)
    ),
    st.builds(SystemMessage, content=st.text(max_size=20)),
)
HASHABLE = st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=10))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),  # msgpack's range; beyond it see the next test
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]),
    st.text(max_size=30),
    st.text(st.sampled_from(list('$"\\\x00\n\u2028é😀𝄞')), max_size=8),  # tag-like and escape-heavy
    st.binary(max_size=30),
    st.binary(max_size=10).map(bytearray),
    st.datetimes(timezones=st.none() | UTC_OFFSETS),
    st.dates(),
    st.times(timezones=st.none() | UTC_OFFSETS),
    st.timedeltas(),
    st.uuids(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.ip_addresses(),
    st.text(st.sampled_from("ab/."), max_size=8).map(Path),
    MESSAGES,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=3).map(collections.deque),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),  # "$"-keys included
        st.dictionaries(HASHABLE, inner, max_size=3),  # non-string keys
        st.sets(HASHABLE, max_size=4),
        st.frozensets(HASHABLE, max_size=4),
    ),
    max_leaves=12,
)


def same(a: Any, b: Any, path: str = "$") -> None:
    """Equal, type for type, at every level; nan equals nan and 0.0 differs from -0.0."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), (
            path
        )
    elif isinstance(a, Decimal):
        assert str(a) == str(b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, datetime | time):
        assert a == b and a.tzinfo == b.tzinfo, f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {list(a)!r} != {list(b)!r}"
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, list | tuple | collections.deque):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, pydantic.BaseModel):
        for name in type(a).model_fields:
            same(getattr(a, name), getattr(b, name), f"{path}.{name}")
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


THREAD = "values"
V1 = "00000000000000000000000000000001.0"


def store_value(saver: RepoSaver | InMemorySaver, value: Any) -> RunnableConfig:
    """One checkpoint whose channel, metadata and pending write all carry ``value``."""
    cid = str(uuid.UUID(int=0x1EF00000000000000000000000000001))
    versions = {"value": V1}
    config = saver.put(
        cfg(THREAD, checkpoint_ns=""),
        make_checkpoint(cid, {"value": value}, versions),
        {"source": "loop", "step": 1, "parents": {}, "payload": value},
        versions,
    )
    with writes_alone():  # no child put follows: written at once, not after waiting for one (ride.py)
        saver.put_writes(config, [("value", value)], "task", "~__pregel_pull, node")
    return config


@tuned(150)
@given(VALUES, st.sampled_from([8 * 1024, 64]))
def test_any_value_reads_back_as_in_memory_saver_returns_it(value: Any, large_value_bytes: int) -> None:
    """Channel value, metadata and pending write of a fresh RepoSaver equal InMemorySaver's, types
    included, whether the value stays inline or goes to a large/ file (large_value_bytes=64)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        mem = InMemorySaver()
        config = store_value(RepoSaver(root, durable=False, large_value_bytes=large_value_bytes), value)
        assert store_value(mem, value) == config
        got, want = RepoSaver(root).get_tuple(config), mem.get_tuple(config)
        assert got is not None and want is not None
        same(got.checkpoint["channel_values"], want.checkpoint["channel_values"], "channel_values")
        same(got.metadata, want.metadata, "metadata")
        same(list(got.pending_writes or []), list(want.pending_writes or []), "pending_writes")


@tuned(60)
@given(st.one_of(st.integers(min_value=2**64), st.integers(max_value=-(2**63) - 1)), st.booleans())
def test_integer_beyond_msgpack_is_refused_by_both_and_nothing_is_written(
    big: int, nested_in_list: bool
) -> None:
    """The serde cannot store ints outside [-2**63, 2**64): InMemorySaver raises, RepoSaver raises
    InvalidWriteError naming where it was going and leaves no checkpoint file."""
    value: Any = [1, big] if nested_in_list else big
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        with pytest.raises(TypeError):
            store_value(InMemorySaver(), value)
        saver = RepoSaver(root, durable=False)
        with pytest.raises(InvalidWriteError, match="refusing to write"):
            store_value(saver, value)
        assert list(root.rglob("*.json")) == []
        assert saver.get_tuple(cfg(THREAD, checkpoint_ns="")) is None


ITEMS = st.one_of(MESSAGES, st.text(max_size=10), st.integers(-5, 5), st.floats(), st.binary(max_size=5))


@tuned(80)
@given(
    st.lists(st.lists(ITEMS, max_size=4), min_size=1, max_size=7),
    st.sampled_from([1, 2, 64]),
    st.sampled_from([8 * 1024, 64]),
)
def test_list_grown_by_appends_reads_back_at_every_step(
    chunks: list[list[Any]], snapshot_every: int, large_value_bytes: int
) -> None:
    """A channel whose list grows step by step (stored as appends onto earlier checkpoints, with
    snapshots and large/ files) reads back at every checkpoint as InMemorySaver returns it."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        repo = RepoSaver(
            root, durable=False, snapshot_every=snapshot_every, large_value_bytes=large_value_bytes
        )
        mem = InMemorySaver()
        configs = []
        log: list[Any] = []
        for step, chunk in enumerate(chunks):
            log = log + chunk
            versions = {"log": f"{step + 1:032d}.0"}
            cid = str(uuid.UUID(int=(0x1EF << 116) + step))
            for saver in (repo, mem):
                config = saver.put(
                    cfg(THREAD, checkpoint_ns=""),
                    make_checkpoint(cid, {"log": list(log)}, versions),
                    {"source": "loop", "step": step, "parents": {}},
                    versions,
                )
            configs.append(config)
        fresh = RepoSaver(root)
        for config in configs:
            got, want = fresh.get_tuple(config), mem.get_tuple(config)
            assert got is not None and want is not None
            same(got.checkpoint["channel_values"], want.checkpoint["channel_values"])
        stored_whole = [
            p for p in root.rglob("checkpoints/*.json") if '"append"' not in p.read_text(encoding="utf-8")
        ]
        assert len(stored_whole) >= 1
