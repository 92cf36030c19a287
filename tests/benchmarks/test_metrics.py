"""Tests of the retrieval harness: metrics on hand-worked fixtures, evidence parsing, the unit
counting rule, bootstrap sanity, and BM25 end to end through the CLI on tiny synthetic datasets."""

from __future__ import annotations

import io
import json
import lzma
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.retrieval import system as system_registry
from benchmarks.retrieval.bm25 import BM25System, tokenize
from benchmarks.retrieval.cli import main
from benchmarks.retrieval.datasets import Question
from benchmarks.retrieval.locomo import plan_locomo_episodes
from benchmarks.retrieval.longmemeval import (
    plan_lme_official_episodes,
    plan_lme_session_full_episodes,
)
from benchmarks.retrieval.metrics import (
    evidence_recall_at_k,
    gold_ranks_of,
    memories_for_k,
    mrr,
    ndcg_at_k,
    parse_evidence,
    rank_distinct_units,
    recall_all_at_k,
    recall_any_at_k,
    score_metrics,
)
from benchmarks.retrieval.runner import Progress, search_ranking
from benchmarks.retrieval.stats import bootstrap_ci, paired_difference_ci, sign_test
from benchmarks.retrieval.system import IngestItem, SystemUnavailable, system_class

# --- recall family -------------------------------------------------------------------------

# Three gold units ranked 2, 7 and not retrieved.
THREE_GOLD: dict[str, int | None] = {"a": 2, "b": 7, "c": None}


def test_evidence_recall_is_the_share_of_gold_units_in_the_top_k() -> None:
    # top 1: none of 3; top 5: a (1 of 3); top 10: a, b (2 of 3)
    assert evidence_recall_at_k(THREE_GOLD, 1) == 0.0
    assert evidence_recall_at_k(THREE_GOLD, 5) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(THREE_GOLD, 10) == pytest.approx(2 / 3)
    assert evidence_recall_at_k({}, 10) == 0.0


def test_recall_all_needs_every_gold_unit_and_recall_any_needs_one() -> None:
    assert recall_all_at_k(THREE_GOLD, 50) == 0.0  # c is never retrieved
    assert recall_all_at_k({"a": 2, "b": 7}, 7) == 1.0
    assert recall_all_at_k({"a": 2, "b": 7}, 6) == 0.0
    assert recall_any_at_k(THREE_GOLD, 1) == 0.0
    assert recall_any_at_k(THREE_GOLD, 2) == 1.0
    # LongMemEval's convention for questions without gold: all([]) is 1, any([]) is 0.
    assert recall_all_at_k({}, 5) == 1.0
    assert recall_any_at_k({}, 5) == 0.0


# --- NDCG with the official DCG ------------------------------------------------------------


def test_ndcg_does_not_discount_position_two() -> None:
    # DCG = rel_1 + sum_{i>=2} rel_i / log2(i). One gold unit at rank 2: 1/log2(2) = 1 = ideal,
    # so NDCG is 1.0 (the textbook log2(i+1) would give 0.631).
    assert ndcg_at_k({"a": 2}, 5) == pytest.approx(1.0)
    # At rank 3: 1/log2(3) = 0.6309 over an ideal of 1.
    assert ndcg_at_k({"a": 3}, 5) == pytest.approx(1 / math.log2(3))


def test_ndcg_with_two_gold_units() -> None:
    # Ranks 2 and 4: DCG = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5; ideal = 1 + 1/log2(2) = 2.
    assert ndcg_at_k({"a": 2, "b": 4}, 5) == pytest.approx(0.75)
    # At k = 3 rank 4 falls out: DCG = 1; ideal (two units fit) = 2.
    assert ndcg_at_k({"a": 2, "b": 4}, 3) == pytest.approx(0.5)
    # At k = 1 only one unit fits the ideal: ideal = 1, DCG = 0 (rank 2 > 1).
    assert ndcg_at_k({"a": 2, "b": 4}, 1) == 0.0
    # Ranks 1 and 2 are the ideal itself.
    assert ndcg_at_k({"a": 1, "b": 2}, 10) == pytest.approx(1.0)


def test_ndcg_is_zero_without_gold_or_hits() -> None:
    assert ndcg_at_k({}, 10) == 0.0
    assert ndcg_at_k({"a": 11, "b": None}, 10) == 0.0


# --- MRR -------------------------------------------------------------------------------------


