"""Bounded, strict JSON: what one file of a root may hold, checked before it costs memory.

Invariants:

* a file is read only when it is a regular file inside the root (no symlink on the way),
  at most ``MAX_FILE_BYTES`` long, and its JSON expands to at most ``MAX_JSON_CONTAINERS``
  arrays and objects and ``MAX_JSON_VALUES`` values and keys (counted on the bytes, before
  parsing);
* it nests at most ``MAX_JSON_DEPTH`` arrays and objects deep: what orjson writes, so every
  reader can serialise a tree of it again (hash it, compare it, diff it) and the schema
  validator can check it, whichever version of it is installed;
* it parses only as strict JSON: UTF-8, no duplicate key, no ``NaN``/``Infinity`` literal,
  no number too large for a float, and every string and key valid Unicode (a ``\ud83d``
  escape alone is valid JSON but no text: ``lone_surrogate``, which the writer applies too);
* the writer checks the same bounds (``write_problem``), so it never writes a file a read
  refuses.

Every refusal is a ``FileFormatError`` naming the file.
"""

from __future__ import annotations

import os
import stat as stat_mod
import sys

from .cjson import decode_error, loads
from .errors import FileFormatError, LfsPointerError, outside_refused, symlink_refused

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:  # for annotations only: git's textconv driver reads with this module and
    # starts once per file, so it does not pay for importing pathlib (nor typing)
    import re
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

