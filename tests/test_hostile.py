"""Hostile files: every broken file is reported by name, by the saver and by `langgraph-repo validate`,
and breaks only its own thread.

One root holds a healthy thread ("good") and one thread per hostile case, each made by a real graph
and then damaged by mutating the files the saver wrote (never by writing documents by hand, so the
cases follow the format as it changes). Each case is checked three ways: a fresh saver's
``get_tuple`` / ``list`` and a graph run on the damaged thread raise an error naming the file;
``validate`` (a subprocess, as a person or a hook runs it) exits 1 with one line naming the file and
the JSON pointer; and the healthy thread still loads and runs with all the damage present.
test_safety.py covers planted constructors and symlinks in the common places; this file adds the
places it does not (a base64 msgpack node, a ``values/`` file, single symlinked files).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint

from graphs import BIG_TEXT, big_graph, cfg, chat_graph, question, relay_graph
from helpers import checkpoints, cli, load, rewrite, writes_files
from langgraph_checkpoint_repo import (
    FileFormatError,
    MissingReferenceError,
    RepoCheckpointError,
    RepoSaver,
    UnrevivableValueError,
)
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION
from langgraph_checkpoint_repo.core.jsonread import MAX_FILE_BYTES, parse_strict
from langgraph_checkpoint_repo.core.layout import Layout

JUNK_BYTES = 60 * 1024 * 1024  # "oversized": well past any real checkpoint, under the 256 MiB read limit


# ---------------------------------------------------------------------------
# helpers: real files of a thread
# ---------------------------------------------------------------------------
def document_large(tdir: Path) -> tuple[Path, Path]:
    """The checkpoint that introduced the big "document" channel, and the large/ file holding it."""
    for path in checkpoints(tdir):
        body = load(path)["new_values"].get("document")
        if body is not None:
            return path, tdir / "large" / f"{body['value']['large']}.json"
    raise AssertionError(f"no large document in {tdir}")


def replace_once(path: Path, old: bytes, new: bytes) -> None:
    raw = path.read_bytes()
    assert old in raw, f"{old!r} not in {path}"
    path.write_bytes(raw.replace(old, new, 1))


def sub_once(path: Path, pattern: bytes, new: bytes) -> None:
    raw = path.read_bytes()
    changed, n = re.subn(pattern, new, raw, count=1)
    assert n == 1, f"{pattern!r} not in {path}"
    path.write_bytes(changed)


def later_id(cid: str) -> str:
    """A checkpoint id that sorts after ``cid`` and after every id the saver made before it."""
    return cid + "z"


def nested(depth: int) -> Any:
    tree: Any = "x"
    for _ in range(depth):
        tree = [tree]
    return tree


def msgpack_system_call(marker: Path) -> str:
    """Base64 msgpack that asks the serde for os.system(f"touch {marker}")."""
    ext = ormsgpack.Ext(0, ormsgpack.packb(["os", "system", f"touch {marker}"]))
    return base64.b64encode(ormsgpack.packb([ext])).decode()


# ---------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Planted:
    """What a case damaged, and how each reader must report it."""

    saver_names: Path  # the file the saver's error must name
    saver_says: str  # regex the saver's error must match
    validate_path: Path  # the file validate's line must start with
    validate_pointer: str  # the JSON pointer on that line
    validate_says: str  # regex the rest of the line must match


Mutation = Callable[[Path], Planted]


def at_latest(change: Callable[[Path], None], says: str, pointer: str = "/") -> Mutation:
    """Damage the latest checkpoint file; both readers name it and the pointer."""

    def mutate(tdir: Path) -> Planted:
        path = checkpoints(tdir)[-1]
        change(path)
        return Planted(path, says, path, pointer, says)

    return mutate


def at_message_object(change: Callable[[Path], None], says: str, pointer: str = "/") -> Mutation:
    """Damage the file holding the newest message (format 4: the checkpoint that introduced it,
    in its ``objects``)."""

    def mutate(tdir: Path) -> Planted:
        words = (b'"objects"', b'"content": ')
        held = [p for p in checkpoints(tdir) if all(w in p.read_bytes() for w in words)]
        path = held[-1]
        change(path)
        return Planted(path, says, path, pointer, says)

    return mutate


def _junk(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.write(b'{"kind": "checkpoint", ')
        chunk = os.urandom(1024 * 1024)
        for _ in range(JUNK_BYTES // len(chunk)):
            fh.write(chunk)


def _sparse_over_limit(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used


def _doc(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda path: rewrite(path, change)


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc.__setitem__(key, value)


def _deep_wrong_type(doc: dict[str, Any]) -> None:
    doc["new_values"]["messages"] = nested(300)  # a body must be an object


def _missing_value_checkpoint(tdir: Path) -> Planted:
    """The checkpoint holding the full message list is gone; later ones append onto it, and
    (format 4) the next one holds only what changed since it: named as its missing parent."""
    files = checkpoints(tdir)
    holder = next(p for p in files if "value" in load(p)["new_values"].get("messages", {}))
    child = next(p for p in files if load(p)["parent_checkpoint_id"] == holder.stem)
    holder.unlink()
    return Planted(
        child,
        f"{re.escape(holder.stem)}, which is missing",
        child,
        "/parent_checkpoint_id",
        f"{re.escape(holder.stem)}, which is missing",
    )


def _missing_value_file(tdir: Path) -> Planted:
    """/values names the channel's values/ file (as after a prune), which is not there."""
    latest = checkpoints(tdir)[-1]
    doc = load(latest)
    # format 4: a channel in new_values is at the file's "version" unless listed
    version = doc["checkpoint"].get("channel_versions", {}).get("messages", doc.get("version"))
    rel = Layout(tdir).value_rel("messages", version)

    def change(d: dict[str, Any]) -> None:
        d["checkpoint"].setdefault("channel_versions", {})["messages"] = version
        d.setdefault("values", {})["messages"] = rel
        del d["new_values"]["messages"]

    rewrite(latest, change)
    return Planted(tdir / rel, "missing", latest, "/values/messages", f"{re.escape(rel)}.*missing")


