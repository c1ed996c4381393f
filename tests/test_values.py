"""The JSON encoding is lossless: RepoSaver returns exactly what InMemorySaver returns.

Every test feeds the same put/put_writes inputs to a RepoSaver (on a real
folder) and to LangGraph's InMemorySaver (the reference: it keeps the serde's
msgpack bytes), then reads the RepoSaver back through a FRESH instance (no
in-process caches) and compares checkpoint, channel values, metadata, pending
writes and versions, types included.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import operator
import uuid
from collections.abc import Collection
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import pydantic
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal import _serde as langgraph_serde
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import MessagesState
from langgraph.types import Command, Interrupt, Send

from graphs import cfg, line_graph, make_checkpoint
from langgraph_checkpoint_repo import RepoSaver, UnrevivableValueError
from langgraph_checkpoint_repo.ride import writes_alone

# ----------------------------------------------------------------------
# custom types (module-level so the serde can import them back)
# ----------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: int
    y: float
    label: str = ""


@dataclasses.dataclass
class Shape:
    name: str
    points: list[Point]
    color: Color
    tags: frozenset[str] = frozenset()


class Address(pydantic.BaseModel):
    street: str
    zip_code: str | None = None


class Person(pydantic.BaseModel):
    name: str
    born: date
    address: Address
    color: Color = Color.GREEN
    scores: dict[str, float] = {}


class Unregistered:
    """A custom type nobody allowlists: must not come back as a silent dict."""

    def __init__(self, a: int = 0) -> None:
        self.a = a


@dataclasses.dataclass
class UnregisteredPoint:
    x: int
    y: int


# graph state types (registered by LangGraph when a graph is compiled with the saver)


class Mood(enum.Enum):
    CALM = "calm"
    ANGRY = "angry"


class PydState(pydantic.BaseModel):
    mood: Mood = Mood.CALM
    count: int = 0
    when: datetime | None = None
    notes: Annotated[list[str], operator.add] = []


@dataclasses.dataclass
class DcState:
    mood: Mood = Mood.CALM
    count: int = 0
    amounts: Annotated[list[Decimal], operator.add] = dataclasses.field(default_factory=list)


MOD = __name__
ALLOWLIST: list[tuple[str, ...]] = [
    (MOD, "Color"),
    (MOD, "Level"),
    (MOD, "Point"),
    (MOD, "Shape"),
    (MOD, "Address"),
    (MOD, "Person"),
]

# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------

THREAD = "thread-values"
TASK_A = "00000000-0000-0000-0000-00000000000a"
TASK_B = "00000000-0000-0000-0000-00000000000b"
V1 = "00000000000000000000000000000001.0123456789012345"
V2 = "00000000000000000000000000000002.0123456789012345"


def _savers(
    root: Path, allowlist: Collection[tuple[str, ...]] | None = ALLOWLIST, **kwargs: Any
) -> tuple[RepoSaver, InMemorySaver]:
    repo = RepoSaver(root, allowlist=allowlist, durable=False, **kwargs)
    mem = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=list(allowlist or []) or None))
    return repo, mem


def _store_value(saver: RepoSaver | InMemorySaver, value: Any) -> RunnableConfig:
    """One checkpoint whose channel, metadata and pending writes all carry ``value``."""
    base: RunnableConfig = cfg(THREAD, checkpoint_ns="")
    cid = str(uuid.UUID(int=0x1EF00000000000000000000000000001))
    versions = {"value": V1, "plain": V1}
    checkpoint = make_checkpoint(cid, {"value": value, "plain": "plain text"}, versions, input_seen=True)
    metadata: dict[str, Any] = {"source": "loop", "step": 3, "parents": {}, "payload": value}
    config = saver.put(base, checkpoint, metadata, versions)  # type: ignore[arg-type]
    with writes_alone():  # no child put follows: written at once, not after waiting for one (ride.py)
        writes = [("value", value), ("plain", [value, value])]
        saver.put_writes(config, writes, TASK_A, "~__pregel_pull, node")
        saver.put_writes(config, [("value", "other task")], TASK_B, "~__pregel_pull, other")
    return config


def _same(a: Any, b: Any, path: str = "$") -> None:
    """Deep equality that also checks types at every level and treats nan as equal to nan."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, float):
        if math.isnan(a):
            assert math.isnan(b), f"{path}: {a!r} != {b!r}"
        else:
            assert a == b and math.copysign(1, a) == math.copysign(1, b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict):
        # key ORDER is checked separately (test_dict_key_order_comes_back_sorted_as_documented)
        assert len(a) == len(b) and all(k in b for k in a), f"{path}: keys {list(a)!r} != {list(b)!r}"
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, (set, frozenset)):
        assert a == b, f"{path}: {a!r} != {b!r}"
        for x in a:
            (y,) = [y for y in b if y == x]
            _same(x, y, f"{path}{{{x!r}}}")
    elif type(a).__name__ == "ndarray" and type(a).__module__ == "numpy":
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a!r} != {b!r}"
        assert a.tobytes() == b.tobytes(), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, Decimal):
        assert str(a) == str(b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, datetime):
        assert a == b and a.tzinfo == b.tzinfo and a.utcoffset() == b.utcoffset(), f"{path}: {a!r} != {b!r}"
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, pydantic.BaseModel):
        for name in type(a).model_fields:
            _same(getattr(a, name), getattr(b, name), f"{path}.{name}")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _assert_tuples_equal(repo: CheckpointTuple | None, mem: CheckpointTuple | None) -> None:
    assert repo is not None and mem is not None
    assert repo.config == mem.config
    assert repo.parent_config == mem.parent_config
    _same(repo.checkpoint["channel_values"], mem.checkpoint["channel_values"], "channel_values")
    _same(repo.checkpoint["channel_versions"], mem.checkpoint["channel_versions"], "channel_versions")
    _same(repo.checkpoint["versions_seen"], mem.checkpoint["versions_seen"], "versions_seen")
    rest = {k: v for k, v in repo.checkpoint.items() if k != "channel_values"}
    mem_rest = {k: v for k, v in mem.checkpoint.items() if k != "channel_values"}
    _same(rest, mem_rest, "checkpoint")
    _same(repo.metadata, mem.metadata, "metadata")
    _same(list(repo.pending_writes or []), list(mem.pending_writes or []), "pending_writes")


