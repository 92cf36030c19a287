"""The shared write path: extraction candidates, their source and scope, and edge hints."""

from __future__ import annotations

from cortex.app import Cortex
from cortex.capture import manual
from cortex.capture import write as writer
from cortex.core.model import Candidate, EdgeStatus, EdgeType, Layer, MemoryType, Scope, Source


def test_candidates_from_extraction_get_their_source_and_files(fcx: Cortex) -> None:
    cand = Candidate(
        "The worker retries failed jobs three times", MemoryType.PATTERN, Layer.LEXICAL, files=("src/w.py",)
    )
    out = writer.write_candidate(fcx, cand, Source("sess-9", 42, "main", "abc", ("README.md",)))
    assert out.memory.source.session_id == "sess-9"
    assert out.memory.source.files == ("README.md", "src/w.py")


def test_confident_global_candidates_go_global(fcx: Cortex) -> None:
    cand = Candidate(
        "Always answer in British English", MemoryType.PREFERENCE, Layer.LLM, global_confidence=0.9
    )
    assert writer.write_candidate(fcx, cand, Source()).scope == Scope.GLOBAL


def test_edge_hints_become_suggested_links_and_never_supersedes(fcx: Cortex) -> None:
    queue = manual.remember(fcx, "We chose Postgres advisory locks for the job queue", mem_type="decision")
    retry = manual.remember(fcx, "The worker retries failed jobs three times", mem_type="pattern")
    cand = Candidate(
        "Job handlers must be idempotent because a retried job can run twice",
        MemoryType.GOTCHA,
        Layer.LLM,
        edge_hints=(
            ("Postgres advisory locks for the job queue", EdgeType.RELATES_TO),
            (retry.memory.id, EdgeType.SUPERSEDES),
            ("bananas ripen faster in paper bags", EdgeType.RELATES_TO),
        ),
    )
    out = writer.write_candidate(fcx, cand, Source())
    edges = fcx.write_store(Scope.PROJECT).edges([out.memory.id])
    hinted = [(e.target, e.type, e.status) for e in edges if e.source == out.memory.id]
    assert (queue.memory.id, EdgeType.RELATES_TO, EdgeStatus.SUGGESTED) in hinted
    assert all(e.type != EdgeType.SUPERSEDES for e in edges)
    assert len([h for h in hinted if h[2] == EdgeStatus.SUGGESTED]) == 1
