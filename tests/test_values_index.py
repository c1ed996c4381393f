"""The values index (core/bodyindex.py, issue 37): a fresh process reads a long thread's list
from the line a reader wrote, instead of every link of its chain, and the files still win.

Real graphs on a real saver, filesystem and git repository; each "fresh process" is a new
RepoSaver on the root (empty caches), and one test runs a real second process.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import operator
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

import orjson
import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph, add_messages

from graphs import cfg, chat_graph, contents
from helpers import cli, second_process_read, without_values_index
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.bodyindex import (
    VALUES_HEADER,
    VALUES_SUFFIX,
    Sources,
    decode_line,
    encode_line,
)
from langgraph_checkpoint_repo.core.caches import RACY_NS
from langgraph_checkpoint_repo.core.errors import FileFormatError, UnrevivableValueError
from langgraph_checkpoint_repo.core.format.packed import msgpack_array_split
from langgraph_checkpoint_repo.core.format.tree import tree_to_msgpack
from langgraph_checkpoint_repo.core.index import index_path
from langgraph_checkpoint_repo.core.layout import Layout

TURNS = 12  # each turn appends to the list: a chain of more links than MIN_LINKS
SETTLE = RACY_NS / 1e9 + 0.02


def chat(root: Path, turns: int = TURNS, thread: str = "t") -> tuple[Any, Any]:
    """A thread of ``turns`` turns through RepoSaver and through InMemorySaver, the files
    left to settle; both graphs."""
    graph = chat_graph(RepoSaver(root, durable=False))
    reference = chat_graph(InMemorySaver())
    for i in range(turns):
        for g in (graph, reference):
            g.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg(thread))
    time.sleep(SETTLE)
    return graph, reference


def values_file(root: Path, thread: str = "t") -> Path:
    layout = Layout(root)
    path = index_path(layout, layout.thread_dir(thread), VALUES_SUFFIX)
    assert path is not None
    return path


def fresh(root: Path, thread: str = "t", serde: Any = None) -> tuple[Any, int]:
    """A fresh saver's latest tuple of the thread, and how many stored values of its list
    channels it built from their files (a link a turn, or none when the line serves)."""
    saver = RepoSaver(root, serde=serde) if serde is not None else RepoSaver(root)
    built = 0
    resolver = saver.store.values
    real = resolver._entry_from_body

    def counting(channel: str, *args: Any, **kwargs: Any) -> Any:
        nonlocal built
        built += channel in ("messages", "marks", "words")
        return real(channel, *args, **kwargs)

    resolver._entry_from_body = counting  # type: ignore[method-assign]
    return saver.get_tuple(cfg(thread)), built


def messages_of(tup: Any) -> list[str]:
    return contents(tup.checkpoint["channel_values"]["messages"])


def test_a_fresh_read_takes_the_list_from_the_line_the_last_reader_wrote_and_equals_in_memory(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    want = reference.get_state(cfg("t")).values["messages"]
    assert not values_file(root).exists()  # the writer writes none
    first, built_first = fresh(root)
    assert values_file(root).exists()  # the first fresh read rebuilt the chain: written down
    second, built_second = fresh(root)
    assert messages_of(second) == contents(want)
    assert [type(m) for m in second.checkpoint["channel_values"]["messages"]] == [type(m) for m in want]
    assert second.checkpoint == first.checkpoint and second.metadata == first.metadata
    assert second.pending_writes == first.pending_writes
    assert built_first >= TURNS and built_second == 0  # a link a turn; then none of them


def test_the_next_put_after_a_read_from_the_line_appends_and_the_thread_goes_on_as_in_memory(
    tmp_path: Path,
) -> None:
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    fresh(root)  # writes the line
    graph = chat_graph(RepoSaver(root))
    assert graph.checkpointer.get_tuple(cfg("t")) is not None  # the saver's first read: the line's
    assert fresh(root)[1] == 0
    for g in (graph, reference):
        g.invoke({"messages": [HumanMessage("more", id="m1")]}, cfg("t"))
    got, want = (g.get_state(cfg("t")).values["messages"] for g in (graph, reference))
    assert contents(got) == contents(want) and [type(m) for m in got] == [type(m) for m in want]
    head = graph.get_state(cfg("t")).config["configurable"]["checkpoint_id"]
    doc = json.loads(Layout(root).checkpoint_path("t", "", head).read_text())
    assert "append" in doc["new_values"]["messages"]  # not written whole again
    again, _ = fresh(root)
    assert messages_of(again) == contents(reference.get_state(cfg("t")).values["messages"])


def test_a_link_changed_by_hand_is_read_from_the_files_and_its_error_names_it(tmp_path: Path) -> None:
    """An item taken out of one link by hand: the next link's ``base_length`` no longer
    matches. The values index does not hide it: the read fails as without the index."""
    root = tmp_path / ".langgraph"
    chat(root)
    fresh(root)
    assert values_file(root).exists()
    layout = Layout(root)
    links = []
    for path in sorted(layout.checkpoints_dir("t", "").glob("*.json")):
        doc = json.loads(path.read_text())
        body = doc.get("new_values", {}).get("messages")
        if isinstance(body, dict) and "append" in body and body["append"]["items"]:
            links.append((path, doc))
    path, doc = links[len(links) // 2]
    doc["new_values"]["messages"]["append"]["items"].pop()
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(FileFormatError) as indexed:
        fresh(root)
    without_values_index(root)
    with pytest.raises(FileFormatError) as plain:
        fresh(root)
    assert str(indexed.value) == str(plain.value)
    assert "base_length" in str(plain.value)


def test_a_line_forged_into_a_pull_request_serves_nothing_in_a_checkout(tmp_path: Path) -> None:
    """A line whose list says something else, committed with the state (``git add -f``
    past the ignore): a clone's files have other stat keys, so the clone reads the files."""
    repo = tmp_path / "repo"
    repo.mkdir()
    root = repo / ".langgraph"
    _, reference = chat(root)
    want = contents(reference.get_state(cfg("t")).values["messages"])
    fresh(root)
    path = values_file(root)
    tdir = Layout(root).thread_dir("t")
    line = path.read_bytes()[len(VALUES_HEADER) :].rstrip(b"\n")
    kept = decode_line(tdir, line)
    assert kept is not None
    tree = orjson.loads(kept.tree)
    for item in tree:
        fields = item.get("$fields") if isinstance(item, dict) else None
        if isinstance(fields, dict) and "content" in fields:
            fields["content"] = "forged"
    body = msgpack_array_split(tree_to_msgpack(tree))
    assert body is not None
    forged = type(kept)(**{**kept.__dict__, "tree": orjson.dumps(tree), "body": body[1]})
    new_line = encode_line(tdir, forged)
    assert new_line is not None
    path.write_bytes(VALUES_HEADER + new_line)

    def git(*args: str, cwd: Path = repo) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("add", "-f", str(path))
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "state and a forged line")
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    assert values_file(clone / ".langgraph").exists()
    time.sleep(SETTLE)
    got, _ = fresh(clone / ".langgraph")
    assert messages_of(got) == want