def _roundtrip(tmp_path: Path, value: Any, **kwargs: Any) -> tuple[CheckpointTuple, CheckpointTuple]:
    """Store ``value`` in both savers; read the repo back through a fresh instance."""
    repo, mem = _savers(tmp_path / "root", **kwargs)
    config = _store_value(repo, value)
    assert _store_value(mem, value) == config
    fresh = RepoSaver(tmp_path / "root", allowlist=ALLOWLIST)
    got, want = fresh.get_tuple(config), mem.get_tuple(config)
    _assert_tuples_equal(got, want)
    assert got is not None and want is not None
    return got, want


# ----------------------------------------------------------------------
# value kinds
# ----------------------------------------------------------------------

UTC_PLUS_5_30 = timezone(timedelta(hours=5, minutes=30), "IST")

CASES: dict[str, Any] = {
    "tuples": (1, ("a", (2.5, None)), ()),
    "set": {1, 2, "three", 4.5},
    # "set with tuple member" ({1, (4, 5)}): LangGraph's hook hands it back as a list, RepoSaver as the
    # set (strict revival): tests/test_hardening_handedits.py
    "frozenset": frozenset({"a", "b", 3}),
    "empty set": set(),
    "bytes": b"\x00\x01binary\xff",
    "empty bytes": b"",
    "bytearray": bytearray(b"\x00mutable\xfe"),
    "bytes nested": {"blob": b"\xde\xad\xbe\xef", "more": [bytearray(b"x"), b""]},
    "naive datetime": datetime(2024, 2, 29, 23, 59, 59, 999999),
    "aware datetime utc": datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc),
    "aware datetime offset": datetime(1999, 12, 31, 23, 0, 1, 5, tzinfo=UTC_PLUS_5_30),
    "date": date(1, 1, 1),
    "time naive": time(23, 59, 58, 123),
    "time aware": time(1, 2, 3, tzinfo=timezone(timedelta(hours=-3))),
    "timedelta": timedelta(days=-3, seconds=7, microseconds=11),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "decimal": Decimal("-1234567890.123456789012345678901234567890"),
    "decimal special": [Decimal("NaN"), Decimal("-Infinity"), Decimal("1E+400")],
    "enum": Color.RED,
    "int enum": Level.HIGH,
    "dataclass": Point(1, 2.5, "p"),
    "nested dataclass": Shape("tri", [Point(0, 0.0), Point(1, -1.5, "b")], Color.GREEN, frozenset({"x"})),
    "pydantic v2": Person(
        name="Zoë", born=date(1990, 5, 17), address=Address(street="1 Main St"), scores={"a": 1.5}
    ),
    "non-string keys": {1: "int", 2.5: "float", (1, "a"): "tuple", None: "none", b"k": "bytes"},
    "dollar keys": {"$type": ["os", "system"], "$bytes": "not base64!", "$map": 1, "$": {"$float": "nan"}},
    "dollar keys nested": [{"a": {"$ref": "#/x"}}, {"$numpy": {"dtype": "<f8"}}, {"$ext": 3, "$data": ""}],
    "tag-like strings": ["$bytes", "$type", {"k": "$float"}],
    "floats": [0.0, -0.0, 1.5, -2.25e-308, 1.7976931348623157e308, 5e-324, 0.1 + 0.2],
    "special floats": [float("inf"), float("-inf"), float("nan"), {"n": float("nan")}],
    "large ints": [2**63 - 1, -(2**63), 2**64 - 1, 2**53 + 1, -(2**53) - 1, 0],
    "bools and none": [True, False, None, {"t": True}],
    "unicode": 'héllo wörld \u2013 ß ∑ 中文 العربية \u0000 \t\n"quoted" \\ 😀🎉 𝄞 \U0010fffd',
    "unicode keys": {"ключ": "значение", "😀": "🎉", "𝄞": ["𝄞"]},
    "human message": HumanMessage(content="hi there 😀", id="h1", name="user", additional_kwargs={"x": 1}),
    "ai message with tool calls": AIMessage(
        content="",
        id="a1",
        tool_calls=[
            {"name": "search", "args": {"q": "weather", "n": 3}, "id": "call_1", "type": "tool_call"}
        ],
        usage_metadata={"input_tokens": 3, "output_tokens": 5, "total_tokens": 8},
        response_metadata={"model": "m"},
    ),
    "tool message": ToolMessage(content="sunny", tool_call_id="call_1", id="t1", artifact={"raw": [1, 2]}),
    "system message": SystemMessage(content=[{"type": "text", "text": "be brief"}], id="s1"),
    "message list": [
        SystemMessage(content="sys", id="1"),
        HumanMessage(content="q", id="2"),
        AIMessage(content="a", id="3"),
    ],
    "send": Send("worker", {"item": (1, 2), "when": date(2020, 1, 1)}),
    "sends": [Send("a", 1), Send("b", [Point(1, 2.0)])],
    "interrupt": Interrupt(value={"question": "ok?", "options": ("y", "n")}, id="int-1"),
    "command": Command(
        goto=[Send("n", {"x": 1})], update={"k": Color.RED}, resume={"int-1": "yes"}, graph=Command.PARENT
    ),
    "command resume only": Command(resume="plain"),
    "deep nesting": {"a": [{"b": ({"c": {1: [set(), frozenset(), (b"",)]}},)}]},
    "empty containers": [[], {}, (), ""],
}


