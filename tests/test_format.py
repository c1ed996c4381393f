"""The on-disk format: canonical bytes, schemas, refusal of bad documents, and economy of storage."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import MessagesState
from langgraph.graph.state import CompiledStateGraph
from referencing import Registry, Resource

from graphs import cfg, line_graph
from helpers import checkpoint_files, file_bytes
from langgraph_checkpoint_repo import FileFormatError, InvalidWriteError, RepoSaver, SchemaVersionError
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION

SCHEMAS_DIR = Path(__file__).resolve().parents[1] / "schemas"
KIND_OF_FOLDER = {
    "checkpoints": "checkpoint",
    "writes": "writes",
    "large": "large_value",
    "values": "value",
    "objects": "object",
}
KINDS = (*KIND_OF_FOLDER.values(), "base")


def kind_of(path: Path) -> str:
    """The kind a file's place says: in values/, a name starting with "@" is a removed
    checkpoint's bookkeeping (kind base, format 4)."""
    if path.parent.name == "values" and path.name.startswith("@"):
        return "base"
    return KIND_OF_FOLDER[path.parent.name]


TOPIC = "TOPIC-7f3a-only-once"
BIG_REPORT = "".join(f"line {i:05d}: the quarterly numbers, in full detail\n" for i in range(400))


class ChatState(MessagesState):
    topic: str
    score: float
    report: str
    report_copy: str
    notes: dict[str, Any]


def reply(who: str, state: MessagesState) -> AIMessage:
    """Deterministic text naming the turn, so a test can grep for one turn's message."""
    turn = len(state["messages"]) // 3 + 1
    return AIMessage(content=f"{who} reply in turn {turn:03d}")


