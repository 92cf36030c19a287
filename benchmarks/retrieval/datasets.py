"""Evaluation values shared by the dataset adapters, and reading a dataset file (plain or .xz JSON).

An adapter turns one dataset object into episodes: a fresh store's worth of memories (each with
its evaluation units, kept by the harness only) and the questions asked of it.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

SHARED_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "benchmarks"
DEFAULT_DATA = {
    "locomo": SHARED_DIR / "locomo" / "locomo_dev.json",
    "longmemeval": SHARED_DIR / "longmemeval" / "longmemeval_s_dev.json.xz",
}


@dataclass(frozen=True, slots=True)
class Doc:
    """One memory to ingest, with the evaluation units it stands for (never shown to the system)."""

    key: str
    text: str
    time: datetime
    units: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """A query, its "now", its gold units and the report rows and question sets it counts in."""

    qid: str
    text: str
    now: datetime
    gold: tuple[str, ...]
    groups: tuple[str, ...]
    sets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Episode:
    """One fresh store: memories in chronological order and the questions asked of them."""

    eid: str
    docs: tuple[Doc, ...]
    questions: tuple[Question, ...]


def plan_docs(entries: Iterable[tuple[str, datetime, tuple[str, ...]]]) -> tuple[Doc, ...]:
    """(text, time, units) in dataset order -> docs in chronological order with opaque keys.

    The sort is stable, so items that share a time keep their dataset order. Keys are `m1`, `m2`,
    ... in ingestion order and carry no dataset id. Empty texts are left out: no protocol can
    score them and a real write path may refuse them.
    """
    kept = [(text, time, units) for text, time, units in entries if text.strip()]
    kept.sort(key=lambda entry: entry[1])
    return tuple(Doc(f"m{i}", text, time, units) for i, (text, time, units) in enumerate(kept, start=1))


def read_dataset(path: Path) -> Any:
    """Parse a dataset file: JSON, or xz-compressed JSON when the name ends in `.xz`."""
    if not path.is_file():
        raise FileNotFoundError(
            f"dataset file not found: {path} (pass --data PATH, or check out ../shared next to the repo)"
        )
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def read_sha256(path: Path) -> str:
    """Hex sha256 of the file as stored (so results name the exact data they came from)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
