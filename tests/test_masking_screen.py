"""The screen of what is printed (core/masking.py) without ``re`` until a text needs a regex.

git's diff driver screens every line it prints, once per file version git prints; a regex
is compiled (and ``re`` imported) only where a text holds a literal a secret starts with,
followed as the secret needs. These check that what the screen gives is what it gave with
its regexes compiled at import (each reference below is the code it replaced), and that an
ordinary text loads no ``re`` while a secret still gets masked.
"""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import examples
from langgraph_checkpoint_repo.core import masking
from langgraph_checkpoint_repo.core.format.messages import Call, Refusal
from langgraph_checkpoint_repo.core.masking import CONTROL_CODES, escape_controls, mask_message, mask_secrets

SRC = str(Path(masking.__file__).parents[2])


# ----------------------------------------------------------------------------
# the references: the code the lazy one replaced
# ----------------------------------------------------------------------------
_ENCODED_RUN = re.compile(r"[A-Za-z0-9._~%^=@-]+")
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")


def reference_mask_message(text: str) -> str:
    text = mask_secrets(text)
    if "%" not in text and "^" not in text:
        return text
    return _ENCODED_RUN.sub(_reference_run, text)


def _reference_run(m: re.Match[str]) -> str:
    run = m.group()
    if "%" not in run and "^" not in run:
        return run
    raw = bytearray()
    i = 0
    while i < len(run):
        ch = run[i]
        if ch == "%" and _HEX2.fullmatch(run, i + 1, i + 3):
            raw.append(int(run[i + 1 : i + 3], 16))
            i += 3
        elif ch == "^" and "a" <= run[i + 1 : i + 2] <= "z":
            raw.extend(run[i + 1].upper().encode())
            i += 2
        else:
            raw.extend(ch.encode())
            i += 1
    decoded = raw.decode("utf-8", "replace")
    masked = mask_secrets(decoded)
    return run if masked == decoded else masked


_REFERENCE_TABLES: dict[str, dict[int, str]] = {}


def reference_escape_controls(text: str, keep: str = "") -> str:
    table = _REFERENCE_TABLES.get(keep)
    if table is None:  # made once per keep: 4,000 texts below each made it again (7 s of the suite)
        codes = [c for c in CONTROL_CODES if chr(c) not in keep]
        table = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in codes}
        _REFERENCE_TABLES[keep] = table
    return text.translate(table)


# ----------------------------------------------------------------------------
# the same text as before
# ----------------------------------------------------------------------------
#: what the texts are made of: encoded path segments, their escapes (whole, cut, joined), the
#: literals secrets start with (in runs long enough to be one, or not), and what is not a run
PIECES = st.sampled_from(
    [
        "%", "^", "%7", "%73", "%6B", "%2d", "%2D", "%zz", "^a", "^s", "^k", "^", "a", "Z", "0", "-", "_",
        ".", "~", "=", "@", " ", "/", ":", "|", "\n", "é", "\ud800", "%E2%80%AE", "%ed%a0%80",
        "sk-", "sk-" + "a" * 20, "^s^k-" + "b" * 22, "%73%6b-" + "c" * 21, "desk-1", "task-", "50% off",
        "ghp_" + "d" * 36, "^g^h^p_" + "e" * 36, "AKIA", "A^k^i^a" + "F" * 16, "eyJ", "eyJa.eyJb.c",
        "Bearer ", "t" * 20, "xox", "xoxb-" + "1" * 10, "-----BEGIN", " RSA PRIVATE KEY-----", "A" * 16,
    ]
)  # fmt: skip


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_a_message_is_masked_as_the_regex_of_encoded_runs_masked_it(text: str) -> None:
    assert mask_message(text) == reference_mask_message(text)


#: a secret of each default pattern (made up), to be spelled as encoded path segments spell it
SECRETS = [
    "sk-ant-" + "a" * 30,
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "ghp_" + "o" * 36,
    "github_pat_" + "Z" * 22,
    "xoxb-1234567890",
    "AIza" + "0" * 35,
    "sk_live_" + "x" * 16,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    "Bearer " + "tok/en~+" * 3,
    "-----BEGIN PRIVATE KEY-----\nMIIE" + "A" * 40 + "\n-----END PRIVATE KEY-----",
]


def spellings(secret: str) -> list[str]:
    """``secret`` as a path segment may spell it: every byte as %xx, as %XX, capitals as ^x."""
    data = secret.encode()
    return [
        "".join(f"%{b:02x}" for b in data),
        "".join(f"%{b:02X}" for b in data),
        "".join(f"^{c.lower()}" if "A" <= c <= "Z" else c for c in secret),
    ]


