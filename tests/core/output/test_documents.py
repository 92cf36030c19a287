"""The `--json` documents: every key, in order, with plain values (scripts read them)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from cortex.core.code.pairing import IndexReport
from cortex.core.lifecycle.consolidate import ConsolidationPlan, Contradiction, Merge
from cortex.core.lifecycle.decay import Change, Transition
from cortex.core.model import (
    Candidate,
    Edge,
    EdgeStatus,
    EdgeType,
    Hit,
    Layer,
    MemoryType,
    Scope,
    SearchMode,
    Source,
    Status,
)
from cortex.core.output import documents
from cortex.core.recall.decide import RecallResult
from cortex.core.serial import edge_to_dict, memory_to_dict
from cortex.core.write.apply import WriteEffect, WriteOutcome, new_memory

T0 = datetime(2026, 3, 1, tzinfo=UTC)
MEMORY = new_memory(
    "m1", Candidate("We use WAL", MemoryType.DECISION, Layer.USER), Scope.PROJECT, Source(), T0
)
OTHER = replace(MEMORY, id="m2")
EDGE = Edge("m1", "m2", EdgeType.RELATES_TO, 0.5, EdgeStatus.SUGGESTED, T0)


def roundtrips(doc: object) -> None:
    assert json.loads(json.dumps(doc)) == doc  # plain JSON values only, no enums left behind


def test_write_outcome() -> None:
    doc = documents.outcome_to_dict(
        WriteOutcome(WriteEffect.REINFORCED, MEMORY, Scope.GLOBAL, "why", 2, True)
    )
    assert list(doc) == ["action", "reason", "scope", "edges", "embedded", "note", "memory"]
    assert (doc["action"], doc["scope"], doc["memory"]) == ("reinforced", "global", memory_to_dict(MEMORY))
    assert type(doc["action"]) is str
    roundtrips(doc)


def test_recall_result() -> None:
    hit = Hit(MEMORY, 0.5, Scope.PROJECT, {"bm25": 1.0}, (OTHER,), ("m3",))
    doc = documents.recall_to_dict(
        RecallResult("q", (hit,), SearchMode.KEYWORD_ONLY, ("n",), False, "", "plain", 1, {"total": 1.0})
    )
    assert list(doc) == [
        "query",
        "mode",
        "notes",
        "abstained",
        "reason",
        "intent",
        "dropped_by_budget",
        "team",
        "hits",
    ]
    assert doc["mode"] == "keyword-only" and type(doc["mode"]) is str
    assert doc["team"] == "off"  # no team store configured
    (h,) = doc["hits"]
    assert list(h) == ["score", "store", "signals", "memory", "code", "see_also", "stale"]
    assert h["stale"] is None  # fresh; else what its code anchors say ("may be stale: ...")
    assert h["store"] == "project" and h["code"] == [memory_to_dict(OTHER)] and h["see_also"] == ["m3"]
    roundtrips(doc)


def test_share() -> None:
    doc = documents.share_to_dict(
        MEMORY,
        True,
        True,
        error="the team store is unreachable",
        pending=2,
        pushed=(),
        withdrawn=(),
        skipped=[("m9", "nothing left after redaction")],
        contradictions=0,
    )
    assert doc["memory"] == memory_to_dict(MEMORY) and doc["shared"] is True
    assert doc["delivered"] is False and doc["pending"] == 2
    assert doc["error"] == "the team store is unreachable"
    assert doc["skipped"] == [{"id": "m9", "why": "nothing left after redaction"}]
    roundtrips(doc)
    done = documents.share_to_dict(
        MEMORY, False, False, error="", pending=0, pushed=(), withdrawn=["m1"], skipped=(), contradictions=0
    )
    assert done["delivered"] is True and done["error"] is None and done["withdrawn"] == ["m1"]


def test_memory_view() -> None:
    doc = documents.memory_view_to_dict(MEMORY, Scope.PROJECT, [EDGE])
    assert doc == {"memory": memory_to_dict(MEMORY), "store": "project", "edges": [edge_to_dict(EDGE)]}


def test_lifecycle_tick() -> None:
    after = replace(MEMORY, confidence=0.2, status=Status.ARCHIVED)
    change = Change(Transition.ARCHIVE, MEMORY, after, "idle")
    doc = documents.tick_to_dict(True, {"archive": 1}, [(Scope.GLOBAL, change)])
    assert doc["dry_run"] is True and doc["counts"] == {"archive": 1}
    assert doc["changes"] == [
        {
            "store": "global",
            "id": "m1",
            "type": "decision",
            "transition": "archive",
            "confidence": [MEMORY.confidence, 0.2],
            "status": ["active", "archived"],
            "reason": "idle",
        }
    ]


def test_consolidation_and_review() -> None:
    merge = Merge(MEMORY, MEMORY, (OTHER,), (OTHER,), (), 0.9)
    unapplied = replace(merge, similarity=0.8)
    plan = ConsolidationPlan((merge, unapplied), (Contradiction(MEMORY, OTHER, 0.6),), (EDGE,), (EDGE,))
    doc = documents.consolidation_to_dict(False, [(Scope.PROJECT, {"name": "cp1"}, plan, (merge,))])
    (store,) = doc["stores"]
    assert list(doc) == ["dry_run", "stores"]
    assert list(store) == ["store", "checkpoint", "merges", "contradictions", "suggested"]
    assert store["checkpoint"] == {"name": "cp1"}
    assert store["merges"] == [
        {"keeper": "m1", "absorbed": ["m2"], "similarity": 0.9, "applied": True},
        {"keeper": "m1", "absorbed": ["m2"], "similarity": 0.8, "applied": False},
    ]
    assert store["contradictions"] == [{"newer": "m1", "older": "m2", "overlap": 0.6}]
    assert store["suggested"] == ["m1:m2:relates_to"]
    review = documents.review_to_dict([EDGE], [], ["x:y"])
    assert review == {"promoted": ["m1:m2:relates_to"], "dropped": [], "unknown": ["x:y"]}


def test_restore_and_rollback() -> None:
    restore = documents.recovery_to_dict([{"name": "a"}], True, [{"name": "b"}])
    assert list(restore) == ["restored", "exact", "safety"]
    rollback = documents.recovery_to_dict([{"name": "a"}], False, [], {"a": "d1"})
    assert list(rollback) == ["restored", "digests", "exact", "safety"]
    assert rollback["digests"] == {"a": "d1"} and rollback["exact"] is False


def test_index_report() -> None:
    report = IndexReport(files=1, stored=["a.py:f"], skipped=[("b.bin", "binary")], note="n")
    doc = documents.index_report_to_dict(report)
    assert list(doc) == ["files", "stored", "updated", "unchanged", "removed", "skipped", "embedded", "note"]
    assert doc["skipped"] == [{"path": "b.bin", "why": "binary"}] and doc["stored"] == ["a.py:f"]


def test_briefing() -> None:
    doc = documents.briefing_to_dict(
        "full",
        "text",
        "cache",
        branch="main",
        head=None,
        rendered_at="2026-03-01T00:00:00Z",
        rules_file_digest="d",
        meta={"shown": 3},
    )
    assert list(doc) == [
        "part",
        "text",
        "origin",
        "branch",
        "head",
        "rendered_at",
        "rules_file_digest",
        "shown",
    ]


@dataclass(slots=True)
class Report:
    scope: Scope
    count: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return True


def test_flat_reports_keep_field_order_with_enums_as_values() -> None:
    report = Report(Scope.GLOBAL, 3, ["n"])
    assert documents.fields_to_dict(report) == {"scope": "global", "count": 3, "notes": ["n"]}
    extra = documents.fields_to_dict(report, same=report.same, count=4)
    assert list(extra) == ["scope", "count", "notes", "same"] and extra["count"] == 4
    # what the import and rebuild commands printed before: every slot, then the scope's value
    assert documents.fields_to_dict(report) == {k: getattr(report, k) for k in report.__slots__} | {
        "scope": report.scope.value
    }
