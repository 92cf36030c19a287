"""The real-session dataset: one folder per session with transcript.jsonl, meta.json, facts.json.

Read from `../shared/benchmarks/sessions` (next to this repository) or any folder given with
`--sessions`; nothing of it is copied into the repository.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSIONS_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "benchmarks" / "sessions"
# Fact kinds whose answer belongs in the next session's briefing.
BRIEFED_KINDS = ("decision", "convention", "gotcha", "architecture")


@dataclass(frozen=True, slots=True)
class Fact:
    """One key fact as of the end of the session, and how to tell that a text states it."""

    id: str
    kind: str
    fact: str
    question: str
    answer_terms: tuple[tuple[str, ...], ...]
    stale_claims: tuple[str, ...] = ()

    @property
    def briefed_kind(self) -> bool:
        return self.kind in BRIEFED_KINDS


@dataclass(frozen=True, slots=True)
class Session:
    """A session folder: its transcript, what it was (meta) and its facts."""

    name: str
    folder: Path
    meta: dict[str, Any]
    facts: tuple[Fact, ...]

    @property
    def transcript(self) -> Path:
        return self.folder / "transcript.jsonl"

    @property
    def original_cwd(self) -> str:
        return str(self.meta.get("original_cwd") or "")

    @property
    def branch(self) -> str | None:
        """The session's git branch; None when meta gives none or only `HEAD`."""
        branch = str(self.meta.get("git_branch") or "").strip()
        return branch if branch and branch != "HEAD" else None


def read_fact(raw: dict[str, Any]) -> Fact:
    groups = tuple(tuple(str(alt) for alt in group) for group in raw.get("answer_terms") or ())
    return Fact(
        id=str(raw["id"]),
        kind=str(raw.get("kind") or "fact"),
        fact=str(raw.get("fact") or ""),
        question=str(raw.get("question") or ""),
        answer_terms=groups,
        stale_claims=tuple(str(c) for c in raw.get("stale_claims") or ()),
    )


def read_session(folder: Path) -> Session:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    facts = json.loads((folder / "facts.json").read_text(encoding="utf-8"))
    return Session(folder.name, folder, meta, tuple(read_fact(f) for f in facts))


def list_sessions(folder: Path, only: str | None = None) -> list[Session]:
    """Every session folder under `folder` (sorted by name), or just the one named `only`."""
    folders = sorted(p for p in folder.iterdir() if (p / "facts.json").is_file())
    if only is not None:
        folders = [p for p in folders if p.name == only]
        if not folders:
            raise SystemExit(f"no session named {only!r} under {folder}")
    return [read_session(p) for p in folders]


def read_records(path: Path) -> list[dict[str, Any]]:
    """The transcript's JSON records (lines that are not JSON objects are skipped)."""
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records
