"""A list of exact strings a put has checked, vouched for while that put prepares its file.

The first put of a long list of strings (a 50,000-item ``large/`` value) told that its items
are exact ``str`` holding no lone surrogate three times, each a join of every string in C:
the codec (``serde.packed_strings``), the schema check's hollowing (``hollow.only_scalars``)
and the canonical bytes (``canonical._only_scalars``). The codec checks and packs a copy of
the list it takes first (an app changing its own list meanwhile changes nothing checked), the
put stores that very copy (``storing._strings_weighed``), which nothing else holds and nothing
changes, so while it prepares that copy's file the later two take it as checked. By identity, one list
per thread, only inside ``Vouching``. No imports but ``_thread``: the schema check is loaded
by the diff driver, which must start fast.
"""

from __future__ import annotations

from _thread import get_ident

_VOUCHED: dict[int, object] = {}


class Vouching:
    """``with Vouching(items):`` ``vouched(items)`` is true on this thread (``items`` None:
    nothing is). The list must be one the caller made and will not change."""

    __slots__ = ("_before", "_items")

    def __init__(self, items: object) -> None:
        self._items = items
        self._before: object = None

    def __enter__(self) -> None:
        self._before = _VOUCHED.get(get_ident())
        _VOUCHED[get_ident()] = self._items

    def __exit__(self, *exc: object) -> None:
        if self._before is None:
            _VOUCHED.pop(get_ident(), None)
        else:
            _VOUCHED[get_ident()] = self._before


def vouched(items: object) -> bool:
    """Whether ``items`` is the list this thread's ``Vouching`` holds."""
    return items is not None and _VOUCHED.get(get_ident()) is items
