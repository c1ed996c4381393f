"""Arithmetic on msgpack arrays, without decoding their items.

A list that grows by appending is compared, stored and rebuilt as bytes: the items of an
array are its bytes after the header, so the items of two arrays joined are their bodies
joined under a header counting both. Nothing here decodes an item, so the saver, the
redactor and the value reader share it without depending on each other.
"""

from __future__ import annotations


def msgpack_array_split(data: bytes) -> tuple[int, bytes] | None:
    """Item count and items of a msgpack array (None when ``data`` is not one)."""
    if not data:
        return None
    t = data[0]
    if 0x90 <= t <= 0x9F:
        return t & 0x0F, data[1:]
    if t == 0xDC:
        return int.from_bytes(data[1:3], "big"), data[3:]
    if t == 0xDD:
        return int.from_bytes(data[1:5], "big"), data[5:]
    return None


def msgpack_array_header(count: int) -> bytes:
    """The shortest header of an array of ``count`` items (what msgpack itself writes)."""
    if count < 16:
        return bytes([0x90 | count])
    if count < 0x10000:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


# the first byte of a msgpack map or extension (a message, a model): what a list of them
# starts with, where a list of numbers or strings starts with anything else
_STRUCTURED = frozenset([*range(0x80, 0x90), 0xDE, 0xDF, 0xC7, 0xC8, 0xC9, *range(0xD4, 0xD9)])


def starts_structured(items: bytes) -> bool:
    """Whether msgpack ``items`` (no array header) begin with a map or an extension."""
    return bool(items) and items[0] in _STRUCTURED
