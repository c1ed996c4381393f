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

The other way does not hold, and RepoSaver does not choose it: a thread continued by another
saver's ``get_next_version`` (the Agent Server's checkpointer adapter always uses its own,
and ``InMemorySaver``, ``SqliteSaver`` and ``PostgresSaver`` continue a copied thread) gets
the long form, which compares below every short version, so LangGraph would take the new
input for one a node has already seen and run nothing. LangGraph is therefore only shown the
long form: ``for_langgraph`` widens a short version to 32 digits on every read
(``"00000017.9f3a61c2"`` -> ``"00000000000000000000000000000017.9f3a61c2"``, which orders by
its counter against every long version), and ``for_file`` narrows it back on every put, so
the files keep the short form and a read then put gives the same bytes.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

WIDTH = 8
MAX_COUNTER = 10**WIDTH - 1
LONG_WIDTH = 32  # the counter width of InMemorySaver's, PostgresSaver's and the Agent Server's versions
_SHORT = re.compile(r"[0-9]{8}\.[0-9a-f]{8}")
_WIDENED = re.compile(r"0{24}([0-9]{8}\.[0-9a-f]{8})")


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


def for_langgraph(version: Any) -> Any:
    """A version as LangGraph is shown it: a short one widened to the long form's 32-digit
    counter, so any saver's next version (long) compares above it; any other as it is."""
    if isinstance(version, str) and _SHORT.fullmatch(version):
        return "0" * (LONG_WIDTH - WIDTH) + version
    return version


def for_file(version: Any) -> Any:
    """A version as the files keep it: ``for_langgraph``'s widened form short again."""
    if isinstance(version, str):
        found = _WIDENED.fullmatch(version)
        if found:
            return found.group(1)
    return version


def seen_for_langgraph(seen: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``versions_seen`` with every version ``for_langgraph``."""
    return {node: {ch: for_langgraph(v) for ch, v in m.items()} for node, m in seen.items()}


def seen_for_file(seen: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``versions_seen`` with every version ``for_file``."""
    return {node: {ch: for_file(v) for ch, v in m.items()} for node, m in seen.items()}