@pytest.mark.parametrize("spelled", [s for secret in SECRETS for s in spellings(secret)])
def test_a_secret_spelled_as_an_encoded_segment_is_masked_as_before(spelled: str) -> None:
    text = f"threads/{spelled}/checkpoints and more"
    assert mask_message(text) == reference_mask_message(text)


@pytest.mark.parametrize(
    "text",
    [
        "a key in a path: threads/sk-^a^b^c" + "^d" * 25 + "/checkpoints",
        "%73%6b-%41" + "b" * 30 + " and 50% of sk-" + "c" * 25,
        "%" * 5000 + "^" * 5000,  # linear: each character looked at a few times
        "x" * 20_000 + "%41" + "y" * 20_000,
        "",
        "%",
        "^",
    ],
)
def test_these_messages_are_masked_as_before(text: str) -> None:
    assert mask_message(text) == reference_mask_message(text)


#: what a line may hold: each kind of control character (C0, DEL, C1, bidi, lone surrogates),
#: characters that are not printable but no control (a no-break space, a zero-width joiner, an
#: unassigned code point), and printable text
CHARACTERS = st.sampled_from(
    [
        "\x00", "\x1b", "\t", "\n", "\r", "\x7f", "\x85", "\x9b", "\u202a", "\u202e", "\u2066",
        "\u2069", "\ud800", "\udfff", "\udc00", "\u00a0", "\u200d", "\u2028", "\U000e0001", "\ufffe",
        "a", " ", "é", "😀", "\\", "x",
    ]
)  # fmt: skip


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(CHARACTERS, max_size=12).map("".join), st.sampled_from(["", "\n\t", "\x1b\ud800", "\u202e"]))
def test_control_characters_and_lone_surrogates_are_escaped_as_before(text: str, keep: str) -> None:
    assert escape_controls(text, keep) == reference_escape_controls(text, keep)


@pytest.mark.parametrize("keep", ["", "\n\t"])
def test_every_control_code_alone_is_escaped_as_before(keep: str) -> None:
    for code in CONTROL_CODES:
        text = f"a{chr(code)}b"
        assert escape_controls(text, keep) == reference_escape_controls(text, keep), hex(code)
    assert escape_controls("plain text é 😀") == "plain text é 😀"


def test_the_named_tuples_are_collections_named_tuples() -> None:
    """messages.py's records, made without collections: the same repr, equality, order,
    fields, defaults, keywords, matching and pickling as ``collections.namedtuple``'s."""
    Named = namedtuple("Refusal", ("cls", "field", "why", "changes", "key"), defaults=(True, "$fields"))
    made = [
        (("a", "b", "c"), {}),
        (("a",), {"field": "f", "why": "w", "key": "k"}),
        ((), {"cls": "x", "field": "f", "why": "w", "changes": False}),
    ]
    for args, kwargs in made:
        ours, theirs = Refusal(*args, **kwargs), Named(*args, **kwargs)
        assert repr(ours) == repr(theirs) and ours == theirs and tuple(ours) == tuple(theirs)
        assert [getattr(ours, f) for f in Named._fields] == list(theirs)
        assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is Refusal
    refused = [
        (("a", "b"), {}),
        (("a", "b", "c"), {"cls": "x"}),
        (("a",) * 6, {}),
        (("a", "b", "c"), {"x": 1}),
    ]
    for args, kwargs in refused:
        with pytest.raises(TypeError):
            Refusal(*args, **kwargs)
    with pytest.raises(TypeError):
        Named("a", "b")
    match Call("lookup", {"id": 1}, None):
        case Call(name, args, ident):
            assert (name, args, ident) == ("lookup", {"id": 1}, None)
    with pytest.raises(AttributeError):
        Call("a", {}, None).name = "b"  # type: ignore[misc]


#: matches of each trigger's loose pattern, literals alone, and what a literal is followed by
_MATCHES = st.sampled_from(list(masking._LOOSE.values())).flatmap(lambda p: st.from_regex(p, fullmatch=True))
_BYTES = st.sampled_from(
    [
        *masking._LOOSE,
        b"-",
        b"_",
        b"a" * 19,
        b"A" * 15,
        b"1" * 35,
        b".",
        b"|",
        b" ",
        b"\xc3\xa9",
        b"PRIVATE KEY",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_MATCHES | _BYTES, max_size=8).map(b"".join))
