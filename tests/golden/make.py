"""Write the golden copies tests/test_format_golden.py compares with: ``python tests/golden/make.py``.

For every committed root (tests/fixtures/v1 ... v4, the states under docs/example-state/) the
golden test migrates a copy, re-puts every thread of it through the saver's own put path
(``copy_threads``: ``list``, then ``put`` and ``put_writes`` under the same ids, into a new
root) and compares, byte for byte, with the files here:

- ``<source>/migrated.txt``: every file of the migrated copy (only for a source of an older
  version; a current one must come out of ``migrate`` unchanged, byte for byte);
- ``<source>/reput.txt``: every file the saver wrote for it;
- ``<source>/reads.json``: what ``list``, ``get_tuple`` and the store read from the migrated
  root (the re-put root must read the same at each latest checkpoint and item);
- ``<source>/pruned.txt``: the re-put root after ``prune`` (keep_latest) of every thread: the
  kept checkpoints, base files and ``values/`` files it writes (each kept checkpoint must
  still read as in ``reads.json``).

**When regenerating is legitimate.** Only when a change is *meant* to change the bytes on disk:
a new ``schema_version`` (with its migration step and fixture tree), a deliberate change of how
the writer lays a file out, a new or rebuilt source (a fixture tree, ``docs/examples.py
--build``), or an upgrade of LangGraph or LangChain that changes what their serializer gives
for the same values (the stored trees are built from it). Then regenerate in the same commit
and say in its message why the bytes changed; the diff of these files is the review of that
change. A change that only moves code (issue 36: the format behind one seam) must leave them as
they are: if the golden test fails after such a change, the change is wrong, not the goldens.

``--build-lean`` first builds ``sources/lean`` (see ``build_lean``). ``--trees DIR`` also writes
the migrated and re-put roots as folders under DIR, to compare two checkouts with ``diff -r``.

Ids the re-put mints (a writes record's id is a fresh uuid6, the time it was written) are the
only bytes that differ from run to run: each is replaced, in the files and their names, by
``00000000-0000-6000-8000-<n>`` (n counting them in the order they first show in the files),
same length; the times ``RepoStore.put`` stamps on an item likewise. Every other byte is as the
saver wrote it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
TOP = TESTS.parent
STATE = TOP / "docs" / "example-state"
#: the example application whose own types a thread of ``demo`` holds (docs/types.md)
PROJECT = STATE / "project"
ALLOW = [("myapp.state", "*")]

#: each source: the folders laid over one another to make its root (later ones add files,
#: as the docs' examples commit them one after another on a branch)
SOURCES: dict[str, tuple[Path, ...]] = {
    **{f"v{n}": (TESTS / "fixtures" / f"v{n}",) for n in range(1, 5)},
    "demo": (STATE / "demo",),
    "forks": (STATE / "forks",),
    "secrets": (STATE / "secrets",),
    # both branches of docs/review.md, merged (setup_review_merge): two heads of one thread
    "review": (STATE / "review-1", STATE / "review-2", STATE / "review-3"),
    # the support desk of docs/review.md after turn 5 (setup_desk), store items included
    "desk": tuple(STATE / f"desk-{n}" for n in range(1, 5)),
    # docs/migrating.md's customer threads, before their state migration (setup_profiles)
    "profiles": (STATE / "profiles",),
    # what no root above holds: inputs given as a dict and as a pair, a pruned thread
    "lean": (HERE / "sources" / "lean",),
}

#: sources written with other options than the defaults, re-put with the same
OPTIONS: dict[str, dict[str, Any]] = {"secrets": {"redact": False}}  # docs/secrets.md: a key kept on purpose

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?\+00:00")


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file of a root, by path, as the saver or migrate left it: not the cache (not
    state), not lock files (empty, there to be locked)."""
    out: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] != ".cache" and not path.name.endswith(".lock"):
            out[rel.as_posix()] = path.read_bytes()
    return out


def pack(files: dict[str, bytes]) -> bytes:
    """Files as one text file a ``git diff`` shows line by line: a header naming each file and
    its length, then its bytes exactly."""
    parts = [b"=== %s %d\n%s\n" % (rel.encode(), len(data), data) for rel, data in sorted(files.items())]
    return b"".join(parts)


