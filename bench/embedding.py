"""The benchmark's embedding: deterministic, no model, no network (a stand-in for a real one,
whose cost is its own and not the store's)."""

from __future__ import annotations

import hashlib
import struct

DIMS = 64


def hash_embed(texts: list[str]) -> list[list[float]]:
    """Each text as ``DIMS`` numbers in [-1, 1] from its SHA-256 (chained for more bytes)."""
    out = []
    for text in texts:
        raw = b""
        block = text.encode("utf-8", "surrogatepass")
        while len(raw) < DIMS * 4:
            block = hashlib.sha256(block).digest()
            raw += block
        out.append([struct.unpack(">i", raw[i * 4 : i * 4 + 4])[0] / 2**31 for i in range(DIMS)])
    return out
