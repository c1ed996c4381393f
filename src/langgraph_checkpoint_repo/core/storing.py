"""How a JSON node is stored: shared subtrees to ``objects/``, a node still too big to
``large/``. One rule for every writer: a put (values.py) and prune's compaction (plans.py)
store a value the same way, so the same value becomes the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .documents import Documents
from .durable import digest_node, json_size
from .errors import InvalidWriteError
from .objects import Sharer, Weight, nesting_problem, weight_problem
from .validation import SCHEMA_VERSION

Prepared = list[tuple[Path, bytes]]  # files validated and serialised, to write in one batch

#: the saver's default for ``large_value_bytes``; what prune uses for the values it compacts
LARGE_VALUE_BYTES = 8 * 1024


def shared_tree(
    store: Documents,
    thread_id: str,
    tree: Any,
    large: Prepared,
    where: tuple[str, str] | None = None,
    *,
    items: bool = False,
) -> tuple[Any, Weight]:
    """The tree with its shared subtrees replaced by references, and the weight of the whole
    tree (what a reader expands); the object files not yet on disk join ``large``, to be
    written before whatever refers to them.

    Refused (``InvalidWriteError``, nothing written) when a reader would refuse it: the
    same rules, ``weight_problem`` and ``nesting_problem``, hold on both sides."""
    sharer = Sharer()
    out = sharer.share_items(tree) if items else sharer.share(tree)
    weight = (sharer.containers, sharer.values, sharer.text)
    problem = weight_problem(weight) or nesting_problem(sharer.height)
    if problem is not None:  # each file would be small; the value read back would not be
        why = problem.replace("expands", "would expand").replace("objects refer", "objects would refer")
        target, pointer = where if where is not None else (f"thread {thread_id!r}", "/")
        raise InvalidWriteError("value", target, pointer, why)
    if sharer.objects:
        layout = store.layout
        pending = {p for p, _ in large}
        for digest, obj in sharer.objects.items():
            path = layout.object_path(thread_id, digest)
            if path not in pending and not store.intact(path, "object"):
                doc = {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": digest, "tree": obj}
                large.append(store.prepare("object", doc, path))
                pending.add(path)
    return out, weight


def stored_node(
    store: Documents,
    thread_id: str,
    node: dict[str, Any],
    large_value_bytes: int,
    large: Prepared,
    where: tuple[str, str] | None = None,
) -> tuple[dict[str, Any], Weight | None]:
    """A node as stored: its messages and long lists shared through ``objects/``, then,
    when still over ``large_value_bytes``, the node in a file named by its content hash
    (``{"large": digest}``). Also the weight of the shared tree (None for a node with no
    JSON tree). ``where``: (what is written, JSON pointer), for a refusal's message."""
    weight: Weight | None = None
    if "json" in node:
        shared, weight = shared_tree(store, thread_id, node["json"], large, where)
        node = {**node, "json": shared}
    if json_size(node) <= large_value_bytes:
        return node, weight
    digest = digest_node(node)
    path = store.layout.large_path(thread_id, digest)
    if all(p != path for p, _ in large) and not store.intact(path, "large_value"):
        doc = {"schema_version": SCHEMA_VERSION, "kind": "large_value", "sha256": digest, "value": node}
        large.append(store.prepare("large_value", doc, path))
    return {"large": digest}, weight
