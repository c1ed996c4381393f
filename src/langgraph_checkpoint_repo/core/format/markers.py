"""The format's marker keys and kinds of file, in a module that imports nothing.

A reference to a shared object (objects.py) and the kinds of state file (validation.py's
schemas) are named here once; the writer, the readers and the git diff driver's view
(view.py) all take them from here. Nothing is imported, so the driver, which git starts once
per file it shows, can read them without loading orjson or the schema validator.
"""

from __future__ import annotations

REF = "$ref"
ID = "$id"
IN = "$in"  # with $ref: the checkpoint whose ``objects`` hold it (format 4)
NS = "$ns"  # with $in: that checkpoint's namespace, when not the root one
ROLE = "$role"  # with $ref: the dict {"role": <this>, "content": <the message's content>}
PAIR = "$pair"  # with $ref: the pair [<this>, <the message's content>]
CHUNKS = "$chunks"

#: the kinds of state file, each with its schema (``schemas/<kind>.schema.json``)
KINDS = ("checkpoint", "value", "writes", "large_value", "object", "base", "item")
