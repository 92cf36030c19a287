"""The labelled pair set: the gate's lexical merge decision keeps precision >= 0.98 and recall >= 0.80."""

from __future__ import annotations

from benchmarks.dedup import merges, scores
from tests.support.dedup_pairs import labelled_pairs


def test_the_set_has_enough_pairs_of_each_label() -> None:
    pairs = labelled_pairs()
    assert len(pairs) >= 200
    assert sum(p.merge for p in pairs) >= 100 and sum(not p.merge for p in pairs) >= 100
    assert len({(p.a, p.b) for p in pairs}) >= 0.9 * len(pairs)


def test_merge_precision_and_recall_on_the_set() -> None:
    got = scores(labelled_pairs())
    assert got["precision"] >= 0.98 and got["recall"] >= 0.80, got


def test_near_misses_of_the_named_kinds_never_merge() -> None:
    named = {"number", "negation", "technology", "identifier", "version", "date", "name", "opposite"}
    wrong = [p for p in labelled_pairs() if p.kind in named and merges(p)]
    assert wrong == []


def test_the_threshold_alone_would_merge_near_misses() -> None:
    # The set can fail the rule: without it, word overlap merges many near misses.
    assert scores(labelled_pairs(), rule=False)["fp"] > 50