def test_mrr_uses_the_first_gold_unit_and_its_cutoff() -> None:
    assert mrr(THREE_GOLD) == pytest.approx(1 / 2)
    assert mrr({"a": 12, "b": 3}) == pytest.approx(1 / 3)
    assert mrr({"a": 12}, cutoff=10) == 0.0  # MRR@10: rank 12 does not count
    assert mrr({"a": 10}, cutoff=10) == pytest.approx(0.1)
    assert mrr({"a": None}) == 0.0
    assert mrr({}) == 0.0


def test_score_metrics_names_map_to_the_functions() -> None:
    scores = score_metrics(["recall@5", "recall_all@10", "ndcg@5", "mrr", "mrr@1"], THREE_GOLD)
    assert scores == {
        "recall@5": pytest.approx(1 / 3),
        "recall_all@10": 0.0,
        "ndcg@5": pytest.approx(1 / (1 + 1 + 1 / math.log2(3))),  # rank 2 over ideal 1,2,3
        "mrr": pytest.approx(0.5),
        "mrr@1": 0.0,
    }
    with pytest.raises(ValueError):
        score_metrics(["precision@5"], THREE_GOLD)
    with pytest.raises(ValueError):
        score_metrics(["recall"], THREE_GOLD)


# --- the distinct-unit counting rule -------------------------------------------------------

PROVENANCE = {
    "m1": ("u1",),
    "m2": ("u1",),  # a second memory from the same unit
    "m3": ("u2", "u3"),  # one memory spanning two units
    "m4": ("u2",),
    "m5": ("u4",),
}


def test_several_memories_of_one_unit_count_once() -> None:
    ranking = rank_distinct_units(["m1", "m2", "m3", "m4", "m5"], PROVENANCE)
    # u1 first appears at memory 1, u2 and u3 at memory 3, u4 at memory 5.
    assert ranking.units == ("u1", "u2", "u3", "u4")
    assert ranking.memory_positions == (1, 3, 3, 5)
    # Memories needed for k distinct units: 1 -> 1, 2 -> 3 (m2 repeats u1), 3 -> 3, 4 -> 5.
    assert [memories_for_k(ranking, k) for k in (1, 2, 3, 4)] == [1, 3, 3, 5]
    # Fewer than k units exist: it took every retrieved memory.
    assert memories_for_k(ranking, 10) == 5


def test_gold_ranks_come_from_the_distinct_unit_list() -> None:
    ranking = rank_distinct_units(["m2", "m1", "m4", "m5"], PROVENANCE)
    # Distinct units: u1 (rank 1), u2 (rank 2), u4 (rank 3); u3 never retrieved.
    assert gold_ranks_of(ranking, ["u4", "u3"]) == {"u4": 3, "u3": None}


def test_a_merged_memory_key_maps_to_the_union_of_its_items() -> None:
    ranking = rank_distinct_units(["m5+m1", "m3"], PROVENANCE)
    assert ranking.units == ("u4", "u1", "u2", "u3")
    assert ranking.memory_positions == (1, 1, 2, 2)
    assert memories_for_k(ranking, 2) == 1


@given(
    st.lists(st.sampled_from(sorted(PROVENANCE)), max_size=30),
    st.integers(min_value=1, max_value=8),
)
def test_unit_ranking_invariants(keys: list[str], k: int) -> None:
    ranking = rank_distinct_units(keys, PROVENANCE)
    assert len(set(ranking.units)) == len(ranking.units)
    assert list(ranking.memory_positions) == sorted(ranking.memory_positions)
    assert memories_for_k(ranking, k) <= memories_for_k(ranking, k + 1) <= len(keys)
    gold = gold_ranks_of(ranking, ["u1", "u3", "u4"])
    # recall_all <= evidence recall <= recall_any, and every score is within [0, 1].
    all_, share, any_ = (f(gold, k) for f in (recall_all_at_k, evidence_recall_at_k, recall_any_at_k))
    assert 0.0 <= all_ <= share <= any_ <= 1.0
    assert 0.0 <= ndcg_at_k(gold, k) <= 1.0 + 1e-12


# --- evidence normalisation ----------------------------------------------------------------

EXISTING = {"D30:5", "D1:3", "D2:4", "D8:6", "D9:17", "D4:4"}


