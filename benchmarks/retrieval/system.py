"""The contract between the harness and a retrieval system, and the registry that picks one by name.

A system sees only opaque keys, texts and times: the harness keeps the provenance map (key ->
evaluation units) and never hands over dataset ids, labels, answers or evidence.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class IngestItem:
    """One memory to write: an opaque key, its text and its time (the session date)."""

    key: str
    text: str
    time: datetime


@runtime_checkable
class RetrievalSystem(Protocol):
    """What the runner drives. One store at a time; `reset` starts a fresh, empty one.

    `search` returns up to k keys, best first. A key is one given to `ingest`; a memory that a
    system built from several items may be reported as their keys joined by "+". Repeating a key
    is allowed (several memories from one item); the harness counts distinct units.
    """

    name: str

    def describe(self) -> dict[str, str]:
        """Result-line components: at least `embedder`, `reranker`, `llm` ("none" if unused)."""
        ...

    def reset(self) -> None:
        """Drop everything and start a fresh, empty store."""
        ...

    def ingest(self, items: Sequence[IngestItem]) -> None:
        """Write items, given in chronological order, through the system's real write path."""
        ...

    def search(self, query: str, now: datetime, k: int) -> list[str]:
        """The ranked keys of the best k memories for `query`, as of `now`."""
        ...

    def close(self) -> None:
        """Release the store and any temporary files."""
        ...


# name -> "module:Class"; imported only when picked so the BM25 path never loads cortex's models.
SYSTEMS: dict[str, str] = {
    "bm25": "benchmarks.retrieval.bm25:BM25System",
    "cortex": "benchmarks.retrieval.cortex_system:CortexSystem",
}
BASELINE = "bm25"


class SystemUnavailable(RuntimeError):
    """A registered system cannot be loaded (its adapter module is missing or broken)."""


def system_class(name: str) -> type[RetrievalSystem]:
    """The class registered as `name`, imported on demand; a missing adapter is a clear error."""
    if name not in SYSTEMS:
        raise SystemUnavailable(f"unknown system {name!r}; choose from {', '.join(SYSTEMS)}")
    module_name, _, attr = SYSTEMS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        path = module_name.replace(".", "/") + ".py"
        raise SystemUnavailable(
            f"system {name!r} is not available yet: {path} does not exist "
            f"(it must define {attr}, a RetrievalSystem); run with --system {BASELINE}"
        ) from exc
    cls = getattr(module, attr, None)
    if cls is None:
        raise SystemUnavailable(f"{module_name} does not define {attr}")
    return cls  # type: ignore[no-any-return]


def load_system(name: str) -> RetrievalSystem:
    """A fresh instance of the system registered as `name`."""
    return system_class(name)()