def build_chat(
    saver: RepoSaver, *, large: bool = False, subgraph: bool = False
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A chat graph: two nodes per turn append AIMessages; optional large values and a subgraph."""

    def first(state: ChatState) -> dict[str, Any]:
        update: dict[str, Any] = {"messages": [reply("first", state)]}
        if large:
            update["report"] = BIG_REPORT
            update["report_copy"] = BIG_REPORT
        return update

    def second(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [reply("second", state)]}

    inner = line_graph(MessagesState, None, inner=second)
    return line_graph(ChatState, saver, first=first, second=inner if subgraph else second)


def say(app: CompiledStateGraph[Any, Any, Any, Any], thread_id: str, text: str, **extra: Any) -> None:
    app.invoke({"messages": [HumanMessage(content=text)], **extra}, cfg(thread_id))


def json_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "threads").rglob("*.json") if p.is_file())


WIDTH = 120


def canonical(doc: Any) -> bytes:
    """Sorted keys, 2-space indent, UTF-8, a final newline, and each array or object that fits
    in 120 columns (indent and key included) on one line with ", " and ": ", a reference to an
    object (``$ref``, every member a string) always (docs/format.md)."""

    def one_line(x: Any) -> str:
        return json.dumps(x, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))

    def emit(x: Any, indent: int, lead: int) -> str:
        if not isinstance(x, dict | list) or not x:
            return one_line(x)
        flat = one_line(x)
        ref = isinstance(x, dict) and "$ref" in x and all(isinstance(v, str) for v in x.values())
        if ref or indent + lead + len(flat.encode("utf-8")) <= WIDTH:
            return flat
        pad = " " * (indent + 2)
        if isinstance(x, list):
            inner = [pad + emit(v, indent + 2, 0) for v in x]
            return "[\n" + ",\n".join(inner) + "\n" + " " * indent + "]"
        keys = [(json.dumps(k, ensure_ascii=False) + ": ", k) for k in sorted(x)]
        inner = [pad + name + emit(x[k], indent + 2, len(name.encode("utf-8"))) for name, k in keys]
        return "{\n" + ",\n".join(inner) + "\n" + " " * indent + "}"

    return (emit(doc, 0, 0) + "\n").encode("utf-8")


def schema_validators() -> dict[str, Draft202012Validator]:
    """Validators built from schemas/*.json with the reference jsonschema library, not the package's."""
    docs = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in SCHEMAS_DIR.glob("*.schema.json")}
    for doc in docs.values():
        Draft202012Validator.check_schema(doc)
    registry: Registry[Any] = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc)) for doc in docs.values()
    )
    return {kind: Draft202012Validator(docs[f"{kind}.schema.json"], registry=registry) for kind in KINDS}


@pytest.fixture(scope="module")
def rich_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One root holding every kind of file: checkpoints, writes, a namespace, large and value files."""
    root = tmp_path_factory.mktemp("rich") / "root"
    saver = RepoSaver(root)
    app = build_chat(saver, large=True, subgraph=True)
    notes = {"ünïcode": "😀 é", "\ue000": 1, "\U0001d538": [1.5, None, True, -0.0], "$dollar": {"k": 2}}
    say(app, "rich", "bonjour é 😀", topic=TOPIC, score=0.25, notes=notes)
    say(app, "rich", "second turn", score=1e20)
    # a step that wrote and stopped before its checkpoint: its writes stay a file (format 4
    # moves a checkpoint's writes into its child)
    latest = saver.get_tuple(cfg("rich"))
    assert latest is not None
    saver.put_writes(latest.config, [("messages", [AIMessage(content="pending reply", id="p1")])], "task-1")
    saver.copy_thread("rich", "pruned")
    saver.prune(["pruned"])
    return root


# ---------------------------------------------------------------------------
# (1) canonical, deterministic bytes
# ---------------------------------------------------------------------------
def test_every_file_is_canonical_json(rich_root: Path) -> None:
    """Files are byte-identical to sorted-keys, 2-space, UTF-8, newline-terminated JSON."""
    files = json_files(rich_root)
    assert len(files) > 20
    for path in files:
        raw = path.read_bytes()
        assert raw == canonical(json.loads(raw.decode("utf-8"))), path


def fixed_checkpoint() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A checkpoint with fixed ids, timestamp, versions and values (a large one included)."""
    checkpoint: Any = empty_checkpoint()
    checkpoint["id"] = "1f000000-0000-6000-8000-000000000001"
    checkpoint["ts"] = "2025-01-01T00:00:00+00:00"
    checkpoint["channel_values"] = {
        "messages": [HumanMessage(content="hi é", id="m1"), AIMessage(content="hello 😀", id="m2")],
        "topic": TOPIC,
        "report": BIG_REPORT,
        "score": 0.5,
    }
    versions = {ch: f"{i:032}.0.5" for i, ch in enumerate(sorted(checkpoint["channel_values"]), start=1)}
    checkpoint["channel_versions"] = versions
    checkpoint["versions_seen"] = {"first": {"messages": versions["messages"]}}
    checkpoint["updated_channels"] = sorted(versions)
    metadata = {"source": "loop", "step": 3, "parents": {}, "run_id": "run-1"}
    return checkpoint, metadata, versions


def test_same_checkpoint_gives_identical_files_in_two_roots(tmp_path: Path) -> None:
    """Two machines putting the same checkpoint and writes produce the same bytes, so git sees no diff."""
    trees: list[dict[str, bytes]] = []
    for name in ("a", "b"):
        saver = RepoSaver(tmp_path / name)
        checkpoint, metadata, versions = fixed_checkpoint()
        config = saver.put(cfg("t", checkpoint_ns=""), checkpoint, metadata, versions)
        saver.put_writes(config, [("messages", [AIMessage(content="pending", id="m3")])], "task-1", "path-1")
        trees.append(file_bytes(tmp_path / name))
    a, b = trees

    def stable(tree: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in tree.items() if "/writes/" not in k}

    def writes(tree: dict[str, bytes]) -> list[bytes]:
        return sorted(v for k, v in tree.items() if "/writes/" in k)

    assert stable(a) == stable(b)
    assert writes(a) == writes(b) and len(writes(a)) == 1
    assert any("/large/" in k for k in a) and any("/checkpoints/" in k for k in a)


def test_replaying_a_graph_run_reproduces_every_checkpoint_file(tmp_path: Path) -> None:
    """Same checkpoints and pending writes put in the same order into a second root give the
    same checkpoint files: byte-identical but for the names of the writes files a child took
    (``parent_writes`` is keyed by each file's fresh uuid, and a replay has no task path)."""
    source = RepoSaver(tmp_path / "a")
    app = build_chat(source)
    for i in range(3):
        say(app, "t", f"turn {i}", **({"topic": TOPIC} if i == 0 else {}))
    replica = RepoSaver(tmp_path / "b")
    previous: dict[str, Any] = {}
    for tup in reversed(list(source.list(cfg("t")))):
        versions = tup.checkpoint["channel_versions"]
        new_versions = {ch: v for ch, v in versions.items() if previous.get(ch) != v}
        config = tup.parent_config or cfg("t", checkpoint_ns="")
        written = replica.put(config, tup.checkpoint, tup.metadata, new_versions)
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in tup.pending_writes or []:
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            replica.put_writes(written, writes, task_id)
        previous = dict(versions)

    def checkpoints(root: Path) -> dict[str, bytes]:
        return {k: v for k, v in file_bytes(root, cache=True).items() if "/checkpoints/" in k}

    def unnamed(raw: bytes) -> bytes:
        doc = json.loads(raw)
        records = doc.pop("parent_writes", {}).values()
        doc["parent_writes"] = sorted(json.dumps([r["task_id"], r["writes"]]) for r in records)
        return canonical(doc)

    a, b = checkpoints(tmp_path / "a"), checkpoints(tmp_path / "b")
    assert len(a) == 12
    assert {k: unnamed(v) for k, v in a.items()} == {k: unnamed(v) for k, v in b.items()}
    assert sum("parent_writes" in json.loads(v) for v in a.values()) >= 9
    same = [k for k in a if b"parent_writes" not in a[k]]
    assert same and all(a[k] == b[k] for k in same)


# ---------------------------------------------------------------------------
# (2) schema_version, kind, and the schemas themselves
# ---------------------------------------------------------------------------
def test_every_file_declares_version_and_kind_matching_its_folder(rich_root: Path) -> None:
    """Each file says what it is; a reader never has to guess from the path."""
    kinds: set[str] = set()
    for path in json_files(rich_root):
        doc = json.loads(path.read_bytes())
        assert type(doc["schema_version"]) is int and doc["schema_version"] == SCHEMA_VERSION, path
        assert doc["kind"] == kind_of(path), path
        kinds.add(doc["kind"])
    assert kinds == set(KINDS)


def test_every_file_validates_against_its_schema_independently(rich_root: Path) -> None:
    """The reference jsonschema implementation agrees every written file matches the published schema."""
    validators = schema_validators()
    seen_ns = False
    for path in json_files(rich_root):
        doc = json.loads(path.read_bytes())
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validators[doc["kind"]].iter_errors(doc)]
        assert errors == [], path
        seen_ns = seen_ns or "/ns/" in path.as_posix()
    assert seen_ns  # the subgraph's namespace files were checked too


def test_non_json_files_are_only_the_gitignore_and_locks(rich_root: Path) -> None:
    """Nothing else (temp files, caches with data) is left in the root."""
    others = {k for k in file_bytes(rich_root, cache=True) if not k.endswith(".json")}
    assert ".gitignore" in others
    assert all(k == ".gitignore" or (k.startswith(".cache/locks/") and k.endswith(".lock")) for k in others)


# ---------------------------------------------------------------------------
# (3) invalid writes are refused before touching disk
# ---------------------------------------------------------------------------
def _bad_version_list(cp: dict[str, Any], nv: dict[str, Any]) -> str:
    cp["channel_versions"]["topic"] = nv["topic"] = [1, 2]
    return "/checkpoint/channel_versions/topic"


def _bad_v(cp: dict[str, Any], nv: dict[str, Any]) -> str:
    cp["v"] = "4"
    return "/checkpoint/v"


def _bad_empty_id(cp: dict[str, Any], nv: dict[str, Any]) -> str:
    cp["id"] = ""
    return "/checkpoint_id"


def _bad_versions_seen(cp: dict[str, Any], nv: dict[str, Any]) -> str:
    cp["versions_seen"] = {"first": {"messages": None}}
    return "/checkpoint/versions_seen/first/messages"


def _bad_updated_channels(cp: dict[str, Any], nv: dict[str, Any]) -> str:
    cp["updated_channels"] = ["messages", 3]
    return "/checkpoint/updated_channels/1"


@pytest.mark.parametrize(
    "breaker", [_bad_version_list, _bad_v, _bad_empty_id, _bad_versions_seen, _bad_updated_channels]
)
def test_checkpoint_the_schema_rejects_is_refused_and_nothing_is_written(
    root: Path, breaker: Callable[[dict[str, Any], dict[str, Any]], str]
) -> None:
    """A put whose document breaks the schema raises InvalidWriteError and leaves every file as it was,
    not even the large value it carries."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    before = file_bytes(root, cache=True)
    checkpoint, metadata, versions = fixed_checkpoint()
    pointer = breaker(checkpoint, versions)
    parent = saver.get_tuple(cfg("t"))
    assert parent is not None
    with pytest.raises(InvalidWriteError) as info:
        saver.put(parent.config, checkpoint, metadata, versions)  # type: ignore[arg-type]
    assert info.value.kind == "checkpoint"
    assert info.value.pointer == pointer
    assert f"at {pointer}" in str(info.value)
    assert file_bytes(root, cache=True) == before


def test_writes_the_schema_rejects_are_refused_and_nothing_is_written(root: Path) -> None:
    """put_writes with a non-string channel raises InvalidWriteError and creates no file."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    before = file_bytes(root, cache=True)
    parent = saver.get_tuple(cfg("t"))
    assert parent is not None
    with pytest.raises(InvalidWriteError) as info:
        saver.put_writes(parent.config, [("messages", [AIMessage(content="x")]), (7, BIG_REPORT)], "task")  # type: ignore[list-item]
    assert info.value.kind == "writes"
    assert info.value.pointer == "/writes/1/channel"
    assert file_bytes(root, cache=True) == before


def test_metadata_that_cannot_be_encoded_is_refused_and_nothing_is_written(root: Path) -> None:
    """Metadata holding an object the serde cannot encode fails the put without writing anything."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    before = file_bytes(root, cache=True)
    checkpoint, metadata, versions = fixed_checkpoint()
    metadata["handle"] = object()
    parent = saver.get_tuple(cfg("t"))
    assert parent is not None
    with pytest.raises(InvalidWriteError, match=r"at /metadata: .*not msgpack serializable"):
        saver.put(parent.config, checkpoint, metadata, versions)  # type: ignore[arg-type]
    assert file_bytes(root, cache=True) == before


def test_non_json_python_value_in_checkpoint_is_an_invalid_write(root: Path) -> None:
    """A datetime where the schema wants a string is refused with InvalidWriteError like any other."""
    import datetime

    saver = RepoSaver(root)
    checkpoint, metadata, versions = fixed_checkpoint()
    checkpoint["ts"] = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    with pytest.raises(InvalidWriteError):
        saver.put(cfg("t", checkpoint_ns=""), checkpoint, metadata, versions)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# (4) hand-broken files are reported with file and pointer
# ---------------------------------------------------------------------------
Edit = Callable[[bytes], bytes]


def doc_edit(change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(raw: bytes) -> bytes:
        doc = json.loads(raw)
        change(doc)
        return canonical(doc)

    return edit


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]
        del doc[path[-1]]

    return change


def _version_of_messages(value: Any) -> Callable[[dict[str, Any]], None]:
    """Set the messages channel's version (a delta may not list channel_versions at all)."""

    def change(doc: dict[str, Any]) -> None:
        doc["checkpoint"].setdefault("channel_versions", {})["messages"] = value

    return change


def _swap_id(doc: dict[str, Any]) -> None:
    doc["checkpoint_id"] = doc["checkpoint_id"][:-1] + ("0" if doc["checkpoint_id"][-1] != "0" else "1")


BROKEN: dict[str, tuple[Edit, str, str]] = {
    "wrong type": (
        doc_edit(_version_of_messages(["x"])),
        "/checkpoint/channel_versions/messages",
        "is not of type",
    ),
    "thread_id not a string": (doc_edit(_set(["thread_id"], 7)), "/thread_id", "is not of type"),
    "unknown tag in a value": (
        doc_edit(_set(["new_values", "messages", "append", "items", 0], {"$evil": 1})),
        "/new_values/messages",
        "",
    ),
    "missing required field": (doc_edit(_delete(["metadata"])), "/", "metadata"),
    "missing nested field": (doc_edit(_delete(["checkpoint", "ts"])), "/checkpoint", "ts"),
    "wrong kind": (doc_edit(_set(["kind"], "writes")), "/kind", "expected kind"),
    "id does not match file name": (doc_edit(_swap_id), "/checkpoint_id", "does not match"),
    "invalid JSON": (lambda raw: raw[: len(raw) // 2], "/", "invalid JSON"),
    "duplicate key": (
        lambda raw: raw.replace(b'  "kind": "checkpoint",\n', b'  "kind": "checkpoint",\n' * 2, 1),
        "/",
        "duplicate key 'kind'",
    ),
    "NaN literal": (lambda raw: raw.replace(b'"step": 2', b'"step": NaN', 1), "/", "NaN is not valid JSON"),
    "Infinity literal": (lambda raw: raw.replace(b'"step": 2', b'"step": -Infinity', 1), "/", "Infinity"),
    "invalid UTF-8": (
        lambda raw: raw.replace(b'"source": "loop"', b'"source": "lo\xffop"', 1),
        "/",
        "not UTF-8",
    ),
    "not an object": (lambda raw: b"[]\n", "/", "expected a JSON object"),
    "empty file": (lambda raw: b"", "/", "invalid JSON"),
}


@pytest.mark.parametrize("reader", ["fresh", "warm"])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_hand_broken_checkpoint_raises_file_format_error_with_path_and_pointer(
    root: Path, case: str, reader: str
) -> None:
    """A broken checkpoint is reported with its file and JSON pointer, never read as None or partial state."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    path = checkpoint_files(root, "t")[-1]
    edit, pointer, fragment = BROKEN[case]
    raw = path.read_bytes()
    broken = edit(raw)
    assert broken != raw
    path.write_bytes(broken)
    reader_saver = RepoSaver(root) if reader == "fresh" else saver
    with pytest.raises(FileFormatError) as info:
        reader_saver.get_tuple(cfg("t"))
    assert info.value.path == str(path)
    assert info.value.pointer == pointer
    assert str(path) in str(info.value) and f"at {pointer}:" in str(info.value)
    assert fragment in str(info.value)


def test_broken_ancestor_of_an_append_chain_fails_the_latest_read(root: Path) -> None:
    """The latest state is built from earlier files; a broken one fails the read, no messages dropped."""
    say(build_chat(RepoSaver(root)), "t", "hello")
    holders = [
        p
        for p in json_files(root)
        if p.parent.name == "checkpoints"
        and "value" in json.loads(p.read_bytes()).get("new_values", {}).get("messages", {})
    ]
    assert len(holders) == 1  # the one full copy of the list; the rest are appends to it
    holder = holders[0]
    assert holder != checkpoint_files(root, "t")[-1]
    holder.write_bytes(
        doc_edit(_set(["new_values", "messages", "value", "json"], {"$evil": 1}))(holder.read_bytes())
    )
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t"))
    assert info.value.path == str(holder)
    assert "/new_values/messages" in info.value.pointer


def pending_writes_file(root: Path) -> None:
    """A turn, then writes of a step that stopped before its checkpoint: they stay a file (a
    checkpoint's child takes its writes files, format 4)."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    latest = saver.get_tuple(cfg("t"))
    assert latest is not None
    saver.put_writes(latest.config, [("messages", [AIMessage(content="pending", id="p1")])], "task-1")


def test_broken_writes_file_fails_the_read_of_its_checkpoint(root: Path) -> None:
    """Pending writes are part of the tuple; a broken writes file is reported, not skipped."""
    pending_writes_file(root)
    writes = sorted((root / "threads" / "t" / "writes").glob("*.json"))[0]
    owner = json.loads(writes.read_bytes())["checkpoint_id"]
    writes.write_bytes(doc_edit(_set(["writes", 0, "idx"], "zero"))(writes.read_bytes()))
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=owner))
    assert info.value.path == str(writes)
    assert info.value.pointer == "/writes/0/idx"


def test_warm_reader_sees_same_size_edit_that_keeps_mtime(root: Path) -> None:
    """Files are the truth: an edit must be seen even when the filesystem cannot date it apart."""
    saver = RepoSaver(root)
    say(build_chat(saver), "t", "hello")
    assert saver.get_tuple(cfg("t")) is not None
    path = checkpoint_files(root, "t")[-1]
    st = os.stat(path)
    raw = path.read_bytes()
    edited = raw.replace(b'"step": 2', b'"step": 9', 1)
    assert len(edited) == len(raw) and edited != raw
    path.write_bytes(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    tup = saver.get_tuple(cfg("t"))
    assert tup is not None and tup.metadata["step"] == 9


# ---------------------------------------------------------------------------
# (5) schema versions
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("folder", ["checkpoints", "writes"])
@pytest.mark.parametrize(
    ("version", "hint"),
    [
        (SCHEMA_VERSION + 1, "written by a newer release"),
        (SCHEMA_VERSION - 1, "langgraph-repo migrate"),
        (1, "langgraph-repo migrate"),
        (0, "migrate"),
    ],
)
def test_unknown_schema_version_is_refused_with_advice(
    root: Path, folder: str, version: int, hint: str
) -> None:
    """A file from another format version is refused, saying whether to upgrade or to migrate."""
    pending_writes_file(root)
    path = sorted((root / "threads" / "t" / folder).glob("*.json"))[0]
    path.write_bytes(doc_edit(_set(["schema_version"], version))(path.read_bytes()))
    owner = json.loads(path.read_bytes())["checkpoint_id"]
    with pytest.raises(SchemaVersionError) as info:
        RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=owner))
    assert info.value.path == str(path)
    assert info.value.pointer == "/schema_version"
    assert hint in str(info.value)


# ---------------------------------------------------------------------------
# (6) (7) storage economy
# ---------------------------------------------------------------------------
def files_containing(root: Path, text: str) -> set[Path]:
    needle = json.dumps(text, ensure_ascii=False).encode()
    return {p for p in json_files(root) if needle in p.read_bytes()}


def test_unchanged_channel_value_is_written_once(root: Path) -> None:
    """A channel set once (topic) is stored once; later checkpoints point at it instead of copying it."""
    saver = RepoSaver(root)
    app = build_chat(saver)
    say(app, "t", "turn one", topic=TOPIC)
    after_first_turn = set(json_files(root))
    for i in range(2, 7):
        say(app, "t", f"turn {i}")

    holders = [p for p in json_files(root) if "topic" in json.loads(p.read_bytes()).get("new_values", {})]
    assert len(holders) == 1
    holder_ref = f"checkpoints/{holders[0].name}"
    later = [json.loads(p.read_bytes()) for p in json_files(root) if p.parent.name == "checkpoints"]
    refs = {doc["values"]["topic"] for doc in later if "topic" in doc.get("values", {})}
    assert refs == {holder_ref}
    # a whole checkpoint lists the reference; a delta (format 4) only references that changed
    # since its parent, so none lists it again
    assert len([d for d in later if "topic" in d.get("values", {})]) == len(
        [d for d in later if not d.get("delta") and d["metadata"]["step"] > 0]
    )
    # every checkpoint but turn 1's input reads it (the holder, and all later ones)
    fresh = RepoSaver(root)
    topics = [t.checkpoint["channel_values"].get("topic") for t in fresh.list(cfg("t"))]
    assert topics.count(TOPIC) == 4 * 6 - 1
    # the only other copy is turn 1's input, the __start__ value; the input task's pending
    # write is in the holder, taken from its writes file (format 4)
    containing = files_containing(root, TOPIC)
    assert containing <= after_first_turn
    assert len(containing) == 2
    tup = RepoSaver(root).get_tuple(cfg("t"))
    assert tup is not None and tup.checkpoint["channel_values"]["topic"] == TOPIC


def run_turns(root: Path, turns: int, snapshot_every: int) -> list[int]:
    """Run a chat for ``turns`` turns; return the lines added by new files in each turn.

    Also checks that no existing file is ever rewritten (files are immutable by name)."""
    saver = RepoSaver(root, durable=False, snapshot_every=snapshot_every)
    app = build_chat(saver)
    seen: dict[Path, bytes] = {}
    added: list[int] = []
    for turn in range(1, turns + 1):
        say(app, "chat", f"user message in turn {turn:03d}")
        now = {p: p.read_bytes() for p in json_files(root)}
        assert all(now[p] == data for p, data in seen.items())
        added.append(sum(data.count(b"\n") for p, data in now.items() if p not in seen))
        seen = now
    return added


def message_holders(root: Path) -> dict[str, list[dict[str, Any]]]:
    bodies: dict[str, list[dict[str, Any]]] = {"value": [], "append": []}
    for p in json_files(root):
        body = json.loads(p.read_bytes()).get("new_values", {}).get("messages")
        if body is not None:
            bodies["value" if "value" in body else "append"].append(body)
    return bodies


def ordered_message_bodies(root: Path) -> list[dict[str, Any]]:
    """The messages bodies of the checkpoints, in id (time) order."""
    paths = sorted(p for p in json_files(root) if p.parent.name == "checkpoints")
    bodies = [json.loads(p.read_bytes()).get("new_values", {}).get("messages") for p in paths]
    return [b for b in bodies if b is not None]


def test_appended_messages_store_only_what_was_appended(root: Path) -> None:
    """Turn 30 adds about as many lines as turn 3, and turn 1's reply sits in one checkpoint only.

    snapshot_every is raised to 1000 so no full snapshot falls inside the 30 turns (90 appends)."""
    added = run_turns(root, 30, snapshot_every=1000)
    assert added[29] <= 1.5 * added[2], added
    text = "first reply in turn 001"
    holders = files_containing(root, text)
    # stored once (format 4: held by the checkpoint of the step that made it), referred to by
    # the appended item and the pending write
    assert [p.parent.name for p in holders] == ["checkpoints"]
    assert next(iter(holders)).read_bytes().count(json.dumps(text).encode()) == 1
    bodies = message_holders(root)
    assert len(bodies["value"]) == 1 and len(bodies["append"]) == 89
    assert all(len(b["append"]["items"]) == 1 for b in bodies["append"])
    tup = RepoSaver(root).get_tuple(cfg("chat"))
    assert tup is not None and len(tup.checkpoint["channel_values"]["messages"]) == 90


def test_default_snapshot_every_writes_one_full_copy_in_thirty_turns(root: Path) -> None:
    """With snapshot_every=64, 89 appends give exactly one extra full copy and chains never exceed 64."""
    run_turns(root, 30, snapshot_every=64)
    bodies = message_holders(root)
    assert len(bodies["value"]) == 2
    # in checkpoint order, at most 64 appends in a row (format 4 appends name no depth)
    kinds = "".join("v" if "value" in b else "a" for b in ordered_message_bodies(root))
    assert kinds.startswith("v") and max(len(run) for run in kinds.split("v")) == 64
    stored = files_containing(root, "first reply in turn 001")
    # the message is stored once (in the checkpoint that made it); the snapshot refers to it
    # through its chunks
    assert [p.parent.name for p in stored] == ["checkpoints"]
    snapshot = bodies["value"][1]["value"]
    # chunked (format 4 cuts the chunk references again from 4: the top may be one reference)
    assert list(snapshot["json"]) == ["$chunks"] and len(snapshot["json"]["$chunks"]) >= 1
    tup = RepoSaver(root).get_tuple(cfg("chat"))
    assert tup is not None and len(tup.checkpoint["channel_values"]["messages"]) == 90


# ---------------------------------------------------------------------------
# (8) large values
# ---------------------------------------------------------------------------
def test_large_value_goes_to_content_addressed_file_stored_once(root: Path) -> None:
    """A value over large_value_bytes lives in large/<sha256 of its canonical node>.json, once per thread."""
    saver = RepoSaver(root)
    app = build_chat(saver, large=True)
    say(app, "t", "one")
    say(app, "t", "two")  # sets report and report_copy to the same text again

    node = {"json": BIG_REPORT}  # format 4: a json node is msgpack's, no "serde"
    assert len(json.dumps(node)) > saver.large_value_bytes
    digest = hashlib.sha256(canonical(node)).hexdigest()
    large = sorted((root / "threads" / "t" / "large").iterdir())
    assert [p.name for p in large] == [f"{digest}.json"]
    ldoc = json.loads(large[0].read_bytes())
    assert ldoc == {"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node}

    refs = 0
    for p in json_files(root):
        doc = json.loads(p.read_bytes())
        for ch in ("report", "report_copy"):
            if ch in doc.get("new_values", {}):
                assert doc["new_values"][ch] == {"value": {"large": digest}}
                refs += 1
        records = [doc, *doc.get("parent_writes", {}).values()]  # format 4: writes in the child
        for w in [w for r in records for w in r.get("writes", [])]:
            if w["channel"] in ("report", "report_copy"):
                assert w["value"] == {"large": digest}
                refs += 1
    assert refs == 8  # 2 channels x 2 turns, in checkpoints and in pending writes
    assert files_containing(root, BIG_REPORT) == {large[0]}
    tup = RepoSaver(root).get_tuple(cfg("t"))
    assert tup is not None
    assert tup.checkpoint["channel_values"]["report"] == BIG_REPORT
    assert tup.checkpoint["channel_values"]["report_copy"] == BIG_REPORT


# ---------------------------------------------------------------------------
# (9) temp and hidden files
# ---------------------------------------------------------------------------
def test_temp_and_hidden_files_are_ignored_by_readers(root: Path) -> None:
    """Leftovers of crashed writes and OS litter (.DS_Store) never become data or errors."""
    saver = RepoSaver(root)
    app = build_chat(saver)
    say(app, "t", "hello")
    expected = saver.get_tuple(cfg("t"))
    assert expected is not None
    count = len(list(saver.list(cfg("t"))))
    tdir = root / "threads" / "t"
    garbage = b"\x00not json at all{{{"
    planted = [
        tdir / "checkpoints" / ".zzzzzzzz-ffff-ffff-ffff-ffffffffffff.json.a1b2c3.tmp",
        tdir / "checkpoints" / "zzzzzzzz.json.tmp",
        tdir / "checkpoints" / ".DS_Store",
        tdir / "writes" / f".{expected.config['configurable']['checkpoint_id']}~x.json.0f0f.tmp",
        tdir / "writes" / ".hidden.json",
        root / "threads" / ".DS_Store",
        root / "threads" / ".half-deleted.deleted.1.2.tmp" / "checkpoints" / "x.json",
        root / ".DS_Store",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(garbage)

    for reader in (saver, RepoSaver(root)):
        tup = reader.get_tuple(cfg("t"))
        assert tup is not None
        assert tup.config == expected.config
        assert tup.checkpoint == expected.checkpoint
        assert tup.pending_writes == expected.pending_writes
        assert len(list(reader.list(cfg("t")))) == count
        assert {t.config["configurable"]["thread_id"] for t in reader.list(None)} == {"t"}
    say(app, "t", "still works")
    assert len(list(saver.list(cfg("t")))) == count + 4


def test_request_scoped_metadata_is_left_out_unless_asked_for(tmp_path: Path) -> None:
    """What the Agent Server adds to every checkpoint of every run (its URL, a request id,
    versions) says which request wrote it, not what it holds: left out by default."""
    from graphs import chat_graph
    from langgraph_checkpoint_repo.saver import REQUEST_METADATA

    metadata = {k: "x" for k in REQUEST_METADATA} | {"user": "ada"}
    run = {"configurable": {"thread_id": "t"}, "metadata": metadata}
    chat_graph(RepoSaver(tmp_path / "a", durable=False)).invoke({"messages": [("user", "hi")]}, run)
    chat_graph(RepoSaver(tmp_path / "b", durable=False, keep_request_metadata=True)).invoke(
        {"messages": [("user", "hi")]}, run
    )
    for root, kept in ((tmp_path / "a", set()), (tmp_path / "b", set(REQUEST_METADATA))):
        for path in (root / "threads" / "t" / "checkpoints").glob("*.json"):
            metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"]
            assert set(metadata) & REQUEST_METADATA == kept and metadata["user"] == "ada"
