"""What may be printed: secrets masked, control characters escaped.

A leaf of the core: errors (every message), validate, the command line and the redactor
(redaction.py, which rewrites values with the same patterns) all import it, and it imports
nothing of the package, so no error can pull a cycle in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

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
#: standard library has; one combined regex is ten times slower on ordinary text.
TRIGGERS: tuple[tuple[bytes, re.Pattern[bytes]], ...] = tuple(
    (literal, re.compile(loose))
    for literal, loose in (
        (b"sk-", rb"sk-[A-Za-z0-9_-]{20}"),
        (b"k_live_", rb"k_live_[A-Za-z0-9]{16}"),
        (b"AKIA", rb"AKIA[A-Z0-9]{16}"),
        (b"ASIA", rb"ASIA[A-Z0-9]{16}"),
        (b"ghp_", rb"ghp_[A-Za-z0-9]{36}"),
        (b"gho_", rb"gho_[A-Za-z0-9]{36}"),
        (b"ghu_", rb"ghu_[A-Za-z0-9]{36}"),
        (b"ghs_", rb"ghs_[A-Za-z0-9]{36}"),
        (b"ghr_", rb"ghr_[A-Za-z0-9]{36}"),
        (b"github_pat_", rb"github_pat_[A-Za-z0-9_]{22}"),
        (b"xox", rb"xox[abposr]-[A-Za-z0-9-]{10}"),
        (b"AIza", rb"AIza[A-Za-z0-9_-]{35}"),
        (b"eyJ", rb"eyJ[A-Za-z0-9_-]*\.eyJ"),
        (b"-----BEGIN", rb"-----BEGIN[ A-Z0-9]*PRIVATE KEY"),
        (b"earer ", rb"earer [A-Za-z0-9._~+/-]{20}"),
    )
)


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
#: the triggers grouped by their bytes, in ``TRIGGERS``' order
_BY_ANCHOR: tuple[tuple[bytes, tuple[tuple[bytes, re.Pattern[bytes]], ...]], ...] = tuple(
    (anchor, tuple(t for t in TRIGGERS if _ANCHORS[t[0]] == anchor))
    for anchor in dict.fromkeys(_ANCHORS[literal] for literal, _ in TRIGGERS)
)


def might_contain_secret(data: bytes) -> bool:
    """False only when no default pattern can match any string inside ``data``: each trigger
    its data holds the byte of (``_ANCHORS``) is looked for, and where it is found, whether
    its loose pattern matches there."""
    for anchor, triggers in _BY_ANCHOR:
        if anchor not in data:
            continue
        for literal, loose in triggers:
            i = data.find(literal)
            while i != -1:
                if loose.match(data, i):
                    return True
                i = data.find(literal, i + 1)
    return False


KIND_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _group(kind: str) -> str:
    return "g_" + kind.replace("-", "_").replace(".", "__")


#: the default patterns in one regex, for the redactor (redaction.py); compiled when first read
#: (``__getattr__``): the git diff driver, which starts once per file version git prints and
#: imports this module for its screen, never uses it, and compiling it is about a millisecond
DEFAULT_REGEX: re.Pattern[str]
DEFAULT_KINDS = {_group(k): k for k in DEFAULT_PATTERNS}


def __getattr__(name: str) -> re.Pattern[str]:
    """``DEFAULT_REGEX``, compiled on its first read and kept as the module's attribute."""
    if name != "DEFAULT_REGEX":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    regex = re.compile("|".join(f"(?P<{_group(k)}>{p})" for k, p in DEFAULT_PATTERNS.items()))
    globals()[name] = regex
    return regex


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
_PEM_SEPARATORS = re.compile(r"(?:\s|\\[nr])+")


@lru_cache(maxsize=1)
def _shown_regex() -> re.Pattern[str]:
    """The shown patterns in one regex, compiled when a text first might hold a secret: most
    text holds none, and the git diff driver, which starts once per file version git prints,
    would compile it (about a millisecond) on every start."""
    return re.compile("|".join(f"(?P<{_group(k)}>{p})" for k, p in SHOWN_PATTERNS.items()))


def _mask_shown(m: re.Match[str]) -> str:
    head = m.group("pem_head")
    if head is None:
        return mask(m.group())
    body = m.group("pem_body")
    key = _PEM_SEPARATORS.sub("", body)
    if len(key) < 16:
        return m.group()  # a header, no key: nothing secret to hide
    lead = _PEM_SEPARATORS.match(body)
    return head + (lead.group() if lead else "") + mask(key) + (m.group("pem_end") or "")


def mask_secrets(text: str) -> str:
    """``text`` with every match of the shown patterns masked (``SHOWN_PATTERNS``: the
    secret only, never what follows it): for messages that quote values.

    The bytes search first (``might_contain_secret``): the combined regex costs seconds per
    megabyte, and the command line masks everything it prints, whole states in ``--json``.
    """
    if not might_contain_secret(text.encode("utf-8", "surrogatepass")):
        return text
    return _shown_regex().sub(_mask_shown, text)


# a run of the characters encoded path segments are made of (linear: no backtracking)
_ENCODED_RUN = re.compile(r"[A-Za-z0-9._~%^=@-]+")
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")


def mask_message(text: str) -> str:
    """``mask_secrets``, and a secret spelled as an encoded path segment masked too.

    A key carried in a thread id reaches a message as a file path (``sk-^a^b...``), which
    the patterns do not match: such a segment is shown decoded, with the key masked.
    """
    text = mask_secrets(text)
    if "%" not in text and "^" not in text:
        return text
    return _ENCODED_RUN.sub(_mask_encoded_run, text)


def _mask_encoded_run(m: re.Match[str]) -> str:
    run = m.group()
    if "%" not in run and "^" not in run:  # decodes to itself: mask_secrets has seen it
        return run
    decoded = _loose_decode(run)
    masked = mask_secrets(decoded)
    return run if masked == decoded else masked


def _loose_decode(run: str) -> str:
    """``layout.decode_segment`` that never fails: a message may cut or join segments."""
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


@lru_cache(maxsize=8)
def _escapes(keep: str) -> dict[int, str]:
    return {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in CONTROL_CODES if chr(c) not in keep}


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with every control character except those in ``keep`` shown as ``\\xhh``.

    For whatever reaches a terminal or a rendered document: an ESC or C1 sequence in a
    stored message, file name or type name must show as text, never act.
    """
    return text.translate(_escapes(keep))


def safe_message(text: str) -> str:
    """An error message as it may be printed: secrets masked, control characters escaped
    (newlines and tabs stay: a message may quote a multi-line error of the serde)."""
    return escape_controls(mask_message(text), keep="\n\t")