# LangGraph's serde itself (so InMemorySaver too) turns tuples into lists and nested bytearrays into
# bytes; for every other case the original comes back.
SERDE_NORMALISES = {
    "tuples",
    "bytes nested",
    "send",
    "interrupt",
    "command resume only",
    "deep nesting",
    "empty containers",
}


@pytest.mark.parametrize("name", list(CASES))
def test_value_roundtrips_like_in_memory_saver(tmp_path: Path, name: str) -> None:
    """Each kind of value comes back from the JSON files exactly as InMemorySaver returns it."""
    got, _ = _roundtrip(tmp_path, CASES[name])
    if name not in SERDE_NORMALISES:
        _same(got.checkpoint["channel_values"]["value"], CASES[name])


def test_dict_key_order_comes_back_sorted_as_documented(tmp_path: Path) -> None:
    """Files are written with sorted keys (docs/design.md "Dict key order"): dicts stay equal to what
    InMemorySaver returns, but string-keyed dicts come back in sorted key order, not insertion order."""
    value = {"zeta": 1, "alpha": {"y": 1, "x": 2}, "mid": [{"b": 0, "a": 0}]}
    got, want = _roundtrip(tmp_path, value)
    assert list(want.checkpoint["channel_values"]["value"]) == ["zeta", "alpha", "mid"]
    for revived in (
        got.checkpoint["channel_values"]["value"],
        got.metadata["payload"],
        got.pending_writes[0][2],
    ):
        assert revived == value
        assert list(revived) == ["alpha", "mid", "zeta"]
        assert list(revived["alpha"]) == ["x", "y"]
        assert list(revived["mid"][0]) == ["a", "b"]
    # non-string keys are stored as a list of pairs, so their order survives
    mixed = {3: "c", 1: "a", 2: "b"}
    got_mixed, _ = _roundtrip(tmp_path / "mixed", mixed)
    assert list(got_mixed.checkpoint["channel_values"]["value"]) == [3, 1, 2]