def test_evidence_ids_are_unpadded_split_and_filtered() -> None:
    assert parse_evidence(["D30:05"], EXISTING) == ("D30:5",)
    assert parse_evidence(["D1:3;D2:4"], EXISTING) == ("D1:3", "D2:4")
    assert parse_evidence(["D8:6; D9:17", "D1:3"], EXISTING) == ("D8:6", "D9:17", "D1:3")
    # D10:19 does not exist in the conversation; duplicates collapse.
    assert parse_evidence(["D10:19", "D4:4", "D4:04"], EXISTING) == ("D4:4",)


def test_broken_or_empty_evidence_gives_nothing() -> None:
    assert parse_evidence([], EXISTING) == ()
    assert parse_evidence(["D", "D:11:26"], EXISTING) == ()
    assert parse_evidence(["D10:19"], EXISTING) == ()


# --- bootstrap and sign test ---------------------------------------------------------------


def test_constant_data_gives_a_zero_width_interval() -> None:
    interval = bootstrap_ci([0.7] * 50, resamples=500, seed=1)
    assert (interval.mean, interval.low, interval.high) == pytest.approx((0.7, 0.7, 0.7))
    diff = paired_difference_ci([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], resamples=500, seed=1)
    assert (diff.low, diff.high) == (0.0, 0.0)
    assert not diff.excludes_zero()


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = [float(i % 3 == 0) for i in range(200)]
    first = bootstrap_ci(values, resamples=1000, seed=7)
    assert bootstrap_ci(values, resamples=1000, seed=7) == first
    assert bootstrap_ci(values, resamples=1000, seed=8) != first
    assert first.low < first.mean < first.high
    assert first.mean == pytest.approx(67 / 200)


def test_a_consistent_margin_has_an_interval_that_excludes_zero() -> None:
    a = [1.0] * 40 + [0.0] * 10
    b = [0.0] * 30 + [1.0] * 10 + [0.0] * 10  # a wins 30, ties 20, never loses
    diff = paired_difference_ci(a, b, resamples=1000, seed=3)
    assert diff.mean == pytest.approx(0.6)
    assert diff.excludes_zero()
    assert sign_test(a, b).wins == 30
    assert sign_test(a, b).losses == 0


def test_sign_test_exact_p_value() -> None:
    # 5 wins, 0 losses, 2 ties: p = 2 * (1/2)^5 = 0.0625.
    result = sign_test([1, 1, 1, 1, 1, 0, 1], [0, 0, 0, 0, 0, 0, 1])
    assert (result.wins, result.losses) == (5, 0)
    assert result.p_value == pytest.approx(0.0625)
    assert sign_test([1, 0], [1, 0]).p_value == 1.0


# --- BM25 ----------------------------------------------------------------------------------

T0 = datetime(2023, 5, 1)


def test_bm25_tokens_and_ranking() -> None:
    assert tokenize("Don't STOP, 2023!") == ["don", "t", "stop", "2023"]
    bm25 = BM25System()
    bm25.ingest(
        [
            IngestItem("k1", "the cat sat on the mat", T0),
            IngestItem("k2", "a violin concert", T0),
            IngestItem("k3", "the cat and the violin", T0),
        ]
    )
    # "violin" is in k2 (shorter) and k3; "concert" only in k2.
    assert bm25.search("violin concert", T0, 3) == ["k2", "k3", "k1"]
    assert bm25.search("violin concert", T0, 1) == ["k2"]
    bm25.reset()
    assert bm25.search("violin", T0, 3) == []


# --- adapters -------------------------------------------------------------------------------

LOCOMO: list[dict[str, Any]] = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:00 pm on 1 May, 2023",
            "session_1": [
                {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a puppy named Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Great news about the puppy!"},
                {
                    "speaker": "Alice",
                    "dia_id": "D1:3",
                    "text": "We went hiking last weekend.",
                    "blip_caption": "a photo of a mountain trail",
                },
            ],
            "session_2_date_time": "2:00 pm on 8 May, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "My sister plays violin."},
                {"speaker": "Alice", "dia_id": "D2:2", "text": "I started pottery classes."},
            ],
            # A date past the last session, as conv-26 has: ignored.
            "session_3_date_time": "3:00 pm on 9 May, 2023",
        },
        "qa": [
            {"question": "Whose sister plays the violin?", "evidence": ["D2:01"], "category": 4},
            {
                "question": "Who adopted the puppy named Rex?",
                "evidence": ["D1:1; D1:2"],
                "category": 1,
            },
            {"question": "Ghost", "evidence": ["D9:9"], "category": 2},
            {"question": "No evidence", "evidence": [], "category": 3},
            {
                "question": "Which photo showed a mountain trail?",
                "evidence": ["D1:3"],
                "category": 5,
                "adversarial_answer": "none",
            },
        ],
    }
]


