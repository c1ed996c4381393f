"""Code execution and type confusion from a file: what a planted file can make the saver do.

Every case starts from a root a real graph wrote through RepoSaver; the files are then changed the
way a pull request could change them, and read back through the saver (``get_tuple``, ``list``,
``graph.get_state``, a graph run), the command line (``show``, ``threads``, ``copy``) and
``validate``. A planted ``os.system("touch <marker>")`` must leave no marker.

Four classes (docs/reliability.md, "Code execution and type confusion"):

1. the saver's strict allowlist holds whatever serde it is given (a bare or pickle-fallback
   JsonPlusSerializer, an EncryptedSerializer); encrypted payloads are checked after decryption,
   plaintext is refused where the serde encrypts, pickle loads only with ``unsafe_allow_pickle``;
2. every kind of stored payload is checked before a serde sees it, or refused (``json``);
3. ``checkpoint.extra`` cannot replace the checkpoint's own keys, and a file whose names disagree
   with its place is refused on every read path;
4. one file may not expand past fixed bounds once parsed; the saver never writes past them.
"""

from __future__ import annotations

import base64
import json
import operator
import os
import pickle
import re
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from graphs import BIG_TEXT, big_graph, cfg, chat_graph, chat_root, line_graph
from helpers import checkpoints, cli, load, rewrite, writes_files
from langgraph_checkpoint_repo import (
    FileFormatError,
    InvalidWriteError,
    RepoCheckpointError,
    RepoSaver,
    UnrevivableValueError,
)
from langgraph_checkpoint_repo.core.format.tree import tree_to_msgpack
from langgraph_checkpoint_repo.core.format.validation import RESERVED_EXTRA_KEYS
from langgraph_checkpoint_repo.core.jsonread import MAX_JSON_CONTAINERS, MAX_JSON_VALUES
from langgraph_checkpoint_repo.transfer import copy_threads

KEY = b"0123456789abcdef0123456789abcdef"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def system_tree(marker: Path) -> Any:
    """A msgpack tree asking the serde for os.system("touch <marker>")."""
    return [{"$type": ["os", "system"], "$arg": f"touch {marker}"}]


class _Reduce:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def encrypted() -> EncryptedSerializer:
    return EncryptedSerializer.from_pycryptodome_aes(key=KEY)


def chat_thread(root: Path, thread_id: str, serde: SerializerProtocol | None = None, turns: int = 1) -> Path:
    """A chat thread written by a real graph, then the writes of a step that stopped before its
    checkpoint (they stay a writes file: format 4 moves the others into the child); its folder."""
    saver = chat_root(root, thread_id, turns, serde=serde)
    latest = saver.get_tuple(cfg(thread_id))
    assert latest is not None
    saver.put_writes(latest.config, [("messages", [AIMessage(content="pending", id="p-1")])], "task-p")
    return saver.store.layout.thread_dir(thread_id)


def validate_lines(root: Path) -> list[str]:
    proc = cli(root, "validate", "--no-secrets", cwd="/")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout.splitlines()


def assert_refused_everywhere(
    saver: RepoSaver, config: RunnableConfig, error: type[Exception], *fragments: str
) -> None:
    """get_tuple, list, graph.get_state and a graph run all raise ``error`` with every fragment."""
    graph = chat_graph(saver)
    calls: list[Callable[[], object]] = [
        lambda: saver.get_tuple(config),
        lambda: list(saver.list(config)),
        lambda: graph.get_state(config),
        lambda: graph.invoke({"messages": [HumanMessage(content="more")]}, config),
    ]
    for call in calls:
        with pytest.raises(error) as info:
            call()
        for fragment in fragments:
            assert fragment in str(info.value), (fragment, str(info.value))


# ---------------------------------------------------------------------------
# 1. the allowlist is the saver's, whatever the serde
# ---------------------------------------------------------------------------
CALLER_SERDES: dict[str, Callable[[], SerializerProtocol]] = {
    "JsonPlusSerializer()": JsonPlusSerializer,
    "JsonPlusSerializer(pickle_fallback=True)": lambda: JsonPlusSerializer(pickle_fallback=True),
    "JsonPlusSerializer(allowed_msgpack_modules=True)": lambda: JsonPlusSerializer(
        allowed_msgpack_modules=True
    ),
}


