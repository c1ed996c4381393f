"""A git merge driver for RepoStore items: two branches that changed different fields of one
item merge without a conflict (docs/store.md, "Merging").

Git runs it as ``langgraph-repo-merge-item %O %A %B %P`` (``git-setup`` registers it; the lines
are in docs/store.md): the ancestor's, our and their version of one item file, and its path.
It merges the three field by field and writes the result over ``%A``; exit 0 is a clean
merge. The value merges key by key, down through nested objects; anything else (a list, a
string, a value the serializer built) is one field. A field both sides changed differently is
a conflict: the file gets git's conflict markers around that field only (every other field
already merged) and the exit status is 1, so ``git merge`` stops there as for any conflict.
``updated_at`` is the later of the two, and one microsecond later still when the result is
neither side's, so a compare-and-swap holding either side's version fails on the merged one;
``created_at`` the earlier; ``expires_at`` the later. A side whose times ``validate`` refuses
(in the future past the clock skew, ``updated_at`` before ``created_at``) is not merged field by
field: its times would become the merged item's.

A file that is not a valid item on our or their side (hand-broken, another kind) is merged as
text by ``git merge-file``, as git would without this driver. Nothing here imports LangGraph or
runs what a file names: the files are data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ..core import gitrun
from ..core.errors import FileFormatError, InvalidWriteError
from ..core.format.canonical import dump_json
from ..core.format.validation import pointer_part, validate_read, validate_write
from ..core.items import KIND, iso, stored_item, time_problems, utc_now
from ..core.jsonread import MAX_FILE_BYTES, json_bounds_problem, parse_strict
from ..core.masking import escape_controls


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # a key one version does not have
IDENTITY = ("schema_version", "kind", "namespace", "key")


class Conflict:
    """A field both sides changed differently: where, and the three versions of it."""

    def __init__(self, pointer: str, base: Any, ours: Any, theirs: Any) -> None:
        self.pointer, self.base, self.ours, self.theirs = pointer, base, ours, theirs


def _same(a: Any, b: Any) -> bool:
    """JSON equality (``1``, ``1.0`` and ``true`` are three values here, as in the file)."""
    if a is MISSING or b is MISSING:
        return a is b
    return bool(orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS))


def _plain_object(node: Any) -> bool:
    return isinstance(node, dict) and not any(k.startswith("$") for k in node)


def merge_value(base: Any, ours: Any, theirs: Any, pointer: str, conflicts: list[Conflict]) -> Any:
    """Three-way merge of one JSON value: nested plain objects key by key, anything else whole.
    A conflict is recorded (ours is kept in its place) and the merge goes on."""
    if _same(ours, theirs):
        return ours
    if _same(ours, base):
        return theirs
    if _same(theirs, base):
        return ours
    if _plain_object(ours) and _plain_object(theirs) and (base is MISSING or _plain_object(base)):
        old = base if base is not MISSING else {}
        out: dict[str, Any] = {}
        for key in sorted(set(ours) | set(theirs) | set(old)):
            merged = _merge_key(key, old, ours, theirs, pointer, conflicts)
            if merged is not MISSING:
                out[key] = merged
        return out
    conflicts.append(Conflict(pointer or "/", base, ours, theirs))
    return ours


def _merge_key(
    key: str,
    base: dict[str, Any],
    ours: dict[str, Any],
    theirs: dict[str, Any],
    within: str,
    conflicts: list[Conflict],
) -> Any:
    """``merge_value`` of ``key`` of three objects at pointer ``within`` (a key one of them
    lacks is MISSING there)."""
    pointer = f"{within}/{pointer_part(key)}"
    return merge_value(
        base.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING), pointer, conflicts
    )


def _later(a: str, b: str) -> str:
    return a if datetime.fromisoformat(a) >= datetime.fromisoformat(b) else b


def merge_items(
    base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any]
) -> tuple[dict[str, Any], list[Conflict]]:
    """The merged item and its conflicts (none: a clean merge). ``base`` None: both sides
    added the item (git's add/add), so every field both have differently conflicts."""
    conflicts: list[Conflict] = []
    old = base if base is not None and all(_same(base.get(f), ours.get(f)) for f in IDENTITY) else {}
    merged: dict[str, Any] = {f: ours[f] for f in IDENTITY}
    for field in ("value", "ttl_minutes", "index"):  # "value" both sides have: never MISSING
        value = _merge_key(field, old, ours, theirs, "", conflicts)
        if value is not MISSING:
            merged[field] = value
    merged["created_at"] = min(ours["created_at"], theirs["created_at"], key=datetime.fromisoformat)
    if "ttl_minutes" in merged:
        stamps = [d["expires_at"] for d in (ours, theirs) if "expires_at" in d]
        merged["expires_at"] = stamps[0] if len(stamps) == 1 else _later(*stamps)
    updated = _later(ours["updated_at"], theirs["updated_at"])
    if (
        not conflicts
        and not _same(_content(merged), _content(ours))
        and not _same(_content(merged), _content(theirs))
    ):
        updated = iso(datetime.fromisoformat(updated) + timedelta(microseconds=1))
    merged["updated_at"] = updated
    return merged, conflicts


def _content(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in ("updated_at", "created_at", "expires_at")}


def _read(path: str) -> dict[str, Any] | None:
    """An item file's document (None when git gave an empty file: no ancestor), read as a store
    read does (bounded, strict, schema); FileFormatError when it is not one."""
    data = Path(path).read_bytes()
    if not data.strip():
        return None
    if len(data) > MAX_FILE_BYTES:
        raise FileFormatError(path, "/", f"file is {len(data)} bytes, over the limit")
    too_big = json_bounds_problem(data)
    if too_big is not None:
        raise FileFormatError(path, "/", too_big)
    doc = parse_strict(data, path)
    validate_read(doc, KIND, path)
    # times it cannot compute with, or that no clock made (a forged 9999-12-31): merged as text
    item = stored_item(doc, Path(path))
    for pointer, why in time_problems(item, utc_now()):
        raise FileFormatError(path, pointer, why)
    return doc  # type: ignore[no-any-return]


def _merge_file(ours: str, base: str, theirs: str, labels: tuple[str, str, str]) -> tuple[bytes, int]:
    """git's own text merge of three files: the merged text (with conflict markers) and its
    status (0 clean, a positive count of conflicts)."""
    args = ["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], ours, base, theirs]
    try:
        done = subprocess.run(args, capture_output=True, check=False)
    except FileNotFoundError:
        raise gitrun.missing() from None
    if done.returncode < 0 or done.returncode > 127:
        said = gitrun.words_of(done.stderr)
        raise gitrun.GitRefusedError(f"git merge-file failed: {said}", said)
    return done.stdout, done.returncode


def _with(doc: dict[str, Any], conflicts: list[Conflict], side: str) -> dict[str, Any]:
    """The merged document with each conflicting field set to ``side``'s version (the rest is
    merged already), so a text merge of the three marks those fields only."""
    out = orjson.loads(orjson.dumps(doc))
    for c in conflicts:
        value = c.ours if side == "ours" else c.theirs if side == "theirs" else c.base
        parts = [p.replace("~1", "/").replace("~0", "~") for p in c.pointer.strip("/").split("/")]
        node = out
        for part in parts[:-1]:
            node = node[part]
        if value is MISSING:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    return out  # type: ignore[no-any-return]


def main(ancestor: str, ours: str, theirs: str, path: str | None = None) -> int:
    """Git's merge driver protocol: merge ``ours`` (``%A``) with ``theirs`` (``%B``) over
    ``ancestor`` (``%O``) and write the result to ``ours``; 0 when clean, 1 on a conflict."""
    name = path or ours
    labels = ("ours", "ancestor", "theirs")
    try:
        base_doc, ours_doc, theirs_doc = _read(ancestor), _read(ours), _read(theirs)
        if ours_doc is None or theirs_doc is None:
            raise FileFormatError(name, "/", "empty on one side")
        if not all(_same(ours_doc[f], theirs_doc[f]) for f in IDENTITY):
            raise FileFormatError(
                name, "/", "the two sides are not one item (namespace, key or schema_version differ)"
            )
    except (FileFormatError, OSError) as exc:
        _say(f"{name}: not merged field by field ({exc}); merged as text")
        text, status = _merge_file(ours, ancestor, theirs, labels)
        Path(ours).write_bytes(text)
        return 1 if status else 0
    merged, conflicts = merge_items(base_doc, ours_doc, theirs_doc)
    if not conflicts:
        try:
            validate_write(merged, KIND, name)
        except InvalidWriteError as exc:  # e.g. a merged ttl without an expiry: let a person decide
            _say(f"{name}: the field-wise merge is not a valid item ({exc}); merged as text")
            text, status = _merge_file(ours, ancestor, theirs, labels)
            Path(ours).write_bytes(text)
            return 1 if status else 0
        Path(ours).write_bytes(dump_json(merged))
        return 0
    for c in conflicts:
        _say(f"{name}: conflict at {c.pointer}: ours {_short(c.ours)}, theirs {_short(c.theirs)}")
    with tempfile.TemporaryDirectory(prefix="langgraph-repo-merge-") as tmp:
        sides = {}
        for side in ("ours", "base", "theirs"):
            file = os.path.join(tmp, side)
            Path(file).write_bytes(dump_json(_with(merged, conflicts, side)))
            sides[side] = file
        text, _ = _merge_file(sides["ours"], sides["base"], sides["theirs"], labels)
    Path(ours).write_bytes(text)
    return 1


def _short(value: Any) -> str:
    text = "(absent)" if value is MISSING else orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _say(message: str) -> None:
    sys.stderr.write(f"langgraph-repo merge: {escape_controls(message)}\n")


def cli() -> int:
    """The console script: ``langgraph-repo-merge-item %O %A %B [%P]``."""
    args = sys.argv[1:]
    if len(args) not in (3, 4):
        sys.stderr.write("usage: langgraph-repo-merge-item ANCESTOR OURS THEIRS [PATH]\n")
        return 2
    try:
        return main(*args)
    except (gitrun.GitRefusedError, gitrun.GitMissingError) as exc:  # git's own text merge failed
        _say(f"{args[3] if len(args) == 4 else args[1]}: not merged: {exc}")
        return 2


if __name__ == "__main__":
    raise SystemExit(cli())
