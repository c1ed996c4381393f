"""Errors raised by the repo checkpointer.

Every error names what it is about (file, id, field) so a person can find and
fix the problem; none of them is ever swallowed inside the package.
"""

from __future__ import annotations

from functools import lru_cache


class RepoCheckpointError(Exception):
    """Base class for everything this package raises on purpose.

    Its message is made safe once, here, for every subclass: a secret it quotes (a key
    carried in a thread id, also as an encoded path segment) is masked as ``validate``
    masks it, and control characters (a file name or a type name from a tampered file)
    are escaped, so printing the error can neither leak a key nor drive a terminal.
    The attributes (``path``, ``pointer``) keep the exact values, for code.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(safe_message(a) if isinstance(a, str) else a for a in args))


class FileFormatError(RepoCheckpointError):
    """A file on disk is not a valid file of its kind (JSON, schema, names)."""

    def __init__(self, path: str, pointer: str, message: str) -> None:
        self.path = path
        self.pointer = pointer or "/"
        super().__init__(f"{path}: at {self.pointer}: {message}")


class SchemaVersionError(FileFormatError):
    """A file's schema_version is not one this release reads."""


class InvalidWriteError(RepoCheckpointError):
    """A document about to be written does not match its schema; nothing was written."""

    def __init__(self, kind: str, target: str, pointer: str, message: str) -> None:
        self.kind = kind
        self.target = target
        self.pointer = pointer or "/"
        super().__init__(f"refusing to write {kind} {target}: at {self.pointer}: {message}")


class UnrevivableValueError(RepoCheckpointError):
    """A stored value names a type outside the allowlist or cannot be rebuilt."""


class MissingReferenceError(FileFormatError):
    """A file refers to another file (value, base, large value) that is absent."""


class LockTimeoutError(RepoCheckpointError):
    """The lock of a thread could not be taken in time."""


#: C0 controls, DEL, C1 controls, the bidirectional overrides and isolates (they reorder
#: what a person sees: "Trojan Source") and lone surrogates (no terminal can print them)
CONTROL_CODES = (
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    *range(0xD800, 0xE000),
)


@lru_cache(maxsize=8)
def _escapes(keep: str) -> dict[int, str]:
    return {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in CONTROL_CODES if chr(c) not in keep}


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with every control character except those in ``keep`` shown as ``\\xhh``.

    For whatever reaches a terminal or a rendered document: an ESC or C1 sequence in a
    stored message, file name or type name must show as text, never act.
    """
    return text.translate(_escapes(keep))


def safe_message(text: str) -> str:
    """An error message as it may be printed: secrets masked, control characters escaped
    (newlines and tabs stay: a message may quote a multi-line error of the serde)."""
    from .redaction import mask_message  # here: redaction imports codec, which imports this module

    return escape_controls(mask_message(text), keep="\n\t")
