"""Ids to path segments: reversible, injective, and always one safe segment inside the root."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.graph import MessagesState
from langgraph.graph.state import CompiledStateGraph

from graphs import cfg, line_graph
from helpers import examples
from langgraph_checkpoint_repo import RepoSaver
from langgraph_checkpoint_repo.core.layout import decode_segment, encode_segment, is_temp_name

# every code point, lone surrogates included (they can reach us through str ids)
ANY_CHAR = st.characters(exclude_categories=())
TRICKY_CHAR = st.sampled_from(list("aAzZ09.-_~%^/\\:\x00 \t\né\u0301\u00c9\ufeff\U0001f600\ud800"))
IDS = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.text(TRICKY_CHAR, max_size=160),
    st.text(max_size=300),
)
SEGMENT_CHARS = st.text(st.sampled_from(list("abz09-_.%^~ABf")), max_size=30)

VARIANTS: dict[str, Callable[[str], str]] = {
    "swapcase": str.swapcase,
    "upper": str.upper,
    "lower": str.lower,
    "nfc": lambda s: unicodedata.normalize("NFC", s),
    "nfd": lambda s: unicodedata.normalize("NFD", s),
    "nfkc": lambda s: unicodedata.normalize("NFKC", s),
    "dot_after": lambda s: s + ".",
    "dot_before": lambda s: "." + s,
    "escape_like": lambda s: s.replace("a", "%61").replace("b", "^b"),
    "dash_to_underscore": lambda s: s.replace("-", "_"),
    "suffix_tmp": lambda s: s + ".tmp",
}

TEN_KB_ID = ("../é\\C:" * 2000)[:10_240]
HOSTILE_THREAD_IDS = ["../../etc", "a/b", "..", "C:\\x", "\x00", ".", "/", "../", "support-42"]


def assert_safe_segment(seg: str) -> None:
    """The properties every folder or file-name segment must have on any filesystem."""
    assert seg != ""
    assert seg not in (".", "..")
    assert "/" not in seg and "\\" not in seg and "\x00" not in seg
    assert seg.isascii()
    assert seg.isprintable() and " " not in seg
    assert len(seg.encode("utf-8")) <= 255
    assert seg.lower() == seg  # a case-insensitive filesystem cannot merge two ids


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------
@given(IDS)
@example("")
@example(TEN_KB_ID)
@settings(max_examples=examples(400), deadline=None)
def test_encode_gives_one_safe_segment(value: str) -> None:
    """Whatever the id, its segment is a single, portable, lower-case path component."""
    assert_safe_segment(encode_segment(value))


@given(IDS)
@example("")
@example(".")
@example("Ab.")
@settings(max_examples=examples(400), deadline=None)
def test_decode_reverses_encode(value: str) -> None:
    """Short ids decode back to themselves; hashed (long) ones are refused, not mis-decoded."""
    seg = encode_segment(value)
    if seg.startswith("~"):
        assert len(seg) == 65
        with pytest.raises(ValueError):
            decode_segment(seg)
    else:
        assert decode_segment(seg) == value


@given(IDS, IDS)
@settings(max_examples=examples(400), deadline=None)
def test_encode_is_injective_on_arbitrary_pairs(a: str, b: str) -> None:
    """Two different ids never share a folder."""
    if a != b:
        assert encode_segment(a) != encode_segment(b)


@given(IDS, st.sampled_from(sorted(VARIANTS)))
@example("Support", "lower")
@example("\u00e9", "nfd")
@example("e\u0301", "nfc")
@settings(max_examples=examples(600), deadline=None)
def test_encode_is_injective_on_near_miss_variants(value: str, variant: str) -> None:
    """Ids differing only by case, normalisation form, dots or escapes stay apart."""
    other = VARIANTS[variant](value)
    if other != value:
        assert encode_segment(other) != encode_segment(value)


@given(SEGMENT_CHARS)
@settings(max_examples=examples(400), deadline=None)
def test_decode_accepts_only_canonical_segments(seg: str) -> None:
    """A segment decodes only if it is exactly what encode makes, so decode is injective too."""
    try:
        value = decode_segment(seg)
    except ValueError:
        return
    assert encode_segment(value) == seg


@given(IDS)
@example("report.tmp")
@settings(max_examples=examples(200), deadline=None)
def test_encoded_segment_is_never_taken_for_a_temp_or_hidden_name(value: str) -> None:
    """Readers skip temp/hidden names and git ignores *.tmp, so no id may encode to one."""
    assert not is_temp_name(encode_segment(value))


# ---------------------------------------------------------------------------
# explicit cases
# ---------------------------------------------------------------------------
def test_plain_id_stays_readable() -> None:
    """The common case keeps a reviewable folder name."""
    assert encode_segment("support-42") == "support-42"
    assert decode_segment("support-42") == "support-42"


@pytest.mark.parametrize("value", ["../", "/", "\\", "\x00", ".", "..", "", "C:\\x", "a/b", "../../etc"])
def test_path_syntax_ids_are_escaped_and_round_trip(value: str) -> None:
    """Path separators, NUL and dot names cannot steer a path; they still decode back."""
    seg = encode_segment(value)
    assert_safe_segment(seg)
    assert seg != value
    assert decode_segment(seg) == value


def test_ten_kilobyte_id_gets_a_hashed_segment() -> None:
    """Over-long ids become a fixed-size hash segment instead of an unusable file name."""
    seg = encode_segment(TEN_KB_ID)
    assert_safe_segment(seg)
    assert seg.startswith("~") and len(seg) == 65
    assert encode_segment(TEN_KB_ID + "x") != seg


def test_ids_differing_only_in_case_get_different_segments() -> None:
    """On a case-insensitive filesystem 'Support' and 'support' must not share a folder."""
    upper, lower = encode_segment("Support"), encode_segment("support")
    assert upper != lower
    assert upper.lower() != lower.lower()
    assert decode_segment(upper) == "Support"


def test_nfc_and_nfd_spellings_get_different_segments() -> None:
    """macOS-style normalisation must not merge two ids that Python sees as different."""
    nfc, nfd = unicodedata.normalize("NFC", "\u00e9"), unicodedata.normalize("NFD", "\u00e9")
    assert nfc != nfd
    assert encode_segment(nfc) != encode_segment(nfd)
    assert decode_segment(encode_segment(nfc)) == nfc
    assert decode_segment(encode_segment(nfd)) == nfd


# ---------------------------------------------------------------------------
# through a real graph
# ---------------------------------------------------------------------------
def build_chat(saver: RepoSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Two nodes per turn, each appending one AIMessage."""

    def first(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [AIMessage(content=f"first {len(state['messages'])}")]}

    def second(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [AIMessage(content=f"second {len(state['messages'])}")]}

    return line_graph(MessagesState, saver, first=first, second=second)