MAX_FILE_BYTES = 256 * 1024 * 1024
# What one file may expand to once parsed (docs/format.md): every array and object costs
# 60-250 bytes of memory for the 2-3 bytes it takes in a file, so size alone does not bound
# a read. The saver refuses to write past these limits, so it never writes what it refuses.
MAX_JSON_CONTAINERS = 1_000_000  # arrays and objects
MAX_JSON_VALUES = 5_000_000  # values and keys of every kind, counted by the , : [ { that introduce them
# levels of arrays and objects: what orjson writes (the writer refuses deeper: durable.TOO_DEEP)
MAX_JSON_DEPTH = 254
TOO_DEEP = f"nested deeper than a file can hold (JSON is written at most {MAX_JSON_DEPTH} levels deep)"
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[{,:')  # all but quotes and , : [ {
_NOT_COUNTED = bytes(b for b in range(256) if b not in b"[{,:")  # all but , : [ {
_COUNTED_AT_ONCE = 1 << 20  # bytes of a file whose [ { , : are kept at once (_structure_counts)
_INF = float("inf")
#: the surrogate code points (a regex compiled when a tree is first walked for one: git's diff
#: driver imports this module and reads files with no ``\uD800``-``\uDFFF`` escape, where
#: ``parse_strict`` walks nothing, and importing ``re`` was a third of its start)
_surrogate: re.Pattern[str] | None = None


def load_json(path: Path, st: os.stat_result, inside: Callable[[Path], bool]) -> Any:
    """The JSON of ``path`` (``st``: its lstat), read within the bounds and parsed strictly.

    ``inside`` tells whether a folder lies in the root with no symlink on the way."""
    return parse_strict(json_bytes(path, st, inside), str(path))


def json_bytes(path: Path, st: os.stat_result, inside: Callable[[Path], bool]) -> bytes:
    """``load_json``'s bytes, before parsing: a caller that keeps the parse may need a digest
    of the very bytes it came from (caches.DocCache.keep)."""
    if stat_mod.S_ISLNK(st.st_mode):
        raise symlink_refused(path)
    if not stat_mod.S_ISREG(st.st_mode):
        raise FileFormatError(str(path), "/", "is not a regular file")
    if not inside(path.parent):
        raise outside_refused(path)
    if st.st_size > MAX_FILE_BYTES:
        raise FileFormatError(str(path), "/", f"file is {st.st_size} bytes, over the limit")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        raw = _read_fd_bounded(fd, st.st_size)
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:  # grown since the stat
        raise FileFormatError(str(path), "/", f"file is over {MAX_FILE_BYTES} bytes, over the limit")
    too_big = json_bounds_problem(raw)
    if too_big is not None:  # before parsing: the count is cheap, the parse is what costs memory
        raise FileFormatError(str(path), "/", too_big)
    return raw


def read_bounded(fh: Any, size: int) -> bytes:
    """A file's bytes: the ``size`` its stat gave, then, if it grew since, the rest in blocks
    up to one byte past ``MAX_FILE_BYTES`` (never a buffer of the limit for a small file).
    Blocks are joined once at the end: ``raw += block`` copied what was read at every block,
    22 s and half a gigabyte for a file growing past the limit."""
    first: bytes = fh.read(min(size, MAX_FILE_BYTES + 1))
    return _read_on(first, fh.read)


def _read_fd_bounded(fd: int, size: int) -> bytes:
    """``read_bounded`` on a descriptor, without a file object per file (validate reads
    thousands): the ``size`` its stat gave (a short read is read on), then what it grew by."""
    want = min(size, MAX_FILE_BYTES + 1)
    blocks = [os.read(fd, want)]
    got = len(blocks[0])
    while got < want:
        more = os.read(fd, want - got)
        if not more:
            return b"".join(blocks)  # shorter than its stat said: all there is
        blocks.append(more)
        got += len(more)
    return _read_on(b"".join(blocks) if len(blocks) > 1 else blocks[0], lambda n: os.read(fd, n))


def _read_on(first: bytes, read: Callable[[int], bytes]) -> bytes:
    """``first``, then what ``read`` gives in blocks, up to one byte past the limit."""
    blocks, got = [first], len(first)
    while got <= MAX_FILE_BYTES:
        more = read(min(1 << 20, MAX_FILE_BYTES + 1 - got))
        if not more:
            break
        blocks.append(more)
        got += len(more)
    return first if len(blocks) == 1 else b"".join(blocks)


def parse_strict(raw: bytes, where: str) -> Any:
    """Strict JSON of ``raw``; errors name ``where`` and say what is wrong."""
    doc = _parse_plain(raw)
    if doc is not _NOT_PLAIN:
        return doc  # orjson wrote it back whole: no deeper than MAX_JSON_DEPTH
    doc = _parse_strictly(raw, where)
    if too_deep_tree(doc):
        raise FileFormatError(where, "/", TOO_DEEP)
    return doc


def too_deep_tree(tree: Any) -> bool:
    """Whether a tree nests arrays and objects more than ``MAX_JSON_DEPTH`` levels deep: orjson
    says so when it is loaded (it refuses to write such a tree), else a walk without recursion."""
    orjson = sys.modules.get("orjson")
    if orjson is not None:
        try:
            orjson.dumps(tree)
            return False
        except TypeError as exc:  # JSONEncodeError: too deep, or an integer past 64 bits
            if "Recursion" in str(exc):
                return True
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if level > MAX_JSON_DEPTH:
            return True
        stack.extend((c, level + 1) for c in children if isinstance(c, dict | list))
    return False


#: the first line of a Git LFS pointer file (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md)
LFS_VERSION = b"version https://git-lfs.github.com/spec/v1\n"
LFS_POINTER_MAX = 1024  # git-lfs reads a pointer only from a file smaller than this


def lfs_pointer(raw: bytes) -> tuple[str, int] | None:
    """``(oid, size)`` of a Git LFS pointer file (a line ``version ...``, then ``key value``
    lines: ``oid sha256:<64 hex>``, ``size <bytes>``), else None: the file git-lfs leaves in
    place of one it tracks (``git-setup --lfs`` marks ``large/``) until ``git lfs pull``."""
    if not raw.startswith(LFS_VERSION) or len(raw) >= LFS_POINTER_MAX or not raw.endswith(b"\n"):
        return None
    fields = dict(line.partition(b" ")[::2] for line in raw[len(LFS_VERSION) : -1].split(b"\n"))
    oid, size = fields.get(b"oid", b""), fields.get(b"size", b"")
    digits = oid[7:]
    if not oid.startswith(b"sha256:") or len(digits) != 64 or digits.strip(b"0123456789abcdef"):
        return None
    if not size.isdigit():
        return None
    return digits.decode("ascii"), int(size)


def lfs_pointer_error(where: str, pointer: tuple[str, int]) -> LfsPointerError:
    """The error for a Git LFS pointer read where a state file should be: what it is, and
    how to get the file (its name is ``where``)."""
    oid, size = pointer
    return LfsPointerError(
        where,
        "/",
        f"is a Git LFS pointer (sha256 {oid[:12]}…, {size} bytes), not the file it stands for: "
        "run `git lfs pull` to fetch it (git-lfs: https://git-lfs.com; a revision not checked out: "
        "`git lfs fetch <remote> <revision>`)",
    )


def _parse_strictly(raw: bytes, where: str) -> Any:
    if raw[:8] == b"version ":  # not JSON: what git-lfs leaves until the file is fetched?
        pointer = lfs_pointer(raw)
        if pointer is not None:
            raise lfs_pointer_error(where, pointer)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(where, "/", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        doc = loads(
            text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants, parse_float=_finite
        )
    # the hooks' refusals first: decode_error() imports the json package
    except _DuplicateKey as exc:
        raise FileFormatError(where, "/", f"duplicate key {exc.args[0]!r}") from None
    except _BadConstant as exc:
        raise FileFormatError(where, "/", f"{exc.args[0]} is not valid JSON") from None
    except RecursionError:
        raise FileFormatError(where, "/", "invalid JSON: nested too deeply to parse") from None
    except decode_error() as exc:
        raise FileFormatError(
            where, "/", f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    except ValueError as exc:  # e.g. an integer literal over Python's 4300-digit limit
        raise FileFormatError(where, "/", f"invalid JSON: {exc}") from None
    if _surrogate_escape(raw):
        bad = lone_surrogate(doc)
        if bad is not None:
            raise FileFormatError(where, bad, SURROGATE_MESSAGE)
    return doc


def _surrogate_escape(raw: bytes) -> bool:
    """Whether ``raw`` holds a ``\\uD800``-``\\uDFFF`` escape (upper or lower case): the only
    way a UTF-8 file can give a string a surrogate (a pair of them is one character and fine);
    a file without one is never walked."""
    for lead in (b"\\ud", b"\\uD"):
        i = raw.find(lead)
        while i != -1:
            third = raw[i + 3 : i + 4]
            if third and third in _HIGH:
                return True
            i = raw.find(lead, i + 3)
    return False


_HIGH = b"89abcdefABCDEF"  # the third hex digit of a surrogate's escape (\uD800-\uDFFF)


_NOT_PLAIN = object()
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19  # a number orjson may read as a float where json reads an int


def _parse_plain(raw: bytes) -> Any:
    """``raw`` parsed by orjson (8x faster) when that is provably what the strict parse
    gives, else ``_NOT_PLAIN`` (then the strict parse decides, and says what is wrong).

    Only when orjson is imported already (git's textconv driver does not pay for it), and
    only for bytes with no ``\\u`` escape (no surrogate, no escaped ``:``) and no run of 19
    digits (orjson reads an integer past 64 bits as a float). orjson refuses what the strict
    parse refuses (NaN, 1e999, bad UTF-8, control characters, a BOM) but keeps the last of
    duplicate keys: with no escaped ``:``, every ``:`` of the file is a key's or one inside
    a string, so the compact JSON of the parse holds as many ``:`` only when no key (with
    its own ``:``) was dropped. Its depth limit (254 levels on dumps) is below json's."""
    orjson = sys.modules.get("orjson")
    if orjson is None or b"\\u" in raw or _LONG_NUMBER in raw.translate(_DIGITS_AS_ZERO):
        return _NOT_PLAIN
    try:
        doc = orjson.loads(raw)
        compact = orjson.dumps(doc)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _NOT_PLAIN
    return doc if compact.count(b":") == raw.count(b":") else _NOT_PLAIN


SURROGATE_MESSAGE = "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff): not valid Unicode"


def lone_surrogate(tree: Any) -> str | None:
    """The JSON pointer of the first string or key of ``tree`` that is not valid Unicode (it
    holds a surrogate code point: JSON's ``\ud83d`` escape alone parses to one), else None.
    The one rule of reads (``parse_strict``) and writes (``writing.prepare``)."""
    global _surrogate
    if _surrogate is None:
        import re

        _surrogate = re.compile("[\ud800-\udfff]")
    search = _surrogate.search
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, str):
            if search(node):
                return pointer or "/"
        elif isinstance(node, dict):
            for key, value in node.items():
                here = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
                if isinstance(key, str) and search(key):
                    return here
                stack.append((value, here))
        elif isinstance(node, list):
            stack.extend((value, f"{pointer}/{i}") for i, value in enumerate(node))
    return None


def write_problem(data: bytes) -> str | None:
    """Why a read would refuse these bytes (too many values, too long), or None.

    The writer's bytes are JSON (``canonical.dump_json``): each array and object takes two
    bytes of its own (its brackets) and each value or key at least one, so bytes no longer
    than ``2 * MAX_JSON_CONTAINERS`` (and than ``MAX_JSON_VALUES`` and ``MAX_FILE_BYTES``) hold no
    more than a read accepts, and are not counted (two passes over a 1.5 MB file on every big put)."""
    if len(data) <= min(2 * MAX_JSON_CONTAINERS, MAX_JSON_VALUES - 1, MAX_FILE_BYTES):  # the bounds now
        return None
    too_big = json_bounds_problem(data)
    if too_big is None and len(data) > MAX_FILE_BYTES:
        too_big = f"would be {len(data)} bytes; a read accepts at most {MAX_FILE_BYTES}"
    return too_big


class _DuplicateKey(Exception):
    pass


class _BadConstant(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _no_constants(name: str) -> Any:
    raise _BadConstant(name)


def _finite(text: str) -> float:
    """A JSON number; one too large for a float (1e999) would silently become inf."""
    value = float(text)
    if value == _INF or value == -_INF:  # math.isinf, without importing math
        raise _BadConstant(f"{text} (out of range, would read as {value})")
    return value


def json_bounds_problem(raw: bytes) -> str | None:
    """Why a file's JSON would expand past what one file may hold, or None.

    Counted on the bytes: every array and object starts with ``[`` or ``{``, and every
    value or key after the first follows one of ``[ { , :``. Counting those characters is
    an upper bound, taken in one pass (``_structure_counts``); only when it is over a limit
    are the characters inside strings (which do not count) taken off for the exact count.
    """
    if len(raw) <= MAX_JSON_CONTAINERS:  # each counted character is a byte of its own
        return None
    containers, values = _structure_counts(raw)
    if containers <= MAX_JSON_CONTAINERS and values <= MAX_JSON_VALUES:
        return None
    # the exact count, in bounded memory: drop escaped backslashes and quotes (so every quote
    # left opens or closes a string), keep only quotes and , : [ {, then drop the strings that
    # hold none of those; the strings left, each holding one, are at most MAX_JSON_VALUES
    bare = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    strings = bare.count(b'"') // 2
    if strings > MAX_JSON_VALUES:
        return _over_values(strings)
    bare = bare.replace(b'""', b"")
    import re  # here: only a file this big pays for it

    for match in re.finditer(rb'"[^"]+"', bare):
        start, end = match.span()
        inner = bare.count(b"[", start, end) + bare.count(b"{", start, end)
        containers -= inner
        values -= inner + bare.count(b",", start, end) + bare.count(b":", start, end)
    if containers > MAX_JSON_CONTAINERS:
        return (
            f"holds {containers:,} JSON arrays and objects; one file may hold at most "
            f"{MAX_JSON_CONTAINERS:,} (refused before parsing, to bound memory)"
        )
    if values > MAX_JSON_VALUES:
        return _over_values(values)
    return None


def _structure_counts(raw: bytes) -> tuple[int, int]:
    """The ``[`` and ``{`` of ``raw``, and 1 + every ``[ { , :``: one pass, a megabyte at a
    time (``translate`` keeps those bytes; what it keeps stays small), where one ``count`` of
    one byte was as slow as the pass and there were four (8 ms on a 5 MB string's file)."""
    containers = counted = 0
    for start in range(0, len(raw), _COUNTED_AT_ONCE):
        kept = raw[start : start + _COUNTED_AT_ONCE].translate(None, _NOT_COUNTED)
        containers += kept.count(b"[") + kept.count(b"{")
        counted += len(kept)
    return containers, 1 + counted


def _over_values(count: int) -> str:
    return (
        f"holds at least {count:,} JSON values and keys; one file may hold at most "
        f"{MAX_JSON_VALUES:,} (refused before parsing, to bound memory)"
    )
