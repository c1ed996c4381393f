"""Hostile files: planted payloads never run, symlinks are never followed, garbage stays local."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import MessagesState
from langgraph.graph.state import CompiledStateGraph

from graphs import cfg, chat_root, line_graph
from helpers import checkpoint_files, cli, dump, load, tree
from langgraph_checkpoint_repo import FileFormatError, RepoCheckpointError, RepoSaver, UnrevivableValueError
from langgraph_checkpoint_repo.core.format.tree import tree_to_msgpack
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION

BIG_REPORT = "".join(f"line {i:05d} of a report long enough to be stored on its own\n" for i in range(300))


class ChatState(MessagesState):
    topic: str
    report: str


def build_chat(saver: RepoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Two nodes per turn append AIMessages; the first also stores a large report."""

    def first(state: ChatState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"first {len(state['messages'])}")], "report": BIG_REPORT}

    def second(state: ChatState) -> dict[str, list[BaseMessage]]:
        return {"messages": [AIMessage(content=f"second {len(state['messages'])}")]}

    return line_graph(ChatState, saver, first=first, second=second)


def make_thread(root: Path, thread_id: str = "t", turns: int = 1, *, pending: bool = True) -> RepoSaver:
    """``turns`` turns of the chat; ``pending``: then the writes of a step that stopped before
    its checkpoint, which stay a writes file (format 4 moves the others into the child)."""
    saver = RepoSaver(root)
    app = build_chat(saver)
    config = cfg(thread_id, checkpoint_ns="")
    for i in range(turns):
        extra: dict[str, Any] = {"topic": "planning"} if i == 0 else {}
        app.invoke({"messages": [HumanMessage(content=f"hello {i}")], **extra}, config)
    if pending:
        latest = saver.get_tuple(config)
        assert latest is not None
        saver.put_writes(latest.config, [("messages", [AIMessage(content="pending", id="p-1")])], "task-p")
    return saver


# ---------------------------------------------------------------------------
# (1) planted payloads
# ---------------------------------------------------------------------------
def payloads(marker: Path) -> dict[str, dict[str, Any]]:
    """Value trees that would create ``marker`` if the serde were allowed to build them."""
    return {
        "os.system": {"$type": ["os", "system"], "$args": [f"touch {marker}"]},
        "subprocess.Popen": {"$type": ["subprocess", "Popen"], "$args": [["touch", str(marker)]]},
        "builtins.eval": {"$type": ["builtins", "eval"], "$arg": f"open({str(marker)!r}, 'w').close()"},
        "os.system (method form)": {
            "$type": ["os", "system"],
            "$method": "__call__",
            "$arg": f"touch {marker}",
        },
        "subprocess.Popen (pydantic form)": {
            "$type": ["subprocess", "Popen"],
            "$pydantic": 2,
            "$fields": {"args": ["touch", str(marker)]},
            "$method": "model_validate_json",
        },
        "os.system (nested in a map)": {
            "$map": [[1, [{"ok": {"$type": ["os", "system"], "$arg": f"touch {marker}"}}]]]
        },
    }


def type_named(case: str) -> str:
    return case.split(" ")[0]


