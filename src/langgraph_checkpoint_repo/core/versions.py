"""Channel versions as RepoSaver makes them (format 4): short, increasing, apart on branches.

A version is ``"<8-digit counter>.<8 hex digits>"`` (``"00000017.9f3a61c2"``): LangGraph
compares versions as strings (``max`` of a checkpoint's versions, ``>`` against what a node
has seen), so a fixed-width counter keeps them in order, and the random part keeps two
branches that both continued one checkpoint from giving two different values one version
(values are found by version; a git merge of the two must keep them apart).

Every older form counts by its counter: an integer or float (other savers), and the
51-character strings of format 3, ``InMemorySaver`` and ``PostgresSaver``
(``"00000000000000000000000000000016.0.3233183013041795"``). A short version compares
greater than any long one whose counter is below 10**24, so a thread written in format 3
keeps increasing when format 4 continues it: the next version's counter is the old one
plus one, at least 1, and its first eight characters are then above the long form's eight
zeros.
"""

from __future__ import annotations

import secrets
from typing import Any

WIDTH = 8
MAX_COUNTER = 10**WIDTH - 1


def counter_of(version: Any) -> int:
    """The counter of any version a checkpoint may hold (``None``: no version yet, 0)."""
    if version is None:
        return 0
    if isinstance(version, bool):
        raise ValueError(f"channel version {version!r} is not a version")
    if isinstance(version, int):
        return version
    if isinstance(version, float):
        return int(version)
    head = str(version).split(".", 1)[0]
    if not head.isdigit():
        raise ValueError(f"channel version {version!r} does not start with a counter")
    return int(head)


def next_version(current: Any) -> str:
    """The version after ``current``: its counter plus one, and a fresh random part."""
    counter = counter_of(current) + 1
    if counter > MAX_COUNTER:
        raise ValueError(
            f"channel version counter {counter} does not fit {WIDTH} digits: this release counts "
            f"at most {MAX_COUNTER:,} steps of one thread"
        )
    return f"{counter:0{WIDTH}d}.{secrets.token_hex(4)}"
