"""Keep API keys and tokens out of the files that git commits.

``RepoSaver(redact=...)`` rewrites every string of a value before anything is built from
it: checkpoint values, metadata and pending writes (and so ``large/`` files and, later,
``values/`` files, which are copies). A matched substring becomes a readable marker such as
``[REDACTED:openai-key]``: strings stay strings, so the file format and the reader do not
change, and the value read back is the redacted string. Only text is rewritten: dict keys
and string leaves, never type names, method names or field names of constructed objects,
and never ``$bytes``/``$numpy``/``$ext`` payloads (stored as base64, not as text).

The default patterns (``DEFAULT_PATTERNS``) are few and precise: each one matches a known
key or token format by its prefix. The saver's cost for ordinary text is one search of the
serializer's msgpack bytes for a few literals (``TRIGGERS``: each default pattern contains
one), each only when the bytes hold a byte of it (``masking._ANCHORS``: one ``memchr``)
and, in big bytes, every byte of it (``masking._holds_all``); only on a hit is the value
unpacked, rewritten and packed again. A list that grew by appending (a conversation) only has
its new items searched, and a big value seen just before (a channel's value in the ``put``
beside the ``put_writes`` that wrote it) is not searched again.

``langgraph-repo validate`` uses the same patterns (``find_secrets``) to report secrets
already in files.
"""

from __future__ import annotations

import base64
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from .format.packed import msgpack_array_header, msgpack_array_split
from .format.tree import msgpack_to_tree, object_parts, tree_to_msgpack
from .format.validation import pointer_part
from .masking import (
    DEFAULT_KINDS,
    DEFAULT_PATTERNS,
    DEFAULT_REGEX,
    KIND_NAME,
    marker,
    mask,
    might_contain_secret,
)

RedactFunction = Callable[[str], str]
PatternLike = str | re.Pattern[str]

#: what ``validate`` says a match looks like
DESCRIPTIONS: Mapping[str, str] = {
    "anthropic-key": "an Anthropic API key",
    "openai-key": "an OpenAI API key",
    "aws-access-key-id": "an AWS access key id",
    "github-token": "a GitHub token",
    "slack-token": "a Slack token",
    "google-api-key": "a Google API key",
    "stripe-key": "a Stripe live secret key",
    "jwt": "a JWT",
    "private-key": "a PEM private key",
    "bearer-token": "a bearer token",
    "pydantic-secret": "a pydantic SecretStr or SecretBytes stored in clear text",
}

# ----------------------------------------------------------------------
# pydantic secrets (SecretStr, SecretBytes, Secret[...])
# ----------------------------------------------------------------------
#: marker kind of a pydantic secret's value: ``SecretStr("[REDACTED:pydantic-secret]")``
PYDANTIC_SECRET = "pydantic-secret"
#: how ``validate`` shows a secret value it found (pydantic shows them so, too)
SECRET_SHOWN = "**********"
_SECRET_NAMES = frozenset({"SecretStr", "SecretBytes", "Secret"})
_SECRET_BASES = (
    ("pydantic.types", ("SecretStr", "SecretBytes", "Secret")),
    ("pydantic.v1.types", ("SecretStr", "SecretBytes")),
)


_SECRET_ROOTS: list[type] = []
_SECRET_ROOTS_FROM: set[str] = set()


def _secret_classes() -> list[type]:
    """pydantic's secret types and every loaded subclass of them (``class ApiKey(SecretStr)``)."""
    for module_name, names in _SECRET_BASES:
        if module_name in _SECRET_ROOTS_FROM:
            continue
        module = sys.modules.get(module_name)  # never imported here: unloaded means no instances
        if module is not None:
            _SECRET_ROOTS_FROM.add(module_name)
            _SECRET_ROOTS.extend(c for c in (getattr(module, n, None) for n in names) if isinstance(c, type))
    stack = list(_SECRET_ROOTS)
    found: list[type] = []
    while stack:
        cls = stack.pop()
        if cls not in found:
            found.append(cls)
            stack.extend(type.__subclasses__(cls))
    return found


def might_hold_pydantic_secret(data: bytes) -> bool:
    """False only when no pydantic secret can be among the values in ``data`` (msgpack or JSON).

    The serde stores a secret as its class name and its value in clear; the names are the
    triggers: ``Secret`` (pydantic's own) and the name of each loaded subclass.
    """
    if b"S" in data and b"Secret" in data:  # one byte first: memchr (masking._ANCHORS)
        return True
    return any(cls.__name__.encode() in data for cls in _secret_classes() if "Secret" not in cls.__name__)