def _turn(role: str, content: str, has_answer: bool = False) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": role, "content": content}
    if has_answer:
        turn["has_answer"] = True
    return turn


FILLER = [
    [_turn("user", "How do I cook pasta al dente?"), _turn("assistant", "Boil salted water.")],
    [_turn("user", "My laptop fan is loud."), _turn("assistant", "Blow out the dust.")],
]


def _lme_question(qid: str, qtype: str, question: str, answer_session: list[Any]) -> dict[str, Any]:
    answer_id = f"answer_{qid}_1"
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "question_date": "2023/05/10 (Wed) 12:00",
        "answer": "irrelevant",
        "answer_session_ids": [answer_id],
        # Listed out of date order on purpose: the first session is the latest.
        "haystack_dates": [
            "2023/05/03 (Wed) 10:00",
            "2023/05/01 (Mon) 09:00",
            "2023/05/02 (Tue) 09:00",
        ],
        "haystack_session_ids": [answer_id, "filler_a", "filler_b"],
        "haystack_sessions": [answer_session, *FILLER],
    }


LME: list[dict[str, Any]] = [
    _lme_question(
        "q1",
        "single-session-user",
        "What color is the bicycle I bought?",
        [
            _turn("user", "Hi there"),
            _turn("assistant", "Hello! How can I help?"),
            _turn("user", "I bought a red bicycle yesterday.", has_answer=True),
        ],
    ),
    _lme_question(
        "q2",
        "single-session-assistant",
        "Which vents did you tell me to clean?",
        [_turn("user", "Any tips?"), _turn("assistant", "Dust the vents.", has_answer=True)],
    ),
    _lme_question(
        "q3_abs",
        "single-session-user",
        "What color is my car?",
        [_turn("user", "I like bicycles."), _turn("assistant", "Great.")],
    ),
]


def test_locomo_turn_episode_units_gold_and_rows() -> None:
    (episode,) = plan_locomo_episodes(LOCOMO, "turn")
    assert [d.units for d in episode.docs] == [
        ("D1:1",),
        ("D1:2",),
        ("D1:3",),
        ("D2:1",),
        ("D2:2",),
    ]
    assert episode.docs[2].text == "Alice: We went hiking last weekend. [shares a photo of a mountain trail]"
    assert [d.key for d in episode.docs] == ["m1", "m2", "m3", "m4", "m5"]
    # The questions with a missing turn (D9:9) or no evidence are skipped.
    assert [q.gold for q in episode.questions] == [("D2:1",), ("D1:1", "D1:2"), ("D1:3",)]
    assert episode.questions[0].groups == ("overall", "overall w/o cat 5", "cat 4 single-hop")
    assert episode.questions[2].groups == ("overall", "cat 5 adversarial")
    assert episode.questions[0].now == datetime(2023, 5, 8, 14, 0)


def test_locomo_session_episode() -> None:
    (episode,) = plan_locomo_episodes(LOCOMO, "session")
    assert [d.units for d in episode.docs] == [("session_1",), ("session_2",)]
    assert episode.docs[1].text.splitlines()[0] == "2:00 pm on 8 May, 2023"
    assert [q.gold for q in episode.questions] == [("session_2",), ("session_1",), ("session_1",)]


def test_lme_official_gold_needs_a_user_turn_with_the_answer() -> None:
    sessions = plan_lme_official_episodes(LME, "session")
    turns = plan_lme_official_episodes(LME, "turn")
    # Abstention is never scored; q2's evidence is assistant-side only: no gold, not strict.
    assert [e.eid for e in sessions] == ["q1", "q2"]
    assert [q.gold for e in sessions for q in e.questions] == [("answer_q1_1",), ()]
    assert [q.sets for e in sessions for q in e.questions] == [
        ("non-abstention", "strict"),
        ("non-abstention",),
    ]
    # Turn ids count every turn of the session: the answer is the 3rd turn.
    assert turns[0].questions[0].gold == ("answer_q1_1_3",)
    # Chronological ingest: filler_a (May 1), filler_b (May 2), the answer session (May 3).
    assert [d.units for d in sessions[0].docs] == [("filler_a",), ("filler_b",), ("answer_q1_1",)]
    assert sessions[0].docs[2].text == "Hi there I bought a red bicycle yesterday."
    assert [d.units for d in turns[0].docs][2:] == [("answer_q1_1_1",), ("answer_q1_1_3",)]


