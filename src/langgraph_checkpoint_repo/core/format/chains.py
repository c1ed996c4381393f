"""Append chains, and the one walk down them.

A list that grew by appending is stored as its new items plus a reference (``base``,
``base_ref``) to the version it extends, which may itself be an append: a chain of links
down to a whole list. Every walker (read, validate, prune's rescue, garbage collection)
goes down a chain with ``walk_chain``, so every walk:

* refuses a file it has been through (a cycle) and a chain of more than
  ``MAX_APPEND_DEPTH`` links (or one whose ``depth`` says so) with a ``FileFormatError``
  naming the file and pointer: no walk loops, recurses or runs away;
* finds a link where ``base_ref`` says, or, when that checkpoint is gone, in the value file
  prune wrote in its place (``read_link``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FileFormatError
from ..layout import CHECKPOINTS, Layout

# the longest append chain a read follows (RepoSaver's snapshot_every is at most this, so every
# chain it writes reads back); a longer or deeper one is a FileFormatError, never a recursion
MAX_APPEND_DEPTH = 1024


class ChainGuard:
    """One walk down an append chain: refuses a file it has been through (a cycle) and a
    chain of more than ``MAX_APPEND_DEPTH`` links, so no walk loops or runs away.

    ``enter`` each file before using what it holds, ``follow`` each append body before its
    base (``walk_chain`` does both).
    """

    def __init__(self) -> None:
        self._seen: set[Path] = set()
        self._last: tuple[Path, str] | None = None  # the link whose base_ref is followed next
        self.links = 0

    def enter(self, path: Path) -> None:
        """About to use ``path``: a file this walk went through before closes a cycle."""
        if path in self._seen:
            referrer, pointer = self._last if self._last is not None else (path, "")
            raise FileFormatError(
                str(referrer), f"{pointer}/append/base_ref", f"append chain cycles back to {path}"
            )
        self._seen.add(path)

    def follow(self, path: Path, pointer: str, append: dict[str, Any]) -> None:
        """About to follow the base of the append body at ``pointer`` in ``path``."""
        self.links += 1
        depth = append.get("depth")
        if isinstance(depth, int) and depth > MAX_APPEND_DEPTH:
            raise FileFormatError(
                str(path),
                f"{pointer}/append/depth",
                f"depth {depth} is over {MAX_APPEND_DEPTH}, the longest append chain this release reads",
            )
        if self.links > MAX_APPEND_DEPTH:
            raise too_long(path, pointer)
        self._last = (path, pointer)


def too_long(path: Path | str, pointer: str) -> FileFormatError:
    return FileFormatError(
        str(path),
        f"{pointer}/append",
        f"append chain is longer than {MAX_APPEND_DEPTH} links, the longest this release reads",
    )


@dataclass
class Link:
    """One link of a chain: the value of a channel at ``version``, found through ``ref``."""

    version: Any
    ref: str
    path: Path  # the file that holds it (or, when missing, the value file that would)
    pointer: str = ""  # its body's JSON pointer in that file
    body: Any = None  # the value body; a link without one ends the walk
    doc: Any = None  # the document holding the body
    known: Any = None  # what the reader already holds for this link (a cache hit): the walk ends

    @property
    def missing(self) -> bool:
        """Neither the checkpoint ``ref`` names nor a value file in its place exists."""
        return self.doc is None and self.known is None


#: the base an append names by leaving it out (format 4): the value its checkpoint's parent
#: holds for the channel (the caller knows which), as (version, ref); given the link
ImpliedBase = Callable[[Link], "tuple[Any, str]"]


def walk_chain(
    read: Callable[[Any, str], Link], version: Any, ref: str, implied: ImpliedBase | None = None
) -> Iterator[Link]:
    """Each link of a value's chain, from the value down to the whole list it extends.

    ``read(version, ref)`` finds one link; the walk enters its file in a ``ChainGuard``,
    yields it, and follows its ``append`` body to the base: the one it names, or (format 4,
    ``implied``) the channel's value at its checkpoint's parent. A link without a body, or
    with a body that is not an append, ends the walk; so does the caller, by leaving the loop.
    """
    guard = ChainGuard()
    while True:
        link = read(version, ref)
        guard.enter(link.path)
        yield link
        body = link.body
        if not isinstance(body, dict) or "append" not in body:
            return
        guard.follow(link.path, link.pointer, body["append"])
        version, ref = base_of(link, implied)


def append_body(base_length: int, items: Any, base: tuple[Any, str] | None = None) -> dict[str, Any]:
    """The ``append`` of a list that grew: ``items`` after the first ``base_length``; ``base``
    (version, ref) names the list it extends, left out when it is the one the parent holds."""
    out: dict[str, Any] = {"base_length": base_length, "items": items}
    if base is not None:
        out["base"], out["base_ref"] = base
    return out


def base_of(link: Link, implied: ImpliedBase | None) -> tuple[Any, str]:
    """(version, ref) of the list an append link extends."""
    app = link.body["append"]
    if "base" in app:
        return app["base"], app["base_ref"]
    if implied is None or link.doc is None or link.doc.get("kind") != "checkpoint":
        raise FileFormatError(
            str(link.path), f"{link.pointer}/append", "an append without base (format 4) outside a checkpoint"
        )
    return implied(link)


def read_link(
    read_doc: Callable[[Path, str], dict[str, Any]],
    layout: Layout,
    ns_dir: Path,
    channel: str,
    version: Any,
    ref: str,
) -> Link:
    """The link at ``ref`` as the whole-root walkers read it: the checkpoint it names, else
    the value file of ``channel`` at ``version`` (where prune keeps the values of the
    checkpoints it removes). A missing link comes back ``missing``; a checkpoint that
    holds no value of the channel, without a body."""
    if ref.startswith(CHECKPOINTS + "/") and (ns_dir / ref).is_file():
        doc = read_doc(ns_dir / ref, "checkpoint")
        body = doc.get("new_values", {}).get(channel)
        return Link(version, ref, ns_dir / ref, f"/new_values/{channel}", body, doc)
    vpath = ns_dir / layout.value_rel(channel, version)
    if not vpath.is_file():
        return Link(version, ref, vpath)
    doc = read_doc(vpath, "value")
    return Link(version, ref, vpath, "", doc, doc)
