"""The use-feedback decisions: distinctive terms, used/contradicted judgements, bounded demotion."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from cortex.core.lifecycle.usage import (
    MAX_DROP,
    Demotion,
    SessionVerdict,
    TurnText,
    candidate_terms,
    demoted_priority,
    distinctive_terms,
    judge_contradicted,
    judge_used,
    ledger_from_dict,
    ledger_to_dict,
    plan_ignored,
    plan_used,
)
from cortex.core.model import Memory, MemoryType, Scope, Source, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOTE = "Run `scripts/export_ledger.py` with LEDGER_BATCH_SIZE=500 against the reporting replica."


def mem(mid: str, content: str = NOTE, priority: int = 5, pinned: bool = False) -> Memory:
    return Memory(
        mid, content, "", MemoryType.GOTCHA, Scope.PROJECT, 0.7, priority, pinned, Source(), (), 0, None,
        T0, T0, Status.ACTIVE, mid,
    )  # fmt: skip


def distinct(content: str = NOTE) -> frozenset[str]:
    return distinctive_terms(content, {}, 100)


def test_common_words_are_never_distinctive_and_identifiers_are() -> None:
    terms = candidate_terms("We should always update the tests before we change the code in app/config.py")
    assert "app/config.py" in terms and "config" in terms
    assert not terms & {"should", "always", "update", "tests", "change", "code", "before"}


def test_words_many_memories_hold_are_not_distinctive() -> None:
    terms = distinctive_terms(NOTE, {"replica": 40, "reporting": 1}, 100)
    assert "replica" not in terms and "reporting" in terms


def test_used_when_the_assistant_says_the_notes_rare_terms_or_its_id() -> None:
    d = {
        "a1b2c3d4e5": distinct(),
        "f0e1d2c3b4": distinct("Grafana panels live under observability/checkout."),
    }
    said = TurnText("I'll run scripts/export_ledger.py with LEDGER_BATCH_SIZE=500 now.", [])
    assert judge_used(d, said)[0] == {"a1b2c3d4e5"}
    assert judge_used(d, TurnText("As note f0e1d2c3b4 says, look there.", []))[0] == {"f0e1d2c3b4"}


def test_one_shared_common_word_is_not_use() -> None:
    d = {"a1b2c3d4e5": distinct()}
    assert judge_used(d, TurnText("The replica is fine; nothing else to export today.", []))[0] == set()


def test_terms_said_over_several_turns_add_up_to_use() -> None:
    d = {"a1b2c3d4e5": distinct()}
    used, hits = judge_used(d, TurnText("Looking at the reporting replica first.", []))
    assert used == set() and hits == {"a1b2c3d4e5": {"reporting", "replica"}}
    later = TurnText("Then run the ledger export script.", [])
    assert judge_used(d, later)[0] == set()  # alone, too little
    assert judge_used(d, later, hits)[0] == {"a1b2c3d4e5"}  # with the earlier turn, enough


def test_only_a_user_sentence_with_a_correction_cue_contradicts() -> None:
    d = {"a1b2c3d4e5": distinct()}
    agree = TurnText("", ["Yes, run scripts/export_ledger.py with LEDGER_BATCH_SIZE=500 please."])
    disagree = TurnText("", ["Thanks. No, scripts/export_ledger.py and LEDGER_BATCH_SIZE were removed."])
    assert judge_contradicted(d, agree) == set()
    assert judge_contradicted(d, disagree) == {"a1b2c3d4e5"}


def test_demotion_waits_a_grace_session_then_is_bounded() -> None:
    drops = [5 - demoted_priority(5, n) for n in range(10)]
    assert drops == [0, 0, 1, 2, 3, 4, 4, 4, 4, 4] and max(drops) == MAX_DROP
    assert demoted_priority(1, 9) == 0


def test_ignored_sessions_demote_and_one_use_restores() -> None:
    m = mem("a1b2c3d4e5")
    ledger: dict[str, Demotion] = {}
    for _ in range(4):
        plan = plan_ignored([m], ledger)
        ledger = plan.ledger
        m = replace(m, priority=plan.priorities.get(m.id, m.priority))
    assert m.priority == 2 and ledger[m.id] == Demotion(5, 4, 2)
    back = plan_used([m], ledger)
    assert back.priorities == {m.id: 5} and back.ledger == {}


def test_pinned_is_never_demoted_and_a_persons_change_resets_the_base() -> None:
    assert plan_ignored([mem("a1b2c3d4e5", pinned=True)] * 5, {}).priorities == {}
    ledger = {"a1b2c3d4e5": Demotion(5, 3, 3)}
    plan = plan_ignored([mem("a1b2c3d4e5", priority=8)], ledger)  # someone set 8 meanwhile
    assert plan.ledger["a1b2c3d4e5"] == Demotion(8, 1, 8) and plan.priorities == {}
    assert plan_used([mem("a1b2c3d4e5", priority=8)], ledger).priorities == {}


def test_a_short_session_judges_nothing_unused() -> None:
    short = SessionVerdict(frozenset({"a", "b"}), frozenset(), frozenset({"a"}), frozenset(), turns=1)
    assert short.unused == frozenset()
    assert replace(short, turns=5).unused == frozenset({"b"})


def test_the_ledger_round_trips_and_skips_junk() -> None:
    ledger = {"a1b2c3d4e5": Demotion(5, 2, 4)}
    assert ledger_from_dict(ledger_to_dict(ledger)) == ledger
    assert ledger_from_dict({"x": [1, 2], "y": "z"}) == {} and ledger_from_dict([]) == {}