def test_a_torn_line_is_skipped_and_fsck_reports_a_damaged_file_that_repair_removes(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    want = contents(reference.get_state(cfg("t")).values["messages"])
    fresh(root)
    path = values_file(root)
    data = path.read_bytes()
    assert cli(root, "fsck").returncode == 0
    path.write_bytes(data[: len(data) // 2])  # a line cut short, as a crash leaves it
    torn = cli(root, "fsck", "--json")
    assert torn.returncode == 1
    assert [f["kind"] for f in json.loads(torn.stdout)["findings"]] == ["index"]
    got, built = fresh(root)
    assert messages_of(got) == want and built >= TURNS  # from the files
    path.write_bytes(b"damaged")
    found = cli(root, "fsck", "--json")
    assert found.returncode == 1
    kinds = {f["path"]: f["kind"] for f in json.loads(found.stdout)["findings"]}
    assert kinds == {str(path): "index"}
    assert cli(root, "fsck", "--repair").returncode == 0
    assert not path.exists()
    assert messages_of(fresh(root)[0]) == want


def test_a_deleted_thread_leaves_no_values_index_behind(tmp_path: Path) -> None:
    """The line holds the thread's messages: deleting the thread deletes it too."""
    root = tmp_path / ".langgraph"
    chat(root)
    fresh(root)
    assert values_file(root).exists()
    RepoSaver(root).delete_thread("t")
    assert not values_file(root).exists()


def test_reading_history_writes_no_lines_only_the_latest_read_does(tmp_path: Path) -> None:
    """Older checkpoints are read through the latest's chain, and a line is of the latest
    state (what a fresh process reads first): listing the history writes none."""
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    history = list(RepoSaver(root).list(cfg("t")))
    assert len(history) == len(list(reference.checkpointer.list(cfg("t"))))
    assert not values_file(root).exists()
    fresh(root)
    assert values_file(root).exists()


@dataclass(frozen=True)
class Mark:
    """A type only an app that allows it revives (the allowlist)."""

    n: int


class Marks(TypedDict):
    marks: Annotated[list[Mark], operator.add]


def _marks_graph(saver: Any) -> Any:
    builder = StateGraph(Marks)
    builder.add_node("mark", lambda s: {"marks": [Mark(len(s["marks"]))]})
    builder.add_edge(START, "mark")
    return builder.compile(checkpointer=saver)


def test_a_type_the_app_no_longer_allows_is_refused_naming_the_file_that_holds_it(tmp_path: Path) -> None:
    """A list taken from the line fails to revive under a narrower allowlist: the error is
    made again from the files, so it names the file and pointer as a read without the line."""
    root = tmp_path / ".langgraph"
    allowing = JsonPlusSerializer(allowed_msgpack_modules=[(Mark.__module__, "Mark")])
    graph = _marks_graph(RepoSaver(root, durable=False, serde=allowing))
    for _ in range(TURNS):
        graph.invoke({"marks": []}, cfg("m"))
    time.sleep(SETTLE)
    got, _ = fresh(root, "m", allowing)
    assert got.checkpoint["channel_values"]["marks"] == [Mark(i) for i in range(TURNS)]
    assert values_file(root, "m").exists()
    with pytest.raises(UnrevivableValueError) as indexed:
        fresh(root, "m")
    without_values_index(root, "m")
    with pytest.raises(UnrevivableValueError) as plain:
        fresh(root, "m")
    assert str(indexed.value) == str(plain.value)
    assert f"{os.sep}checkpoints{os.sep}" in str(plain.value) and "Mark" in str(plain.value)


def test_a_second_process_reads_the_list_from_the_line(tmp_path: Path) -> None:
    """A real second process, the thread past the lineage index's size (so the fresh read
    opens only what the latest state needs): the checkpoint and the newest few whose links
    the lineage index has not taken yet, not the links of the list's chain."""
    root = tmp_path / ".langgraph"
    _, reference = chat(root, turns=30)
    fresh(root)
    texts, opened = second_process_read(root)
    assert texts == contents(reference.get_state(cfg("t")).values["messages"])
    assert len(set(opened)) <= 8, opened
    without_values_index(root)
    assert len(set(second_process_read(root)[1])) >= 30  # control: without the line, a link a turn


def test_a_whole_copy_written_after_a_read_from_the_line_holds_each_message_once(tmp_path: Path) -> None:
    """The line says where the read found the thread's messages: the next whole copy of the
    list (every ``snapshot_every`` links) refers to them there instead of holding them again."""
    root = tmp_path / ".langgraph"
    every = 32
    graph = chat_graph(RepoSaver(root, durable=False, snapshot_every=every))
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
    time.sleep(SETTLE)
    fresh(root)
    graph = chat_graph(RepoSaver(root, snapshot_every=every))
    assert graph.get_state(cfg("t")).values["messages"]  # the new process's read: the line's
    layout = Layout(root)
    before = {p.name for p in layout.checkpoints_dir("t", "").glob("*.json")}
    for i in range(TURNS, TURNS + every // 2 + 2):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
    wholes = []
    for path in layout.checkpoints_dir("t", "").glob("*.json"):
        doc = json.loads(path.read_text())
        body = doc.get("new_values", {}).get("messages")
        if path.name not in before and isinstance(body, dict) and "value" in body:
            wholes.append(doc)
    assert wholes  # the chain reached snapshot_every: a whole copy was written
    for doc in wholes:
        held = [o for o in doc.get("objects", {}).values() if isinstance(o, dict) and "$fields" in o]
        assert len(held) <= 2, [o["$fields"]["content"] for o in held]  # its own turn's at most
    assert contents(graph.get_state(cfg("t")).values["messages"])[-2:] == [f"turn {i}", f"echo: turn {i}"]


def test_a_checkpoints_folder_moved_away_and_linked_back_is_refused_as_without_the_line(
    tmp_path: Path,
) -> None:
    """Moved, its files keep their stat keys; the symlink in their place is what the read
    must refuse, with the line as without it."""
    root = tmp_path / ".langgraph"
    chat(root)
    fresh(root)
    folder = Layout(root).checkpoints_dir("t", "")
    away = tmp_path / "away"
    folder.rename(away)
    folder.symlink_to(away, target_is_directory=True)
    errors = []
    for drop in (False, True):
        if drop:
            without_values_index(root)
        with pytest.raises(Exception) as info:  # the same refusal either way
            fresh(root)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
    assert "symlink" in errors[0][1]


def _holder_of_first_message(root: Path) -> Path:
    """The checkpoint holding the thread's first message (by name, for every later list)."""
    for path in sorted(Layout(root).checkpoints_dir("t", "").glob("*.json")):
        doc = json.loads(path.read_text())
        if '"turn 0"' in json.dumps(doc.get("objects", {})):
            return path
    raise AssertionError("no checkpoint holds the first message")


@pytest.mark.parametrize("change", ["edited", "removed"])
def test_a_checkpoint_holding_a_message_changed_by_hand_is_read_as_without_the_line(
    tmp_path: Path, change: str
) -> None:
    """The files a list's messages are taken from by name, and the records the walk reads,
    are the line's too: edited or removed, the read fails as it does without the line, and
    a later put cannot go on from a list the files no longer give."""
    root = tmp_path / ".langgraph"
    chat(root)
    fresh(root)
    holder = _holder_of_first_message(root)
    if change == "edited":
        holder.write_text(holder.read_text().replace('"turn 0"', '"HACK 0"'))
    else:
        holder.unlink()
    time.sleep(SETTLE)
    errors = []
    for drop in (False, True):
        if drop:
            without_values_index(root)
        with pytest.raises(FileFormatError) as info:
            fresh(root)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert holder.name in errors[0]


def test_a_thread_deleted_and_begun_again_under_its_id_brings_no_old_line_back(tmp_path: Path) -> None:
    """A reader that kept a thread's lines, the thread deleted by another saver and begun
    again: the reader's next line is written with what the file holds now, not what it kept."""
    root = tmp_path / ".langgraph"
    chat(root)
    reader = RepoSaver(root)
    reader.get_tuple(cfg("t"))
    RepoSaver(root).delete_thread("t")
    assert not values_file(root).exists()
    graph = chat_graph(RepoSaver(root, durable=False))
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(f"again {i}", id=f"a{i}")]}, cfg("t"))
    time.sleep(SETTLE)
    got = reader.get_tuple(cfg("t"))
    assert got is not None and messages_of(got)[0] == "again 0"
    data = values_file(root).read_bytes()
    assert b"again 0" in data and b"turn 0" not in data


def test_a_thread_deleted_while_a_read_writes_its_line_leaves_no_line_behind(tmp_path: Path) -> None:
    """``delete_thread`` (another thread of the process) lands between a read's rebuild and
    its line's write: the line, which holds the deleted thread's messages, goes too."""
    root = tmp_path / ".langgraph"
    chat(root)
    saver = RepoSaver(root)
    bodies = saver.store.bodies
    save = bodies.save

    def deleted_first(tdir: Path, kept: Any) -> None:
        other = threading.Thread(target=saver.delete_thread, args=("t",))
        other.start()
        other.join()
        save(tdir, kept)

    bodies.save = deleted_first  # type: ignore[method-assign]
    saver.get_tuple(cfg("t"))
    assert not Layout(root).thread_dir("t").exists()
    assert not values_file(root).exists()
    assert cli(root, "fsck").returncode == 0


def _rewrite_line(root: Path, **changes: Any) -> None:
    """The thread's line with ``changes``, its stat keys kept (what only someone who can
    write the root's ``.cache`` can do)."""
    path = values_file(root)
    tdir = Layout(root).thread_dir("t")
    kept = decode_line(tdir, path.read_bytes()[len(VALUES_HEADER) :].rstrip(b"\n"))
    assert kept is not None
    line = encode_line(tdir, dataclasses.replace(kept, **changes))
    assert line is not None
    path.write_bytes(VALUES_HEADER + line)


def test_a_line_naming_no_type_whose_body_may_hold_one_is_not_used(tmp_path: Path) -> None:
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    fresh(root)
    _rewrite_line(root, types=frozenset())
    got, built = fresh(root)
    assert [type(m) for m in got.checkpoint["channel_values"]["messages"]] == [
        type(m) for m in reference.get_state(cfg("t")).values["messages"]
    ]
    assert built >= TURNS  # from the files


def test_a_line_that_does_not_revive_is_read_from_the_files_said_and_written_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    want = contents(reference.get_state(cfg("t")).values["messages"])
    fresh(root)
    _rewrite_line(root, body=b"\xc1" * 8)  # not msgpack
    with caplog.at_level(logging.WARNING):
        got, _ = fresh(root)
    assert messages_of(got) == want
    assert any("values index" in r.getMessage() for r in caplog.records)
    time.sleep(SETTLE)
    got, built = fresh(root)
    assert messages_of(got) == want and built == 0  # the line written again serves


class Words(TypedDict):
    words: Annotated[list[str], operator.add]


def test_a_list_of_text_in_any_script_is_served_from_its_line(tmp_path: Path) -> None:
    """A list naming no type whose text holds the bytes an extension starts with (Hebrew,
    Armenian in UTF-8) is still taken from its line: the body is decoded to tell."""
    root = tmp_path / ".langgraph"
    builder = StateGraph(Words)
    builder.add_node("say", lambda s: {"words": [f"שלום Բարև {len(s['words'])}"] * 30})
    builder.add_edge(START, "say")
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    for _ in range(TURNS):
        graph.invoke({"words": []}, cfg("w"))
    time.sleep(SETTLE)
    want = graph.get_state(cfg("w")).values["words"]
    first, built_first = fresh(root, "w")
    second, built_second = fresh(root, "w")
    assert first.checkpoint["channel_values"]["words"] == want
    assert second.checkpoint["channel_values"]["words"] == want
    assert built_first >= TURNS and built_second == 0


FORGED = [
    "count past 2**32",
    "a type of no parts",
    "a weight past 2**53",
    "a source of ..",
    "a source with a newline",
]


@pytest.mark.parametrize("forged", FORGED)
def test_a_forged_line_out_of_bounds_is_not_used_and_the_read_is_the_files(
    tmp_path: Path, forged: str
) -> None:
    """Lines only someone who can write ``.cache`` can forge with the right stat keys: out of
    the format's bounds, each is refused as it is decoded, never a crash of the read."""
    root = tmp_path / ".langgraph"
    _, reference = chat(root)
    want = contents(reference.get_state(cfg("t")).values["messages"])
    fresh(root)
    tdir = Layout(root).thread_dir("t")
    kept = decode_line(tdir, values_file(root).read_bytes()[len(VALUES_HEADER) :].rstrip(b"\n"))
    assert kept is not None
    flat = kept.sources.flat
    changes: dict[str, Any] = {
        "count past 2**32": {"count": 2**63},
        "a type of no parts": {"types": frozenset({()})},
        "a weight past 2**53": {"weight": (1, 1, 2**60)},
        "a source of ..": {"sources": Sources(tdir, ["..", *flat[1:5], *flat])},
        "a source with a newline": {"sources": Sources(tdir, ["a\nb/c/d/e/f/g/h", *flat[1:5], *flat])},
    }[forged]
    _rewrite_line(root, **changes)
    got, built = fresh(root)
    assert messages_of(got) == want and built >= TURNS


def test_a_chat_turn_records_nothing_only_a_read_of_a_long_list_does(tmp_path: Path) -> None:
    """Recording what a read came from, and loading its objects afresh, is for a list that
    may be written down (an append chain, a whole list of many items): a chat turn's reads of
    small whole values (the triggers, the tasks) do neither."""
    root = tmp_path / ".langgraph"
    saver = RepoSaver(root, durable=False)
    graph = chat_graph(saver)
    scopes = 0
    real = saver.store.files.recording

    def counting() -> Any:
        nonlocal scopes
        scopes += 1
        return real()

    saver.store.values.recording = counting
    for i in range(TURNS):
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, cfg("t"))
    # each turn's list is kept by the put before it; once, the first append's list is read
    # (a whole list a put wrote is not kept), and it is a chain of one link
    assert scopes <= 1
    scopes = 0
    time.sleep(SETTLE)
    other = RepoSaver(root)
    real = other.store.files.recording
    other.store.values.recording = counting
    other.get_tuple(cfg("t"))
    assert scopes == 1  # the fresh read of the long list: once, for it alone


