"""Which types a stored value may name, and what a refusal says: data and rules, no imports.

The revival allowlist is data. ``SAFE_TYPES`` and ``SAFE_METHODS`` are LangGraph's own safe
msgpack types (``langgraph.checkpoint.serde._msgpack``), kept here so that reading files
(validate, threads, history, the review) checks types without importing LangGraph; the
serializer policy (serde.py) reads the same sets, and a test checks they equal LangGraph's.
A type is allowed by name or by its module (``module:*``). A type of a script run as
``python agent.py`` is named ``__main__.X`` by Python: ``main_module_name`` is the name the
script can be imported by, which the writer records instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Sequence
from functools import cache
from pathlib import Path

from .format.tree import EXT_MARK, MARKS

TypeKey = tuple[str, ...]

#: LangGraph's SAFE_MSGPACK_TYPES (langgraph-checkpoint 4.3): constructed on every read
SAFE_TYPES: frozenset[TypeKey] = frozenset(
    {
        ("builtins", "frozenset"),
        ("builtins", "set"),
        ("collections", "deque"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("ipaddress", "IPv4Address"),
        ("ipaddress", "IPv4Interface"),
        ("ipaddress", "IPv4Network"),
        ("ipaddress", "IPv6Address"),
        ("ipaddress", "IPv6Interface"),
        ("ipaddress", "IPv6Network"),
        ("langchain_core.documents.base", "Document"),
        ("langchain_core.messages.ai", "AIMessage"),
        ("langchain_core.messages.ai", "AIMessageChunk"),
        ("langchain_core.messages.base", "BaseMessage"),
        ("langchain_core.messages.base", "BaseMessageChunk"),
        ("langchain_core.messages.chat", "ChatMessage"),
        ("langchain_core.messages.chat", "ChatMessageChunk"),
        ("langchain_core.messages.function", "FunctionMessage"),
        ("langchain_core.messages.function", "FunctionMessageChunk"),
        ("langchain_core.messages.human", "HumanMessage"),
        ("langchain_core.messages.human", "HumanMessageChunk"),
        ("langchain_core.messages.modifier", "RemoveMessage"),
        ("langchain_core.messages.system", "SystemMessage"),
        ("langchain_core.messages.system", "SystemMessageChunk"),
        ("langchain_core.messages.tool", "ToolMessage"),
        ("langchain_core.messages.tool", "ToolMessageChunk"),
        ("langgraph.store.base", "GetOp"),
        ("langgraph.store.base", "Item"),
        ("langgraph.types", "Command"),
        ("langgraph.types", "Interrupt"),
        ("langgraph.types", "Overwrite"),
        ("langgraph.types", "PregelTask"),
        ("langgraph.types", "Send"),
        ("langgraph.types", "StateSnapshot"),
        ("langgraph.types", "TimeoutPolicy"),
        ("pathlib", "Path"),
        ("pathlib", "PosixPath"),
        ("pathlib", "WindowsPath"),
        ("pathlib._local", "Path"),
        ("pathlib._local", "PosixPath"),
        ("pathlib._local", "WindowsPath"),
        ("re", "compile"),
        ("uuid", "UUID"),
        ("zoneinfo", "ZoneInfo"),
    }
)
#: LangGraph's SAFE_MSGPACK_METHODS: (module, name, method) a stored value may call
SAFE_METHODS: frozenset[TypeKey] = frozenset({("datetime", "datetime", "fromisoformat")})

ANY_NAME = "*"  # ("myapp.state", "*"): every class defined in myapp.state
MAIN = "__main__"
# files that mark the top of a project: a script below it is importable by its path from there
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def allows(allowed: Collection[TypeKey], module: str, name: str) -> bool:
    """The allowlist rule for a constructed type: listed by name, or its module by ``*``."""
    return (module, name) in allowed or (module, ANY_NAME) in allowed


def with_main_alias(allowed: set[TypeKey]) -> set[TypeKey]:
    """``__main__`` types allowed under the main module's importable name too: that is the
    name they are written under (``rename_main``), so the writing program reads them back."""
    main = main_module_name()
    if main is None:
        return allowed
    return allowed | {(main, *key[1:]) for key in allowed if key[0] == MAIN}


def refused_types(allowed: Collection[TypeKey], types: Collection[TypeKey]) -> list[TypeKey]:
    """The (module, name) of ``types`` that ``allowed`` does not let a reader construct, in
    order; markers of values that name no type (numpy arrays, delta snapshots, raw
    extensions) are judged elsewhere."""
    named = (k for k in types if len(k) == 2 and k[0] not in MARKS)
    return list(dict.fromkeys(k for k in named if not allows(allowed, k[0], k[1])))


# how to allow refused (module, name) types, in the words of whoever reads
Fix = Callable[[Sequence[TypeKey]], str]


def _pairs(keys: Sequence[TypeKey]) -> str:
    return ", ".join(f"({k[0]!r}, {k[1]!r})" for k in keys)


def python_fix(keys: Sequence[TypeKey]) -> str:
    """How a program allows types (the default ``ValueCodec.fix``)."""
    return f"To allow: RepoSaver(allowlist=[{_pairs(keys)}])"


def graph_fix(graph: str) -> Fix:
    """How a graph's read allows types its state does not name (a graph view's ``fix``)."""

    def fix(keys: Sequence[TypeKey]) -> str:
        return (
            f"The graph {graph!r} reading it does not name them in its state schemas or channels, "
            "the types its reads may construct (docs/types.md): name them there, or "
            f"RepoSaver(allowlist=[{_pairs(keys)}])"
        )

    return fix


def is_foreign(key: TypeKey) -> bool:
    """A name from Python itself (the standard library, builtins): never a type of a graph's
    state that LangGraph does not allow already, so a file naming one is not advised in."""
    return key[0].partition(".")[0] in sys.stdlib_module_names


def never_constructed(key: TypeKey) -> str | None:
    """Why no reader ever constructs what ``key`` (from ``tree.named_types``) names, whatever
    its allowlist; None for a type some reader may be allowed to construct."""
    if key[0] == EXT_MARK:
        return f"unknown msgpack extension {key[1]}: no reader revives it"
    if key[0] in MARKS:
        return None
    if len(key) == 3:
        if key in SAFE_METHODS:
            return None
        return f"names {'.'.join(key)}: a method outside LangGraph's safe msgpack methods, never called"
    if is_foreign(key) and key not in SAFE_TYPES:
        return (
            f"names {'.'.join(key)}: from Python's standard library and not one of LangGraph's safe "
            "types, so never constructed; a file naming one may have been edited to run code when "
            "read: check it (git log -p)"
        )
    return None


def refusal_fix(keys: Sequence[TypeKey], fix: Fix) -> str:
    """What a refused type's error says to do: the reader's own fix for the types of the
    user's code; for names from the standard library (``os:system``) a warning instead of a
    fix, since a file naming one may be an attempt to run code; for a type of a script's
    ``__main__`` (written where its importable name could not be told) why only that
    script reads it."""
    foreign = [k for k in keys if is_foreign(k)]
    own = [k for k in keys if not is_foreign(k)]
    parts = []
    if foreign:
        parts.append(
            f"{', '.join('.'.join(k[:2]) for k in foreign)}: from Python's standard library, not "
            "a type of your graph's state; a file naming one may have been edited to run code "
            "when read: check it (git log -p) and do not allow these."
        )
    if any(k[0] == MAIN for k in own):
        parts.append(
            "A type named __main__ was written by a program run as a script whose importable module "
            "name could not be told (docs/types.md): run the writer as python -m package.module or "
            "from inside its project to record its real name; until then only a program whose main "
            "module defines it reads it."
        )
    if own:
        parts.append(fix(own))
    return " ".join(parts)


def rejection(label: str, exc: BaseException) -> str:
    """What a failed construction says, on one line."""
    text = " ".join(str(exc).split())
    return f"{label} rejects the stored data ({type(exc).__name__}: {text})"


@cache
def main_module_name() -> str | None:
    """The name the running program's main module can be imported by, or None.

    ``python -m pkg.mod``: ``pkg.mod``. ``python path/to/agent.py``: its dotted path from the
    top of its project (the nearest folder up with a pyproject.toml, setup.py, setup.cfg or
    .git; below a ``src`` folder there, from that), else from its own folder (``agent``).
    None for ``python -c``, a REPL or notebook, or a path that is not a module name."""
    main = sys.modules.get(MAIN)
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != MAIN:
        return str(spec.name)
    file = getattr(main, "__file__", None)
    if not file or not file.endswith(".py"):
        return None
    path = Path(file).resolve()
    top = next((d for d in path.parents if any((d / m).exists() for m in _PROJECT_MARKERS)), path.parent)
    if (top / "src") in path.parents:
        top = top / "src"
    parts = [*path.relative_to(top).parent.parts, path.stem]
    if not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)