def _in_channel_value(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    holder = next(p for p in checkpoint_files(root) if "topic" in load(p).get("new_values", {}))
    doc = load(holder)
    doc["new_values"]["topic"] = {"value": {"serde": "msgpack", "json": tree}}
    dump(holder, doc)
    return holder, cfg("t", checkpoint_ns="")


def _in_pending_write(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    path = sorted((root / "threads" / "t" / "writes").glob("*.json"))[-1]
    doc = load(path)
    doc["writes"][0]["value"] = {"serde": "msgpack", "json": tree}
    dump(path, doc)
    return path, cfg("t", checkpoint_ns="", checkpoint_id=doc["checkpoint_id"])


def _in_metadata(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    path = checkpoint_files(root)[-1]
    doc = load(path)
    doc["metadata"]["note"] = tree
    dump(path, doc)
    return path, cfg("t", checkpoint_ns="")


def _in_appended_item(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    path = checkpoint_files(root)[-1]
    doc = load(path)
    doc["new_values"]["messages"]["append"]["items"].append(tree)
    dump(path, doc)
    return path, cfg("t", checkpoint_ns="")


def _in_checkpoint_extra(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    path = checkpoint_files(root)[-1]
    doc = load(path)
    doc["checkpoint"]["extra"] = {"pending_sends": tree}
    dump(path, doc)
    return path, cfg("t", checkpoint_ns="")


def _in_large_value(root: Path, tree: Any) -> tuple[Path, RunnableConfig]:
    node = {"serde": "msgpack", "json": tree}
    digest = hashlib.sha256(
        (json.dumps(node, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    ).hexdigest()
    large = root / "threads" / "t" / "large" / f"{digest}.json"
    dump(large, {"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node})
    holder = next(p for p in checkpoint_files(root) if "topic" in load(p).get("new_values", {}))
    doc = load(holder)
    doc["new_values"]["topic"] = {"value": {"large": digest}}
    dump(holder, doc)
    return holder, cfg("t", checkpoint_ns="")  # the error names the checkpoint that refers to the large file


PLANTERS: dict[str, Callable[[Path, Any], tuple[Path, RunnableConfig]]] = {
    "channel value": _in_channel_value,
    "pending write": _in_pending_write,
    "metadata": _in_metadata,
    "appended item": _in_appended_item,
    "checkpoint extra field": _in_checkpoint_extra,
    "large value file": _in_large_value,
}


@pytest.mark.parametrize("place", sorted(PLANTERS))
@pytest.mark.parametrize("case", sorted(payloads(Path("m"))))
def test_planted_type_is_refused_naming_type_and_file(
    tmp_path: Path, root: Path, place: str, case: str
) -> None:
    """A file naming a dangerous callable fails the read with UnrevivableValueError; nothing runs."""
    make_thread(root)
    marker = tmp_path / "pwned"
    planted, config = PLANTERS[place](root, payloads(marker)[case])
    for reader in (RepoSaver(root), build_chat(RepoSaver(root)).checkpointer):
        assert isinstance(reader, RepoSaver)
        with pytest.raises(UnrevivableValueError) as info:
            reader.get_tuple(config)
        assert type_named(case) in str(info.value)
        assert str(planted) in str(info.value)
        with pytest.raises(UnrevivableValueError):
            list(reader.list(config))
    assert not marker.exists()


def test_planted_payload_is_live_when_the_allowlist_is_switched_off(tmp_path: Path, root: Path) -> None:
    """Control: handed straight to a serde with allowed_msgpack_modules=True the planted tree does run, so
    the refusals above are real. A RepoSaver given that serde still refuses it: the saver's allowlist
    holds whatever the serde allows (tests/test_hardening_codeexec.py)."""
    make_thread(root)
    marker = tmp_path / "pwned"
    _in_channel_value(root, payloads(marker)["os.system"])
    dangerous = JsonPlusSerializer(allowed_msgpack_modules=True)
    with pytest.raises(UnrevivableValueError, match=r"refusing to construct os\.system"):
        RepoSaver(root, serde=dangerous).get_tuple(cfg("t", checkpoint_ns=""))
    assert not marker.exists()
    dangerous.loads_typed(("msgpack", tree_to_msgpack(payloads(marker)["os.system"])))
    assert marker.exists()


class _Reduce:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("place", ["channel value", "pending write"])
def test_planted_pickle_node_is_refused(tmp_path: Path, root: Path, place: str) -> None:
    """A base64 node claiming the pickle serde is never unpickled by the default saver."""
    make_thread(root)
    marker = tmp_path / "pwned"
    node = {"serde": "pickle", "base64": base64.b64encode(pickle.dumps(_Reduce(marker))).decode()}
    if place == "channel value":
        holder = next(p for p in checkpoint_files(root) if "topic" in load(p).get("new_values", {}))
        doc = load(holder)
        doc["new_values"]["topic"] = {"value": node}
        dump(holder, doc)
        planted, config = holder, cfg("t", checkpoint_ns="")
    else:
        planted = sorted((root / "threads" / "t" / "writes").glob("*.json"))[-1]
        doc = load(planted)
        doc["writes"][0]["value"] = node
        dump(planted, doc)
        config = cfg("t", checkpoint_ns="", checkpoint_id=doc["checkpoint_id"])
    with pytest.raises(UnrevivableValueError) as info:
        RepoSaver(root).get_tuple(config)
    assert "pickle" in str(info.value) and str(planted) in str(info.value)
    assert not marker.exists()


def test_planted_pickle_is_refused_even_with_pickle_fallback(tmp_path: Path, root: Path) -> None:
    """Repo files come from pull requests; a pickle in one must not run code even if the app allows pickle."""
    make_thread(root)
    marker = tmp_path / "pwned"
    holder = next(p for p in checkpoint_files(root) if "topic" in load(p).get("new_values", {}))
    doc = load(holder)
    node = {"serde": "pickle", "base64": base64.b64encode(pickle.dumps(_Reduce(marker))).decode()}
    doc["new_values"]["topic"] = {"value": node}
    dump(holder, doc)
    saver = RepoSaver(root, serde=JsonPlusSerializer(pickle_fallback=True))
    try:
        saver.get_tuple(cfg("t", checkpoint_ns=""))
    except UnrevivableValueError:
        pass
    assert not marker.exists()


LOADER = textwrap.dedent(
    """
    import sys
    from langgraph_checkpoint_repo import RepoSaver, UnrevivableValueError
    saver = RepoSaver(sys.argv[1])
    outcomes = []
    for config in ({"configurable": {"thread_id": "t"}}, None):
        try:
            list(saver.list(config)) if config is None else saver.get_tuple(config)
            outcomes.append("loaded")
        except UnrevivableValueError as exc:
            outcomes.append("refused: " + str(exc))
    print("evil_payload imported" if "evil_payload" in sys.modules else "evil_payload not imported")
    print("\\n".join(outcomes))
    """
)


@pytest.mark.parametrize("place", ["channel value", "metadata", "appended item"])
def test_fresh_process_that_only_loads_runs_nothing(tmp_path: Path, root: Path, place: str) -> None:
    """In a new interpreter, loading a planted type neither imports its module nor calls anything."""
    make_thread(root)
    modules = tmp_path / "modules"
    modules.mkdir()
    import_marker = tmp_path / "imported"
    (modules / "evil_payload.py").write_text(
        f"open({str(import_marker)!r}, 'w').close()\nclass Thing:\n    pass\n", encoding="utf-8"
    )
    call_marker = tmp_path / "called"
    tree = [{"$type": ["evil_payload", "Thing"], "$args": []}, payloads(call_marker)["os.system"]]
    planted, _ = PLANTERS[place](root, tree)
    script = tmp_path / "load.py"
    script.write_text(LOADER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(modules)}
    proc = subprocess.run(
        [sys.executable, str(script), str(root)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "evil_payload not imported"
    assert len(lines) == 3 and all(line.startswith("refused: ") for line in lines[1:])
    assert all(str(planted) in line for line in lines[1:])
    assert not import_marker.exists()
    assert not call_marker.exists()


# ---------------------------------------------------------------------------
# (2) symlinks
# ---------------------------------------------------------------------------
def _thread_folder(root: Path) -> Path:
    return root / "threads" / "t"


def _threads_folder(root: Path) -> Path:
    return root / "threads"


def _checkpoints_folder(root: Path) -> Path:
    return root / "threads" / "t" / "checkpoints"


def _checkpoint_file(root: Path) -> Path:
    return checkpoint_files(root)[-1]


def _writes_folder(root: Path) -> Path:
    return root / "threads" / "t" / "writes"


def _large_file(root: Path) -> Path:
    return next((root / "threads" / "t" / "large").iterdir())


SYMLINK_TARGETS: dict[str, Callable[[Path], Path]] = {
    "threads folder": _threads_folder,
    "thread folder": _thread_folder,
    "checkpoints folder": _checkpoints_folder,
    "latest checkpoint file": _checkpoint_file,
    "large value file": _large_file,
}


def move_outside(inside: Path, outside: Path) -> None:
    """Replace ``inside`` by a symlink to a copy of it outside the root, marked so leaks are visible."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(inside), str(outside))
    os.symlink(outside, inside, target_is_directory=outside.is_dir())


@pytest.mark.parametrize("what", sorted(SYMLINK_TARGETS))
def test_symlink_inside_the_root_is_not_followed_on_read(tmp_path: Path, root: Path, what: str) -> None:
    """A symlink planted in the root (pointing at real-looking state) is an error, never a source of data."""
    make_thread(root)
    inside = SYMLINK_TARGETS[what](root)
    move_outside(inside, tmp_path / "outside" / inside.name)
    with pytest.raises(FileFormatError) as info:
        RepoSaver(root).get_tuple(cfg("t", checkpoint_ns=""))
    assert "symlink" in str(info.value) or "outside the root" in str(info.value)
    with pytest.raises(FileFormatError):
        list(RepoSaver(root).list(cfg("t", checkpoint_ns="")))


def test_symlinked_writes_folder_is_not_followed(tmp_path: Path, root: Path) -> None:
    """Pending writes read through a symlinked folder are refused too."""
    make_thread(root)
    owner = load(sorted(_writes_folder(root).glob("*.json"))[0])["checkpoint_id"]
    move_outside(_writes_folder(root), tmp_path / "outside" / "writes")
    with pytest.raises(FileFormatError, match="outside the root"):
        RepoSaver(root).get_tuple(cfg("t", checkpoint_ns="", checkpoint_id=owner))


def fresh_checkpoint() -> tuple[Any, dict[str, Any], dict[str, Any]]:
    checkpoint: Any = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [HumanMessage(content="x", id="1")], "report": BIG_REPORT}
    versions = {"messages": 1, "report": 1}
    checkpoint["channel_versions"] = dict(versions)
    return checkpoint, {"source": "input", "step": -1, "parents": {}}, versions


def test_put_through_symlinked_thread_folder_is_refused(tmp_path: Path, root: Path) -> None:
    """A put to a thread whose folder leads outside raises and changes nothing out there."""
    make_thread(root)
    make_thread(root, "evil")
    outside = tmp_path / "outside" / "evil"
    move_outside(root / "threads" / "evil", outside)
    before = tree(outside)
    checkpoint, metadata, versions = fresh_checkpoint()
    with pytest.raises(RepoCheckpointError, match="outside"):
        RepoSaver(root).put(cfg("evil", checkpoint_ns=""), checkpoint, metadata, versions)
    assert tree(outside) == before


def _link_thread(root: Path, outside: Path) -> None:
    (root / "threads").mkdir(parents=True, exist_ok=True)
    os.symlink(outside, root / "threads" / "evil", target_is_directory=True)


def _link_threads(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "threads", target_is_directory=True)


def _link_cache(root: Path, outside: Path) -> None:
    os.symlink(outside, root / ".cache", target_is_directory=True)


LINKS: dict[str, Callable[[Path, Path], None]] = {
    "thread folder": _link_thread,
    "threads folder": _link_threads,
    ".cache folder": _link_cache,
}


@pytest.mark.parametrize(
    "what",
    [
        "thread folder",
        "threads folder",
        ".cache folder",
    ],
)
def test_graph_run_creates_nothing_through_a_symlink_to_an_empty_folder(
    tmp_path: Path, root: Path, what: str
) -> None:
    """A run on a thread whose folder (or the lock cache) leads to an empty outside folder writes nothing."""
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    LINKS[what](root, outside)
    try:
        build_chat(RepoSaver(root)).invoke(
            {"messages": [HumanMessage(content="hi")]}, cfg("evil", checkpoint_ns="")
        )
    except RepoCheckpointError:
        pass
    assert tree(outside) == {}


@pytest.mark.parametrize("folder", ["large", "checkpoints"])
def test_long_lived_saver_does_not_write_through_a_folder_swapped_for_a_symlink(
    tmp_path: Path, root: Path, folder: str
) -> None:
    """A folder the saver wrote to, then swapped for a symlink (as checkout does), is not written through."""
    saver = make_thread(root)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(root / "threads" / "t" / folder)
    os.symlink(outside, root / "threads" / "t" / folder, target_is_directory=True)
    checkpoint, metadata, versions = fresh_checkpoint()
    try:
        saver.put(cfg("t", checkpoint_ns=""), checkpoint, metadata, versions)
    except RepoCheckpointError:
        pass
    assert tree(outside) == {}


def test_planted_lock_symlink_does_not_truncate_its_target(tmp_path: Path, root: Path) -> None:
    """A lock file planted as a symlink to a precious file leaves that file intact."""
    make_thread(root)
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate\n", encoding="utf-8")
    os.symlink(victim, root / ".cache" / "locks" / "victim-thread.lock")
    try:
        build_chat(RepoSaver(root)).invoke(
            {"messages": [HumanMessage(content="hi")]}, cfg("victim-thread", checkpoint_ns="")
        )
    except (OSError, RepoCheckpointError):
        pass
    assert victim.read_text(encoding="utf-8") == "do not truncate\n"


# ---------------------------------------------------------------------------
# (3) garbage in one thread stays in that thread
# ---------------------------------------------------------------------------
def test_garbage_in_some_threads_does_not_stop_other_threads(root: Path) -> None:
    """Oversized, binary or misnamed files break only their own thread; the others load and continue."""
    saver = make_thread(root, "good", turns=2, pending=False)
    for name in ("huge", "binary", "misnamed", "badwrites"):
        make_thread(root, name)
    with open(checkpoint_files(root, "huge")[-1], "r+b") as fh:
        fh.truncate(300 * 1024 * 1024)  # sparse: no disk used, but over the 256 MiB limit
    checkpoint_files(root, "binary")[-1].write_bytes(os.urandom(4096))
    (root / "threads" / "misnamed" / "checkpoints" / "Not Canonical.json").write_bytes(b"{}")
    badwrites = sorted((root / "threads" / "badwrites" / "writes").glob("*.json"))
    owner = load(badwrites[0])["checkpoint_id"]
    for path in badwrites:
        path.write_bytes(b"\xff\xfe garbage")

    expected = saver.get_tuple(cfg("good", checkpoint_ns=""))
    assert expected is not None
    reader = RepoSaver(root)
    tup = reader.get_tuple(cfg("good", checkpoint_ns=""))
    assert tup is not None and tup.checkpoint == expected.checkpoint
    assert len(list(reader.list(cfg("good", checkpoint_ns="")))) == 8
    out = build_chat(reader).invoke(
        {"messages": [HumanMessage(content="third")]}, cfg("good", checkpoint_ns="")
    )
    assert [m.content for m in out["messages"]][-3:] == ["third", "first 7", "second 8"]

    with pytest.raises(FileFormatError, match="over the limit"):
        reader.get_tuple(cfg("huge", checkpoint_ns=""))
    with pytest.raises(FileFormatError, match=r"not UTF-8|invalid JSON"):
        reader.get_tuple(cfg("binary", checkpoint_ns=""))
    with pytest.raises(FileFormatError, match="bad file name"):
        reader.get_tuple(cfg("misnamed", checkpoint_ns=""))
    with pytest.raises(FileFormatError, match="not UTF-8"):
        reader.get_tuple(cfg("badwrites", checkpoint_ns="", checkpoint_id=owner))
    with pytest.raises(FileFormatError):
        list(reader.list(None))  # listing everything reports the bad files instead of hiding them


def test_stray_entry_in_threads_folder_is_reported_as_file_format_error(root: Path) -> None:
    """A person dropping README.md into threads/ gets an error naming it, like every other bad file."""
    make_thread(root)
    stray = root / "threads" / "README.md"
    stray.write_text("notes\n", encoding="utf-8")
    with pytest.raises(FileFormatError) as info:
        list(RepoSaver(root).list(None))
    assert str(stray) in str(info.value)


@pytest.mark.parametrize("name", ["values", "large", "objects", "ns"])
def test_a_file_where_the_layout_has_a_folder_is_one_problem_and_the_rest_is_checked(
    tmp_path: Path, name: str
) -> None:
    """A file named like a layout folder (``threads/<t>/large``) stopped validate and fsck with
    "Not a directory" (exit 6), or, for ``ns``, passed unseen. It is one problem naming it, and
    every other file of the root is still checked."""
    root = tmp_path / ".langgraph"
    chat_root(root, "a", turns=2)
    chat_root(root, "b", turns=2)
    planted = root / "threads" / "a" / name
    shutil.rmtree(planted, ignore_errors=True)
    planted.write_text("x\n", encoding="utf-8")
    clean = len(list(root.rglob("checkpoints/*.json")))
    # every state file, a step's own writes file too (a put_writes whose ride to the next put
    # waited in vain on a loaded machine writes one)
    files = len(list((root / "threads").rglob("*.json")))
    out = cli(root, "validate")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    assert [line for line in lines if line.startswith(str(planted))] == [
        f"{planted}: /: not a folder (the layout has the folder {name}/ here)"
    ]
    assert f"1 problem ({files} files, {clean} checkpoints)" in out.stdout + out.stderr, out.stderr
    fsck = cli(root, "fsck")
    assert fsck.returncode == 1 and str(planted) in fsck.stdout and "Not a directory" not in fsck.stderr