def unpack(data: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        end = data.index(b"\n", at)
        marker, rel, size = data[at:end].split(b" ")
        if marker != b"===":
            raise ValueError(f"golden file damaged at byte {at}: regenerate it with tests/golden/make.py")
        at = end + 1 + int(size)
        out[rel.decode()] = data[end + 1 : at]
        at += 1  # the newline after the bytes
    return out


def minted(pattern: re.Pattern[bytes], written: dict[str, bytes], before: dict[str, bytes]) -> list[bytes]:
    """What ``pattern`` finds in ``written`` that no file of ``before`` holds, in the order it
    first shows in the files (by path, each name before its bytes): the same on every run,
    whatever the clock said (two writes records of one checkpoint are named by their uuid6
    ids, which a process mints in increasing order)."""

    def texts(files: dict[str, bytes]) -> list[bytes]:
        return [rel.encode() + b"\n" + data for rel, data in sorted(files.items())]

    known = {m.group(0) for text in texts(before) for m in pattern.finditer(text)}
    out: dict[bytes, None] = {}
    for text in texts(written):
        for m in pattern.finditer(text):
            if m.group(0) not in known:
                out.setdefault(m.group(0), None)
    return list(out)


def steady(written: dict[str, bytes], before: dict[str, bytes]) -> dict[str, bytes]:
    """``written`` with the ids and times minted while it was written replaced by stand-ins."""
    ids, times = minted(UUID, written, before), minted(TIME, written, before)
    stand_in = {m: b"00000000-0000-6000-8000-%012d" % n for n, m in enumerate(ids, 1)}
    stand_in.update({m: b"2000-01-01T00:00:00.%06d+00:00" % n for n, m in enumerate(times, 1)})

    def sub(data: bytes) -> bytes:
        for pattern in (UUID, TIME):
            data = pattern.sub(lambda m: stand_in.get(m.group(0), m.group(0)), data)
        return data

    return {sub(rel.encode()).decode(): sub(data) for rel, data in written.items()}


def _reads_module() -> Any:
    """tests/fixtures/reads.py: the project's canonical form of what a checkpoint reads as."""
    spec = importlib.util.spec_from_file_location("fixture_reads", TESTS / "fixtures" / "reads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


READS = _reads_module()
SERDE = JsonPlusSerializer()


def _digest(value: Any) -> str:
    """A value by the digest of LangGraph's own serialisation of it (``repr`` of a message is
    slow): equal for equal values built the same way."""
    kind, data = SERDE.dumps_typed(value)
    return f"{kind}:{hashlib.sha256(data).hexdigest()[:16]}"


def _tuple_reads(tup: Any) -> dict[str, Any]:
    """One checkpoint as ``list``/``get_tuple`` return it: small parts whole, values by digest."""
    checkpoint = dict(tup.checkpoint)
    values = checkpoint.pop("channel_values", {})
    parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return {
        "parent": parent,
        "metadata": READS.canonical(dict(tup.metadata)),
        "checkpoint": READS.canonical(checkpoint),
        "values": {channel: _digest(value) for channel, value in sorted(values.items())},
        "writes": [[task, channel, _digest(value)] for task, channel, value in tup.pending_writes or []],
    }


def reads(root: Path) -> dict[str, Any]:
    """What a saver and a store read from ``root``: every thread and namespace's listing (its
    order), each checkpoint as listed and as ``get_tuple`` gives it by id, the latest one, and
    the store's items (their times are the files': a re-put would stamp new ones)."""
    from langgraph_checkpoint_repo import RepoSaver

    saver = RepoSaver(root, allowlist=ALLOW, durable=False)
    listings: dict[str, list[str]] = {}
    checkpoints: dict[str, Any] = {}
    latest: dict[str, str | None] = {}
    for tup in saver.list(None):
        conf = tup.config["configurable"]
        place = f"{conf['thread_id']}|{conf['checkpoint_ns']}"
        listings.setdefault(place, []).append(conf["checkpoint_id"])
        checkpoints[f"{place}|{conf['checkpoint_id']}"] = listed = _tuple_reads(tup)
        got = saver.get_tuple(tup.config)
        assert got is not None and _tuple_reads(got) == listed, f"get_tuple differs from list at {place}"
    for place in listings:
        thread_id, ns = place.split("|", 1)
        got = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        latest[place] = got.config["configurable"]["checkpoint_id"] if got is not None else None
    return {"listings": listings, "latest": latest, "checkpoints": checkpoints, "store": store_reads(root)}


def store_reads(root: Path) -> list[dict[str, Any]]:
    """The store's items as ``search`` gives them, in its order."""
    from langgraph_checkpoint_repo import RepoStore

    return [
        {
            "namespace": list(item.namespace),
            "key": item.key,
            "value": READS.canonical(item.value),
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
        }
        for item in RepoStore(root).search((), limit=10_000, refresh_ttl=False)
    ]


@contextmanager
def example_project() -> Iterator[None]:
    """The example application importable while ``demo``'s own types are revived and put
    again, and forgotten after (tests in this process must not see its ``myapp``)."""
    sys.path.insert(0, str(PROJECT))
    try:
        yield
    finally:
        sys.path.remove(str(PROJECT))
        for name in [n for n in sys.modules if n == "myapp" or n.startswith("myapp.")]:
            del sys.modules[name]


@dataclass
class Made:
    """What one source gives: its files as committed, migrated, re-put and pruned; what the
    migrated root reads (``reads``), and what the re-put and pruned roots read where a graph
    resumes (``latest_reads``; the re-put one's store items too)."""

    source: dict[str, bytes]
    migrated: dict[str, bytes]
    reput: dict[str, bytes]
    migrated_reads: dict[str, Any]
    reput_reads: dict[str, Any]
    pruned: dict[str, bytes]
    pruned_reads: dict[str, Any]


def reput_items(root: Path, target: Path) -> None:
    """Every store item of ``root`` put again into ``target`` through ``RepoStore.put``, in the
    order of their namespaces and keys (their times are the put's: minted)."""
    from langgraph_checkpoint_repo import RepoStore

    source, store = RepoStore(root), RepoStore(target)
    items = source.search((), limit=10_000, refresh_ttl=False)
    for item in sorted(items, key=lambda i: (i.namespace, i.key)):
        store.put(item.namespace, item.key, item.value)


def make(name: str, work: Path) -> Made:
    """Migrate a copy of source ``name`` and re-put it, under ``work``."""
    from langgraph_checkpoint_repo import RepoSaver, copy_threads
    from langgraph_checkpoint_repo.core.format.migrations import migrate_root
    from langgraph_checkpoint_repo.transfer import thread_ids_of

    root, target = work / name / "migrated", work / name / "reput"
    for folder in SOURCES[name]:
        shutil.copytree(folder, root, dirs_exist_ok=True)
    source = tree_files(root)
    migrate_root(root, durable=False)
    migrated = tree_files(root)
    with example_project():
        options = {"durable": False, **OPTIONS.get(name, {})}
        copy_threads(RepoSaver(root, allowlist=ALLOW, **options), RepoSaver(target, **options))
        reput_items(root, target)
        reput = steady(tree_files(target), migrated)
        migrated_reads = reads(root)
        places = sorted(migrated_reads["listings"])
        # the latest checkpoints, not every one: listing a root revives every value, and the
        # re-put files' bytes are pinned anyway
        reput_reads = {"latest": latest_reads(target, places), "store": store_reads(target)}
        saver = RepoSaver(target, **options)
        saver.prune(thread_ids_of(saver))  # keep_latest: base files, values/ files
        pruned, kept = steady(tree_files(target), migrated), latest_reads(target, places)
        return Made(source, migrated, reput, migrated_reads, reput_reads, pruned, kept)


def latest_reads(root: Path, places: list[str]) -> dict[str, Any]:
    """The latest checkpoint of each place (``thread|namespace``) as ``get_tuple`` reads it
    (what a graph resumes from: what ``prune`` must keep), keyed as in ``reads``."""
    from langgraph_checkpoint_repo import RepoSaver

    saver = RepoSaver(root, allowlist=ALLOW, durable=False)
    out: dict[str, Any] = {}
    for place in places:
        thread_id, ns = place.split("|", 1)
        got = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        if got is not None:
            out[f"{place}|{got.config['configurable']['checkpoint_id']}"] = _tuple_reads(got)
    return out


def unlike(expected: dict[str, Any], latest: dict[str, Any]) -> list[str]:
    """The latest checkpoints (``place|id``) that ``latest`` reads other than ``expected``
    (a migrated root's ``reads``) says, or does not have."""
    wanted = {f"{place}|{cid}" for place, cid in expected["latest"].items() if cid is not None}
    return sorted(key for key in wanted | set(latest) if expected["checkpoints"].get(key) != latest.get(key))


def store_unlike(expected: dict[str, Any], got: list[dict[str, Any]]) -> bool:
    """Whether re-put items read other than ``expected`` says, but for their times."""
    return bool(timeless({"store": got}) != timeless({"store": expected["store"]}))


def timeless(got: dict[str, Any]) -> dict[str, Any]:
    """Reads without the items' times (a re-put item has the put's, and ``search`` orders by them)."""
    items = [{k: v for k, v in item.items() if not k.endswith("_at")} for item in got["store"]]
    items.sort(key=lambda item: (item["namespace"], item["key"]))
    return {**got, "store": items}


def dumps(got: dict[str, Any]) -> bytes:
    """Reads as JSON a ``git diff`` shows one checkpoint (one listing, one item) a line."""
    parts = []
    for part, value in sorted(got.items()):
        if isinstance(value, dict):
            rows = [f" {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(value.items())]
            opening, closing = "{", "}"
        else:
            rows = [f" {json.dumps(v, sort_keys=True)}" for v in value]
            opening, closing = "[", "]"
        body = [",\n".join(rows)] if rows else []
        parts.append(f"{json.dumps(part)}: " + "\n".join([opening, *body, closing]))
    return ("{\n" + ",\n".join(parts) + "\n}\n").encode()


def write(name: str, made: Made) -> None:
    folder = HERE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    if made.migrated != made.source:
        (folder / "migrated.txt").write_bytes(pack(made.migrated))
    (folder / "reput.txt").write_bytes(pack(made.reput))
    (folder / "pruned.txt").write_bytes(pack(made.pruned))
    (folder / "reads.json").write_bytes(dumps(made.migrated_reads))


def build_lean(target: Path) -> None:
    """``sources/lean``, written by real graphs (bench/agent_graphs.py's ``create_agent`` agent
    with a fake chat model) for what the fixture trees and the docs' states do not hold: thread
    ``inputs`` takes its three turns as a message, a dict and a pair (``$role``, ``$pair``);
    thread ``pruned`` the same, then ``prune`` (keep_latest): a delta whose parent's
    bookkeeping is a base file (``values/@<id>.json``) and its objects in ``objects/``. Built
    once (``--build-lean``) and committed like a fixture tree; building it again is a new
    source, a reason to regenerate the goldens."""
    sys.path.insert(0, str(TOP))
    from bench.agent_graphs import BUILDERS, turn_input

    from langgraph_checkpoint_repo import RepoSaver

    saver = RepoSaver(target)
    graph = BUILDERS["create_agent"](saver)
    for thread_id in ("inputs", "pruned"):
        for turn in range(1, 4):
            graph.invoke(turn_input(turn)[1], {"configurable": {"thread_id": thread_id}})
    saver.prune(["pruned"])
    shutil.rmtree(target / ".cache", ignore_errors=True)


def write_tree(files: dict[str, bytes], folder: Path) -> None:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)


def main(argv: list[str]) -> int:
    if "--build-lean" in argv:
        lean = HERE / "sources" / "lean"
        if lean.exists() and "--force" not in argv:
            sys.exit(f"{lean} exists; a committed source is not rebuilt (--force to replace it)")
        shutil.rmtree(lean, ignore_errors=True)
        build_lean(lean)
    trees = Path(argv[argv.index("--trees") + 1]) if "--trees" in argv else None
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        for name in SOURCES:
            made = make(name, Path(tmp))
            reput, store = made.reput_reads, made.reput_reads["store"]
            if unlike(made.migrated_reads, reput["latest"]) or store_unlike(made.migrated_reads, store):
                sys.exit(f"{name}: the re-put root reads differently from the migrated one; fix that first")
            if unlike(made.migrated_reads, made.pruned_reads):
                sys.exit(f"{name}: prune changed what {unlike(made.migrated_reads, made.pruned_reads)} read")
            write(name, made)
            if trees is not None:
                write_tree(made.migrated, trees / name / "migrated")
                write_tree(made.reput, trees / name / "reput")
            digest = hashlib.sha256(pack(made.reput)).hexdigest()[:12]
            print(f"{name}: {len(made.migrated)} files migrated, {len(made.reput)} re-put ({digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