def _missing_large(tdir: Path) -> Planted:
    holder, big = document_large(tdir)
    big.unlink()
    return Planted(
        holder, f"large value {re.escape(str(big))} is missing", holder, "/values/document", "missing"
    )


def _large_edited(tdir: Path) -> Planted:
    _, big = document_large(tdir)
    replace_once(big, b"0123456789abcdef", b"0123456789ABCDEF")
    return Planted(big, "does not match its sha256", big, "/sha256", "does not match its sha256")


def _large_truncated(tdir: Path) -> Planted:
    _, big = document_large(tdir)
    big.write_bytes(big.read_bytes()[:100])
    return Planted(big, "invalid JSON", big, "/", "invalid JSON")


def _checkpoint_renamed(tdir: Path) -> Planted:
    """A copy of the latest checkpoint under a later id: its name no longer matches its contents."""
    latest = checkpoints(tdir)[-1]
    copy = latest.with_name(later_id(latest.stem) + ".json")
    shutil.copyfile(latest, copy)
    return Planted(copy, "does not match", copy, "/checkpoint_id", "does not match the file name")


def _writes_renamed(tdir: Path) -> Planted:
    """A writes file moved to the latest checkpoint's name: its checkpoint_id says otherwise."""
    latest = checkpoints(tdir)[-1]
    source = writes_files(tdir)[0]
    moved = source.with_name(f"{latest.stem}~{source.name.split('~', 1)[1]}")
    source.rename(moved)
    return Planted(moved, "do not match", moved, "/checkpoint_id", "does not match the file name")


def _thread_moved(tdir: Path) -> Planted:
    """The folder of another thread renamed to this one: every file names the other thread."""
    latest = checkpoints(tdir)[-1]
    for path in (*checkpoints(tdir), *writes_files(tdir)):
        rewrite(path, _set("thread_id", "someone-else"))
    return Planted(latest, "does not match", latest, "/thread_id", "does not match its folder")


