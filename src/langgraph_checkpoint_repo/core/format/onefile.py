"""One state file read alone, as git hands it to the diff driver (view.py).

git runs the driver on any file a change touches, old sides included (a temporary copy
outside the root), so the file is read by itself: never validated, never with the files it
refers to. Every read here is tolerant (a part of the wrong type reads as empty, nothing
raises on what a file holds) where the app's readers (fields.py, objects.py, resolve.py)
read validated files strictly. Where both ask the same question the view asks the app's
accessor (``fields.parent_writes``, ``fields.new_values``, ``fields.held_objects``) and
takes the marker keys from markers.py; what is here is what only a reading of one file
needs: which kind of file it is, and the objects it holds (format 4), each shown once, at
the first reference to it.

Standard library and core only, like the whole view: git starts the driver once per file.
"""

from __future__ import annotations

from . import fields
from .markers import CHUNKS, ID, IN, KINDS, NS, PAIR, REF, ROLE
from .messages import is_message_type

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from typing import Any

#: the kinds of file the view shows; a store item is JSON a person reads as it is
VIEWED = tuple(kind for kind in KINDS if kind != "item")
#: the keys a reference node may carry: the object's name, its message id, where it is held
#: (format 4), the input form of a message (``$role``, ``$pair``)
REF_KEYS = frozenset({REF, ID, IN, NS, ROLE, PAIR})


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def viewed_kind(doc: Any) -> str | None:
    """The kind of a state file the view shows (an object with a known ``kind`` and an integer
    ``schema_version``), else None: the file is printed as it is."""
    ours = isinstance(doc, dict) and doc.get("kind") in VIEWED and isinstance(doc.get("schema_version"), int)
    return str(doc["kind"]) if ours else None


def parent_write_records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of the parent's pending writes a checkpoint took in (format 4), in the
    order of their keys: each a task's ``task_path`` and ``writes``."""
    return [as_dict(r) for _, r in sorted(as_dict(fields.parent_writes(doc)).items())]


def new_value_bodies(doc: dict[str, Any]) -> dict[str, Any]:
    """The value bodies of the channels a checkpoint changed, by channel."""
    return as_dict(fields.new_values(doc))


def objects_held(doc: dict[str, Any]) -> Held:
    """The objects a checkpoint or writes file holds (format 4), to be shown once each."""
    return Held(as_dict(fields.held_objects(doc)))


def is_reference(node: Any) -> bool:
    """A reference node as one file shows it: ``$ref`` and the other keys of a reference,
    every one a string (the app's readers also check which go together: objects.ref_of)."""
    return (
        isinstance(node, dict)
        and REF in node
        and node.keys() <= REF_KEYS
        and all(type(v) is str for v in node.values())
    )


def shallow_refs(tree: Any, objects: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether ``tree`` is only references (in lists and ``$chunks``), and the objects held
    here it names (not followed)."""
    kids: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict) and set(node) == {CHUNKS} and isinstance(node[CHUNKS], list):
            stack.extend(node[CHUNKS])
        elif is_reference(node):
            if IN not in node and node[REF] in objects:
                kids.append(node[REF])
        else:
            return False, []
    return True, kids


class Held:
    """The objects a file holds (format 4): each shown once, at the first reference to it."""

    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects
        self.shown: set[str] = set()
        self._pure: dict[str, bool] = {}

    def take(self, tree: Any) -> Any:
        """The object a reference in this file names, the first time it is shown; else None."""
        if not isinstance(tree, dict) or IN in tree:
            return None
        name = tree.get(REF)
        if not isinstance(name, str) or name not in self.objects or name in self.shown:
            return None
        self.shown.add(name)
        return self.objects[name]

    def unshown(self) -> list[str]:
        return sorted(n for n in self.objects if n not in self.shown)

    def pure(self, name: str) -> bool:
        """Whether the object ``name`` holds only references, through other such objects held
        here (a message, a value or a cycle is not): each object scanned once, without
        recursion."""
        if name in self._pure:
            return self._pure[name]
        scans: dict[str, tuple[bool, list[str]]] = {}
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:
            current, done = stack.pop()
            if done:
                ok, kids = scans[current]
                self._pure[current] = ok and all(self._pure.get(k, False) for k in kids)
                continue
            if current in self._pure or current in scans:  # known, or in progress (a cycle)
                continue
            tree = self.objects.get(current)
            ok, kids = shallow_refs(tree, self.objects)
            ok = ok and isinstance(tree, list | dict) and not is_message_type(tree)
            scans[current] = (ok, kids)
            stack.append((current, True))
            if ok:
                stack.extend((k, False) for k in kids)
        return self._pure[name]
