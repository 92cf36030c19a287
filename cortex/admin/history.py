"""`cortex history import`: capture the project's past Claude Code sessions from their transcripts.

Claude Code keeps each session's transcript under `~/.claude/projects/<folder>/` (for 30 days by
default); a new user's existing sessions are the best memory source there is. Each transcript
goes through the same capture the Stop hook's worker runs (`capture.session.capture_session`),
with the same per-session cursor: what a hook already captured is not read again, a second
import adds nothing, and a later Stop hook of a resumed session goes on from where the import
stopped. It runs under the worker lock, then embeds, runs the lifecycle tick and renders the
briefing, as the worker does after a batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.capture.queue import QueueEntry
from cortex.capture.session import SessionReport, capture_session, read_git_facts, total_actions
from cortex.core.model import Memory, Scope
from cortex.errors import CortexError
from cortex.paths import WORKER_LOCK, ensure_store_dir
from cortex.shell.claude_home import Transcript, claude_dir, list_transcripts, transcript_folders
from cortex.shell.files import LockBusy, file_lock

log = logging.getLogger("cortex.admin.history")

EVENT = "history-import"
LOCK_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class Planned:
    """One transcript and how much of it is new to the store."""

    transcript: Transcript
    new_bytes: int  # bytes past the session's cursor (the whole file when never captured)

    def to_dict(self) -> dict[str, Any]:
        t = self.transcript
        return {"session_id": t.session_id, "path": str(t.path), "bytes": t.size, "new_bytes": self.new_bytes}


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """The transcripts of this project found under Claude Code's config folder."""

    config_dir: Path
    folders: tuple[Path, ...]
    items: tuple[Planned, ...]
    skipped_before: int = 0  # transcripts older than --since

    @property
    def todo(self) -> list[Planned]:
        return [p for p in self.items if p.new_bytes > 0]


@dataclass
class HistoryReport:
    """What an import read and stored."""

    plan: HistoryPlan
    dry_run: bool
    sessions: list[SessionReport] = field(default_factory=list)
    embedded: int = 0

    def actions(self) -> dict[str, int]:
        return total_actions(self.sessions)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form (its keys are a public interface: keep them)."""
        plan = self.plan
        return {
            "dry_run": self.dry_run,
            "config_dir": str(plan.config_dir),
            "folders": [str(f) for f in plan.folders],
            "transcripts": [p.to_dict() for p in plan.items],
            "skipped_before_since": plan.skipped_before,
            "to_read": len(plan.todo),
            "sessions": [
                {
                    "session_id": s.session_id,
                    "messages": s.messages,
                    "candidates": s.candidates,
                    "actions": s.actions,
                    "malformed": s.malformed,
                    "error": s.error,
                }
                for s in self.sessions
            ],
            "actions": self.actions(),
            "embedded": self.embedded,
        }


def plan_import(cx: Cortex, env: Mapping[str, str], *, since: datetime | None = None) -> HistoryPlan:
    """The project's transcripts, oldest first, and how much of each the store has not seen."""
    config = claude_dir(env)
    folders = tuple(transcript_folders(config, cx.paths.root))
    found = list(list_transcripts(list(folders)))
    cutoff = since.timestamp() if since is not None else None
    kept = [t for t in found if cutoff is None or t.mtime >= cutoff]
    store = cx.store(Scope.PROJECT, create=False)
    items = []
    for t in kept:
        row = store.read_cursor(t.session_id) if store is not None else None
        offset = row.byte_offset if row is not None and row.transcript_path == str(t.path) else 0
        items.append(Planned(t, max(0, t.size - offset)))
    return HistoryPlan(config, folders, tuple(items), len(found) - len(kept))


Progress = Callable[[int, int, Planned, SessionReport | None], None]


def run_import(cx: Cortex, plan: HistoryPlan, progress: Progress | None = None) -> HistoryReport:
    """Capture every transcript with something new, under the worker lock; then embed and brief."""
    report = HistoryReport(plan, dry_run=False)
    todo = plan.todo
    if not todo:
        return report
    store_dir = ensure_store_dir(cx.paths)
    try:
        with file_lock(store_dir / WORKER_LOCK, timeout_s=LOCK_WAIT_S):
            _capture_all(cx, todo, report, progress)
    except LockBusy:
        raise CortexError(
            f"a cortex worker has been capturing into {store_dir} for over {LOCK_WAIT_S:.0f} s",
            "run `cortex history import` again when it is done; nothing is lost meanwhile",
        ) from None
    return report


def _capture_all(cx: Cortex, todo: list[Planned], report: HistoryReport, progress: Progress | None) -> None:
    git = read_git_facts(cx.paths.root)
    touched: dict[Scope, dict[str, Memory]] = {}
    for i, item in enumerate(todo):
        if progress:
            progress(i, len(todo), item, None)
        t = item.transcript
        entry = QueueEntry(EVENT, t.session_id, str(t.path), str(cx.paths.root), closed=True)
        session = capture_session(cx, entry, git, closed=True)
        report.sessions.append(session)
        for scope, memories in session.touched.items():
            touched.setdefault(scope, {}).update(memories)
        if progress:
            progress(i + 1, len(todo), item, session)
    report.embedded = _embed(cx, touched)
    _after(cx)


def _embed(cx: Cortex, touched: dict[Scope, dict[str, Memory]]) -> int:
    """Vectors for what the import stored, as the worker makes them; 0 when no embedder loads."""
    if not any(touched.values()):
        return 0
    from cortex.capture.embed import embed_memories

    try:
        choice = cx.query_embedder() if cx.query_embedder_ready() else cx.bulk_embedder()
        if choice.backend is None:
            log.info("memories left for `cortex backfill`: %s", choice.note)
            return 0
        done = 0
        for scope, memories in touched.items():
            store = cx.store(scope, create=False)
            if (
                store is not None
                and memories
                and embed_memories(cx, store, list(memories.values()), choice.backend)
            ):
                done += len(memories)
        return done
    except Exception as exc:  # stored all the same; `cortex backfill` embeds them later
        log.warning("embedding failed (%s: %s); left for `cortex backfill`", type(exc).__name__, exc)
        return 0


def _after(cx: Cortex) -> None:
    from cortex.briefing.deliver import refresh_briefing
    from cortex.lifecycle.upkeep import after_extraction

    try:
        after_extraction(cx)
    except Exception as exc:
        log.warning("lifecycle tick failed (%s: %s)", type(exc).__name__, exc)
    refresh_briefing(cx)