CASES: dict[str, tuple[str, Mutation]] = {
    # oversized and undecodable
    "junk-60mb": ("chat", at_latest(_junk, "not UTF-8")),
    "over-size-limit": ("chat", at_latest(_sparse_over_limit, "over the limit")),
    "invalid-utf8": (
        "chat",
        at_latest(lambda p: replace_once(p, b'"source": "loop"', b'"source": "lo\xffop"'), "not UTF-8"),
    ),
    # not JSON
    "invalid-json": (
        "chat",
        at_latest(
            lambda p: replace_once(p, b'"kind": "checkpoint",', b'"kind": "checkpoint"'), "invalid JSON"
        ),
    ),
    "truncated-json": ("chat", at_latest(lambda p: p.write_bytes(p.read_bytes()[:-40]), "invalid JSON")),
    "empty-file": ("chat", at_latest(lambda p: p.write_bytes(b""), "invalid JSON")),
    "duplicate-key": (
        "chat",
        at_latest(
            lambda p: replace_once(p, b'  "kind": "checkpoint",\n', b'  "kind": "checkpoint",\n' * 2),
            "duplicate key 'kind'",
        ),
    ),
    "duplicate-key-in-value": (
        "chat",
        at_message_object(
            lambda p: replace_once(p, b'"content": ', b'"content": "planted",\n"content": '),
            "duplicate key 'content'",
        ),
    ),
    # orjson keeps the last of two keys; read fast only when the ':' count proves none was
    # dropped (jsonread._parse_plain): here the kept value's \u003a (a ':') would balance it
    "duplicate-key-balanced-by-an-escaped-colon": (
        "chat",
        at_latest(
            lambda p: replace_once(
                p, b'  "kind": "checkpoint",\n', b'  "kind": "checkpoint",\n  "kind": "\\u003a",\n'
            ),
            "duplicate key 'kind'",
        ),
    ),
    "nan-literal": ("chat", at_latest(lambda p: sub_once(p, rb'"step": \d+', b'"step": NaN'), "NaN")),
    "infinity-literal": (
        "chat",
        at_latest(lambda p: sub_once(p, rb'"step": \d+', b'"step": -Infinity'), "Infinity"),
    ),
    "overflowing-number": (
        "chat",
        at_latest(lambda p: sub_once(p, rb'"step": \d+', b'"step": 1e999'), "1e999.*not valid JSON"),
    ),
    "huge-integer-literal": (
        "chat",
        at_latest(lambda p: sub_once(p, rb'"step": \d+', b'"step": 1' + b"0" * 5000), "invalid JSON.*digits"),
    ),
    "nested-100k-deep": (
        "chat",
        at_latest(
            lambda p: sub_once(p, rb'"step": \d+', b'"step": ' + b"[" * 100_000 + b"]" * 100_000),
            "nested too deeply",
        ),
    ),
    # refused on read, before the schema (whose validator's own limit moves between versions)
    "nested-300-deep-wrong-type": (
        "chat",
        at_latest(_doc(_deep_wrong_type), "nested deeper than a file can hold"),
    ),
    # valid JSON, wrong types for known fields
    "metadata-a-list": (
        "chat",
        at_latest(_doc(_set("metadata", ["step", 1])), "is not of type", "/metadata"),
    ),
    "step-a-string": (
        "chat",
        at_latest(_doc(lambda d: d["metadata"].__setitem__("step", "3")), "is not of type", "/metadata/step"),
    ),
    "parents-a-list": (
        "chat",
        at_latest(
            _doc(lambda d: d["metadata"].__setitem__("parents", [])), "is not of type", "/metadata/parents"
        ),
    ),
    "schema-version-a-string": (
        "chat",
        at_latest(_doc(_set("schema_version", str(SCHEMA_VERSION))), "not an integer", "/schema_version"),
    ),
    "schema-version-a-bool": (
        "chat",
        at_latest(_doc(_set("schema_version", True)), "not an integer", "/schema_version"),
    ),
    "parent-a-number": (
        "chat",
        at_latest(_doc(_set("parent_checkpoint_id", 7)), "is not of type", "/parent_checkpoint_id"),
    ),
    "values-a-list": ("chat", at_latest(_doc(_set("values", [])), "is not of type", "/values")),
    # references to files that are not there
    "missing-value-checkpoint": ("chat", _missing_value_checkpoint),
    "missing-value-file": ("chat", _missing_value_file),
    "missing-large-file": ("big", _missing_large),
    "large-file-edited": ("big", _large_edited),
    "large-file-truncated": ("big", _large_truncated),
    # names that do not match contents
    "checkpoint-renamed": ("chat", _checkpoint_renamed),
    "writes-renamed": ("pending", _writes_renamed),
    "thread-folder-of-another-thread": ("chat", _thread_moved),
}


def run_graph(kind: str, saver: RepoSaver, thread_id: str) -> Any:
    if kind == "big":
        return big_graph(saver).invoke({"document": BIG_TEXT}, cfg(thread_id))
    chat = chat_graph(saver)
    for word in ("hello", "again"):
        out = chat.invoke({"messages": [HumanMessage(content=word)]}, cfg(thread_id))
    if kind == "pending":  # writes that came after their checkpoint had a child: a file stays
        latest = saver.get_tuple(cfg(thread_id))
        assert latest is not None and latest.parent_config is not None
        saver.put_writes(latest.parent_config, [("messages", [HumanMessage(content="late")])], "task-1")
    return out