def test_the_warning_of_a_line_that_does_not_revive_shows_control_characters_as_text(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A channel's name reaches the warning inside the value's pointer: an ESC or a CR in it
    is shown escaped, as in an error, never sent to whoever reads the log."""
    root = tmp_path / ".langgraph"
    channel = "log\x1b[31mRED\x1b[0m\r"
    state = TypedDict("State", {channel: Annotated[list[AnyMessage], add_messages]})  # type: ignore[misc]
    builder = StateGraph(state)
    builder.add_node("say", lambda s: {channel: [AIMessage(f"line {len(s[channel])}") for _ in range(2)]})
    builder.add_edge(START, "say")
    graph = builder.compile(checkpointer=RepoSaver(root, durable=False))
    for _ in range(TURNS):
        graph.invoke({channel: []}, cfg("t"))
    time.sleep(SETTLE)
    RepoSaver(root).get_tuple(cfg("t"))
    _rewrite_line(root, body=b"\xc1" * 8)
    with caplog.at_level(logging.WARNING):
        got = RepoSaver(root).get_tuple(cfg("t"))
    assert got is not None and len(got.checkpoint["channel_values"][channel]) == 2 * TURNS
    warned = [r.getMessage() for r in caplog.records if "values index" in r.getMessage()]
    assert warned and "\\x1b" in warned[0]
    assert not any(c in m for m in warned for c in "\x1b\r")
