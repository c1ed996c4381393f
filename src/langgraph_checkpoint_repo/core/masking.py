"""What may be printed: secrets masked, control characters escaped.

A leaf of the core: errors (every message), validate, the command line and the redactor
(redaction.py, which rewrites values with the same patterns) all import it, and it imports
nothing of the package, so no error can pull a cycle in.

Nor does it import ``re`` until a text needs a regex (``_regex``): git's diff driver, which
git starts once per file version it prints, screens every line it prints here, and most
lines hold none of the literals a secret starts with (``TRIGGERS``), no encoded path segment
and no control character, each told by a scan of the standard library's string methods;
importing ``re`` (with enum and functools) was more than a third of its start.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping
    from typing import Any

# not glued to a letter or digit before it ("task-...", "mask-..." are not keys)
_B = r"(?<![A-Za-z0-9])"

#: kind -> regular expression; the kind names the marker: ``[REDACTED:<kind>]``
DEFAULT_PATTERNS: Mapping[str, str] = {
    "anthropic-key": _B + r"sk-ant-[A-Za-z0-9_-]{20,}",
    # sk-..., sk-proj-..., sk-svcacct-...; a key has an upper-case letter or digit
    "openai-key": _B + r"sk-(?!ant-)(?=[A-Za-z0-9_-]*[A-Z0-9])[A-Za-z0-9_-]{20,}",
    "aws-access-key-id": _B + r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
    "github-token": _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "slack-token": _B + r"xox[abposr]-[A-Za-z0-9-]{10,}",
    "google-api-key": _B + r"AIza[A-Za-z0-9_-]{35}",
    "stripe-key": _B + r"[sr]k_live_[A-Za-z0-9]{16,}",
    "jwt": _B + r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
    # the whole block; an unterminated one up to the end of the string
    "private-key": r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
    # the token after "Bearer " (the word itself stays)
    "bearer-token": r"(?<=[Bb]earer )[A-Za-z0-9._~+/-]{20,}=*",
}

#: Every default pattern contains one of these literals, and where it does, the loose bytes
#: pattern beside it matches from there (no look-behind, so it is sound on msgpack or JSON
#: bytes, where a string's neighbour is a header byte). ``bytes in`` is the fastest scan the
#: standard library has; one combined regex is ten times slower on ordinary text. A loose
#: pattern is compiled where its literal is first found followed as it needs (``_FOLLOWED_BY``),
#: or found at all once ``re`` is imported (``_matches_at``); ``TRIGGERS``: the pairs, compiled.
_LOOSE: dict[bytes, bytes] = {
    b"sk-": rb"sk-[A-Za-z0-9_-]{20}",
    b"k_live_": rb"k_live_[A-Za-z0-9]{16}",
    b"AKIA": rb"AKIA[A-Z0-9]{16}",
    b"ASIA": rb"ASIA[A-Z0-9]{16}",
    b"ghp_": rb"ghp_[A-Za-z0-9]{36}",
    b"gho_": rb"gho_[A-Za-z0-9]{36}",
    b"ghu_": rb"ghu_[A-Za-z0-9]{36}",
    b"ghs_": rb"ghs_[A-Za-z0-9]{36}",
    b"ghr_": rb"ghr_[A-Za-z0-9]{36}",
    b"github_pat_": rb"github_pat_[A-Za-z0-9_]{22}",
    b"xox": rb"xox[abposr]-[A-Za-z0-9-]{10}",
    b"AIza": rb"AIza[A-Za-z0-9_-]{35}",
    b"eyJ": rb"eyJ[A-Za-z0-9_-]*\.eyJ",
    b"-----BEGIN": rb"-----BEGIN[ A-Z0-9]*PRIVATE KEY",
    b"earer ": rb"earer [A-Za-z0-9._~+/-]{20}",
}
#: (literal, its loose pattern compiled), in that order; compiled when first read (``__getattr__``)
TRIGGERS: tuple[tuple[bytes, re.Pattern[bytes]], ...]

_UPPER_DIGITS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ALNUM = _UPPER_DIGITS + b"abcdefghijklmnopqrstuvwxyz"
#: What each loose pattern needs right after its literal: so many bytes, each one of these. A
#: literal not followed so is no match, told without the regex (which decides the rest): text
#: holding ``desk-1`` or ``task-`` compiles nothing, nor imports ``re``.
_FOLLOWED_BY: dict[bytes, tuple[int, bytes]] = {
    b"sk-": (20, _ALNUM + b"_-"),
    b"k_live_": (16, _ALNUM),
    b"AKIA": (16, _UPPER_DIGITS),
    b"ASIA": (16, _UPPER_DIGITS),
    b"ghp_": (36, _ALNUM),
    b"gho_": (36, _ALNUM),
    b"ghu_": (36, _ALNUM),
    b"ghs_": (36, _ALNUM),
    b"ghr_": (36, _ALNUM),
    b"github_pat_": (22, _ALNUM + b"_"),
    b"xox": (1, b"abposr"),
    b"AIza": (35, _ALNUM + b"_-"),
    b"eyJ": (1, _ALNUM + b"_-."),  # the run, or the dot that ends it
    b"-----BEGIN": (1, b" " + _UPPER_DIGITS),  # the run, or the P of PRIVATE KEY
    b"earer ": (20, _ALNUM + b"._~+/-"),
}

_compiled: dict[str | bytes, Any] = {}


def _regex(pattern: str | bytes) -> Any:
    """``pattern`` compiled, on its first use (``re`` imported then: most text needs none)."""
    got = _compiled.get(pattern)
    if got is None:
        import re

        got = _compiled[pattern] = re.compile(pattern)
    return got


#: A byte every match of a trigger's loose pattern holds (of its literal, the rarest in
#: ordinary text; for ``xox``, the ``-`` it needs after it). Looking for one byte is ``memchr``, a small
#: part of the cost of looking for a literal, so a trigger whose byte the data does not hold
#: is not searched for, and the answer is the same: 15 searches of 5 MB of text become those
#: of the bytes it holds.
_ANCHORS: dict[bytes, bytes] = {
    b"sk-": b"-",
    b"k_live_": b"_",
    b"AKIA": b"K",
    b"ASIA": b"S",
    b"ghp_": b"_",
    b"gho_": b"_",
    b"ghu_": b"_",
    b"ghs_": b"_",
    b"ghr_": b"_",
    b"github_pat_": b"_",
    b"xox": b"-",
    b"AIza": b"z",
    b"eyJ": b"J",
    b"-----BEGIN": b"-",
    b"earer ": b"r",
}
#: the triggers' literals grouped by their bytes, in ``TRIGGERS``' order
_BY_ANCHOR: tuple[tuple[bytes, tuple[bytes, ...]], ...] = tuple(
    (anchor, tuple(literal for literal in _LOOSE if _ANCHORS[literal] == anchor))
    for anchor in dict.fromkeys(_ANCHORS[literal] for literal in _LOOSE)
)


def might_contain_secret(data: bytes) -> bool:
    """False only when no default pattern can match any string inside ``data``: each trigger
    its data holds the byte of (``_ANCHORS``) is looked for, and where it is found followed
    as its loose pattern needs (``_FOLLOWED_BY``), whether that pattern matches there. In
    data of ``_SCREEN_BYTES`` or more, a trigger is looked for only when the data holds
    every byte of it (``_holds_all``)."""
    held: dict[int, bool] | None = {} if len(data) >= _SCREEN_BYTES else None
    for anchor, literals in _BY_ANCHOR:
        if anchor not in data:
            continue
        for literal in literals:
            if held is not None and not _holds_all(data, literal, held):
                continue
            i = data.find(literal)
            if i != -1 and _matches_at(data, literal, i):
                return True
    return False


#: data this long or longer is screened byte by byte before a trigger is looked for in it: a
#: search for a trigger of common letters (``earer ``, ``sk-``) is 1-2 ms a megabyte, where
#: asking for a byte the data lacks is one ``memchr`` (a tenth of it) and for one it holds,
#: found near the start, next to nothing; below this, the searches are as cheap as the screen
_SCREEN_BYTES = 64 * 1024
#: lower-case letters and the space, from the least to the most frequent in English text (a
#: byte not here is rarer than all of them): a trigger's bytes are asked for rarest first, so
#: the first asked is the likeliest to be missing
_BY_FREQUENCY = b"zqxjkvbpygfwmucldrhsnioate "


def _rarest_first(literal: bytes) -> bytes:
    """The distinct bytes of ``literal``, rarest in ordinary text first."""
    return bytes(sorted(set(literal), key=lambda b: _BY_FREQUENCY.find(bytes([b]))))


#: each trigger's bytes as ``_holds_all`` asks for them
_SCREENS: dict[bytes, bytes] = {literal: _rarest_first(literal) for literal in _LOOSE}


def _holds_all(data: bytes, literal: bytes, held: dict[int, bool]) -> bool:
    """Whether ``data`` holds every byte of ``literal``; each byte is asked once a call
    (``held``): its answer is kept for every trigger holding it."""
    for byte in _SCREENS[literal]:
        got = held.get(byte)
        if got is None:
            got = held[byte] = byte in data
        if not got:
            return False
    return True


def _matches_at(data: bytes, literal: bytes, i: int) -> bool:
    """Whether the loose pattern of ``literal`` matches at ``i`` or at a later occurrence of
    it: by the regex once ``re`` is imported (a match is quicker than the check before it,
    and compiling it costs little then: the saver's process has imported it), until then only
    where the literal is followed as the pattern needs (``_FOLLOWED_BY``)."""
    loose = _compiled.get(_LOOSE[literal])
    if loose is None and "re" in sys.modules:
        loose = _regex(_LOOSE[literal])
    if loose is not None:
        while i != -1:
            if loose.match(data, i):
                return True
            i = data.find(literal, i + 1)
        return False
    count, allowed = _FOLLOWED_BY[literal]
    after = len(literal)
    while i != -1:
        run = data[i + after : i + after + count]
        if len(run) == count and not run.lstrip(allowed) and _regex(_LOOSE[literal]).match(data, i):
            return True
        i = data.find(literal, i + 1)
    return False


#: what a kind of the redactor's patterns may be named (compiled when first read: ``__getattr__``)
KIND_NAME: re.Pattern[str]
_KIND_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


def _group(kind: str) -> str:
    return "g_" + kind.replace("-", "_").replace(".", "__")


#: the default patterns in one regex, for the redactor (redaction.py); compiled when first read
#: (``__getattr__``): the git diff driver, which starts once per file version git prints and
#: imports this module for its screen, never uses it, and compiling it is about a millisecond
DEFAULT_REGEX: re.Pattern[str]
DEFAULT_KINDS = {_group(k): k for k in DEFAULT_PATTERNS}


def __getattr__(name: str) -> Any:
    """``DEFAULT_REGEX``, ``KIND_NAME`` and ``TRIGGERS``, compiled on their first read and kept
    as the module's attributes (the redactor and the tests read them; the screen does not)."""
    if name == "DEFAULT_REGEX":
        value: Any = _regex("|".join(f"(?P<{_group(k)}>{p})" for k, p in DEFAULT_PATTERNS.items()))
    elif name == "KIND_NAME":
        value = _regex(_KIND_NAME)
    elif name == "TRIGGERS":
        value = tuple((literal, _regex(loose)) for literal, loose in _LOOSE.items())
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def mask(secret: str) -> str:
    """Enough of a secret to find it, not enough to use it: its first 4 characters."""
    return secret[:4] + "…"


#: What output masks: the default patterns, but a PEM block only as far as its key goes. The
#: saver's pattern takes an unterminated block to the end of the string (one stored value:
#: safest); a printed line joins many values, and there it hid every argument and tool call
#: after the header. Shown: the header and the end line, the body (base64, line breaks, JSON's
#: ``\n``) masked; a header with no body of a key's length (16 base64 characters) is no key.
_PEM_BODY = r"(?:[A-Za-z0-9+/=]|\s|\\[nr])*"
SHOWN_PATTERNS: Mapping[str, str] = {
    **DEFAULT_PATTERNS,
    "private-key": r"(?P<pem_head>-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)"
    rf"(?P<pem_body>{_PEM_BODY})(?P<pem_end>-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?",
}
_PEM_SEPARATORS = r"(?:\s|\\[nr])+"
#: the shown patterns in one regex, compiled when a text first might hold a secret: most text
#: holds none, and the git diff driver, which starts once per file version git prints, would
#: compile it (about a millisecond) on every start
_SHOWN = "|".join(f"(?P<{_group(k)}>{p})" for k, p in SHOWN_PATTERNS.items())


def _mask_shown(m: re.Match[str]) -> str:
    head = m.group("pem_head")
    if head is None:
        return mask(m.group())
    body = m.group("pem_body")
    separators = _regex(_PEM_SEPARATORS)
    key = separators.sub("", body)
    if len(key) < 16:
        return m.group()  # a header, no key: nothing secret to hide
    lead = separators.match(body)
    return head + (lead.group() if lead else "") + mask(key) + (m.group("pem_end") or "")


def mask_secrets(text: str) -> str:
    """``text`` with every match of the shown patterns masked (``SHOWN_PATTERNS``: the
    secret only, never what follows it): for messages that quote values.

    The bytes search first (``might_contain_secret``): the combined regex costs seconds per
    megabyte, and the command line masks everything it prints, whole states in ``--json``.
    """
    if not might_contain_secret(text.encode("utf-8", "surrogatepass")):
        return text
    return _regex(_SHOWN).sub(_mask_shown, text)  # type: ignore[no-any-return]


#: the characters encoded path segments are made of: a run of them holding ``%`` or ``^``
#: is decoded (it was ``re.sub`` of ``[A-Za-z0-9._~%^=@-]+``; now the string's own scans)
_RUN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~%^=@-")
_HEX = frozenset("0123456789abcdefABCDEF")


def mask_message(text: str) -> str:
    """``mask_secrets``, and a secret spelled as an encoded path segment masked too.

    A key carried in a thread id reaches a message as a file path (``sk-^a^b...``), which
    the patterns do not match: such a segment is shown decoded, with the key masked.
    """
    text = mask_secrets(text)
    if "%" not in text and "^" not in text:
        return text
    return "".join(_encoded_runs_masked(text))


def _encoded_runs_masked(text: str) -> list[str]:
    """``text`` in pieces, each run of ``_RUN`` characters holding ``%`` or ``^`` (what
    ``re.sub`` of ``[A-Za-z0-9._~%^=@-]+`` matched, whole) masked by ``_mask_encoded_run``;
    linear: each character is looked at once or twice (a run holding no ``%`` nor ``^``
    decodes to itself, and ``mask_secrets`` has seen it)."""
    out: list[str] = []
    done, end = 0, len(text)
    percent, caret = text.find("%"), text.find("^")  # the next of each, -1: none left
    while percent != -1 or caret != -1:
        at = caret if percent == -1 else percent if caret == -1 else min(percent, caret)
        start = at
        while start > done and text[start - 1] in _RUN:
            start -= 1
        stop = at + 1
        while stop < end and text[stop] in _RUN:
            stop += 1
        out += [text[done:start], _mask_encoded_run(text[start:stop])]
        done = stop
        if percent != -1 and percent < stop:
            percent = text.find("%", stop)
        if caret != -1 and caret < stop:
            caret = text.find("^", stop)
    out.append(text[done:])
    return out


def _mask_encoded_run(run: str) -> str:
    decoded = _loose_decode(run)
    masked = mask_secrets(decoded)
    return run if masked == decoded else masked


def _loose_decode(run: str) -> str:
    """``layout.decode_segment`` that never fails: a message may cut or join segments."""
    raw = bytearray()
    i = 0
    while i < len(run):
        ch = run[i]
        if ch == "%" and run[i + 1 : i + 2] in _HEX and run[i + 2 : i + 3] in _HEX:
            raw.append(int(run[i + 1 : i + 3], 16))
            i += 3
        elif ch == "^" and "a" <= run[i + 1 : i + 2] <= "z":
            raw.extend(run[i + 1].upper().encode())
            i += 2
        else:
            raw.extend(ch.encode())
            i += 1
    return raw.decode("utf-8", "replace")


#: C0 controls, DEL, C1 controls, the bidirectional overrides and isolates (they reorder
#: what a person sees: "Trojan Source") and lone surrogates (no terminal can print them)
CONTROL_CODES = (
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    *range(0xD800, 0xE000),
)
_SURROGATES = 0xE000 - 0xD800  # the last of CONTROL_CODES
#: translation tables by (keep, whether they escape surrogates), made when first needed: the
#: one with surrogates is 2,048 entries longer and takes most of a millisecond to make
_tables: dict[tuple[str, bool], dict[int, str]] = {}


def _escapes(keep: str, surrogates: bool = True) -> dict[int, str]:
    table = _tables.get((keep, surrogates))
    if table is None:
        if len(_tables) >= 16:  # a few ``keep`` in use; never many kept
            _tables.clear()
        codes = CONTROL_CODES if surrogates else CONTROL_CODES[:-_SURROGATES]
        table = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in codes if chr(c) not in keep}
        _tables[keep, surrogates] = table
    return table


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with every control character except those in ``keep`` shown as ``\\xhh``.

    For whatever reaches a terminal or a rendered document: an ESC or C1 sequence in a
    stored message, file name or type name must show as text, never act.

    ASCII text is translated by the table without the surrogates (the fast path of
    ``str.translate``); other text is as it is when it is printable (every such character is
    one ``str.isprintable`` refuses: categories Cc, Cf and Cs), and only text holding a
    surrogate (the only characters UTF-8 cannot encode) needs the table of the surrogates,
    2,048 entries longer.
    """
    if text.isascii():
        return text.translate(_escapes(keep, False))
    if text.isprintable():
        return text
    return text.translate(_escapes(keep, _has_surrogate(text)))


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def safe_message(text: str) -> str:
    """An error message as it may be printed: secrets masked, control characters escaped
    (newlines and tabs stay: a message may quote a multi-line error of the serde)."""
    return escape_controls(mask_message(text), keep="\n\t")