def one_string(data: bytes) -> bool:
    """Whether msgpack ``data`` is one string and nothing else: no extension in it, so no
    constructed object, no pydantic secret (a 5 MB string was searched for ``Secret`` too)."""
    if not data:
        return False
    head = data[0]
    if 0xA0 <= head <= 0xBF:
        size, start = head & 0x1F, 1
    elif head in _STR_HEADS:
        start = _STR_HEADS[head]
        size = int.from_bytes(data[1:start], "big")
    else:
        return False
    return start + size == len(data)


_STR_HEADS = {0xD9: 2, 0xDA: 3, 0xDB: 5}  # str 8, 16, 32: the header's length with its size


def is_pydantic_secret(node: dict[str, Any]) -> bool:
    """A stored tree of a secret: ``{"$type": [module, name], "$arg": value}`` the serde made
    from ``get_secret_value()`` (pydantic's types, their subclasses, or a loaded class of
    that kind); looked up without importing anything or running a module's ``__getattr__``."""
    kind = node.get("$type")
    if "$arg" not in node or "$method" in node or not isinstance(kind, list) or len(kind) != 2:
        return False
    module_name, name = kind
    if not isinstance(name, str) or not isinstance(module_name, str):
        return False
    if module_name.partition(".")[0] == "pydantic" and name in _SECRET_NAMES:
        return True
    if any((cls.__module__, cls.__name__) == (module_name, name) for cls in _secret_classes()):
        return True
    module = sys.modules.get(module_name)
    cls = getattr(module, "__dict__", {}).get(name) if module is not None else None
    return bool(
        isinstance(cls, type)
        and callable(getattr(cls, "get_secret_value", None))
        and not callable(getattr(cls, "model_dump", None))
    )


def _redacted_secret(arg: Any) -> Any:
    """The stored value of a redacted secret: the marker, as bytes for SecretBytes."""
    text = marker(PYDANTIC_SECRET)
    if isinstance(arg, dict) and "$bytes" in arg:
        return {"$bytes": base64.b64encode(text.encode()).decode("ascii")}
    return text


def _secret_in_clear(arg: Any) -> bool:
    return bool(_redacted_secret(arg) != arg)


