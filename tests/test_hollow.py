"""Every written document is still checked against its schema, a big value's long lists of
scalars by their types (core/format/hollow.py): the same answer as the validator's on the
whole document, and a big value that is invalid is still refused, nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import examples
from langgraph_checkpoint_repo import InvalidWriteError
from langgraph_checkpoint_repo.core.format import hollow, validation
from langgraph_checkpoint_repo.core.format.validation import SCHEMA_VERSION, validate_write
from langgraph_checkpoint_repo.core.writing import prepare

SCALARS = st.one_of(
    st.text(max_size=4),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.booleans(),
    st.none(),
)
# keys a tree may have, and some it may not: tags with their own rules among them
KEYS = st.sampled_from(["a", "b", "$type", "$args", "$kwargs", "$map", "$chunks", "$numpy", "$bogus", "$arg"])
TREES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=30,
)


def large_doc(tree: Any) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "large_value",
        "sha256": "0" * 64,
        "value": {"json": tree},
    }


def object_doc(tree: Any) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": "object", "sha256": "0" * 64, "tree": tree}


def whole_check(doc: Any, kind: str) -> tuple[str, str] | str | None:
    """The validator on the whole document: its first error, or the refusal of a value."""
    try:
        return validation._first_error(kind, doc)
    except ValueError:
        return "refused"


def hollow_check(doc: Any, kind: str) -> tuple[str, str] | str | None:
    """The check of a written document: the emptied one, then the whole one if it fails."""
    try:
        return validation._written_error(kind, doc)
    except ValueError:
        return "refused"


@settings(max_examples=examples(200), deadline=None)
@given(TREES, st.sampled_from(["large_value", "object"]))
def test_the_emptied_document_gets_the_answer_the_whole_one_gets(tree: Any, kind: str) -> None:
    doc = large_doc(tree) if kind == "large_value" else object_doc(tree)
    with pytest.MonkeyPatch.context() as patch:
        # every list of two items or more counts as long here: the rule, at its smallest
        patch.setattr(hollow, "MIN_ITEMS", 2)
        assert hollow_check(doc, kind) == whole_check(doc, kind)


def test_a_long_list_of_strings_is_checked_without_the_validator_walking_it() -> None:
    items = [f"row {i}" for i in range(50_000)]
    doc = large_doc({"rows": items})
    hollowed = hollow.hollowed(doc, "large_value")
    assert hollowed["value"]["json"]["rows"] == [] and doc["value"]["json"]["rows"] is items  # not changed
    assert hollow.hollowed(large_doc(items), "large_value")["value"]["json"] == []
    assert hollow.hollowed(object_doc(items), "object")["tree"] == []
    # only where a tree is
    assert hollow.hollowed({"checkpoint": items}, "checkpoint") == {"checkpoint": items}


@pytest.mark.parametrize(
    "bad",
    [
        {"$bogus": 1},  # a tag the schema does not know, among the strings
        "\ud800",  # a lone surrogate: no text
    ],
)
def test_a_big_list_with_one_bad_item_is_still_refused(bad: Any) -> None:
    items: list[Any] = [f"row {i}" for i in range(5_000)]
    items[4_321] = bad
    with pytest.raises(InvalidWriteError):
        validate_write(large_doc(items), "large_value", "large/x.json")


def test_a_long_list_where_the_schema_asks_more_is_checked_by_the_validator() -> None:
    names = [f"part{i}" for i in range(1_000)]  # a type name is two strings: the schema says so
    with pytest.raises(InvalidWriteError, match="type"):
        validate_write(large_doc({"$type": names, "$args": []}), "large_value", "large/x.json")


def test_the_writer_refuses_a_big_value_with_one_bad_item_in_the_validators_words(tmp_path: Path) -> None:
    """Through the writer's own step (``writing.prepare``: validate, then serialise): the bad
    item is named as the validator names it on the whole document, nothing is serialised."""
    items: list[Any] = [f"row {i}" for i in range(5_000)]
    items[4_321] = {"$bogus": 1}
    path = tmp_path / "threads/t/large" / ("0" * 64 + ".json")
    with pytest.raises(InvalidWriteError) as refused:
        prepare("large_value", large_doc(items), path)
    assert refused.value.pointer == validation._first_error("large_value", large_doc(items))[0]  # type: ignore[index]
