"""Values that cross every boundary in cortex: memories, edges, candidates, hits. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class MemoryType(StrEnum):
    ARCHITECTURE = "architecture"
    DECISION = "decision"
    PATTERN = "pattern"
    GOTCHA = "gotcha"
    CONTEXT = "context"
    PROGRESS = "progress"
    CODE_DESCRIPTION = "code_description"
    CODE = "code"
    PREFERENCE = "preference"


class Scope(StrEnum):
    PROJECT = "project"
    GLOBAL = "global"
    TEAM = "team"  # shared with the repository's other developers (a team store, when configured)


class ScopeFilter(StrEnum):
    """Which stores a read looks at: one scope, or both merged (`--scope` on the command line)."""

    ALL = "all"
    PROJECT = "project"
    GLOBAL = "global"

    def scopes(self) -> tuple[Scope, ...]:
        """The scopes this filter reads, project first."""
        if self is ScopeFilter.ALL:
            return (Scope.PROJECT, Scope.GLOBAL)
        return (Scope(self.value),)


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    PRUNED = "pruned"


class EdgeType(StrEnum):
    RELATES_TO = "relates_to"
    DERIVED_FROM = "derived_from"
    CONTRADICTS = "contradicts"
    EXEMPLIFIES = "exemplifies"
    REFINES = "refines"
    SUPERSEDES = "supersedes"
    SOURCE_OF = "source_of"


class EdgeStatus(StrEnum):
    ACTIVE = "active"
    SUGGESTED = "suggested"


class Layer(StrEnum):
    """Which extraction layer produced a candidate (best first)."""

    EXPLICIT = "explicit"
    STRUCTURAL = "structural"
    LEXICAL = "lexical"
    LLM = "llm"
    USER = "user"  # `cortex remember` / `/remember`


class SearchMode(StrEnum):
    """How a recall searched: by keywords and meaning, or by keywords alone (no vectors)."""

    HYBRID = "hybrid"
    KEYWORD_ONLY = "keyword-only"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a memory came from."""

    session_id: str | None = None
    transcript_offset: int | None = None
    branch: str | None = None
    commit: str | None = None
    files: tuple[str, ...] = ()
    said_at: datetime | None = None  # when the transcript says it (its record's timestamp)
    record: str | None = None  # the uuid of that record: kept when a resumed session copies it


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory. `centrality` is derived (rebuilt from edges), the rest is logical state."""

    id: str
    content: str
    summary: str
    type: MemoryType
    scope: Scope
    confidence: float
    priority: int
    pinned: bool
    source: Source
    tags: tuple[str, ...]
    access_count: int
    last_accessed: datetime | None
    created: datetime
    updated: datetime
    status: Status
    content_hash: str
    low_since: datetime | None = None  # first time confidence was seen below the archive floor
    status_changed: datetime | None = None  # when status last changed (archive/prune clocks)
    centrality: float = 0.0


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    type: EdgeType
    strength: float = 0.5
    status: EdgeStatus = EdgeStatus.ACTIVE
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory proposed by an extraction layer or a user, before the write gate."""

    content: str
    type: MemoryType
    layer: Layer
    summary: str = ""
    confidence: float = 0.7
    priority: int = 5
    scope: Scope = Scope.PROJECT
    global_confidence: float = 0.0  # how sure the extractor is that this is not project-specific
    tags: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    edge_hints: tuple[tuple[str, EdgeType], ...] = ()  # (text or id of a related memory, edge type)
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result with the signals that ranked it."""

    memory: Memory
    score: float
    store: Scope
    signals: dict[str, float] = field(default_factory=dict)
    code: tuple[Memory, ...] = ()  # raw code pulled through `source_of` edges
    see_also: tuple[str, ...] = ()  # ids of related memories (depth <= 2)


MEMORY_TYPES: tuple[str, ...] = tuple(t.value for t in MemoryType)
EDGE_TYPES: tuple[str, ...] = tuple(e.value for e in EdgeType)