def _plant_channel_tree(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    latest = checkpoints(tdir)[-1]
    node = {"serde": "msgpack", "json": system_tree(marker)}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    return latest, "/new_values/messages", cfg(tdir.name)


def _plant_write_tree(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    path = writes_files(tdir)[-1]
    node = {"serde": "msgpack", "json": system_tree(marker)}
    rewrite(path, lambda d: d["writes"][0].__setitem__("value", node))
    return path, "/writes/0/value", cfg(tdir.name, checkpoint_id=load(path)["checkpoint_id"])


def _plant_base64_msgpack(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    latest = checkpoints(tdir)[-1]
    node = {"serde": "msgpack", "base64": b64(tree_to_msgpack(system_tree(marker)))}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    return latest, "/new_values/messages", cfg(tdir.name)


def _plant_metadata(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    latest = checkpoints(tdir)[-1]
    rewrite(latest, lambda d: d["metadata"].__setitem__("note", system_tree(marker)))
    return latest, "/metadata", cfg(tdir.name)


PLAIN_PLANTS: dict[str, Callable[[Path, Path], tuple[Path, str, RunnableConfig]]] = {
    "json tree in a channel value": _plant_channel_tree,
    "json tree in a pending write": _plant_write_tree,
    "base64 msgpack node": _plant_base64_msgpack,
    "metadata": _plant_metadata,
}


@pytest.mark.parametrize("place", sorted(PLAIN_PLANTS))
@pytest.mark.parametrize("serde", sorted(CALLER_SERDES))
def test_caller_serde_that_allows_every_type_does_not_widen_the_saver_allowlist(
    tmp_path: Path, root: Path, serde: str, place: str
) -> None:
    """A serde that would construct anything (LangGraph's default outside strict mode, pickle_fallback)
    used to switch the allowlist off: os.system ran. Now the saver's allowlist holds and nothing runs."""
    tdir = chat_thread(root, "t", CALLER_SERDES[serde]())
    marker = tmp_path / "pwned"
    planted, pointer, config = PLAIN_PLANTS[place](tdir, marker)
    saver = RepoSaver(root, serde=CALLER_SERDES[serde]())
    assert_refused_everywhere(
        saver, config, UnrevivableValueError, "refusing to construct os.system", str(planted)
    )
    with pytest.raises(UnrevivableValueError, match=pointer):
        saver.get_tuple(config)
    assert not marker.exists()


ENCRYPTED_PLANTS: dict[str, Callable[[Path, Path], tuple[Path, str, RunnableConfig]]] = {
    "json tree naming os.system": _plant_channel_tree,
    "json tree in a pending write": _plant_write_tree,
    "base64 msgpack naming os.system": _plant_base64_msgpack,
}


def _plant_plain_state(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    """No type at all: plain data smuggled in as the conversation."""
    latest = checkpoints(tdir)[-1]
    node = {"serde": "msgpack", "json": ["smuggled state"]}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    return latest, "/new_values/messages", cfg(tdir.name)


def _plant_null(tdir: Path, marker: Path) -> tuple[Path, str, RunnableConfig]:
    latest = checkpoints(tdir)[-1]
    rewrite(
        latest, lambda d: d["new_values"].__setitem__("messages", {"value": {"serde": "null", "base64": ""}})
    )
    return latest, "/new_values/messages", cfg(tdir.name)


ENCRYPTED_PLANTS["plain data"] = _plant_plain_state
ENCRYPTED_PLANTS["null node"] = _plant_null


@pytest.mark.parametrize("place", sorted(ENCRYPTED_PLANTS))
def test_encrypted_saver_refuses_a_value_stored_in_the_clear(tmp_path: Path, root: Path, place: str) -> None:
    """With EncryptedSerializer (the docs/secrets.md setup) every value is ciphertext, so a plaintext one
    was planted: it used to reach the inner serde, which allows every type, and os.system ran."""
    tdir = chat_thread(root, "vault", encrypted())
    marker = tmp_path / "pwned"
    planted, pointer, config = ENCRYPTED_PLANTS[place](tdir, marker)
    saver = RepoSaver(root, serde=encrypted())
    assert_refused_everywhere(saver, config, UnrevivableValueError, "stored in the clear", str(planted))
    with pytest.raises(UnrevivableValueError, match=pointer):
        saver.get_tuple(config)
    assert not marker.exists()


def test_encrypted_payload_is_checked_against_the_allowlist_after_decryption(
    tmp_path: Path, root: Path
) -> None:
    """Ciphertext made with the right key (a leaked key, a hostile writer) decrypts to a tree the saver
    checks like any other before the inner serde sees it."""
    tdir = chat_thread(root, "vault", encrypted())
    marker = tmp_path / "pwned"
    cipher, data = encrypted().cipher.encrypt(tree_to_msgpack(system_tree(marker)))
    latest = checkpoints(tdir)[-1]
    node = {"serde": f"msgpack+{cipher}", "base64": b64(data)}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    saver = RepoSaver(root, serde=encrypted())
    assert_refused_everywhere(
        saver, cfg("vault"), UnrevivableValueError, "refusing to construct os.system", str(latest)
    )
    assert not marker.exists()


def test_pickle_loads_named_inside_msgpack_is_refused_with_a_pickle_fallback_serde(
    tmp_path: Path, root: Path
) -> None:
    """pickle.loads as a msgpack constructor is pickle all the same: refused, nothing unpickled."""
    tdir = chat_thread(root, "t", JsonPlusSerializer(pickle_fallback=True))
    marker = tmp_path / "pwned"
    tree = [{"$type": ["pickle", "loads"], "$arg": {"$bytes": b64(pickle.dumps(_Reduce(marker)))}}]
    latest = checkpoints(tdir)[-1]
    rewrite(
        latest,
        lambda d: d["new_values"].__setitem__("messages", {"value": {"serde": "msgpack", "json": tree}}),
    )
    saver = RepoSaver(root, serde=JsonPlusSerializer(pickle_fallback=True))
    assert_refused_everywhere(
        saver, cfg("t"), UnrevivableValueError, "refusing to construct pickle.loads", str(latest)
    )
    assert not marker.exists()


@pytest.mark.parametrize("form", ["pickle", "pickle+aes"])
def test_pickle_payload_is_refused_with_a_pickle_fallback_serde_even_encrypted(
    tmp_path: Path, root: Path, form: str
) -> None:
    """A pickle node (plain, or encrypted with the right key) is never unpickled without the unsafe option,
    and the error says which option that is. (Both were refused before this change too, without naming it.)"""
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Reduce(marker))

    def make() -> SerializerProtocol:
        if form == "pickle":
            return JsonPlusSerializer(pickle_fallback=True)
        return EncryptedSerializer.from_pycryptodome_aes(JsonPlusSerializer(pickle_fallback=True), key=KEY)

    tdir = chat_thread(root, "t", make())
    if form == "pickle+aes":
        _, payload = encrypted().cipher.encrypt(payload)
    latest = checkpoints(tdir)[-1]
    node = {"serde": form, "base64": b64(payload)}
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    assert_refused_everywhere(
        RepoSaver(root, serde=make()), cfg("t"), UnrevivableValueError, "unsafe_allow_pickle", str(latest)
    )
    assert not marker.exists()


class OnlyPickles:
    """A value msgpack cannot encode (not a dataclass, no model_dump): JsonPlusSerializer pickles it."""

    def __init__(self, word: str) -> None:
        self.word = word

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OnlyPickles) and other.word == self.word

    __hash__ = None  # type: ignore[assignment]


class PickleState(TypedDict):
    thing: OnlyPickles
    log: Annotated[list[str], operator.add]


def pickle_graph(saver: RepoSaver) -> Any:
    return line_graph(
        PickleState, saver, touch=lambda s: {"thing": OnlyPickles(s["thing"].word + "!"), "log": ["touched"]}
    )


def test_value_that_only_pickles_is_refused_on_write_naming_the_unsafe_option(root: Path) -> None:
    """Without the option the saver never writes a payload it would refuse to read back, and says how."""
    saver = RepoSaver(root, serde=JsonPlusSerializer(pickle_fallback=True), durable=False)
    with pytest.raises(InvalidWriteError, match="unsafe_allow_pickle=True"):
        pickle_graph(saver).invoke({"thing": OnlyPickles("hi"), "log": []}, cfg("p"))


def test_unsafe_allow_pickle_round_trips_a_value_that_only_pickles(root: Path) -> None:
    """The opt-in is explicit and named for what it is: with it, pickled state writes and reads back."""

    def saver() -> RepoSaver:
        return RepoSaver(root, serde=JsonPlusSerializer(pickle_fallback=True), unsafe_allow_pickle=True)

    out = pickle_graph(saver()).invoke({"thing": OnlyPickles("hi"), "log": []}, cfg("p"))
    assert out["thing"] == OnlyPickles("hi!")
    assert '"serde": "pickle"' in "".join(p.read_text() for p in (root / "threads" / "p").rglob("*.json"))
    assert pickle_graph(saver()).get_state(cfg("p")).values["thing"] == OnlyPickles("hi!")
    with pytest.raises(UnrevivableValueError, match="unsafe_allow_pickle"):
        RepoSaver(root, serde=JsonPlusSerializer(pickle_fallback=True)).get_tuple(cfg("p"))


@dataclass
class Note:
    text: str


class NoteState(TypedDict):
    note: Note


def note_graph(saver: RepoSaver) -> Any:
    return line_graph(NoteState, saver, edit=lambda s: {"note": Note(s["note"].text + " (edited)")})


def test_allowlist_argument_applies_to_a_caller_serde(root: Path) -> None:
    """RepoSaver(serde=..., allowlist=...) used to drop the allowlist: a fresh saver outside any graph could
    not read the graph's own type back. Now ``allowlist`` is the saver's, with any serde; without it,
    a serde that allows every type no longer lets the type through."""
    note_graph(RepoSaver(root, serde=JsonPlusSerializer(allowed_msgpack_modules=None))).invoke(
        {"note": Note("draft")}, cfg("n")
    )
    key = (Note.__module__, Note.__name__)
    for serde in (JsonPlusSerializer(allowed_msgpack_modules=None), JsonPlusSerializer(), encrypted().serde):
        tup = RepoSaver(root, serde=serde, allowlist=[key]).get_tuple(cfg("n"))
        assert tup is not None and tup.checkpoint["channel_values"]["note"] == Note("draft (edited)")
    with pytest.raises(UnrevivableValueError, match=f"refusing to construct {Note.__module__}.Note"):
        RepoSaver(root, serde=JsonPlusSerializer()).get_tuple(cfg("n"))


# ---------------------------------------------------------------------------
# 2. every kind of payload is checked, or refused: LangGraph's "json" payload
# ---------------------------------------------------------------------------
PROMPT = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain_core", "prompts", "prompt", "PromptTemplate"],
    "kwargs": {"template": "planted {x}", "input_variables": ["x"]},
}


def _json_node(serde: str) -> dict[str, Any]:
    data = json.dumps([PROMPT]).encode()
    if serde == "json+aes":
        _, data = encrypted().cipher.encrypt(data)
    return {"serde": serde, "base64": b64(data)}


@pytest.mark.parametrize("serde", ["json", "json+aes", "protobuf"])
@pytest.mark.parametrize("place", ["channel value", "pending write"])
def test_payload_the_saver_cannot_check_is_refused_before_any_serde_sees_it(
    root: Path, serde: str, place: str
) -> None:
    """A ``json`` payload went to JsonPlusSerializer's json reviver, which built a PromptTemplate with no
    allowlist at all. Every payload type the saver cannot check is now refused, naming file and pointer."""
    tdir = chat_thread(root, "t", encrypted() if serde == "json+aes" else None)
    node = _json_node(serde)
    if place == "channel value":
        planted, pointer, config = checkpoints(tdir)[-1], "/new_values/messages", cfg("t")
        rewrite(planted, lambda d: d["new_values"].__setitem__("messages", {"value": node}))
    else:
        planted = writes_files(tdir)[-1]
        pointer, config = "/writes/0/value", cfg("t", checkpoint_id=load(planted)["checkpoint_id"])
        rewrite(planted, lambda d: d["writes"][0].__setitem__("value", node))
    saver = RepoSaver(root, serde=encrypted() if serde == "json+aes" else None)
    base = serde.split("+")[0]
    assert_refused_everywhere(
        saver, config, UnrevivableValueError, f"refusing to load a {base} payload", str(planted)
    )
    with pytest.raises(UnrevivableValueError, match=pointer):
        saver.get_tuple(config)


def test_show_does_not_revive_a_planted_json_payload(root: Path) -> None:
    """``langgraph-repo show`` reads through the same checks: the planted value is shown as stored, with
    the reason, not as a revived PromptTemplate."""
    tdir = chat_thread(root, "t")
    latest = checkpoints(tdir)[-1]
    rewrite(latest, lambda d: d["new_values"].__setitem__("messages", {"value": _json_node("json")}))
    proc = cli(root, "show", "t", "--json", cwd="/")
    assert proc.returncode == 0, proc.stderr
    reason = json.loads(proc.stdout)["not_revived"]["messages"]
    assert "refusing to load a json payload" in reason and str(latest) in reason


# ---------------------------------------------------------------------------
# honest encrypted threads still work end to end
# ---------------------------------------------------------------------------
class AskState(TypedDict, total=False):
    note: Note
    answer: str
    log: Annotated[list[str], operator.add]


def ask_note_graph(saver: RepoSaver) -> Any:
    def ask(state: AskState) -> dict[str, Any]:
        answer = interrupt({"question": "sign?", "note": state["note"]})
        return {"answer": answer, "log": [f"answered {answer}"], "note": Note(state["note"].text + " signed")}

    return line_graph(AskState, saver, prepare=lambda s: {"log": ["prepared"]}, ask=ask)


def test_honest_encrypted_thread_runs_interrupts_resumes_and_validates(root: Path) -> None:
    """The docs/secrets.md setup with a graph's own dataclass, an interrupt and pending writes: every value
    is ciphertext, a fresh saver resumes it, history reads back, and validate passes."""
    first = ask_note_graph(RepoSaver(root, serde=encrypted()))
    first.invoke({"note": Note("contract"), "log": []}, cfg("vault"))
    waiting = first.get_state(cfg("vault"))
    assert waiting.next == ("ask",) and waiting.tasks[0].interrupts[0].value["note"] == Note("contract")
    again = ask_note_graph(RepoSaver(root, serde=encrypted()))
    out = again.invoke(Command(resume="Ada"), cfg("vault"))
    assert out == {"note": Note("contract signed"), "answer": "Ada", "log": ["prepared", "answered Ada"]}
    history = list(again.get_state_history(cfg("vault")))
    assert [s.next for s in history] == [(), ("ask",), ("prepare",), ("__start__",)]
    assert history[0].values == out and history[1].values == {"note": Note("contract"), "log": ["prepared"]}
    text = "".join(p.read_text() for p in root.rglob("*.json"))
    # as words: base64 of the ciphertext spells "Ada" now and then
    assert not re.search(r"\b(contract|Ada)\b", text) and '"serde": "msgpack+aes"' in text
    assert cli(root, "validate", "--no-secrets", cwd="/").returncode == 0


def test_plaintext_thread_moves_to_an_encrypting_saver_with_copy_threads(tmp_path: Path) -> None:
    """The docs/secrets.md way to start encrypting a thread written in the clear (the encrypting saver
    refuses its plaintext values in place): copy it into an encrypting saver; it runs on from there."""
    plain_root, vault_root = tmp_path / "plain", tmp_path / "vault"
    chat_thread(plain_root, "t", turns=2)
    with pytest.raises(UnrevivableValueError, match="stored in the clear"):
        RepoSaver(plain_root, serde=encrypted()).get_tuple(cfg("t"))
    copy_threads(RepoSaver(plain_root), RepoSaver(vault_root, serde=encrypted()), ["t"])
    out = chat_graph(RepoSaver(vault_root, serde=encrypted())).invoke(
        {"messages": [HumanMessage(content="now secret")]}, cfg("t")
    )
    assert [m.content for m in out["messages"]][-2:] == ["now secret", "echo: now secret"]
    assert len(out["messages"]) == 6
    assert "turn 0" not in "".join(p.read_text() for p in vault_root.rglob("*.json"))


# ---------------------------------------------------------------------------
# 3a. checkpoint.extra cannot replace the checkpoint's own keys
# ---------------------------------------------------------------------------
def _smuggle_extra(tdir: Path, key: str) -> Path:
    latest = checkpoints(tdir)[-1]
    trees: dict[str, Any] = {
        "channel_values": {
            "messages": [
                {
                    "$type": ["langchain_core.messages.human", "HumanMessage"],
                    "$kwargs": {"content": "smuggled"},
                }
            ]
        },
        "channel_versions": {"messages": "99"},
        "versions_seen": {},
        "updated_channels": ["messages"],
        "id": "1f000000-0000-6000-8000-000000000000",
        "v": 1,
        "ts": "2000-01-01T00:00:00+00:00",
    }

    def change(doc: dict[str, Any]) -> None:
        doc["checkpoint"]["extra"] = {key: trees[key]}

    rewrite(latest, change)
    return latest


@pytest.mark.parametrize("key", sorted(RESERVED_EXTRA_KEYS))
def test_reserved_key_in_checkpoint_extra_is_refused_on_read(root: Path, key: str) -> None:
    """extra was merged over the real checkpoint: a file could hand the graph other channel_values (or
    versions, or id) to resume from. Refused, naming the file and the key's pointer."""
    tdir = chat_thread(root, "t")
    planted = _smuggle_extra(tdir, key)
    saver = RepoSaver(root)
    assert_refused_everywhere(saver, cfg("t"), FileFormatError, str(planted), f"/checkpoint/extra/{key}")


def test_smuggled_channel_values_fail_validate_and_show_as_they_fail_the_graph(root: Path) -> None:
    """validate said ok and show showed the real state while the graph resumed from the smuggled one; now
    all three refuse the file, naming it and the pointer."""
    tdir = chat_thread(root, "t")
    planted = _smuggle_extra(tdir, "channel_values")
    lines = validate_lines(root)
    assert any(line.startswith(f"{planted}: /checkpoint/extra/channel_values: ") for line in lines), lines
    show = cli(root, "show", "t", cwd="/")
    assert (
        show.returncode == 4
        and str(planted) in show.stderr
        and "/checkpoint/extra/channel_values" in show.stderr
    )
    with pytest.raises(FileFormatError, match="/checkpoint/extra/channel_values"):
        chat_graph(RepoSaver(root)).get_state(cfg("t"))


def test_reserved_key_in_checkpoint_extra_is_refused_on_write(root: Path, saver: RepoSaver) -> None:
    """The schema and the writer refuse it too: no file with such an extra is ever written; an ordinary
    extra key still round-trips."""
    tdir = chat_thread(root, "t")
    latest = checkpoints(tdir)[-1]
    doc = load(latest)
    doc["checkpoint"]["extra"] = {"channel_values": {}}
    with pytest.raises(InvalidWriteError, match="/checkpoint/extra/channel_values"):
        saver.store.files.prepare("checkpoint", doc, latest)
    tup = saver.get_tuple(cfg("t"))
    assert tup is not None
    custom = {**tup.checkpoint, "id": str(uuid6(clock_seq=-2)), "note": {"kept": True}}
    saver.put(tup.config, custom, tup.metadata, {})  # type: ignore[arg-type]
    again = RepoSaver(root).get_tuple(cfg("t"))
    assert again is not None and again.checkpoint["note"] == {"kept": True}  # type: ignore[typeddict-item]
    assert again.checkpoint["channel_values"] == tup.checkpoint["channel_values"]


# ---------------------------------------------------------------------------
# 3b. a file whose names disagree with its place
# ---------------------------------------------------------------------------
def _value_host(tdir: Path) -> Path:
    """An earlier checkpoint holding a value the latest one still reads (the conversation's full copy)."""
    latest = checkpoints(tdir)[-1]
    for path in checkpoints(tdir)[:-1]:
        if "value" in load(path).get("new_values", {}).get("messages", {}):
            assert path != latest
            return path
    raise AssertionError(f"no value host in {tdir}")


MISPLACE: dict[str, tuple[str, Any]] = {
    "thread_id": ("/thread_id", "someone-else"),
    "checkpoint_ns": ("/checkpoint_ns", "elsewhere"),
    "checkpoint_id": ("/checkpoint_id", "1f000000-0000-6000-8000-000000000000"),
}


@pytest.mark.parametrize("field", sorted(MISPLACE))
def test_value_host_checkpoint_whose_names_disagree_with_its_place_is_refused_on_every_read_path(
    root: Path, field: str
) -> None:
    """The latest checkpoint reads its messages from an earlier file; that file claiming another thread,
    namespace or id was read anyway by get_tuple and show (only validate noticed)."""
    tdir = chat_thread(root, "t", turns=2)
    chat_thread(root, "good")
    host = _value_host(tdir)
    pointer, claim = MISPLACE[field]
    rewrite(host, lambda d: d.__setitem__(field, claim))
    saver = RepoSaver(root)
    assert_refused_everywhere(saver, cfg("t"), FileFormatError, str(host), f"at {pointer}:")
    show = cli(root, "show", "t", cwd="/")
    assert show.returncode == 4 and f"{host}: at {pointer}" in show.stderr, show.stderr
    lines = validate_lines(root)
    assert any(line.startswith(f"{host}: {pointer}: ") for line in lines), lines
    assert not any("/threads/good/" in line for line in lines)
    assert saver.get_tuple(cfg("good")) is not None


def test_prune_does_not_launder_a_misplaced_value_host_into_a_value_file(root: Path) -> None:
    """prune copies values the kept checkpoints use out of the removed ones; from a file claiming another
    thread it used to copy anyway, then delete the evidence. Now it stops, naming the file, and removes
    nothing."""
    tdir = chat_thread(root, "t", turns=2)
    host = _value_host(tdir)
    rewrite(host, lambda d: d.__setitem__("thread_id", "someone-else"))
    before = sorted(p for p in tdir.rglob("*") if p.is_file())
    with pytest.raises(FileFormatError, match=str(host)):
        RepoSaver(root).prune(["t"])
    assert sorted(p for p in tdir.rglob("*") if p.is_file()) == before


def _misplace_writes(tdir: Path) -> Path:
    path = writes_files(tdir)[0]
    rewrite(path, lambda d: d.__setitem__("thread_id", "someone-else"))
    return path


def _misplace_value_file(tdir: Path) -> Path:
    RepoSaver(tdir.parent.parent, durable=False).prune([tdir.name])  # moves kept values to values/
    path = sorted((tdir / "values").glob("messages@*.json"))[0]
    rewrite(path, lambda d: d.__setitem__("channel", "other"))
    return path


def _misplace_large(tdir: Path) -> Path:
    path = sorted((tdir / "large").glob("*.json"))[0]
    rewrite(path, lambda d: d.__setitem__("sha256", "0" * 64))
    return path


COPY_CASES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "writes": ("chat", _misplace_writes),
    "value": ("chat", _misplace_value_file),
    "large_value": ("big", _misplace_large),
}


@pytest.mark.parametrize("kind", sorted(COPY_CASES))
def test_copy_thread_refuses_a_file_whose_names_disagree_with_its_place(root: Path, kind: str) -> None:
    """copy_thread (and ``langgraph-repo copy``) read every file of a thread without checking its names:
    another thread's writes were relabelled as the copy's, misplaced value and large files copied on.
    Every kind of file is now checked where it is read; nothing is copied."""
    graph_kind, misplace = COPY_CASES[kind]
    if graph_kind == "big":
        big_graph(RepoSaver(root, durable=False)).invoke({"document": BIG_TEXT}, cfg("t"))
    else:
        chat_thread(root, "t", turns=2)
    planted = misplace(root / "threads" / "t")
    with pytest.raises(FileFormatError, match=str(planted)):
        RepoSaver(root).copy_thread("t", "copy")
    assert not (root / "threads" / "copy").exists()
    proc = cli(root, "copy", "t", "copy2", cwd="/")
    assert proc.returncode == 4 and str(planted) in proc.stderr, proc.stderr
    assert not (root / "threads" / "copy2").exists()
    lines = validate_lines(root)
    assert any(line.startswith(f"{planted}: ") for line in lines), lines


def test_hashed_thread_folder_whose_files_claim_another_thread_is_refused(root: Path) -> None:
    """A thread id too long for a folder name is stored under its hash and read back from its files; a
    file there claiming another (existing) thread made ``list`` and ``threads`` show that thread twice."""
    long_id = "conversation-" + "x" * 200
    tdir = chat_thread(root, long_id)
    chat_thread(root, "victim")
    assert tdir.name.startswith("~")
    for path in (*checkpoints(tdir), *writes_files(tdir)):
        rewrite(path, lambda d: d.__setitem__("thread_id", "victim"))
    planted = checkpoints(tdir)[0]
    with pytest.raises(FileFormatError, match="/thread_id") as info:
        list(RepoSaver(root).list(None))
    assert str(planted) in str(info.value)
    proc = cli(root, "threads", cwd="/")
    assert proc.returncode == 4 and str(planted) in proc.stderr, proc.stdout + proc.stderr
    lines = validate_lines(root)
    assert any(line.startswith(f"{planted}: /thread_id: ") for line in lines), lines


# ---------------------------------------------------------------------------
# 4. what one file may expand to
# ---------------------------------------------------------------------------
def _plant_raw_metadata(tdir: Path, raw_json: str) -> Path:
    latest = checkpoints(tdir)[-1]
    doc = load(latest)
    doc["metadata"]["junk"] = "@@JUNK@@"
    latest.write_text(json.dumps(doc).replace('"@@JUNK@@"', raw_json), encoding="utf-8")
    return latest


def _peak_while(call: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        try:
            call()
        except RepoCheckpointError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BLOWUPS: dict[str, tuple[Callable[[int], str], int, str]] = {
    # what, how many, how the error says it
    "nested empty lists": (
        lambda n: "[" + "[]," * (n - 1) + "[]]",
        3 * MAX_JSON_CONTAINERS,
        "arrays and objects",
    ),
    "short strings": (
        lambda n: "[" + '"ab",' * (n - 1) + '"ab"]',
        MAX_JSON_VALUES + 1000,
        "values and keys",
    ),
}


@pytest.mark.parametrize("case", sorted(BLOWUPS))
def test_file_that_would_expand_past_the_bounds_is_refused_before_it_is_parsed(root: Path, case: str) -> None:
    """9-30 MB of tiny JSON values took gigabytes and tens of seconds to read. Refused from a count on the
    bytes, naming the file, by the saver, show and validate; the read stays within a few times the file."""
    tdir = chat_thread(root, "t")
    make, count, says = BLOWUPS[case]
    planted = _plant_raw_metadata(tdir, make(count))
    size = planted.stat().st_size
    saver = RepoSaver(root)
    with pytest.raises(FileFormatError, match=says) as info:
        saver.get_tuple(cfg("t"))
    assert info.value.path == str(planted)
    assert _peak_while(lambda: RepoSaver(root).get_tuple(cfg("t"))) < 3 * size
    show = cli(root, "show", "t", cwd="/")
    assert show.returncode == 4 and str(planted) in show.stderr and says in show.stderr
    lines = validate_lines(root)
    assert any(line.startswith(f"{planted}: /: ") and says in line for line in lines), lines


class ListState(TypedDict):
    items: list[Any]


def test_saver_never_writes_a_file_a_read_would_refuse(root: Path, container_bound: int) -> None:
    """A value past the bounds is refused at put (InvalidWriteError, nothing written), so every file the
    saver writes reads back. (Under the lowered bound of ``container_bound``: the same checks.)"""

    def grow(s: ListState) -> dict[str, Any]:
        return {"items": [[] for _ in range(container_bound + 1)]}

    graph = line_graph(ListState, RepoSaver(root, durable=False), grow=grow)
    with pytest.raises(InvalidWriteError, match="arrays and objects"):
        graph.invoke({"items": ["small"]}, cfg("t"))
    state = line_graph(ListState, RepoSaver(root), grow=grow).get_state(cfg("t"))
    assert state.values == {"items": ["small"]} and state.next == ("grow",)
    assert cli(root, "validate", "--no-secrets", cwd="/").returncode == 0


def test_brackets_and_commas_inside_strings_do_not_count_toward_the_bounds(root: Path) -> None:
    """Only structure counts: a text of millions of brackets and commas is stored and read back whole.
    (Coverage for the exact count; such a file read before this change too.)"""
    text = "[{,:" * (MAX_JSON_VALUES // 4 + 1000)
    graph = chat_graph(RepoSaver(root, durable=False))
    graph.invoke({"messages": [HumanMessage(content=text)]}, cfg("t"))
    state = chat_graph(RepoSaver(root)).get_state(cfg("t"))
    assert state.values["messages"][0].content == text
    assert cli(root, "validate", "--no-secrets", cwd="/").returncode == 0


@pytest.mark.parametrize("length", [48, 49, 50, 51])
def test_the_values_bound_is_counted_exactly_at_its_edge(
    monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    """Each value after the first is introduced by a byte of its own (``[ { , :``), so a file shorter
    than the values bound cannot exceed it and only a longer one is counted (the first 1.6 MB write
    of a 50,000-item list counted twice what it needed). At the edge, under lowered bounds, bytes
    that are all separators (the most values a length can hold): one value per byte and the first,
    passing up to the bound and refused past it."""
    from langgraph_checkpoint_repo.core import jsonread

    monkeypatch.setattr(jsonread, "MAX_JSON_CONTAINERS", 5)
    monkeypatch.setattr(jsonread, "MAX_JSON_VALUES", 50)
    raw = b"[" + b"," * (length - 1)  # 1 + length values: the first, and one per byte
    problem = jsonread.json_bounds_problem(raw)
    assert (problem is None) == (1 + length <= 50), (length, problem)
    if problem is not None:
        assert "at least 51" in problem or f"at least {1 + length}" in problem