@dataclass
class Hostile:
    root: Path
    planted: dict[str, Planted]
    good: CheckpointTuple


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    """One root: thread "good" and one damaged thread per case, all made by real graphs."""
    root = tmp_path_factory.mktemp("hostile") / "root"
    saver = RepoSaver(root, durable=False)
    run_graph("chat", saver, "good")
    good = saver.get_tuple(cfg("good"))
    assert good is not None
    planted = {}
    for name, (kind, mutate) in CASES.items():
        run_graph(kind, saver, name)
        planted[name] = mutate(root / "threads" / name)
    return Hostile(root, planted, good)


@pytest.fixture(scope="module")
def validate_lines(hostile: Hostile) -> list[str]:
    """`langgraph-repo validate` over the whole damaged root, run once (from "/" so paths are absolute)."""
    proc = cli(hostile.root, "validate", cwd="/")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert proc.stderr.startswith(f"{len(lines)} problems ("), proc.stderr
    return lines


def assert_good_thread_loads_and_runs(saver: RepoSaver, expected: CheckpointTuple) -> None:
    tup = saver.get_tuple(cfg("good"))
    assert tup is not None and tup.checkpoint == expected.checkpoint
    assert next(iter(saver.list(cfg("good")))).checkpoint["id"] == expected.checkpoint["id"]


# ---------------------------------------------------------------------------
# each case, through the saver
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_file_fails_the_saver_with_an_error_naming_it(hostile: Hostile, case: str) -> None:
    """get_tuple, list and a graph run on the damaged thread raise the package's error, naming the file;
    the same saver then still serves the healthy thread."""
    planted = hostile.planted[case]
    saver = RepoSaver(hostile.root)
    with pytest.raises(RepoCheckpointError) as info:
        saver.get_tuple(cfg(case))
    message = str(info.value)
    assert str(planted.saver_names) in message
    assert re.search(planted.saver_says, message), message
    assert "\n" not in message.strip()
    with pytest.raises(RepoCheckpointError, match=re.escape(str(planted.saver_names))):
        list(saver.list(cfg(case)))
    with pytest.raises(RepoCheckpointError, match=re.escape(str(planted.saver_names))):
        run_graph(CASES[case][0], saver, case)
    assert_good_thread_loads_and_runs(saver, hostile.good)


# ---------------------------------------------------------------------------
# each case, through `langgraph-repo validate`
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_file_is_one_validate_line_naming_file_and_pointer(
    hostile: Hostile, validate_lines: list[str], case: str
) -> None:
    """validate exits 1 (checked once for the root) and reports the case as `file: pointer: message`."""
    planted = hostile.planted[case]
    prefix = f"{planted.validate_path}: {planted.validate_pointer}: "
    mine = [line for line in validate_lines if line.startswith(prefix)]
    assert any(re.search(planted.validate_says, line[len(prefix) :]) for line in mine), (
        prefix,
        [line for line in validate_lines if f"/threads/{case}/" in line],
    )


def test_validate_reports_nothing_in_the_healthy_thread(hostile: Hostile, validate_lines: list[str]) -> None:
    """Every problem line belongs to a damaged thread; every damaged thread has at least one."""
    by_thread = {line.split("/threads/", 1)[1].split("/", 1)[0] for line in validate_lines}
    assert "good" not in by_thread
    assert set(CASES) <= by_thread
    assert all(line.startswith(str(hostile.root)) for line in validate_lines)


# ---------------------------------------------------------------------------
# all the damage at once does not stop the healthy thread
# ---------------------------------------------------------------------------
def test_healthy_thread_loads_and_runs_beside_every_hostile_case(hostile: Hostile) -> None:
    """With every damaged thread in the same root, "good" reads back as written and a graph continues it."""
    saver = RepoSaver(hostile.root)
    for case in sorted(CASES):  # touch every damaged thread first: nothing it leaves behind may leak
        with pytest.raises(RepoCheckpointError):
            saver.get_tuple(cfg(case))
    assert_good_thread_loads_and_runs(saver, hostile.good)
    out = chat_graph(saver).invoke({"messages": [HumanMessage(content="still here?")]}, cfg("good"))
    assert [m.content for m in out["messages"]] == [
        "hello",
        "echo: hello",
        "again",
        "echo: again",
        "still here?",
        "echo: still here?",
    ]
    assert next(iter(RepoSaver(hostile.root).list(cfg("good")))).config["configurable"]["thread_id"] == "good"


# ---------------------------------------------------------------------------
# damage the saver tolerates by design; validate still reports it
# ---------------------------------------------------------------------------
def _chat_thread(root: Path, thread_id: str) -> Path:
    """Two chat turns, and a writes file (format 4 keeps only late ones as files)."""
    run_graph("pending", RepoSaver(root, durable=False), thread_id)
    return root / "threads" / thread_id


