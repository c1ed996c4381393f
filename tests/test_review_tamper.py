"""The review's rule as a property (issue 34; docs/review.md, "What the review covers"): random
tamperings of a reviewed range never change what the app loads without the review showing it
or flagging it.

A pull request (branch ``work`` of test_review_faithful's repository: an agent turn waiting
for approval, a thread waiting on an interrupt, a memory) is tampered with as a hostile
contributor could: a field of any file edited (and the object it is re-hashed, where the
format names objects by content), a file added, removed or renamed, an attributes file or
derived data committed. Then:

* what the app loads is read with the real saver, graphs and store on the tampered checkout
  (every checkpoint tuple with its pending writes, each thread's next tasks and interrupts,
  every memory), and compared with the same on the untouched branch;
* when it differs, ``review main..tampered`` must flag something (or find a validate
  problem), or show something else than ``review main..work`` shows.

The default run tries a few tamperings; ``LANGGRAPH_REPO_LONG=1`` tries 500.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graphs import ask_graph, cfg
from helpers import LONG, cli
from langgraph_checkpoint_repo import RepoSaver, RepoStore
from langgraph_checkpoint_repo.core.format.canonical import dump_json
from langgraph_checkpoint_repo.core.format.objects import object_digest
from test_git import git
from test_review_faithful import AGENT, ASK, agent, build_repo

CASES = 500 if LONG else 12


class Pristine:
    """The untouched repository, what the app loads from it and what its review shows."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.loaded = loaded(repo)
        self.code, self.shown = shown(repo)

    def __repr__(self) -> str:
        return f"Pristine({self.repo})"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    return Pristine(build_repo(tmp_path_factory.mktemp("tamper") / "repo"))


def loaded(repo: Path) -> Any:
    """What the app loads from the checkout: per thread every checkpoint tuple (values,
    versions, metadata, parent, pending writes) and the next tasks with their interrupts; every
    memory. A load that fails is an outcome too (its error's type)."""
    root = repo / ".langgraph"
    out: dict[str, Any] = {}
    for thread, graph in ((AGENT, agent(root)), (ASK, ask_graph(RepoSaver(root, durable=False)))):
        out[thread] = _try(lambda g=graph, t=thread: _thread(g, t))
    out["store"] = _try(lambda: _memories(root))
    return out


def _thread(graph: Any, thread: str) -> Any:
    saver = graph.checkpointer
    tuples = []
    for t in saver.list(cfg(thread)):
        tuples.append(
            [
                t.config["configurable"]["checkpoint_id"],
                repr(t.parent_config),
                repr(t.metadata),
                repr(sorted(t.checkpoint["channel_values"].items())),
                repr(t.checkpoint["channel_versions"]),
                repr(t.checkpoint["versions_seen"]),
                repr(t.pending_writes),
            ]
        )
    state = graph.get_state(cfg(thread))
    tasks = [[t.name, repr(t.path), repr(t.interrupts), repr(t.result)] for t in state.tasks]
    return {"tuples": tuples, "next": list(state.next), "tasks": tasks, "values": repr(state.values)}


def _memories(root: Path) -> Any:
    store = RepoStore(root)
    return [
        [list(i.namespace), i.key, i.value, i.created_at.isoformat(), i.updated_at.isoformat()]
        for i in store.search(("users",), limit=100)
    ]


def _try(work: Any) -> Any:
    try:
        return work()
    except Exception as exc:  # the outcome of a load the tampering broke
        return ["error", type(exc).__name__]


def shown(repo: Path, rng: str = "main..work") -> tuple[int, Any]:
    proc = cli(repo / ".langgraph", "review", rng, "--json", cwd=repo)
    assert proc.returncode in (0, 1) and proc.stdout.startswith("{"), f"review failed: {proc.stderr}"
    data = json.loads(proc.stdout)
    for key in ("base", "head", "range", "files"):
        data.pop(key)
    return proc.returncode, data


# ---------------------------------------------------------------------------
# tamperings
# ---------------------------------------------------------------------------
def _state_files(repo: Path) -> list[str]:
    out = git(repo, "ls-files", "-z", "--", ".langgraph").stdout.split("\0")
    return sorted(p for p in out if p)