def test_lme_session_full_keeps_abstention_and_both_roles() -> None:
    episodes = plan_lme_session_full_episodes(LME)
    assert [e.eid for e in episodes] == ["q1", "q2", "q3_abs"]
    assert episodes[2].questions[0].groups == ("overall", "single-session-user", "abstention")
    assert episodes[1].questions[0].gold == ("answer_q2_1",)
    assert episodes[1].docs[2].text == "user: Any tips?\nassistant: Dust the vents."


# --- end to end through the CLI -------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    return path


@pytest.fixture
def lme_file(tmp_path: Path) -> Path:
    path = tmp_path / "lme_tiny.json.xz"
    with lzma.open(path, "wt", encoding="utf-8") as handle:
        json.dump(LME, handle)
    return path


def test_cli_locomo_turn_bm25(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    args = ["--protocol", "locomo-turn", "--system", "bm25", "--data", str(locomo_file)]
    assert main([*args, "--out", str(out), "--resamples", "200"]) == 0
    rows = _read_jsonl(out / "retrieval-locomo-turn.jsonl")
    assert [r["qid"] for r in rows] == ["conv-x#q1", "conv-x#q2", "conv-x#q5"]
    # "sister", "plays", "violin" only in D2:1; "adopted", "named", "rex" put D1:1 above D1:2
    # ("the puppy"); the caption words "photo", "mountain", "trail" find D1:3.
    assert [r["gold_ranks"] for r in rows] == [
        {"D2:1": 1},
        {"D1:1": 1, "D1:2": 2},
        {"D1:3": 1},
    ]
    assert rows[1]["metrics"]["recall@5"] == 1.0
    assert rows[0]["memories_for_k"] == {"5": 5, "10": 5, "25": 5, "50": 5}
    summary = json.loads((out / "retrieval-locomo-turn.summary.json").read_text())
    rows_all = summary["systems"]["bm25"]["sets"]["all"]["rows"]
    assert {label: row["n"] for label, row in rows_all.items()} == {
        "overall": 3,
        "overall w/o cat 5": 2,
        "cat 1 multi-hop": 1,
        "cat 4 single-hop": 1,
        "cat 5 adversarial": 1,
    }
    markdown = (out / "retrieval.md").read_text()
    assert markdown.count("<!-- retrieval:locomo-turn -->") == 1
    assert "embedder none, reranker none, llm none" in markdown


def test_cli_lme_official_and_session_full(lme_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    common = ["--system", "bm25", "--data", str(lme_file), "--out", str(out), "--resamples", "200"]
    assert main(["--protocol", "lme-official", "--level", "turn", *common]) == 0
    assert main(["--protocol", "lme-official", *common]) == 0
    assert main(["--protocol", "lme-official", *common]) == 0  # a rerun replaces its section
    assert main(["--protocol", "lme-session-full", "--dataset", "longmemeval", *common]) == 0
    session = _read_jsonl(out / "retrieval-lme-official-session.jsonl")
    assert [r["qid"] for r in session] == ["q1", "q2"]
    assert session[0]["gold_ranks"] == {"answer_q1_1": 1}
    # No user-side gold: recall_all counts 1, everything else 0 (only in the non-abstention set).
    assert session[1]["gold_ranks"] == {}
    assert session[1]["metrics"]["recall_all@5"] == 1.0
    assert session[1]["metrics"]["recall_any@5"] == 0.0
    assert session[1]["metrics"]["ndcg@5"] == 0.0
    turn = _read_jsonl(out / "retrieval-lme-official-turn.jsonl")
    assert turn[0]["gold_ranks"] == {"answer_q1_1_3": 1}
    full = _read_jsonl(out / "retrieval-lme-session-full.jsonl")
    assert [r["qid"] for r in full] == ["q1", "q2", "q3_abs"]
    assert full[1]["gold_ranks"] == {"answer_q2_1": 1}  # "vents" is in the assistant turn
    summary = json.loads((out / "retrieval-lme-official-session.summary.json").read_text())
    sets = summary["systems"]["bm25"]["sets"]
    assert (sets["strict"]["n"], sets["non-abstention"]["n"]) == (1, 2)
    markdown = (out / "retrieval.md").read_text()
    for key in ("lme-official-turn", "lme-official-session", "lme-session-full"):
        assert markdown.count(f"<!-- retrieval:{key} -->") == 1


class DoublingSystem(BM25System):
    """BM25 that returns every memory twice: the harness must widen k and count units once."""

    name = "doubling"

    def search(self, query: str, now: datetime, k: int) -> list[str]:
        keys = super().search(query, now, k)
        return [key for key in keys for _ in (0, 1)][:k]


def test_cli_pairs_a_system_with_the_baseline(
    locomo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(system_registry.SYSTEMS, "doubling", "tests.benchmarks.test_metrics:DoublingSystem")
    out = tmp_path / "results"
    args = ["--protocol", "locomo-turn", "--system", "doubling", "--data", str(locomo_file)]
    assert main([*args, "--out", str(out), "--resamples", "200"]) == 0
    rows = _read_jsonl(out / "retrieval-locomo-turn.jsonl")
    doubled = [r for r in rows if r["system"] == "doubling"]
    baseline = [r for r in rows if r["system"] == "bm25"]
    assert [r["gold_ranks"] for r in doubled] == [r["gold_ranks"] for r in baseline]
    # Five turns, each returned twice (a a b b c c d d e e): the 5th distinct unit came with the
    # 9th memory, and the first search (k = 50 > 5 turns) held them all.
    assert doubled[0]["memories_for_k"]["5"] == 9
    assert doubled[0]["search_calls"] == 1
    summary = json.loads((out / "retrieval-locomo-turn.summary.json").read_text())
    (paired,) = summary["paired"]
    cell = paired["sets"]["all"]["overall"]["metrics"]["recall@5"]
    assert (paired["system"], paired["baseline"]) == ("doubling", "bm25")
    assert cell["diff"] == [0.0, 0.0, 0.0]
    assert not cell["excludes_zero"]
    assert "doubling − bm25, paired by question" in (out / "retrieval.md").read_text()


def test_search_widens_until_enough_distinct_units() -> None:
    system = DoublingSystem()
    docs = [IngestItem(f"m{i}", f"word{i} shared", T0) for i in range(1, 6)]
    system.ingest(docs)
    provenance = {d.key: (f"u{d.key}",) for d in docs}
    question = Question("q", "word1 word2", T0, ("um2",), ("overall",), ("all",))
    # k = 2 gives m1 m1 (one unit, a full answer): widen to k = 4 -> m1 m1 m2 m2.
    ranking, calls, _ = search_ranking(system, question, provenance, depth=2)
    assert (ranking.units, calls) == (("um1", "um2"), 2)
    with pytest.raises(KeyError, match="never ingested"):
        search_ranking(system, question, {"m1": ("u",)}, depth=2)


def test_usage_errors_and_a_missing_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--protocol", "locomo-turn", "--dataset", "longmemeval"]) == 2
    assert "runs on locomo" in capsys.readouterr().err
    assert main(["--all", "--data", str(tmp_path / "x.json")]) == 2
    assert main(["--protocol", "locomo-turn", "--level", "session"]) == 2
    monkeypatch.setitem(system_registry.SYSTEMS, "ghost", "benchmarks.retrieval.ghost_system:GhostSystem")
    with pytest.raises(SystemUnavailable, match=r"ghost_system\.py does not exist"):
        system_class("ghost")
    assert main(["--protocol", "locomo-turn", "--system", "ghost"]) == 2
    assert "is not available yet" in capsys.readouterr().err
    missing = ["--protocol", "locomo-turn", "--system", "bm25", "--data", str(tmp_path / "no.json")]
    assert main([*missing, "--out", str(tmp_path)]) == 1
    assert "dataset file not found" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_one_line_on_a_terminal() -> None:
    stream = _Terminal()
    progress = Progress("locomo-turn bm25", 3, 1, stream)
    progress.next_episode()
    progress.advance()
    progress.finish()
    assert stream.getvalue().endswith("\rlocomo-turn bm25: store 1/1, 1/3 questions\n")


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress("x", 3, 1, stream)
    progress.next_episode()
    progress.advance()
    progress.finish()
    assert stream.getvalue() == ""