def test_missing_parent_of_a_delta_is_an_error_naming_both_and_one_validate_line(root: Path) -> None:
    """A deleted middle checkpoint (format 4): the checkpoints after it hold only what changed
    since their parent, down to the next whole one, so reading them is a MissingReferenceError
    naming the file, the missing parent and where prune would have kept its bookkeeping; the
    checkpoints before it still read, and validate names the file that needs it."""
    tdir = _chat_thread(root, "holey")
    files = checkpoints(tdir)
    gone = files[-3]
    child = next(p for p in files if load(p)["parent_checkpoint_id"] == gone.stem)
    assert load(child).get("delta")
    gone.unlink()
    saver = RepoSaver(root)
    with pytest.raises(MissingReferenceError) as info:
        saver.get_tuple(cfg("holey", checkpoint_id=child.stem))
    assert info.value.path == str(child) and gone.stem in str(info.value)
    assert f"values/@{gone.stem}.json" in str(info.value)
    assert saver.get_tuple(cfg("holey", checkpoint_id=files[0].stem)) is not None
    proc = cli(root, "validate", cwd="/")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert any(line.startswith(f"{child}: /parent_checkpoint_id: ") for line in lines), lines


def test_writes_of_a_missing_checkpoint_are_ignored_by_the_saver_and_reported_by_validate(
    root: Path,
) -> None:
    """A writes file whose checkpoint does not exist changes no read; validate names it as orphaned."""
    run_graph("pending", RepoSaver(root, durable=False), "orphans")  # leaves a writes file
    tdir = root / "threads" / "orphans"
    expected = RepoSaver(root).get_tuple(cfg("orphans"))
    source = writes_files(tdir)[0]
    ghost = later_id(checkpoints(tdir)[-1].stem)
    orphan = source.with_name(f"{ghost}~{source.name.split('~', 1)[1]}")
    shutil.copyfile(source, orphan)
    rewrite(orphan, _set("checkpoint_id", ghost))
    saver = RepoSaver(root)
    assert saver.get_tuple(cfg("orphans")) == expected
    assert saver.get_tuple(cfg("orphans", checkpoint_id=ghost)) is None
    proc = cli(root, "validate", cwd="/")
    assert proc.returncode == 1
    (line,) = proc.stdout.splitlines()
    assert line.startswith(f"{orphan}: /checkpoint_id: writes of checkpoint {ghost}, which does not exist")


def test_sixty_megabyte_valid_checkpoint_is_read_like_the_small_one(root: Path) -> None:
    """Size alone is not an error under the limit: a checkpoint padded to 60 MB of whitespace reads back
    the same state, and the next graph turn continues from it."""
    tdir = _chat_thread(root, "padded")
    expected = RepoSaver(root).get_tuple(cfg("padded"))
    latest = checkpoints(tdir)[-1]
    raw = latest.read_bytes()
    latest.write_bytes(raw[:-2] + b" " * JUNK_BYTES + raw[-2:])
    assert latest.stat().st_size > JUNK_BYTES
    saver = RepoSaver(root)
    assert saver.get_tuple(cfg("padded")) == expected
    out = chat_graph(saver).invoke({"messages": [HumanMessage(content="big")]}, cfg("padded"))
    assert out["messages"][-1].content == "echo: big"


@pytest.mark.parametrize("where", ["metadata", "channel value"])
def test_value_nested_deeper_than_the_stack_is_refused_naming_the_file(root: Path, where: str) -> None:
    """A tree 600 levels deep is refused with an error naming the file, not a RecursionError from
    inside the codec: the read refuses a file nested past the depth JSON is written at (254), on
    every version of jsonschema-rs (0.45 and later validate it, 0.44 did not)."""
    tdir = _chat_thread(root, "deep")
    latest = checkpoints(tdir)[-1]
    if where == "metadata":
        rewrite(latest, lambda d: d["metadata"].__setitem__("note", nested(600)))
    else:
        rewrite(latest, lambda d: d["new_values"]["messages"]["append"]["items"].append(nested(600)))
    saver = RepoSaver(root)
    refused = (UnrevivableValueError, FileFormatError)
    with pytest.raises(refused, match=r"nested deeper than a file can hold") as info:
        saver.get_tuple(cfg("deep"))
    assert str(latest) in str(info.value)
    with pytest.raises(refused):
        chat_graph(saver).invoke({"messages": [HumanMessage(content="x")]}, cfg("deep"))