def _pointers(tree: Any, at: str = "") -> list[str]:
    out = [at]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _pointers(v, f"{at}/{k.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _pointers(v, f"{at}/{i}")
    return out


def _mutated(value: Any, pick: int) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 + pick
    if isinstance(value, str):
        return [value + "X", "A-666", "", "ai"][pick % 4]
    if isinstance(value, list):
        return value[:-1] if value and pick % 2 else [*value, *(value[:1] or ["x"])]
    if isinstance(value, dict):
        return {**value, "zz": pick}
    return ["x", 0, None][pick % 3]


def _set(doc: Any, pointer: str, value: Any) -> Any:
    if not pointer:
        return value
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def _rehash_all(doc: Any) -> Any:
    """Rename every object a checkpoint holds by its content and point references at it, as a
    careful forger would (the format names objects by the first 16 hex digits of a sha256)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("objects"), dict):
        return doc
    text = json.dumps(doc)
    for name, tree in list(doc["objects"].items()):
        new = object_digest(tree)[:16]
        text = text.replace(f'"{name}"', f'"{new}"')
    return json.loads(text)


@st.composite
def tamperings(draw: st.DrawFn, files: list[str]) -> tuple[str, str, int, int, bool]:
    op = draw(st.sampled_from(["edit", "edit", "edit", "remove", "add", "rename", "attributes", "cache"]))
    return (
        op,
        draw(st.sampled_from(files)),
        draw(st.integers(0, 10_000)),
        draw(st.integers(0, 3)),
        draw(st.booleans()),
    )


def tamper(repo: Path, how: tuple[str, str, int, int, bool]) -> str:
    op, rel, pick, variant, rehash = how
    path = repo / rel
    if op == "edit" and not rel.endswith(".json"):
        path.write_text(path.read_text() + "# edited\n")
        return f"edit {rel}"
    if op == "edit":
        doc = json.loads(path.read_bytes())
        pointers = _pointers(doc)
        pointer = pointers[pick % len(pointers)]
        node: Any = doc
        for part in [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        doc = _set(doc, pointer, _mutated(node, variant))
        if rehash:
            doc = _rehash_all(doc)
        path.write_bytes(dump_json(doc))
        return f"edit {rel} at {pointer!r}{' re-hashed' if rehash else ''}"
    if op == "remove":
        path.unlink()
        return f"remove {rel}"
    if op in ("add", "rename"):
        stem = path.name.removesuffix(".json")
        twin = path.with_name(stem[:-1] + ("0" if stem[-1] != "0" else "1") + ".json")
        shutil.copyfile(path, twin)
        if op == "rename":
            path.unlink()
        return f"{op} {rel} -> {twin.name}"
    if op == "attributes":
        where = path.parent / ".gitattributes"
        where.write_text(
            ["* export-ignore\n", f"{path.name} export-ignore\n", "* -text\n", "* ident\n"][variant]
        )
        return f"attributes in {where.parent.name}: {where.read_text().strip()}"
    cache = repo / ".langgraph/.cache/embeddings/users/ada/prefs.vec"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("[1.0, 0.0]")
    return "cache"


@settings(
    max_examples=CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=not LONG,
)
@given(data=st.data())
def test_no_tampering_changes_what_the_app_loads_unseen_by_the_review(
    pristine: Pristine, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    repo, before, honest = pristine.repo, pristine.loaded, pristine.shown
    copy = tmp_path_factory.mktemp("tampered") / "repo"
    shutil.copytree(repo, copy, symlinks=True)
    how = data.draw(tamperings(_state_files(copy)))
    what = tamper(copy, how)
    git(copy, "add", "-A", "--", ".")
    if how[0] == "cache":  # ignored by the root's .gitignore: committed on purpose
        git(copy, "add", "-f", "--", ".langgraph/.cache/embeddings")
    if not git(copy, "status", "--porcelain").stdout.strip():
        event("no byte changed")
        return
    git(copy, "commit", "-q", "-m", what)
    after = loaded(copy)
    code, review = shown(copy)
    if after == before:
        event("the app loads the same")
        return
    flagged = bool(review["flags"]) or any(t["problems"] for t in review["threads"])
    flagged = flagged or any(i["problems"] for i in review["items"])
    event("the app loads another state: " + ("flagged" if flagged else "shown, not flagged"))
    assert flagged or review != honest, f"{what}: the app loads something else, the review shows the same"
    assert code == (1 if flagged else 0)