@pytest.mark.parametrize("name", ["pydantic v2", "nested dataclass", "message list", "unicode", "bytes"])
def test_value_roundtrips_when_stored_as_large_value_file(tmp_path: Path, root: Path, name: str) -> None:
    """Values over large_value_bytes live in content-hashed files and must stay lossless too."""
    _roundtrip(tmp_path, CASES[name], large_value_bytes=0)
    assert list((root).rglob("large/*.json")), "expected the value in a large-value file"


def test_round_trip_keeps_python_types_of_the_original(tmp_path: Path) -> None:
    """Beyond matching InMemorySaver, the revived objects have the original types and values."""
    value = {
        "set": {1, 2},
        "frozenset": frozenset({"a"}),
        "bytes": b"\x00",
        "aware": datetime(2024, 1, 1, tzinfo=UTC_PLUS_5_30),
        "naive": datetime(2024, 1, 1),
        "date": date(2024, 1, 1),
        "time": time(1, 2),
        "timedelta": timedelta(seconds=5),
        "uuid": uuid.UUID(int=7),
        "decimal": Decimal("1.10"),
        "enum": Color.GREEN,
        "intenum": Level.LOW,
        "dataclass": Point(1, 2.0),
        "pydantic": Address(street="x"),
        "keys": {1: "a", (1, 2): "b"},
        "big": 2**64 - 1,
    }
    got, _ = _roundtrip(tmp_path, value)
    revived = got.checkpoint["channel_values"]["value"]
    _same(revived, value)
    assert revived["aware"].utcoffset() == timedelta(hours=5, minutes=30)
    assert revived["naive"].tzinfo is None
    assert str(revived["decimal"]) == "1.10"
    assert revived["enum"] is Color.GREEN and revived["intenum"] is Level.LOW