class Redactor:
    """Rewrites the text of values: the default patterns, your patterns, then your function.

    Args:
        patterns: more patterns, each a regex string or compiled ``re.Pattern``; a mapping
            ``{kind: pattern}`` names their marker ``[REDACTED:<kind>]``, otherwise it is
            ``[REDACTED:custom]``.
        function: called with every string (after the patterns) and returns the text to
            store; for rules a regex cannot say.
        defaults: also apply ``DEFAULT_PATTERNS`` (default True).

    With only the default patterns, a value with no trigger in its msgpack bytes is left
    as it is at the cost of one bytes search; with your own patterns or function every
    string of every value is visited.
    """

    def __init__(
        self,
        patterns: Mapping[str, PatternLike] | Iterable[PatternLike] = (),
        *,
        function: RedactFunction | None = None,
        defaults: bool = True,
    ) -> None:
        named = (
            list(patterns.items())
            if isinstance(patterns, Mapping)
            else [("custom", p) for p in _as_list(patterns)]
        )
        self.custom: list[tuple[str, re.Pattern[str]]] = []
        for kind, pattern in named:
            if not isinstance(kind, str) or not KIND_NAME.fullmatch(kind):
                raise ValueError(f"redaction kind {kind!r}: use letters, digits, '-', '_' or '.'")
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
            if not isinstance(compiled, re.Pattern) or not isinstance(compiled.pattern, str):
                raise TypeError(f"redaction pattern {pattern!r}: expected a str regex or re.Pattern[str]")
            self.custom.append((kind, compiled))
        if function is not None and not callable(function):
            raise TypeError(f"redaction function {function!r} is not callable")
        self.function = function
        self.defaults = defaults
        # only the default patterns: a bytes search tells which values need a look at all
        self._scan_bytes = not self.custom and function is None
        # lists that grow by appending: the last body seen (by its first bytes) and what we
        # made of it, so the next version only looks at the items it adds
        self._lists: OrderedDict[bytes, tuple[int, bytes, bytes]] = OrderedDict()
        # big values that are not lists, by length and first bytes: (their bytes, what we made)
        self._values: OrderedDict[tuple[int, bytes], tuple[bytes, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def kinds(self) -> list[str]:
        """The marker kinds this redactor can write."""
        out = list(DEFAULT_PATTERNS) if self.defaults else []
        return out + [k for k, _ in self.custom if k not in out]

    def __repr__(self) -> str:
        return f"Redactor(kinds={self.kinds!r}, function={self.function!r})"

    # -- text ----------------------------------------------------------
    def redact_text(self, text: str) -> str:
        if self.defaults:
            text = DEFAULT_REGEX.sub(_default_marker, text)
        for kind, pattern in self.custom:
            text = pattern.sub(marker(kind), text)
        if self.function is not None:
            out = self.function(text)
            if not isinstance(out, str):
                got = type(out).__name__
                raise TypeError(f"redaction function {self.function!r} returned {got}, not str")
            text = out
        return text

    # -- values --------------------------------------------------------
    def redact_msgpack(self, data: bytes) -> bytes:
        """The serializer's msgpack with every string rewritten; the same bytes when nothing is.

        A list that extends one seen before (a conversation's messages) only has its new
        items looked at: the items are whole msgpack values, so no string spans the join.
        """
        return self.redact_msgpack_split(data)[0]

    def redact_msgpack_split(self, data: bytes) -> tuple[bytes, tuple[int, bytes] | None]:
        """``redact_msgpack``, and when the bytes are an array its item count and items
        (``msgpack_array_split`` of what it returns, without splitting it again: the items of
        a 50,000-item list are a 1 MB copy)."""
        split = msgpack_array_split(data)
        if split is None or not split[1]:
            return self._redact_value(data), None
        count, body = split
        key = body[:_KEY_BYTES]
        with self._lock:
            known = self._lists.get(key)
        if known is not None and count >= known[0] and body.startswith(known[1]):
            old_count, old_body, old_out = known
            added = msgpack_array_header(count - old_count) + body[len(old_body) :]
            added_out = self._redact_packed(added)
            if old_out is old_body and added_out is added:
                out_body, out = body, data
            else:
                out_body = old_out + (msgpack_array_split(added_out) or (0, b""))[1]
                out = msgpack_array_header(count) + out_body
            out_split: tuple[int, bytes] | None = (count, out_body)
        else:
            out = self._redact_packed(data)
            out_split = split if out is data else msgpack_array_split(out)
            out_body = out_split[1] if out_split is not None else b""
        with self._lock:
            self._lists[key] = (count, body, out_body)
            self._lists.move_to_end(key)
            while len(self._lists) > _LISTS_KEPT:
                self._lists.popitem(last=False)
        return out, out_split

    def _redact_value(self, data: bytes) -> bytes:
        """``_redact_packed``, once for a big value: the same bytes again (a channel's value in
        the ``put`` beside the ``put_writes`` that wrote it) give what they gave, unsearched."""
        if len(data) < _SEEN_BYTES:
            return self._redact_packed(data)
        key = (len(data), data[:_KEY_BYTES])
        with self._lock:
            known = self._values.get(key)
        if known is not None and known[0] == data:
            return data if known[1] is known[0] else known[1]
        out = self._redact_packed(data)
        with self._lock:
            self._values[key] = (data, out)
            self._values.move_to_end(key)
            while len(self._values) > _VALUES_KEPT:
                self._values.popitem(last=False)
        return out

    def _redact_packed(self, data: bytes) -> bytes:
        if self._scan_bytes and (
            not self.defaults
            or not (might_contain_secret(data) or (not one_string(data) and might_hold_pydantic_secret(data)))
        ):
            return data
        tree = msgpack_to_tree(data)
        new = self.redact_tree(tree)
        return data if new == tree else tree_to_msgpack(new)

    def redact_plain(self, tree: Any, data: bytes) -> Any:
        """A plain JSON tree (``data``: its JSON bytes) with its text rewritten: the store's
        values that need no serializer. The same object when, with only the default patterns,
        the bytes show nothing a pattern could match (one search, as for msgpack)."""
        if self._scan_bytes and (
            not self.defaults or not (might_contain_secret(data) or might_hold_pydantic_secret(data))
        ):
            return tree
        return self.redact_tree(tree)

    def redact_tree(self, tree: Any) -> Any:
        """A JSON tree (tree.py's forms) with its text rewritten; tags and type names kept."""
        t = type(tree)
        if t is str:
            return self.redact_text(tree)
        if t is list:
            return [self.redact_tree(x) for x in tree]
        if t is not dict:
            return tree
        if not any(k[:1] == "$" for k in tree):
            return self._members(tree, keys=True)
        if "$type" in tree:  # constructed object: its data, never its type, method or field names
            if self.defaults and is_pydantic_secret(tree):  # declared secret: the whole value goes
                return {**tree, "$arg": _redacted_secret(tree["$arg"])}
            out = dict(tree)
            for key, v, named in object_parts(tree):
                plain = named and type(v) is dict and not any(k[:1] == "$" for k in v)
                out[key] = self._members(v, keys=False) if plain else self.redact_tree(v)
            return out
        if "$map" in tree and type(tree["$map"]) is list:
            pairs = [[self.redact_tree(k), self.redact_tree(v)] for k, v in tree["$map"]]
            return {"$map": _unique_pairs(pairs, [k for k, _ in tree["$map"]])}
        if "$delta_snapshot" in tree:
            return {**tree, "$delta_snapshot": self.redact_tree(tree["$delta_snapshot"])}
        return tree  # $bytes, $float, $numpy, $ext: not text

    def _members(self, obj: dict[str, Any], keys: bool) -> Any:
        if not keys:
            return {k: self.redact_tree(v) for k, v in obj.items()}
        pairs: list[list[Any]] = [[self.redact_text(k), self.redact_tree(v)] for k, v in obj.items()]
        pairs = _unique_pairs(pairs, list(obj))
        if any(k[:1] == "$" for k, _ in pairs):  # a rewritten key must not read as a tag
            return {"$map": pairs}
        return dict((k, v) for k, v in pairs)


_KEY_BYTES = 64  # a list's first bytes name it in the cache (its first item's start)
_LISTS_KEPT = 64
_SEEN_BYTES = 64 * 1024  # a value this big is searched once (cheaper ones are searched again)
_VALUES_KEPT = 4


def _as_list(patterns: Iterable[PatternLike]) -> list[PatternLike]:
    if isinstance(patterns, (str, re.Pattern)):
        return [patterns]
    return list(patterns)


def _default_marker(m: re.Match[str]) -> str:
    return marker(DEFAULT_KINDS[m.lastgroup or ""])


def _unique_pairs(pairs: list[list[Any]], old_keys: list[Any]) -> list[list[Any]]:
    """Two keys redacted to the same marker stay two keys: ``[REDACTED:x]#2``."""
    seen: set[Any] = set()
    for pair, old in zip(pairs, old_keys, strict=True):
        key = pair[0]
        if isinstance(key, str) and key != old:
            n = 2
            base = key
            while key in seen or (key in old_keys and key != old):
                key = f"{base}#{n}"
                n += 1
            pair[0] = key
        elif _frozen(key) in seen:  # keys were distinct: a redacted tuple key now equals another
            raise ValueError(
                f"two keys are equal once redacted ({key!r}); redact them with a function instead"
            )
        seen.add(_frozen(key))
    return pairs


def _frozen(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


RedactOption = Redactor | RedactFunction | Mapping[str, PatternLike] | Iterable[PatternLike] | bool | None


def resolve_redactor(option: RedactOption) -> Redactor | None:
    """What ``RepoSaver(redact=...)`` means.

    * ``True`` or ``None`` (the default): the default patterns;
    * ``False``: no redaction, values are stored verbatim;
    * a ``Redactor``: as it is;
    * a function ``str -> str``: the default patterns, then the function;
    * patterns (a regex string, an ``re.Pattern``, a list of them, or ``{kind: pattern}``):
      the default patterns and these.
    """
    if option is None or option is True:
        return Redactor()
    if option is False:
        return None
    if isinstance(option, Redactor):
        return option
    if isinstance(option, (str, re.Pattern, Mapping)):
        return Redactor(option)
    if callable(option):
        return Redactor(function=option)
    if isinstance(option, Iterable):
        return Redactor(option)
    raise TypeError(f"redact={option!r}: expected a bool, a Redactor, a function str -> str or patterns")


# ----------------------------------------------------------------------
# finding secrets already in files (validate)
# ----------------------------------------------------------------------
def find_secrets(doc: Any) -> Iterator[tuple[str, str, str]]:
    """``(JSON pointer, kind, masked text)`` for every default pattern match in a document."""
    try:
        raw = orjson.dumps(doc)
    except TypeError:  # an integer beyond 64 bits (valid JSON): search it all
        raw = None
    if raw is not None and not might_contain_secret(raw) and not might_hold_pydantic_secret(raw):
        return
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        pointer, node = stack.pop()
        if isinstance(node, str):
            for m in DEFAULT_REGEX.finditer(node):
                yield pointer or "/", DEFAULT_KINDS[m.lastgroup or ""], mask(m.group())
        elif isinstance(node, list):
            stack.extend((f"{pointer}/{i}", v) for i, v in reversed(list(enumerate(node))))
        elif isinstance(node, dict) and "$type" in node and is_pydantic_secret(node):
            if _secret_in_clear(node["$arg"]):  # none of it is shown: a password may be short
                yield f"{pointer}/$arg", PYDANTIC_SECRET, SECRET_SHOWN
        elif isinstance(node, dict):
            for k, v in reversed(list(node.items())):
                # a key that holds a secret is masked in the pointer too: the pointer is printed
                member = f"{pointer}/{pointer_part(DEFAULT_REGEX.sub(lambda m: mask(m.group()), k))}"
                for m in DEFAULT_REGEX.finditer(k):
                    yield member, DEFAULT_KINDS[m.lastgroup or ""], mask(m.group())
                stack.append((member, v))