def test_before_re_is_imported_a_literal_is_checked_as_its_regex_would(data: bytes) -> None:
    """In a process that has not imported ``re`` (git's diff driver), a literal is followed up
    by ``_FOLLOWED_BY`` before its regex is compiled: the same answer as the regex alone."""
    want = masking.might_contain_secret(data)  # this process has re: the regexes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(masking, "sys", type("NoRe", (), {"modules": {}}))
        patch.setattr(masking, "_compiled", {})
        assert masking.might_contain_secret(data) == want


#: a match of each trigger's loose pattern
LOOSE_MATCHES = {
    b"sk-": b"sk-" + b"a" * 20,
    b"k_live_": b"k_live_" + b"a" * 16,
    b"AKIA": b"AKIA" + b"A" * 16,
    b"ASIA": b"ASIA" + b"A" * 16,
    **{g: g + b"a" * 36 for g in (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_")},
    b"github_pat_": b"github_pat_" + b"a" * 22,
    b"xox": b"xoxb-" + b"a" * 10,
    b"AIza": b"AIza" + b"a" * 35,
    b"eyJ": b"eyJab.eyJ",
    b"-----BEGIN": b"-----BEGIN RSA PRIVATE KEY",
    b"earer ": b"earer " + b"a" * 20,
}


@pytest.mark.parametrize("literal", list(LOOSE_MATCHES), ids=[t.decode() for t in LOOSE_MATCHES])
def test_every_byte_after_a_literal_is_judged_as_its_regex_judges_it(literal: bytes) -> None:
    """Each byte value at each place after the literal of a match (and the match cut there):
    the check before the regex (``_FOLLOWED_BY``) never refuses what the regex matches."""
    match = LOOSE_MATCHES[literal]
    assert masking._regex(masking._LOOSE[literal]).fullmatch(match)
    cases = [
        case
        for place in range(len(literal), len(match))
        for byte in range(256)
        for data in [match[:place] + bytes([byte]) + match[place + 1 :]]
        for case in (data, data[: place + 1])
    ]
    want = [masking.might_contain_secret(case) for case in cases]  # by the regexes
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(masking, "sys", type("NoRe", (), {"modules": {}}))
        compiled: dict[Any, Any] = {}
        patch.setattr(masking, "_compiled", compiled)
        for case, answer in zip(cases, want, strict=True):
            compiled.clear()  # as in a fresh process
            assert masking.might_contain_secret(case) == answer, case


# ----------------------------------------------------------------------------
# re only where a text needs it
# ----------------------------------------------------------------------------
SCREEN = (
    "import sys; sys.path.append(sys.argv[1]); sys.stdout.reconfigure(encoding='utf-8')\n"
    "from langgraph_checkpoint_repo.core.masking import escape_controls, mask_message, safe_message\n"
    "for line in sys.argv[2:]:\n"
    "    shown = escape_controls(mask_message(line))\n"
    "    print(shown, safe_message(line) == escape_controls(mask_message(line), '\\n\\t'))\n"
    "print(sorted({'re', 'json', 'enum', 'functools', 'collections'} & set(sys.modules)))\n"
)


def screen(*lines: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", SCREEN, SRC, *lines],
        capture_output=True,
        encoding="utf-8",
        check=True,
    )
    return out.stdout.splitlines()


def test_an_ordinary_line_is_screened_without_importing_re() -> None:
    lines = [
        "user: Where is my order A-1002? It was due last week. [turn-2-meadow]",
        "thread desk-1 task-7 asked: 50% off ^_^ a bearer of news, nearer to eyJ",
        "tab\there, a no-break\u00a0space, an escape \x1b[2J and a bidi \u202e override",
    ]
    *shown, loaded = screen(*lines)
    assert shown == [
        f"{lines[0]} True",
        f"{lines[1]} True",
        "tab\\x09here, a no-break\u00a0space, an escape \\x1b[2J and a bidi \\u202e override True",
    ]
    assert loaded == "[]"


def test_a_secret_is_masked_and_then_re_is_imported() -> None:
    key = "sk-ant-" + "a" * 30
    *shown, loaded = screen(f"say {key} now", "path threads/sk-^a^b^c" + "^d" * 25 + "x/checkpoints")
    assert shown[0] == "say sk-a… now True"
    assert shown[1].startswith("path threads/sk-A…") and "^d" not in shown[1]
    assert "re" in loaded