# ---------------------------------------------------------------------------
# planted constructors in places test_safety.py does not cover
# ---------------------------------------------------------------------------
def _plant_base64_channel(tdir: Path, marker: Path) -> tuple[Path, RunnableConfig]:
    latest = checkpoints(tdir)[-1]
    node = {"serde": "msgpack", "base64": msgpack_system_call(marker)}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    return latest, cfg(tdir.name)


def _plant_base64_write(tdir: Path, marker: Path) -> tuple[Path, RunnableConfig]:
    path = writes_files(tdir)[-1]
    node = {"serde": "msgpack", "base64": msgpack_system_call(marker)}
    rewrite(path, lambda d: d["writes"][0].__setitem__("value", node))
    return path, cfg(tdir.name, checkpoint_id=load(path)["checkpoint_id"])


def _plant_value_file(tdir: Path, marker: Path) -> tuple[Path, RunnableConfig]:
    RepoSaver(tdir.parent.parent, durable=False).prune([tdir.name])  # moves kept values to values/
    path = next(p for p in sorted((tdir / "values").glob("messages@*.json")) if "value" in load(p))
    tree = {"$type": ["os", "system"], "$arg": f"touch {marker}"}
    rewrite(path, lambda d: d["value"]["json"].__setitem__(0, tree))
    return path, cfg(tdir.name)


PLANTS: dict[str, Callable[[Path, Path], tuple[Path, RunnableConfig]]] = {
    "base64 msgpack node in a channel value": _plant_base64_channel,
    "base64 msgpack node in a pending write": _plant_base64_write,
    "json tree in a values/ file": _plant_value_file,
}


@pytest.mark.parametrize("place", sorted(PLANTS))
def test_planted_constructor_is_refused_and_nothing_runs(tmp_path: Path, root: Path, place: str) -> None:
    """os.system named in a place test_safety.py does not plant it: refused by name, with the file, before
    the serde sees it (a base64 msgpack node used to reach the serde, which returned the raw args)."""
    tdir = _chat_thread(root, "planted")
    _chat_thread(root, "good")
    marker = tmp_path / "pwned"
    planted, config = PLANTS[place](tdir, marker)
    saver = RepoSaver(root)
    with pytest.raises(UnrevivableValueError, match=r"refusing to construct os\.system") as info:
        saver.get_tuple(config)
    assert str(planted) in str(info.value)
    with pytest.raises(UnrevivableValueError, match=re.escape(str(planted))):
        list(saver.list(config))
    assert not marker.exists()
    assert saver.get_tuple(cfg("good")) is not None


# ---------------------------------------------------------------------------
# symlinks in places test_safety.py does not cover
# ---------------------------------------------------------------------------
def _values_file(tdir: Path) -> Path:
    RepoSaver(tdir.parent.parent, durable=False).prune([tdir.name])
    return sorted((tdir / "values").glob("messages@*.json"))[-1]


def _latest_writes_file(tdir: Path) -> Path:
    # the writes of the step before the latest one: read by get_tuple of that checkpoint
    return writes_files(tdir)[-1]


def _values_folder(tdir: Path) -> Path:
    RepoSaver(tdir.parent.parent, durable=False).prune([tdir.name])
    return tdir / "values"


READ_LINKS: dict[str, Callable[[Path], Path]] = {
    "values/ file": _values_file,
    "values/ folder": _values_folder,
    "single writes file": _latest_writes_file,
}


@pytest.mark.parametrize("what", sorted(READ_LINKS))
def test_symlink_to_outside_is_not_followed_on_read(tmp_path: Path, root: Path, what: str) -> None:
    """A file or folder swapped for a symlink to an identical copy outside the root is refused by name."""
    tdir = _chat_thread(root, "linked")
    inside = READ_LINKS[what](tdir)
    config = cfg("linked")
    if what == "single writes file":
        config = cfg("linked", checkpoint_id=load(inside)["checkpoint_id"])
    outside = tmp_path / "outside" / inside.name
    outside.parent.mkdir()
    shutil.move(str(inside), str(outside))
    os.symlink(outside, inside, target_is_directory=outside.is_dir())
    with pytest.raises(RepoCheckpointError) as info:
        RepoSaver(root).get_tuple(config)
    assert "symlink" in str(info.value) or "outside the root" in str(info.value)
    assert str(inside) in str(info.value)
    proc = cli(root, "validate", cwd="/")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert str(inside) in proc.stdout


