"""The JSON documents the `--json` options print, in one place. Pure.

Their keys and values are an interface (scripts and the tests read them): change one only on
purpose. Memories and edges inside them use the records of `cortex.core.serial`; reports that
hold adapter objects (checkpoints) come in as the dicts those write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from enum import Enum
from typing import TYPE_CHECKING, Any

from cortex.core.serial import edge_to_dict, memory_to_dict

if TYPE_CHECKING:  # annotations only: every CLI command imports this module, keep it cheap
    from cortex.core.code.pairing import IndexReport
    from cortex.core.lifecycle.consolidate import ConsolidationPlan, Merge
    from cortex.core.lifecycle.decay import Change
    from cortex.core.lifecycle.usage import UsageSummary
    from cortex.core.model import Edge, Memory, Scope
    from cortex.core.projection.markdown import Entry
    from cortex.core.projection.plan import ImportPlan
    from cortex.core.recall.decide import RecallResult
    from cortex.core.write.apply import WriteOutcome


def outcome_to_dict(o: WriteOutcome) -> dict[str, Any]:
    """A write outcome (`cortex remember --json`)."""
    return {
        "action": o.action.value,
        "reason": o.reason,
        "scope": o.scope.value,
        "edges": o.edges,
        "embedded": o.embedded,
        "note": o.note,
        "memory": memory_to_dict(o.memory),
    }


def supersede_to_dict(new: Memory, old: Memory) -> dict[str, Any]:
    """A supersede: the new memory, and the old one as it is now (`cortex supersede --json`)."""
    return {"new": memory_to_dict(new), "old": memory_to_dict(old)}


def forget_to_dict(matched: Iterable[Memory], archived: Iterable[Memory]) -> dict[str, Any]:
    """What `cortex forget --json` matched (ids) and archived (the memories as they are now)."""
    return {"matched": [m.id for m in matched], "archived": [memory_to_dict(m) for m in archived]}


def projection_file_to_dict(
    path: str, changed: bool, entries: Sequence[tuple[str, Memory]]
) -> dict[str, Any]:
    """What `cortex project-file --json` wrote: the file, whether its text changed, and its
    entries in file order: the entry id, the memory now behind it (they differ once an edit
    superseded the entry's first memory) and its type."""
    return {
        "path": path,
        "changed": changed,
        "entries": [{"id": key, "memory": m.id, "type": m.type.value} for key, m in entries],
    }


def projection_import_to_dict(
    path: str,
    plan: ImportPlan,
    dry_run: bool,
    added: Sequence[tuple[Entry, WriteOutcome]] = (),
    superseded: Sequence[tuple[Memory, Entry, Memory]] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """What `cortex import-projection --json` changed (with --dry-run: would change). Entries are
    named by their line in the file; `added[].id` and `superseded[].new` are null in a dry run."""
    outcome = {e.line: o for e, o in added}
    new = {e.line: n for _, e, n in superseded}
    return {
        "path": path,
        "dry_run": dry_run,
        "unchanged": plan.unchanged,
        "added": [
            {
                "line": e.line,
                "type": e.type.value,
                "id": outcome[e.line].memory.id if e.line in outcome else None,
                "action": outcome[e.line].action.value if e.line in outcome else None,
                "reason": outcome[e.line].reason if e.line in outcome else None,
            }
            for e in plan.add
        ],
        "superseded": [
            {"line": e.line, "old": m.id, "new": new[e.line].id if e.line in new else None}
            for m, e in plan.edit
        ],
        "forgotten": [m.id for m in plan.forget],
        "retyped": [
            {"line": e.line, "id": m.id, "from": m.type.value, "to": e.type.value} for m, e in plan.retype
        ],
        "notes": list(notes),
    }


def backfill_to_dict(embedded: int, embedder: str, onnx_export: str | None) -> dict[str, Any]:
    """What `cortex backfill --json` embedded, with which embedder, and the ONNX export's path."""
    return {"embedded": embedded, "embedder": embedder, "onnx_export": onnx_export}


def export_to_dict(path: str, scope: str, stores: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What `cortex export -o FILE --json` wrote: the file and, per store, its counts and digest."""
    keys = ("memories", "edges", "journal", "digest")
    return {
        "path": path,
        "scope": scope,
        "stores": {name: {k: info[k] for k in keys if k in info} for name, info in stores.items()},
    }


def doctor_to_list(checks: Iterable[Any], settings: Iterable[tuple[str, Any, str]]) -> list[dict[str, Any]]:
    """`cortex doctor --json`: one object per check, in order; the `settings` check also lists
    every setting as {name, value, source} (source: `default`, `FILE:LINE` or a variable), and
    the `extractor` check says which LLM extractor runs: `extractor` (api, claude-cli or off: the
    one that runs, or the one asked for that cannot) and `active` (true when LLM extraction runs)."""
    rows = [{"name": name, "value": _plain(value), "source": source} for name, value, source in settings]
    out = [fields_to_dict(c) for c in checks]
    return [c | {"settings": rows} if c["name"] == "settings" else c for c in out]


def scrub_to_dict(reports: Iterable[Any]) -> dict[str, Any]:
    """`cortex scrub --json`: per store, how many memories it holds, which it changed (id and
    fields), journal records redacted in place and any still holding redactable text, whether
    the keyword index was rebuilt and the file compacted."""
    stores = [
        fields_to_dict(r, changed=[{"id": c.id, "fields": list(c.fields)} for c in r.changed])
        for r in reports
    ]
    return {"stores": stores, "changed": sum(len(r.changed) for r in reports)}


def recall_to_dict(r: RecallResult) -> dict[str, Any]:
    """A recall with its hits (`cortex recall --json`)."""
    return {
        "query": r.query,
        "mode": r.mode.value,
        "notes": list(r.notes),
        "abstained": r.abstained,
        "reason": r.reason,
        "intent": r.intent,
        "dropped_by_budget": r.dropped_by_budget,
        "team": r.team,
        "hits": [
            {
                "score": h.score,
                "store": h.store.value,
                "signals": h.signals,
                "memory": memory_to_dict(h.memory),
                "code": [memory_to_dict(c) for c in h.code],
                "see_also": list(h.see_also),
                "stale": r.stale.get(h.memory.id),  # "may be stale: ..." or "stale: ...", else null
            }
            for h in r.hits
        ],
    }


def share_to_dict(
    memory: Memory,
    shared: bool,
    changed: bool,
    *,
    error: str,
    pending: int,
    pushed: Sequence[str],
    withdrawn: Sequence[str],
    skipped: Sequence[tuple[str, str]],
    contradictions: int,
) -> dict[str, Any]:
    """A share or unshare (`cortex share/unshare --json`): the project memory as it is now, and
    the push that followed (`delivered` false: pending, the worker pushes it later)."""
    return {
        "memory": memory_to_dict(memory),
        "shared": shared,
        "changed": changed,
        "delivered": not error and pending == 0,
        "pending": pending,
        "error": error or None,
        "pushed": list(pushed),
        "withdrawn": list(withdrawn),
        "skipped": [{"id": i, "why": why} for i, why in skipped],
        "contradictions": contradictions,
    }


def memory_view_to_dict(memory: Memory, store: Scope, edges: Iterable[Edge]) -> dict[str, Any]:
    """One memory with the store it is in and its edges (`cortex get --json`)."""
    return {"memory": memory_to_dict(memory), "store": store.value, "edges": [edge_to_dict(e) for e in edges]}


def tick_to_dict(
    dry_run: bool, counts: Mapping[str, int], changes: Iterable[tuple[Scope, Change]]
) -> dict[str, Any]:
    """A lifecycle tick's changes per store (`cortex lifecycle --json`)."""
    return {
        "dry_run": dry_run,
        "counts": counts,
        "changes": [
            {
                "store": scope.value,
                "id": c.before.id,
                "type": c.before.type.value,
                "transition": c.transition.value,
                "confidence": [c.before.confidence, c.after.confidence],
                "status": [c.before.status.value, c.after.status.value],
                "reason": c.reason,
            }
            for scope, c in changes
        ],
    }


def consolidation_to_dict(
    dry_run: bool,
    stores: Iterable[tuple[Scope, Mapping[str, Any] | None, ConsolidationPlan, Sequence[Merge]]],
) -> dict[str, Any]:
    """Consolidation per store, as (scope, checkpoint dict, plan, merges applied) (`--json`)."""
    return {
        "dry_run": dry_run,
        "stores": [
            {
                "store": scope.value,
                "checkpoint": checkpoint,
                "merges": [
                    {
                        "keeper": m.keeper.id,
                        "absorbed": [a.id for a in m.absorbed],
                        "similarity": m.similarity,
                        "applied": m in applied,
                    }
                    for m in plan.merges
                ],
                "contradictions": [
                    {"newer": c.newer.id, "older": c.older.id, "overlap": c.overlap}
                    for c in plan.contradictions
                ],
                "suggested": [_edge_ref(e) for e in plan.suggested],
            }
            for scope, checkpoint, plan, applied in stores
        ],
    }


def review_to_dict(
    promoted: Iterable[Edge], dropped: Iterable[Edge], unknown: Sequence[str]
) -> dict[str, Any]:
    """The suggested edges a review promoted and dropped, and the references that matched none."""
    return {
        "promoted": [_edge_ref(e) for e in promoted],
        "dropped": [_edge_ref(e) for e in dropped],
        "unknown": unknown,
    }


def recovery_to_dict(
    restored: Iterable[Mapping[str, Any]],
    exact: bool,
    safety: Iterable[Mapping[str, Any]],
    digests: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A restore or rollback from checkpoints (given as their sidecar dicts); `digests` only
    for a rollback, which proves each state it brought back."""
    out: dict[str, Any] = {"restored": list(restored)}
    if digests is not None:
        out["digests"] = digests
    return out | {"exact": exact, "safety": list(safety)}


def index_report_to_dict(r: IndexReport) -> dict[str, Any]:
    """What `cortex index-code` did (`--json`)."""
    return fields_to_dict(r, skipped=[{"path": p, "why": w} for p, w in r.skipped])


def briefing_to_dict(
    part: str,
    text: str,
    origin: str,
    *,
    branch: str | None,
    head: str | None,
    rendered_at: str,
    rules_file_digest: str | None,
    meta: Mapping[str, Any],
) -> dict[str, Any]:
    """One part of a briefing and what went into it (`cortex brief --json`)."""
    return {
        "part": part,
        "text": text,
        "origin": origin,
        "branch": branch,
        "head": head,
        "rendered_at": rendered_at,
        "rules_file_digest": rules_file_digest,
        **meta,
    }


def fields_to_dict(record: Any, **extra: Any) -> dict[str, Any]:
    """A flat report dataclass: every field in order (enums as their values), then `extra`
    (which replaces a field of the same name in place)."""
    out = {f.name: _plain(getattr(record, f.name)) for f in fields(record)}
    return out | extra


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _edge_ref(e: Edge) -> str:
    from cortex.core.graph import edge_ref

    return edge_ref(e)


def audit_to_dict(reports: Iterable[Any]) -> dict[str, Any]:
    """`cortex audit --json`: per store, integrity (problems, keyword index, missing vectors per
    index, dangling edges, digest and journal replay), content health (counts, rates and ids)
    and, with --fix, what was repaired and the checkpoint taken first."""
    stores = []
    for r in reports:
        h = r.health
        stores.append(
            {
                "scope": r.scope.value,
                "path": r.path,
                "clean": r.clean,
                "integrity": {
                    "ok": not r.problems,
                    "problems": r.problems,
                    "text_index_ok": r.text_index_ok,
                    "missing_vectors": {k: list(v) for k, v in sorted(r.missing_vectors.items())},
                    "dangling_edges": [{"source": s, "target": t, "type": e} for s, t, e in r.dangling_edges],
                    "digest": r.digest,
                    "journal_replay": r.replayed,
                    "journal_replay_ok": r.replay_ok,
                },
                "health": {
                    "memories": h.memories,
                    "duplicate_pairs": [list(p) for p in h.duplicates],
                    "duplicate_rate": h.rate(len(h.duplicate_ids)),
                    "junk": dict(sorted(h.junk.items())),
                    "junk_rate": h.rate(len(h.junk)),
                    "secrets": list(h.secrets),
                    "secret_rate": h.rate(len(h.secrets)),
                    "never_used": len(h.never_used),
                    "never_used_rate": h.rate(len(h.never_used)),
                    "stale": dict(h.stale),
                    "stale_rate": h.rate(len(h.stale)),
                },
                "fixed": list(r.fixed),
                "notes": list(r.notes),
                "checkpoint": r.checkpoint,
            }
        )
    return {"clean": all(s["clean"] for s in stores), "stores": stores}


def usage_to_dict(s: UsageSummary, never_used: int, active: int) -> dict[str, Any]:
    """`cortex stats --usage`: verdicts summed over sessions, per memory, and what is demoted."""
    kinds = ("used", "unused", "contradicted")
    per = {mid: dict(zip(kinds, n, strict=True)) for mid, n in sorted(s.by_memory.items())}
    demoted = {
        mid: {"priority_before": d.base, "ignored_sessions": d.ignored, "priority": d.current}
        for mid, d in sorted(s.demoted.items())
    }
    return {
        **{k: getattr(s, k) for k in ("sessions", "judged", "briefed", "recalled", "used", "unused")},
        "contradicted": s.contradicted,
        "briefed_use_rate": s.use_rate,
        "never_used": never_used,
        "never_used_rate": round(never_used / active, 4) if active else 0.0,
        "memories": per,
        "demoted": demoted,
    }
