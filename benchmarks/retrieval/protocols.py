"""The named protocols of PROTOCOLS.md: units, metrics, question sets, headline and reference. Pure.

`depth` is how many distinct units are ranked per question: the deepest k any metric needs. MRR
without a cut-off is therefore the reciprocal rank within the top `depth` units.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.retrieval.datasets import Episode
from benchmarks.retrieval.locomo import plan_locomo_episodes
from benchmarks.retrieval.longmemeval import (
    NON_ABSTENTION_SET,
    STRICT_SET,
    plan_lme_official_episodes,
    plan_lme_session_full_episodes,
)
from benchmarks.retrieval.metrics import max_k


def _at(kinds: Sequence[str], ks: Sequence[int]) -> tuple[str, ...]:
    return tuple(f"{kind}@{k}" for kind in kinds for k in ks)


@dataclass(frozen=True, slots=True)
class Protocol:
    """One protocol at one level; `key` names its output files and report section."""

    key: str
    title: str
    dataset: str
    level: str
    metrics: tuple[str, ...]
    sets: tuple[str, ...]
    headline: tuple[str, ...]
    reference: str
    plan: Callable[[Any], list[Episode]]

    @property
    def depth(self) -> int:
        """Distinct units ranked per question."""
        return max_k(self.metrics)

    @property
    def ks(self) -> tuple[int, ...]:
        """The cut-offs used by the metrics, ascending."""
        return tuple(sorted({int(m.split("@")[1]) for m in self.metrics if "@" in m}))


_LOCOMO_KS = (5, 10, 25, 50)
_LME_KS = (1, 3, 5, 10, 30, 50)

PROTOCOLS: dict[str, Protocol] = {
    p.key: p
    for p in (
        Protocol(
            key="locomo-turn",
            title="LOCOMO-TURN (one memory per dialog turn)",
            dataset="locomo",
            level="turn",
            metrics=_at(("recall", "recall_all", "recall_any"), _LOCOMO_KS),
            sets=("all",),
            headline=_at(("recall",), _LOCOMO_KS),
            reference="plain BM25, dev slice (n = 1,439): recall@5/10/25/50 = 0.451 / 0.530 / 0.619 / 0.692",
            plan=lambda raw: plan_locomo_episodes(raw, "turn"),
        ),
        Protocol(
            key="locomo-session",
            title="LOCOMO-SESSION (one memory per session)",
            dataset="locomo",
            level="session",
            metrics=("recall_any@5", "recall_any@10", "mrr@10"),
            sets=("all",),
            headline=("recall_any@5", "recall_any@10", "mrr@10"),
            reference="all 10 conversations: plain BM25 R@10 0.957 / MRR@10 0.758; "
            "one published system 0.942 / 0.828; random R@10 0.424",
            plan=lambda raw: plan_locomo_episodes(raw, "session"),
        ),
        Protocol(
            key="lme-official-session",
            title="LME-OFFICIAL, session level (user turns of a session)",
            dataset="longmemeval",
            level="session",
            metrics=(*_at(("recall_all", "ndcg", "recall_any"), _LME_KS), "mrr"),
            sets=(STRICT_SET, NON_ABSTENTION_SET),
            headline=("recall_all@5", "ndcg@5", "recall_all@10", "ndcg@10", "mrr"),
            reference="plain BM25, strict, dev slice (n = 82): recall_all@5 0.817, ndcg@5 0.860, "
            "recall_all@10 0.866, ndcg@10 0.873, MRR 0.883",
            plan=lambda raw: plan_lme_official_episodes(raw, "session"),
        ),
        Protocol(
            key="lme-official-turn",
            title="LME-OFFICIAL, turn level (one memory per user turn)",
            dataset="longmemeval",
            level="turn",
            metrics=(*_at(("recall_all", "ndcg", "recall_any"), _LME_KS), "mrr"),
            sets=(STRICT_SET, NON_ABSTENTION_SET),
            headline=("recall_all@5", "ndcg@5", "recall_all@10", "ndcg@10", "recall_all@50"),
            reference="plain BM25, strict, all 418 questions: recall_all@10 0.591, "
            "recall_any@5/10/50 0.715 / 0.804 / 0.933",
            plan=lambda raw: plan_lme_official_episodes(raw, "turn"),
        ),
        Protocol(
            key="lme-session-full",
            title="LME-SESSION-FULL (whole sessions, both roles; all questions)",
            dataset="longmemeval",
            level="session",
            metrics=("recall_any@5", "recall_any@10", "mrr@10"),
            sets=("all",),
            headline=("recall_any@5", "recall_any@10", "mrr@10"),
            reference="full set: plain BM25 R@10 0.982 / MRR@10 0.908; "
            "one published system 0.984 / 0.912 (nearly saturated: parity, not progress)",
            plan=plan_lme_session_full_episodes,
        ),
    )
}

CLI_PROTOCOLS = ("locomo-turn", "locomo-session", "lme-official", "lme-session-full")


def resolve_protocol(name: str, level: str | None) -> Protocol:
    """CLI protocol name (+ `--level` for lme-official, default session) -> its Protocol."""
    if name == "lme-official":
        return PROTOCOLS[f"lme-official-{level or 'session'}"]
    if name not in PROTOCOLS:
        raise ValueError(f"unknown protocol {name!r}; choose from {', '.join(CLI_PROTOCOLS)}")
    protocol = PROTOCOLS[name]
    if level is not None and level != protocol.level:
        raise ValueError(f"{name} is defined at {protocol.level} level only, not {level}")
    return protocol
