"""The short digest that stands for what a view leaves out (stdlib only: the git diff driver
imports it at every start)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def short_digest(value: Any) -> str:
    """The first 8 hex digits of the sha256 of a value's sorted JSON (a string: of itself),
    so a change anywhere in what a view does not show still changes what it shows."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
