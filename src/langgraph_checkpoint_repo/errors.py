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


class NotFoundError(RepoCheckpointError):
    """A root, thread, namespace or checkpoint that is not there."""


class BadInputError(RepoCheckpointError):
    """An argument that cannot name anything: a malformed or ambiguous id, a bad date."""


class ThreadExistsError(RepoCheckpointError):
    """The target already holds a thread being copied; nothing was written."""


class ThreadNotFoundError(RepoCheckpointError):
    """A thread asked for is not in the source; nothing was written."""


class SaverSpecError(RepoCheckpointError):
    """A SOURCE/TARGET that names no saver we can open."""


class CliError(RepoCheckpointError):
    """An error of the command line to report as one line with its own exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


#: The exit code of the command line (docs/cli.md, "Exit codes") for each error type; an
#: error takes the entry of the nearest type in its MRO (``exit_code``), a ``CliError`` its
#: own ``code``. Codes: 0 ok, 1 problems found (validate, fsck), 2 usage error or a
#: malformed/ambiguous id, 3 not found, 4 a file that cannot be read as its kind, 5 refused
#: or not confirmed, 6 any other error (I/O, lock timeout).
#:
#: ===========================  ====
#: error type                   code
#: ===========================  ====
#: BadInputError                2
#: SaverSpecError               2
#: NotFoundError                3
#: ThreadNotFoundError          3
#: FileFormatError (and         4
#: SchemaVersionError,
#: MissingReferenceError)
#: UnrevivableValueError        4
#: ThreadExistsError            5
#: LockTimeoutError             6
#: RepoCheckpointError (other)  6
#: OSError                      6
#: ===========================  ====
EXIT_CODES: dict[type[BaseException], int] = {
    BadInputError: 2,
    SaverSpecError: 2,
    NotFoundError: 3,
    ThreadNotFoundError: 3,
    FileFormatError: 4,
    UnrevivableValueError: 4,
    ThreadExistsError: 5,
    LockTimeoutError: 6,
    RepoCheckpointError: 6,
    OSError: 6,
}


def exit_code(exc: BaseException) -> int:
    """The exit code for ``exc``: a ``CliError``'s own, else the ``EXIT_CODES`` entry of the
    nearest type in its MRO; 6 (any other error) for a type the table does not know."""
    if isinstance(exc, CliError):
        return exc.code
    for kind in type(exc).__mro__:
        if kind in EXIT_CODES:
            return EXIT_CODES[kind]
    return EXIT_CODES[RepoCheckpointError]


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
