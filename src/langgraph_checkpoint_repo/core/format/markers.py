"""The format's marker keys and kinds of file, in a module that imports nothing.

A reference to a shared object (objects.py), the kinds of state file (validation.py's
schemas) and the two spellings of None (``is_null_payload``) are named here once; the writer,
the readers and the git diff driver's view (view.py) all take them from here. Nothing is
imported, so the driver, which git starts once per file it shows, can read them without
loading orjson or the schema validator.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing: git's diff driver imports this
if TYPE_CHECKING:
    from typing import Any

REF = "$ref"
ID = "$id"
IN = "$in"  # with $ref: the checkpoint whose ``objects`` hold it (format 4)
NS = "$ns"  # with $in: that checkpoint's namespace, when not the root one
ROLE = "$role"  # with $ref: the dict {"role": <this>, "content": <the message's content>}
PAIR = "$pair"  # with $ref: the pair [<this>, <the message's content>]
CHUNKS = "$chunks"

#: the kinds of state file, each with its schema (``schemas/<kind>.schema.json``)
KINDS = ("checkpoint", "value", "writes", "large_value", "object", "base", "item")

#: the serde type of LangGraph's None (``JsonPlusSerializer.dumps_typed(None)``: no bytes)
NULL_SERDE = "null"


def is_null_payload(node: Any) -> bool:
    """A value node of None in either spelling: ``{"json": null}`` (tree.payload_node), or
    ``{"serde": "null", "base64": ""}``, which files written before it hold (still read)."""
    if not isinstance(node, dict):
        return False
    if "json" in node:
        return node["json"] is None
    return node.get("serde") == NULL_SERDE and node.get("base64") == ""