@pytest.mark.parametrize(
    "versions",
    [
        {"a": 1, "b": 2},
        {"a": 1.5, "b": 2.0},
        {"a": V1, "b": V2},
        {"a": 1, "b": V2},
    ],
    ids=["int", "float", "str", "mixed"],
)
def test_channel_versions_keep_their_type(root: Path, versions: dict[str, Any]) -> None:
    """int, float and str channel versions come back as the same type and value as stored."""
    repo, mem = _savers(root)
    base: RunnableConfig = cfg(THREAD, checkpoint_ns="")
    cid = str(uuid.UUID(int=0x1EF00000000000000000000000000002))
    for saver in (repo, mem):
        checkpoint = make_checkpoint(cid, {"a": "x", "b": [1]}, versions, input_seen=True)
        saver.put(base, checkpoint, {"source": "input", "step": -1, "parents": {}}, versions)
    config: RunnableConfig = {
        "configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": cid}
    }
    got = RepoSaver(root).get_tuple(config)
    _assert_tuples_equal(got, mem.get_tuple(config))
    assert got is not None
    _same(got.checkpoint["channel_versions"], versions)


def test_growing_list_channel_stays_lossless_across_appends(root: Path) -> None:
    """A list channel stored as appended items (with a periodic snapshot) rebuilds every version exactly."""
    repo, mem = _savers(root, snapshot_every=3)
    base: RunnableConfig = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    items: list[Any] = []
    extra = [
        HumanMessage(content="one", id="1"),
        (1, 2),
        {3, 4},
        b"\x00",
        Point(1, 1.0),
        float("nan"),
        {"$k": 1},
        Color.RED,
        AIMessage(content="two", id="2"),
    ]
    configs: list[RunnableConfig] = []
    parent: dict[str, RunnableConfig] = {"repo": base, "mem": base}
    for step, item in enumerate(extra, start=1):
        items = [*items, item]
        version = f"{step:032}.0000000000000000"
        cid = str(uuid.UUID(int=0x1EF00000000000000000000000000100 + step))
        cfg = None
        for key, saver in (("repo", repo), ("mem", mem)):
            checkpoint = make_checkpoint(cid, {"items": list(items)}, {"items": version}, input_seen=True)
            meta: dict[str, Any] = {"source": "loop", "step": step, "parents": {}}
            cfg = saver.put(parent[key], checkpoint, meta, {"items": version})  # type: ignore[arg-type]
            parent[key] = cfg
        assert cfg is not None
        configs.append(cfg)
    fresh = RepoSaver(root, allowlist=ALLOWLIST)
    for cfg in configs:
        _assert_tuples_equal(fresh.get_tuple(cfg), mem.get_tuple(cfg))
    latest, mem_latest = fresh.get_tuple(base), mem.get_tuple(base)
    assert latest is not None and mem_latest is not None
    assert len(latest.checkpoint["channel_values"]["items"]) == len(extra)
    _same(latest.checkpoint["channel_values"]["items"], mem_latest.checkpoint["channel_values"]["items"])
    text = "".join(p.read_text("utf-8") for p in (root).rglob("*.json"))
    assert '"append"' in text, "expected at least one version stored as appended items"


def test_numpy_arrays_roundtrip(tmp_path: Path) -> None:
    """numpy arrays (several dtypes, shapes, Fortran order) come back equal, with dtype and shape."""
    np = pytest.importorskip("numpy")
    arrays = {
        "f8": np.arange(6, dtype="<f8").reshape(2, 3),
        "i4 fortran": np.asfortranarray(np.arange(12, dtype="<i4").reshape(3, 4)),
        "bool": np.array([True, False, True]),
        "u1 empty": np.zeros((0, 2), dtype="u1"),
        "c16": np.array([1 + 2j, -3j]),
        "nan": np.array([np.nan, np.inf, -np.inf]),
    }
    got, want = _roundtrip(tmp_path, arrays)
    for source in (got, want):
        revived = source.checkpoint["channel_values"]["value"]
        assert set(revived) == set(arrays)
        for key, arr in arrays.items():
            out = revived[key]
            assert isinstance(out, np.ndarray), key
            assert out.dtype == arr.dtype and out.shape == arr.shape, key
            assert np.array_equal(out, arr, equal_nan=arr.dtype.kind in "fc"), key
    for key in arrays:
        a = got.checkpoint["channel_values"]["value"][key]
        b = want.checkpoint["channel_values"]["value"][key]
        assert a.tobytes() == b.tobytes(), key


