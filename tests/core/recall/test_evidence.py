"""Evidence for a query: keyword coverage, the floors, and leaving out hits without their own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cortex.core.recall.evidence import is_weak, lexical_coverage, rank_with_evidence, stem

TEXTS = {
    "a": "Postgres advisory locks guard the job queue",
    "b": "the frontend talks to the API through a generated client",
    "c": "deployments run every Thursday",
}


def test_coverage_counts_query_words_by_word_or_stem() -> None:
    assert lexical_coverage("advisory locks", TEXTS["a"]) == 1.0
    assert lexical_coverage("deploys on thursday", TEXTS["c"]) == 1.0  # "deplo" stem
    assert lexical_coverage("pizza topping", TEXTS["a"]) == 0.0


def test_short_words_meet_their_inflections() -> None:
    # A 5-letter prefix alone never joins "say" and "saying" or "fix" and "fixed".
    rule = "you keep saying it is working but never tested the fixed build"
    assert lexical_coverage("say work fix test", rule) == 1.0
    for a, b in (("verify", "verified"), ("study", "studies"), ("run", "running"), ("stop", "stopped")):
        assert stem(a) == stem(b), (a, b)
    # Endings that are not inflections stay.
    assert [stem(w) for w in ("class", "bus", "sing", "analysis")] == ["class", "bus", "sing", "analy"]
    assert lexical_coverage("pizza", "pizzas are not on the menu") == 1.0
    assert lexical_coverage("saying", "the sayings of the team") == 1.0
    assert lexical_coverage("sing", "a sign") == 0.0


def test_weak_needs_both_kinds_of_evidence_below_their_floors() -> None:
    assert is_weak(0.1, 0.2, 0.2, 0.34)
    assert not is_weak(0.25, 0.0, 0.2, 0.34)
    assert not is_weak(None, 0.5, 0.2, 0.34)
    assert is_weak(None, 0.0, 0.2, 0.34)


def test_hits_without_their_own_evidence_are_left_out_in_order() -> None:
    cosine = {"a": 0.6, "b": 0.1, "c": 0.3}
    kept = rank_with_evidence(["b", "c", "a"], cosine, TEXTS.__getitem__, ["thursday"], 0.25, 0.5, 8)
    assert kept == ["c", "a"]  # b: low cosine, no keyword; c also has the keyword


@given(
    cos=st.dictionaries(st.sampled_from(sorted(TEXTS)), st.floats(-1, 1)),
    floor=st.floats(-1, 1),
    wanted=st.integers(0, 4),
)
def test_kept_is_an_ordered_subset_of_at_most_wanted(
    cos: dict[str, float], floor: float, wanted: int
) -> None:
    order = sorted(TEXTS)
    kept = rank_with_evidence(order, cos, TEXTS.__getitem__, ["queue"], floor, 0.5, wanted)
    assert len(kept) <= wanted and kept == [m for m in order if m in kept]
    assert all(not is_weak(cos.get(m), lexical_coverage("queue", TEXTS[m]), floor, 0.5) for m in kept)
