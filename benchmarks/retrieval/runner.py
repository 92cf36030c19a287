"""Drives one RetrievalSystem through a protocol's episodes and scores every question.

The harness keeps the provenance map (memory key -> units); the system sees only keys, texts and
times. Each search is timed on its own (wall clock around the call).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from benchmarks.retrieval.datasets import Episode, Question
from benchmarks.retrieval.metrics import (
    UnitRanking,
    gold_ranks_of,
    memories_for_k,
    rank_distinct_units,
    score_metrics,
)
from benchmarks.retrieval.protocols import Protocol
from benchmarks.retrieval.system import IngestItem, RetrievalSystem

# Widen a search (double k) at most this many times when memories repeat units.
MAX_WIDENINGS = 4


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """Everything scored for one question by one system (one JSONL line)."""

    system: str
    qid: str
    episode: str
    groups: tuple[str, ...]
    sets: tuple[str, ...]
    gold_ranks: dict[str, int | None]
    metrics: dict[str, float]
    memories_for_k: dict[int, int]
    n_memories: int
    search_calls: int
    latency_ms: float


@dataclass(slots=True)
class SystemRun:
    """One system's results on one protocol, plus its description and timings."""

    system: str
    describe: dict[str, str]
    results: list[QuestionResult] = field(default_factory=list)
    ingest_s: float = 0.0
    memories_ingested: int = 0
    wall_s: float = 0.0


class Progress:
    """A one-line stderr progress counter, silent when stderr is not a terminal."""

    def __init__(self, label: str, total: int, episodes: int = 0, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.total = total
        self.episodes = episodes
        self.episode = 0
        self.done = 0

    def _draw(self) -> None:
        if self.enabled:
            self.stream.write(
                f"\r{self.label}: store {self.episode}/{self.episodes}, {self.done}/{self.total} questions"
            )
            self.stream.flush()

    def next_episode(self) -> None:
        """A new store is being filled."""
        self.episode += 1
        self._draw()

    def advance(self) -> None:
        """One more question answered."""
        self.done += 1
        self._draw()

    def finish(self) -> None:
        """End the progress line."""
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def search_ranking(
    system: RetrievalSystem,
    question: Question,
    provenance: Mapping[str, Sequence[str]],
    depth: int,
) -> tuple[UnitRanking, int, float]:
    """Search until `depth` distinct units are ranked or the store runs out; (ranking, calls, ms).

    A system whose memories repeat units (chunks, facts) may need more than `depth` memories:
    k doubles while the answer came back full but short of distinct units.
    """
    k = depth
    elapsed = 0.0
    calls = 0
    for _ in range(MAX_WIDENINGS + 1):
        calls += 1
        started = time.perf_counter()
        keys = system.search(question.text, question.now, k)
        elapsed += time.perf_counter() - started
        unknown = [key for key in keys for part in key.split("+") if part not in provenance]
        if unknown:
            raise KeyError(f"{system.name} returned keys that were never ingested: {unknown[:3]}")
        ranking = rank_distinct_units(keys, provenance)
        if len(ranking.units) >= depth or len(keys) < k:
            break
        k *= 2
    return ranking, calls, elapsed * 1000.0


def score_question(
    question: Question, ranking: UnitRanking, protocol: Protocol
) -> tuple[dict[str, int | None], dict[str, float], dict[int, int]]:
    """Gold ranks (cut at the protocol depth), metric values and memories needed per k."""
    cut = UnitRanking(
        ranking.units[: protocol.depth],
        ranking.memory_positions[: protocol.depth],
        ranking.n_memories,
    )
    gold_ranks = gold_ranks_of(cut, question.gold)
    return (
        gold_ranks,
        score_metrics(protocol.metrics, gold_ranks),
        {k: memories_for_k(ranking, k) for k in protocol.ks},
    )


def run_system(
    protocol: Protocol,
    episodes: Sequence[Episode],
    system: RetrievalSystem,
    on_question: Callable[[], None] = lambda: None,
    on_episode: Callable[[], None] = lambda: None,
) -> SystemRun:
    """Fresh store per episode, chronological ingest, then every question of the episode."""
    run = SystemRun(system.name, dict(system.describe()))
    started = time.perf_counter()
    for episode in episodes:
        on_episode()
        system.reset()
        provenance = {doc.key: doc.units for doc in episode.docs}
        t0 = time.perf_counter()
        system.ingest([IngestItem(doc.key, doc.text, doc.time) for doc in episode.docs])
        run.ingest_s += time.perf_counter() - t0
        run.memories_ingested += len(episode.docs)
        for question in episode.questions:
            ranking, calls, ms = search_ranking(system, question, provenance, protocol.depth)
            gold_ranks, metrics, needed = score_question(question, ranking, protocol)
            run.results.append(
                QuestionResult(
                    system=system.name,
                    qid=question.qid,
                    episode=episode.eid,
                    groups=question.groups,
                    sets=question.sets,
                    gold_ranks=gold_ranks,
                    metrics=metrics,
                    memories_for_k=needed,
                    n_memories=ranking.n_memories,
                    search_calls=calls,
                    latency_ms=ms,
                )
            )
            on_question()
    run.wall_s = time.perf_counter() - started
    return run