def test_allowlist_via_with_allowlist_equals_constructor_allowlist(tmp_path: Path, root: Path) -> None:
    """Registering custom types through with_allowlist revives them like RepoSaver(allowlist=...)."""
    value = {"shape": CASES["nested dataclass"], "person": CASES["pydantic v2"], "level": Level.HIGH}
    got, want = _roundtrip(tmp_path, value)
    config = got.config
    reader = RepoSaver(root).with_allowlist(ALLOWLIST)
    assert isinstance(reader, RepoSaver)
    _assert_tuples_equal(reader.get_tuple(config), want)


# ----------------------------------------------------------------------
# real graphs whose state types LangGraph registers
# ----------------------------------------------------------------------


STATE_ALLOWLIST: list[tuple[str, ...]] = [(MOD, "Mood"), (MOD, "PydState"), (MOD, "DcState")]


def _mood_graph(state_type: type, saver: RepoSaver) -> Any:
    def bump(state: Any) -> dict[str, Any]:
        update: dict[str, Any] = {"mood": Mood.ANGRY, "count": state.count + 1}
        if state_type is PydState:
            update["when"] = datetime(2024, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
            update["notes"] = [f"bump {state.count}"]
        else:
            update["amounts"] = [Decimal("0.1") * (state.count + 1)]
        return update

    return line_graph(state_type, saver, bump=bump)


def _run_typed_state_graph(tmp_path: Path, state_type: type, allowlist: list[tuple[str, ...]] | None) -> None:
    config = cfg(f"typed-{state_type.__name__}")
    graph = _mood_graph(state_type, RepoSaver(tmp_path / "root", durable=False, allowlist=allowlist))
    first = graph.invoke(state_type(), config)
    second = graph.invoke({"count": first["count"]}, config)
    assert second["mood"] is Mood.ANGRY and second["count"] == 2

    fresh_graph = _mood_graph(state_type, RepoSaver(tmp_path / "root", allowlist=allowlist))
    snapshot = fresh_graph.get_state(config)
    assert snapshot.values["mood"] is Mood.ANGRY
    _same(snapshot.values, second)
    if state_type is PydState:
        assert snapshot.values["notes"] == ["bump 0", "bump 1"]
        assert snapshot.values["when"] == datetime(2024, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    else:
        assert snapshot.values["amounts"] == [Decimal("0.1"), Decimal("0.2")]
        assert all(type(a) is Decimal for a in snapshot.values["amounts"])
    # the reloaded thread keeps running with the same types
    third = fresh_graph.invoke({"count": 2}, config)
    assert third["count"] == 3 and third["mood"] is Mood.ANGRY


@pytest.mark.parametrize("state_type", [PydState, DcState], ids=["pydantic", "dataclass"])
def test_graph_state_types_registered_by_compile_roundtrip_after_reload(
    tmp_path: Path, state_type: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With LANGGRAPH_STRICT_MSGPACK on, compile registers the state's types and a fresh saver reloads them.

    LangGraph reads that variable once at import, so the test flips the flag it was read into;
    compile() then really calls RepoSaver.with_allowlist with the types it collects from the schema.
    """
    monkeypatch.setattr(langgraph_serde, "STRICT_MSGPACK_ENABLED", True)
    _run_typed_state_graph(tmp_path, state_type, allowlist=None)


@pytest.mark.parametrize("state_type", [PydState, DcState], ids=["pydantic", "dataclass"])
def test_graph_state_types_with_explicit_allowlist_roundtrip_after_reload(
    tmp_path: Path, state_type: type
) -> None:
    """Registering the state's types via RepoSaver(allowlist=...) reloads them exactly too."""
    _run_typed_state_graph(tmp_path, state_type, allowlist=STATE_ALLOWLIST)


@pytest.mark.parametrize("state_type", [PydState, DcState], ids=["pydantic", "dataclass"])
def test_graph_state_types_roundtrip_in_default_environment(tmp_path: Path, state_type: type) -> None:
    """Default settings (no env var, no allowlist): compiling with the saver is enough, because the
    saver derives the calling graph's state types itself (graph_types.py)."""
    if langgraph_serde.STRICT_MSGPACK_ENABLED:
        pytest.skip("LANGGRAPH_STRICT_MSGPACK is set: this test is about the default environment")
    _run_typed_state_graph(tmp_path, state_type, allowlist=None)


# ----------------------------------------------------------------------
# refusing unregistered types, and greppable files
# ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [UnregisteredPoint(1, 2), {"nested": [Color.RED]}],
    ids=["unregistered dataclass", "enum not in this reader's allowlist"],
)
def test_unregistered_type_raises_naming_thread_checkpoint_channel_and_file(root: Path, value: Any) -> None:
    """A value of a type outside the allowlist fails loudly with a locatable message, not a silent dict."""
    writer = RepoSaver(root, durable=False)
    thread_id = "thread-unregistered"
    base: RunnableConfig = cfg(thread_id, checkpoint_ns="")
    cid = str(uuid.UUID(int=0x1EF00000000000000000000000000003))
    versions = {"secret_channel": V1, "ok": V1}
    checkpoint = make_checkpoint(cid, {"secret_channel": value, "ok": 1}, versions, input_seen=True)
    writer.put(base, checkpoint, {"source": "input", "step": -1, "parents": {}}, versions)

    reader = RepoSaver(root)
    with pytest.raises(UnrevivableValueError) as info:
        reader.get_tuple(base)
    message = str(info.value)
    assert thread_id in message
    assert cid in message
    assert "secret_channel" in message
    files = [p for p in (root).rglob("*.json") if "secret_channel" in p.read_text("utf-8")]
    assert len(files) == 1
    assert str(files[0]) in message
    type_name = type(value).__name__ if not isinstance(value, dict) else "Color"
    assert type_name in message

    # for contrast: LangGraph's serde under the same (strict) allowlist silently degrades the value
    memory = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    memory.put(base, checkpoint, {"source": "input", "step": -1, "parents": {}}, versions)
    degraded = memory.get_tuple(base)
    assert degraded is not None
    assert degraded.checkpoint["channel_values"]["secret_channel"] != value


def test_unregistered_type_in_pending_write_raises(root: Path) -> None:
    """A pending write of an unregistered type also fails loudly, naming thread, checkpoint and channel."""
    writer = RepoSaver(root, durable=False)
    base: RunnableConfig = cfg("t-w", checkpoint_ns="")
    cid = str(uuid.UUID(int=0x1EF00000000000000000000000000004))
    config = writer.put(
        base, make_checkpoint(cid, {"ok": 1}, {"ok": V1}, input_seen=True), {"step": 0}, {"ok": V1}
    )
    writer.put_writes(config, [("bad_channel", UnregisteredPoint(3, 4))], TASK_A)
    with pytest.raises(UnrevivableValueError) as info:
        RepoSaver(root).get_tuple(config)
    message = str(info.value)
    assert "'t-w'" in message and cid in message and "bad_channel" in message
    (wfile,) = (root).rglob("writes/*.json")
    assert str(wfile) in message


def test_user_message_text_appears_verbatim_in_files(root: Path) -> None:
    """State is human-readable: a grep over the root finds a user's message text exactly once."""
    needle = "Please book flight ZQ-4471 to Reykjavík 🛫 on the 3rd"

    def respond(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content="Booked.", id="ai-1")]}

    graph = line_graph(MessagesState, RepoSaver(root, durable=False), respond=respond)
    config: RunnableConfig = cfg("g")
    graph.invoke({"messages": [HumanMessage(content=needle, id="human-1")]}, config)

    hits: list[Path] = []
    for path in sorted(p for p in (root).rglob("*") if p.is_file()):
        text = path.read_bytes().decode("utf-8")
        hits.extend(path for _ in range(text.count(needle)))
    assert hits, "the user's message text is not stored verbatim anywhere under the root"
    assert all(p.suffix == ".json" for p in hits), hits
    # each message once (format 4: held by the checkpoint that introduced it)
    assert [p.parent.name for p in hits] == ["checkpoints"], hits
