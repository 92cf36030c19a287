"""Per-session usage notes under `.memory/usage/`: what a session was briefed and recalled, and
what the worker judged so far. Stdlib only: the SessionStart and UserPromptSubmit hooks append
one line here, which is all they pay.

One JSON-lines file per session; each line adds ids to a kind (`briefed`, `recalled`, `used`,
`contradicted`, `captured`), counts `turns`, or adds the terms of a memory said so far
(`hits`). The worker folds the file, and deletes it once the session's verdict is in the
store's journal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

USAGE_DIR = "usage"
SUFFIX = ".jsonl"
MAX_FILE_BYTES = 2_000_000  # a runaway file is read only this far
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
KINDS = ("briefed", "recalled", "used", "contradicted", "captured")


def session_file(store_dir: Path, session_id: str) -> Path:
    """The notes file of a session (a readable, collision-proof name)."""
    readable = _UNSAFE.sub("-", session_id).strip("-.")[:60] or "session"
    key = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:8]
    return store_dir / USAGE_DIR / f"{readable}-{key}{SUFFIX}"


def append_note(
    store_dir: Path, session_id: str, kind: str, ids: Iterable[str] = (), **extra: object
) -> None:
    """Append one line; raises OSError (the hooks log and go on)."""
    path = session_file(store_dir, session_id)
    path.parent.mkdir(exist_ok=True)
    record = {"session": session_id, "kind": kind, "ids": sorted(set(ids)), **extra}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, separators=(",", ":")) + "\n")


class SessionNotes:
    """A session's notes folded: ids per kind, turns counted, and the file's age."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.ids: dict[str, set[str]] = {k: set() for k in KINDS}
        self.turns = 0
        self.modified = 0.0
        self.hits: dict[str, set[str]] = {}  # id -> its distinctive terms said so far

    def add(self, record: object) -> None:
        if not isinstance(record, dict):
            return
        kind, ids = record.get("kind"), record.get("ids")
        if kind in self.ids and isinstance(ids, list):
            self.ids[str(kind)].update(i for i in ids if isinstance(i, str))
        hits = record.get("hits")
        if isinstance(hits, dict):
            for mid, terms in hits.items():
                if isinstance(terms, list):
                    self.hits.setdefault(str(mid), set()).update(t for t in terms if isinstance(t, str))
        turns = record.get("turns")
        if isinstance(turns, int) and turns > 0:
            self.turns += turns


def read_notes(store_dir: Path, session_id: str) -> SessionNotes:
    """A session's notes (empty when it has none)."""
    return _read(session_file(store_dir, session_id), session_id)


def _read(path: Path, session_id: str) -> SessionNotes:
    notes = SessionNotes(session_id)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES)
        notes.modified = path.stat().st_mtime
    except OSError:
        return notes
    for raw in data.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(raw)
            if isinstance(record, dict) and isinstance(record.get("session"), str):
                notes.session_id = record["session"]
            notes.add(record)
    return notes


def idle_sessions(store_dir: Path, idle_s: float, now: float | None = None) -> list[SessionNotes]:
    """Sessions whose notes have not changed for `idle_s` seconds (their verdict is due)."""
    now = time.time() if now is None else now
    try:
        paths = sorted((store_dir / USAGE_DIR).glob(f"*{SUFFIX}"))
    except OSError:
        return []
    out = []
    for path in paths:
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime >= idle_s:
                out.append(_read(path, path.stem))
    return out


def remove_notes(store_dir: Path, session_id: str) -> None:
    """Delete a session's notes (after its verdict is journaled)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(session_file(store_dir, session_id))
