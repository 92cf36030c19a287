"""Memories and edges to and from plain JSON-able dicts (journal, export, --json). Pure."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cortex.core.model import (
    Edge,
    EdgeStatus,
    EdgeType,
    Memory,
    MemoryType,
    Scope,
    Source,
    Status,
)

# Fields that are derived (rebuilt from edges/indexes) and so are not part of the logical state.
DERIVED_FIELDS = frozenset({"centrality"})


def format_time(value: datetime | None) -> str | None:
    """UTC ISO-8601 with microseconds and a Z, so text order is time order."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> datetime | None:
    """Inverse of `format_time`; naive inputs are taken as UTC."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def memory_to_dict(m: Memory) -> dict[str, Any]:
    """Every field of a memory as JSON-able values (times as ISO text, tuples as lists)."""
    return {
        "id": m.id,
        "content": m.content,
        "summary": m.summary,
        "type": m.type.value,
        "scope": m.scope.value,
        "confidence": m.confidence,
        "priority": m.priority,
        "pinned": m.pinned,
        "source": {
            "session_id": m.source.session_id,
            "transcript_offset": m.source.transcript_offset,
            "branch": m.source.branch,
            "commit": m.source.commit,
            "files": list(m.source.files),
            "said_at": format_time(m.source.said_at),
            "record": m.source.record,
        },
        "tags": list(m.tags),
        "access_count": m.access_count,
        "last_accessed": format_time(m.last_accessed),
        "created": format_time(m.created),
        "updated": format_time(m.updated),
        "status": m.status.value,
        "content_hash": m.content_hash,
        "low_since": format_time(m.low_since),
        "status_changed": format_time(m.status_changed),
        "centrality": m.centrality,
    }


def memory_from_dict(d: dict[str, Any]) -> Memory:
    """Inverse of `memory_to_dict`; raises KeyError/ValueError on malformed input."""
    src = d.get("source") or {}
    created = parse_time(d["created"])
    updated = parse_time(d.get("updated")) or created
    if created is None or updated is None:
        raise ValueError("memory without a creation time")
    return Memory(
        id=str(d["id"]),
        content=str(d["content"]),
        summary=str(d.get("summary", "")),
        type=MemoryType(d["type"]),
        scope=Scope(d.get("scope", "project")),
        confidence=float(d.get("confidence", 0.7)),
        priority=int(d.get("priority", 5)),
        pinned=bool(d.get("pinned", False)),
        source=Source(
            session_id=src.get("session_id"),
            transcript_offset=src.get("transcript_offset"),
            branch=src.get("branch"),
            commit=src.get("commit"),
            files=tuple(src.get("files") or ()),
            said_at=parse_time(src.get("said_at")),
            record=src.get("record"),
        ),
        tags=tuple(d.get("tags") or ()),
        access_count=int(d.get("access_count", 0)),
        last_accessed=parse_time(d.get("last_accessed")),
        created=created,
        updated=updated,
        status=Status(d.get("status", "active")),
        content_hash=str(d["content_hash"]),
        low_since=parse_time(d.get("low_since")),
        status_changed=parse_time(d.get("status_changed")),
        centrality=float(d.get("centrality", 0.0)),
    )


def edge_to_dict(e: Edge) -> dict[str, Any]:
    """An edge as JSON-able values."""
    return {
        "source": e.source,
        "target": e.target,
        "type": e.type.value,
        "strength": e.strength,
        "status": e.status.value,
        "created": format_time(e.created),
    }


def edge_from_dict(d: dict[str, Any]) -> Edge:
    """Inverse of `edge_to_dict`."""
    return Edge(
        source=str(d["source"]),
        target=str(d["target"]),
        type=EdgeType(d["type"]),
        strength=float(d.get("strength", 0.5)),
        status=EdgeStatus(d.get("status", "active")),
        created=parse_time(d.get("created")),
    )


def logical_dict(m: Memory) -> dict[str, Any]:
    """A memory's logical state: everything but the derived fields."""
    return {k: v for k, v in memory_to_dict(m).items() if k not in DERIVED_FIELDS}


def dumps(obj: Any) -> str:
    """Canonical compact JSON (sorted keys), so equal states serialise identically."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
