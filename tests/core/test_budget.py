"""Tests for cortex.core.budget: token estimates, packing, per-type soft budgets, notes."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.budget import Packed, estimate_tokens, pack, pack_by_type, truncation_note

Item = tuple[str, int, int]  # (type, index, cost): unique, so kept sets can be compared


def _cost(item: Item) -> int:
    return item[2]


def _items(name: str, costs: list[int]) -> list[Item]:
    return [(name, i, c) for i, c in enumerate(costs)]


# --- estimate_tokens -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        (" ", 1),
        ("The quick brown fox jumps over the lazy dog.", 12),  # 9 words * 4/3 > 44 chars / 4
        ("x" * 400, 100),  # one long "word": the character count wins
        ("你好世界", 4),  # non-ASCII characters count one token each
        ("\U0001f600\U0001f600", 2),
    ],
)
def test_estimate_tokens_examples(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@given(st.text())
def test_estimate_tokens_counts_ascii_characters_one_by_one(text: str) -> None:
    # The fast ASCII count must agree with the definition: a quarter token per ASCII character.
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    chars = ascii_chars / 4 + (len(text) - ascii_chars)
    words = len(re.findall(r"[^\W_]+", text)) * 4 / 3
    expected = max(1, math.floor(max(chars, words) + 0.5)) if text else 0
    assert estimate_tokens(text) == expected


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_estimate_tokens_counts_ascii_words_as_the_regex_does(text: str) -> None:
    # ASCII text counts its words without the regex: punctuation, "_" and controls split them.
    words = len(re.findall(r"[^\W_]+", text)) * 4 / 3
    expected = max(1, math.floor(max(len(text) / 4, words) + 0.5)) if text else 0
    assert estimate_tokens(text) == expected


@given(st.text(), st.text())
def test_estimate_tokens_is_monotone_in_appended_text(head: str, tail: str) -> None:
    assert estimate_tokens(head + tail) >= estimate_tokens(head)
    assert (estimate_tokens(head) == 0) == (head == "")


# --- pack ------------------------------------------------------------------------------------


def test_pack_is_first_fit_in_order() -> None:
    assert pack([3, 5, 2, 4], int, 8) == Packed(kept=(3, 5), dropped=2, used=8)
    assert pack([5, 4, 3], int, 8) == Packed(kept=(5, 3), dropped=1, used=8)  # 4 skipped
    assert pack([1, 2], int, -5) == Packed(kept=(), dropped=2, used=0)
    assert pack([0, 9], int, 0) == Packed(kept=(0,), dropped=1, used=0)
    with pytest.raises(ValueError, match="costs"):
        pack([1, -1], int, 10)


@given(st.lists(st.integers(0, 50)), st.integers(-10, 200))
def test_pack_never_exceeds_budget_and_leaves_no_fitting_item(costs: list[int], budget: int) -> None:
    items = _items("t", costs)
    packed = pack(items, _cost, budget)
    assert packed.used == sum(c for *_, c in packed.kept) <= max(budget, 0)
    assert list(packed.kept) == [i for i in items if i in packed.kept]  # order kept
    assert packed.dropped == len(items) - len(packed.kept)
    left = max(budget, 0) - packed.used
    assert all(item[2] > left for item in items if item not in packed.kept)


# --- pack_by_type ----------------------------------------------------------------------------


def _kept_costs(result: dict[str, Packed[Item]]) -> dict[str, list[int]]:
    return {name: [c for *_, c in packed.kept] for name, packed in result.items()}


def test_pack_by_type_quotas() -> None:
    items = {
        "decision": _items("decision", [10, 10, 10]),
        "gotcha": _items("gotcha", [10]),
        "progress": _items("progress", [10, 10, 10, 10]),
    }
    shares = {"decision": 0.5, "gotcha": 0.25, "progress": 0.25}
    result = pack_by_type(items, shares, 40, _cost)
    assert _kept_costs(result) == {"decision": [10, 10], "gotcha": [10], "progress": [10]}
    assert {n: p.dropped for n, p in result.items()} == {"decision": 1, "gotcha": 0, "progress": 3}


def test_pack_by_type_redistributes_unused_budget() -> None:
    items = {
        "decision": _items("decision", [10, 10, 10]),
        "gotcha": _items("gotcha", [10]),  # quota 15, uses 10
        "progress": _items("progress", [10, 10, 10, 10]),  # quota 15: gets the spare 10
    }
    shares = {"decision": 0.5, "gotcha": 0.25, "progress": 0.25}
    result = pack_by_type(items, shares, 60, _cost)
    assert _kept_costs(result) == {"decision": [10] * 3, "gotcha": [10], "progress": [10, 10]}


def test_pack_by_type_shares_spare_budget_by_share_then_name() -> None:
    items = {"b": _items("b", [1] * 10), "a": _items("a", [1] * 10), "c": _items("c", [1])}
    result = pack_by_type(items, {"a": 0.25, "b": 0.25, "c": 0.5}, 20, _cost)
    # Quotas 5/5/10; c uses 1; the spare 9 splits 4/4, the last unit goes to "a" (name order).
    assert {n: len(p.kept) for n, p in result.items()} == {"b": 9, "a": 10, "c": 1}


def test_pack_by_type_edge_cases() -> None:
    items = {"x": _items("x", [5, 5]), "empty": [], "unshared": _items("unshared", [3])}
    result = pack_by_type(items, {"x": 1.0, "ghost": 5.0}, 12, _cost)
    # "unshared" has no share, so it only gets what "x" leaves; "ghost" has no items.
    assert _kept_costs(result) == {"x": [5, 5], "empty": [], "unshared": []}
    assert result["unshared"].dropped == 1
    result = pack_by_type(items, {}, 13, _cost)  # no shares at all: spare split equally
    assert sum(p.used for p in result.values()) == 13


budget_input = st.tuples(
    st.dictionaries(
        st.sampled_from(["architecture", "decision", "pattern", "gotcha", "progress", "code"]),
        st.lists(st.integers(0, 40), max_size=8),
        max_size=6,
    ),
    st.dictionaries(
        st.sampled_from(["architecture", "decision", "gotcha", "code", "other"]),
        st.floats(0, 1),
    ),
    st.integers(-5, 300),
)


@given(budget_input)
def test_pack_by_type_invariants(data: tuple[dict[str, list[int]], dict[str, float], int]) -> None:
    cost_lists, shares, budget = data
    items = {name: _items(name, costs) for name, costs in cost_lists.items()}
    result = pack_by_type(items, shares, budget, _cost)
    assert list(result) == list(items)
    used = sum(p.used for p in result.values())
    assert used <= max(budget, 0)
    # No item that would still fit was left out.
    dropped = [i for name, its in items.items() for i in its if i not in result[name].kept]
    assert all(c > max(budget, 0) - used for *_, c in dropped)
    present = [name for name, its in items.items() if its]
    total_share = sum(max(shares.get(n, 0.0), 0.0) for n in present)
    for name, its in items.items():
        packed = result[name]
        assert list(packed.kept) == [i for i in its if i in packed.kept]
        assert packed.used == sum(c for *_, c in packed.kept)
        assert packed.dropped == len(its) - len(packed.kept)
        if not its:
            continue
        # Soft floor: a type keeps at least what it would keep alone within its own quota.
        share = max(shares.get(name, 0.0), 0.0)
        quota = math.floor(max(budget, 0) * (share / total_share)) if total_share else 0
        assert set(pack(its, _cost, quota).kept) <= set(packed.kept)


# --- truncation_note -------------------------------------------------------------------------


def test_truncation_note() -> None:
    assert truncation_note(0) == ""
    assert truncation_note(-3) == ""
    assert truncation_note(1) == "… 1 more memory not shown; use /recall <topic> to search it."
    assert truncation_note(12) == ("… 12 more memories not shown; use /recall <topic> to search them.")