@pytest.mark.parametrize(
    ("ns", "what"),
    [("", "checkpoints"), ("sub:1", "checkpoints"), ("", "thread"), ("sub:1", "namespace"), ("sub:1", "ns")],
)
def test_a_folder_swapped_for_a_symlink_is_refused_by_a_warm_saver_as_by_a_fresh_one(
    tmp_path: Path, ns: str, what: str
) -> None:
    """A running saver keeps listings, metadata and the roster's threads by their folders' stat
    keys, and files by their own: a folder on the way swapped for a symlink to itself renamed
    (the same folders and files behind it) must not pass for the folder it kept. A folder's
    own key is taken, never through a link (caches.folder_stat), and a listing is taken only
    with no link on the way (Listings.get), so every read refuses it by name, as a fresh
    saver's does."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    config: Any = {"configurable": {"thread_id": "a", "checkpoint_ns": ns}}
    for _ in range(3):
        config = saver.put(config, empty_checkpoint(), {"user_id": "u1"}, {})
    time.sleep(2 * RACY_NS / 1e9)  # settled: kept by their keys from here on
    thread: Any = {"configurable": {"thread_id": "a", "checkpoint_ns": ns}}
    calls: dict[str, Callable[[RepoSaver], Any]] = {
        "list(None, filter)": lambda s: list(s.list(None, filter={"user_id": "u1"})),
        "list(None)": lambda s: list(s.list(None)),
        "list(thread, filter)": lambda s: list(s.list(thread, filter={"user_id": "u1"})),
        "list(thread)": lambda s: list(s.list(thread)),
        "get_tuple": lambda s: s.get_tuple(thread),
    }
    for call in calls.values():
        call(saver)
        call(saver)
    checkpoints = Layout(root).checkpoints_dir("a", ns)
    folder = {
        "checkpoints": checkpoints,
        "namespace": checkpoints.parent,
        "ns": checkpoints.parent.parent,
        "thread": root / "threads" / "a",
    }[what]
    os.rename(folder, tmp_path / "elsewhere")  # outside the root: nothing stray left in it
    os.symlink(tmp_path / "elsewhere", folder)
    for name, call in calls.items():
        for who in ("warm", "fresh"):
            with pytest.raises(FileFormatError, match="symlink") as info:
                call(saver if who == "warm" else RepoSaver(root))
            assert str(folder) in str(info.value), (name, who)


def test_a_large_folder_swapped_for_a_symlink_is_refused_by_a_warm_saver_as_by_a_fresh_one(
    tmp_path: Path,
) -> None:
    """A value a running saver built from a ``large/`` file is kept by that file's stat key,
    which a ``large/`` folder swapped for a symlink to it leaves as it was: the value is reused
    only while the folders it was read from lie in the root with no symlink on the way
    (resolve.ValueResolver), so the warm saver reads it again and refuses the link, as a fresh
    one does."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    big_graph(saver).invoke({"document": BIG_TEXT}, cfg("big"))
    assert saver.get_tuple(cfg("big")).checkpoint["channel_values"]["document"] == BIG_TEXT  # type: ignore[union-attr]
    time.sleep(2 * RACY_NS / 1e9)  # settled: kept by its keys from here on
    saver.get_tuple(cfg("big"))
    folder = root / "threads" / "big" / "large"
    assert any(folder.iterdir())
    os.rename(folder, tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", folder)
    for who in (saver, RepoSaver(root)):
        with pytest.raises(FileFormatError, match="symlink") as info:
            who.get_tuple(cfg("big"))
        assert str(folder) in str(info.value)


@pytest.mark.parametrize("holders", ["objects", "subgraph"])
def test_a_message_kept_by_its_name_is_refused_by_a_warm_saver_once_its_holders_folder_is_a_symlink(
    tmp_path: Path, holders: str
) -> None:
    """A running saver reuses a message by its name (content-addressed: the name says what it
    holds), so a folder holding it swapped for a symlink to it left the name as it was: the
    warm saver went on answering from memory where a fresh one refuses the link. The folders
    each thread's messages came from are asked at each reuse (resolve.ValueResolver: prune's
    ``objects/``; a subgraph's checkpoints, which hold the messages of the conversation a
    ``Send`` carried), so both refuse it by name."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    graph = chat_graph(saver) if holders == "objects" else relay_graph(saver)
    for turn in range(1, 5):
        graph.invoke({"messages": [question(turn)]}, cfg("t"))
    if holders == "objects":
        saver.prune(["t"])  # the kept checkpoint's messages go to objects/ with their holders
        folders = [root / "threads" / "t" / "objects"]
    else:
        folders = sorted((root / "threads" / "t" / "ns").glob("*/checkpoints"))
    assert folders and all(any(f.iterdir()) for f in folders)
    saver.get_tuple(cfg("t"))
    time.sleep(2 * RACY_NS / 1e9)  # settled: kept by their keys from here on
    assert len(saver.get_tuple(cfg("t")).checkpoint["channel_values"]["messages"]) == 8  # type: ignore[union-attr]
    for i, folder in enumerate(folders):
        os.rename(folder, tmp_path / f"elsewhere{i}")
        os.symlink(tmp_path / f"elsewhere{i}", folder)
    for who in (saver, RepoSaver(root)):
        with pytest.raises(FileFormatError, match="symlink") as info:
            who.get_tuple(cfg("t"))
        assert any(str(folder) in str(info.value) for folder in folders)


@pytest.mark.parametrize("folder", ["writes", "values"])
def test_no_write_goes_through_a_symlinked_writes_or_values_folder(
    tmp_path: Path, root: Path, folder: str, request: pytest.FixtureRequest
) -> None:
    """A graph step, put_writes written alone and prune (which writes values/) never create a
    file through a symlink: the step's read of the thread's pending writes refuses the link
    before anything runs (caches.folder_stat), and a put_writes written alone is refused."""
    tdir = _chat_thread(root, "linked")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(tdir / folder, ignore_errors=True)
    os.symlink(outside, tdir / folder, target_is_directory=True)
    saver = RepoSaver(root)
    with pytest.raises(RepoCheckpointError, match="outside"):
        if folder == "writes":
            chat_graph(saver).invoke({"messages": [HumanMessage(content="x")]}, cfg("linked"))
        else:
            saver.prune(["linked"])
    assert list(outside.iterdir()) == []
    if folder == "writes":
        request.getfixturevalue("writes_alone")
        latest = sorted(p.stem for p in (tdir / "checkpoints").glob("*.json"))[-1]
        with pytest.raises(RepoCheckpointError, match="outside"):
            saver.put_writes(cfg("linked", checkpoint_id=latest), [("messages", [])], "a-task")
        assert list(outside.iterdir()) == []


def test_a_file_reads_the_same_through_orjson_as_through_the_strict_parse() -> None:
    """Reads take orjson's parse (8x faster) only where it is provably the strict one:
    integers past 64 bits stay exact integers, and a duplicate key is refused however its
    ':' are counted."""
    import orjson  # noqa: F401 - the saver imports it; the fast parse runs only then

    big = b'{"n": 123456789012345678901234567890, "m": -9223372036854775809, "s": "a:b"}'
    doc = parse_strict(big, "f.json")
    assert doc == {"n": 123456789012345678901234567890, "m": -9223372036854775809, "s": "a:b"}
    assert type(doc["n"]) is int and type(doc["m"]) is int
    twice = (b'{"a": "x", "a": "\\u003a"}', b'{"a": {"b": ":"}, "a": 1}', b'{"a": 1, "b": {"c": 2, "c": 2}}')
    for raw in twice:
        with pytest.raises(FileFormatError, match=r"f\.json: at /: duplicate key '[ac]'"):
            parse_strict(raw, "f.json")


def test_a_file_that_grew_since_its_stat_is_read_on_to_one_byte_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file longer than its stat said (it grew between the two) is read on in blocks, by a
    descriptor and by a file object, and no further than one byte past the limit, which the
    reader then refuses; a file shorter than its stat is read as it is. (The blocks were
    joined by ``raw += block``, a copy of all read so far at every block: 22 s and 525 MB for
    a file growing past the real 256 MiB limit. Here under a 3 MiB limit.)"""
    import io

    from langgraph_checkpoint_repo.core import jsonread

    limit = 3 * 1024 * 1024 + 17
    monkeypatch.setattr(jsonread, "MAX_FILE_BYTES", limit)
    data = os.urandom(limit + 5000)
    path = tmp_path / "grown.json"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert jsonread._read_fd_bounded(fd, 10) == data[: limit + 1]
    finally:
        os.close(fd)
    assert jsonread.read_bounded(io.BytesIO(data), 10) == data[: limit + 1]
    assert jsonread.read_bounded(io.BytesIO(data[:100]), 5000) == data[:100]
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, limit + 4000, os.SEEK_SET)  # 1,000 bytes left: shorter than the stat's 5,000
        assert jsonread._read_fd_bounded(fd, 5000) == data[limit + 4000 :]
    finally:
        os.close(fd)
    with pytest.raises(FileFormatError, match="over the limit") as err:
        jsonread.load_json(path, os.lstat(path), lambda _folder: True)
    assert err.value.path == str(path)
