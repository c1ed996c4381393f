"""What a store search and a namespace listing select: LangGraph's rules as data, no LangGraph.

``InMemoryStore`` (``langgraph/store/memory``) is the reference: filters compare values the
way its ``_compare_values`` does (nested objects, ``$eq $ne $gt $gte $lt $lte``), namespace
conditions match as its ``_does_match`` does (``*`` a wildcard label), and ``max_depth``
truncates before the result is sorted, then sliced. Two places differ on purpose, as
LangGraph's SQL stores do: an order comparison (``$gt`` ...) of a value that is no number is
no match instead of an exception that fails the whole search, and results without a query are
ordered newest ``updated_at`` first (then namespace, key), not by insertion (which files do
not keep; repostore.py sorts). ``tests/test_store_differential.py`` holds both to the
reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_ORDER: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
OPERATORS = frozenset({"$eq", "$ne", *_ORDER})


def filter_problem(filter: Any) -> str | None:
    """Why a filter cannot be applied (an operator nobody knows), or None: checked before any
    file is read, so a typo fails the search whatever the store holds. A condition (a value of
    the filter) that holds a ``$`` key is a set of operators, every key of it one."""
    stack = list(filter.values()) if isinstance(filter, dict) else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(isinstance(k, str) and k.startswith("$") for k in node):
                unknown = sorted(str(k) for k in node if k not in OPERATORS)
                if unknown:
                    return f"unsupported operator {unknown[0]!r} (use one of {', '.join(sorted(OPERATORS))})"
            else:
                stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return None


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether an item's value passes a filter: every key's condition holds."""
    if not filter:
        return True
    return all(_compare(value.get(key), wanted) for key, wanted in filter.items())


def _compare(have: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(have, op, operand) for op, operand in wanted.items())
        if not isinstance(have, dict):
            return False
        return all(_compare(have.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (
            isinstance(have, (list, tuple))
            and len(have) == len(wanted)
            and all(_compare(h, w) for h, w in zip(have, wanted, strict=True))
        )
    return bool(have == wanted)


def _operator(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    compare = _ORDER.get(op)
    if compare is None:
        raise ValueError(f"unsupported operator {op!r}")
    try:
        return compare(float(have), float(operand))
    except (TypeError, ValueError, OverflowError):
        return False  # no number to order: no match, as LangGraph's SQL stores answer


# ----------------------------------------------------------------------
# namespaces
# ----------------------------------------------------------------------
def namespace_matches(match_type: str, path: Sequence[str], namespace: Sequence[str]) -> bool:
    """A namespace against one condition: its first (``prefix``) or last (``suffix``) labels
    are ``path``'s, ``*`` matching any label."""
    if len(namespace) < len(path):
        return False
    if match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"unsupported match type {match_type!r} (use 'prefix' or 'suffix')")
    return all(want == "*" or have == want for have, want in pairs)


def select_namespaces(
    namespaces: Iterable[tuple[str, ...]],
    conditions: Iterable[tuple[str, Sequence[str]]],
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[tuple[str, ...]]:
    """The namespaces meeting every condition, cut to ``max_depth`` labels (each once), sorted,
    then ``[offset:offset + limit]``."""
    conds = list(conditions)
    chosen = [ns for ns in namespaces if all(namespace_matches(t, p, ns) for t, p in conds)]
    if max_depth is not None:
        out = sorted({ns[:max_depth] for ns in chosen})
    else:
        out = sorted(set(chosen))
    return out[offset : offset + limit]
