"""What applying a gate plan makes of memories: the new memory, the reinforced one, the effect."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from cortex.core.lifecycle.decay import plan_restore
from cortex.core.model import Candidate, Layer, Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.core.write.apply import WriteEffect, effect_of, new_memory, reinforced, upgraded
from cortex.core.write.gate import Neighbour, WriteAction, WritePlan, plan_write

T0 = datetime(2026, 3, 1, tzinfo=UTC)
LATER = T0 + timedelta(days=40)
WAL = "We use SQLite in WAL mode for the store"


def cand(content: str = WAL, **kw: object) -> Candidate:
    fields: dict[str, object] = {"content": content, "type": MemoryType.DECISION, "layer": Layer.LEXICAL}
    fields.update(kw)
    return Candidate(**fields)  # type: ignore[arg-type]


def stored(content: str = WAL, status: Status = Status.ACTIVE) -> Memory:
    m = new_memory("m1", cand(content, tags=("db",), files=("a.py",)), Scope.PROJECT, Source(), T0)
    return replace(m, status=status, low_since=T0)


def test_a_new_memory_clamps_its_numbers_and_merges_its_lists() -> None:
    c = cand(confidence=1.7, priority=42, tags=("db", "db", "wal"), files=("b.py", "a.py"), pinned=True)
    m = new_memory("id1", c, Scope.GLOBAL, Source("s1", 7, "main", "abc", ("a.py",)), T0)
    assert (m.id, m.scope, m.type, m.pinned) == ("id1", Scope.GLOBAL, MemoryType.DECISION, True)
    assert m.confidence == 1.0 and m.priority == 10
    assert m.tags == ("db", "wal") and m.source.files == ("a.py", "b.py")
    assert m.source.session_id == "s1" and m.source.transcript_offset == 7
    assert m.created == m.updated == T0 and m.last_accessed is None and m.access_count == 0
    assert m.status is Status.ACTIVE and m.content_hash == content_hash(WAL)
    assert m.summary == WAL  # no summary given: the first line


def test_a_new_memory_keeps_a_given_summary_and_raises_low_numbers() -> None:
    m = new_memory("id1", cand(summary="WAL", confidence=-1, priority=0), Scope.PROJECT, Source(), T0)
    assert m.summary == "WAL" and m.confidence == 0.0 and m.priority == 1


@pytest.mark.parametrize(
    ("action", "restore", "effect"),
    [
        (WriteAction.INSERT, False, WriteEffect.STORED),
        (WriteAction.REINFORCE, False, WriteEffect.REINFORCED),
        (WriteAction.REINFORCE, True, WriteEffect.REINFORCED),
        (WriteAction.SKIP, True, WriteEffect.RESTORED),
        (WriteAction.SKIP, False, WriteEffect.DUPLICATE),
    ],
)
def test_each_plan_has_one_effect(action: WriteAction, restore: bool, effect: WriteEffect) -> None:
    assert effect_of(WritePlan(action, "why", restore=restore)) is effect


def test_effects_keep_the_words_reports_print() -> None:
    assert [e.value for e in WriteEffect] == ["stored", "reinforced", "restored", "duplicate", "empty"]
    assert {e for e in WriteEffect if e.changed} == {
        WriteEffect.STORED,
        WriteEffect.REINFORCED,
        WriteEffect.RESTORED,
    }


def test_reinforcing_takes_the_plans_numbers_and_richer_wording() -> None:
    current = stored()
    longer = WAL + " with one writer at a time"
    plan = plan_write(
        cand(longer, confidence=0.9, tags=("wal",), files=("b.py",)),
        exact=None,
        neighbours=[Neighbour(current, 0.85)],
    )
    assert plan.action is WriteAction.REINFORCE
    after = reinforced(current, plan, LATER)
    assert after.id == current.id and after.confidence == plan.confidence
    assert after.access_count == current.access_count + 1
    assert after.tags == ("db", "wal") and after.source.files == ("a.py", "b.py")
    assert after.content == longer and after.content_hash == content_hash(longer)
    assert after.summary == longer and after.updated == LATER and after.low_since is None
    assert after.status is current.status and after.created == current.created


def test_reinforcing_without_new_wording_keeps_text_and_summary() -> None:
    current = stored()
    plan = WritePlan(WriteAction.REINFORCE, "near-duplicate", target_id="m1", confidence=0.8, access_delta=1)
    after = reinforced(current, plan, LATER)
    assert (after.content, after.summary, after.content_hash) == (
        current.content,
        current.summary,
        current.content_hash,
    )
    assert after.tags == current.tags and after.source.files == current.source.files


def test_a_reinforced_archived_memory_is_restored_by_the_lifecycle_rule() -> None:
    current = stored(status=Status.ARCHIVED)
    plan = WritePlan(WriteAction.REINFORCE, "near-duplicate", target_id="m1", restore=True, access_delta=1)
    after = plan_restore(reinforced(current, plan, LATER), LATER)
    assert after is not None and after.status is Status.ACTIVE and after.status_changed == LATER
    assert after.access_count == 1 and after.low_since is None


def test_a_repeated_remember_pins_and_reprioritises() -> None:
    current = stored()
    assert upgraded(current, True, None, LATER).pinned
    assert upgraded(current, False, 9, LATER).priority == 9
    same = upgraded(current, False, None, LATER)
    assert (same.pinned, same.priority, same.updated) == (current.pinned, current.priority, LATER)