def everything_under(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def test_hostile_thread_ids_stay_inside_the_root(tmp_path: Path) -> None:
    """Thread ids shaped like paths create nothing outside the root and list back verbatim."""
    root = tmp_path / "deep" / "er" / "root"
    saver = RepoSaver(root, durable=False)
    app = build_chat(saver)
    for i, thread_id in enumerate(HOSTILE_THREAD_IDS):
        app.invoke({"messages": [HumanMessage(content=f"hello {i}")]}, cfg(thread_id))

    created = everything_under(tmp_path)
    outside = {p for p in created if p != root and root not in p.parents} - set(root.parents)
    assert outside == set()
    assert all(not p.is_symlink() for p in created)
    listed = [t.config["configurable"]["thread_id"] for t in saver.list(None)]
    assert set(listed) == set(HOSTILE_THREAD_IDS)
    fresh = RepoSaver(root)
    for i, thread_id in enumerate(HOSTILE_THREAD_IDS):
        tup = fresh.get_tuple(cfg(thread_id))
        assert tup is not None
        assert tup.config["configurable"]["thread_id"] == thread_id
        assert tup.checkpoint["channel_values"]["messages"][0].content == f"hello {i}"


def test_ten_kilobyte_thread_id_round_trips_through_the_saver(root: Path) -> None:
    """A hashed folder still gives back the original id from get_tuple and list(None)."""
    saver = RepoSaver(root)
    build_chat(saver).invoke({"messages": [HumanMessage(content="long")]}, cfg(TEN_KB_ID))

    (folder,) = (root / "threads").iterdir()
    assert folder.name == encode_segment(TEN_KB_ID)
    fresh = RepoSaver(root)
    tup = fresh.get_tuple(cfg(TEN_KB_ID))
    assert tup is not None
    assert tup.config["configurable"]["thread_id"] == TEN_KB_ID
    assert [m.content for m in tup.checkpoint["channel_values"]["messages"]] == [
        "long",
        "first 1",
        "second 2",
    ]
    assert {t.config["configurable"]["thread_id"] for t in fresh.list(None)} == {TEN_KB_ID}


def test_case_and_normalisation_twins_are_separate_threads(root: Path) -> None:
    """Threads 'Support'/'support' and NFC/NFD 'é' keep separate state and all four list back."""
    twins = [
        "Support",
        "support",
        unicodedata.normalize("NFC", "\u00e9"),
        unicodedata.normalize("NFD", "\u00e9"),
    ]
    saver = RepoSaver(root, durable=False)
    app = build_chat(saver)
    for i, thread_id in enumerate(twins):
        app.invoke({"messages": [HumanMessage(content=f"twin {i}")]}, cfg(thread_id))

    assert len(list((root / "threads").iterdir())) == 4
    fresh = RepoSaver(root)
    assert sorted(
        t.config["configurable"]["thread_id"] for t in fresh.list(None) if t.metadata["step"] == 2
    ) == (sorted(twins))
    for i, thread_id in enumerate(twins):
        tup = fresh.get_tuple(cfg(thread_id))
        assert tup is not None
        assert tup.checkpoint["channel_values"]["messages"][0].content == f"twin {i}"


def test_thread_id_ending_in_tmp_is_listed(root: Path) -> None:
    """A thread called 'report.tmp' is a real thread, not a leftover temp file."""
    saver = RepoSaver(root, durable=False)
    build_chat(saver).invoke({"messages": [HumanMessage(content="x")]}, cfg("report.tmp"))
    assert saver.get_tuple(cfg("report.tmp")) is not None
    assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"report.tmp"}
