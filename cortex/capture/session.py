"""Use case: capture one session's new transcript lines into the stores, exactly once.

Read from the session's cursor (shell) -> extract candidates (pure core, plus the optional LLM
layer) -> write. A chunk's project candidates and the advanced cursor commit in ONE project
store transaction, so a kill -9 at any point leaves both or neither. Global candidates go
first in their own global-store transaction, which also records how far this session's
global candidates are written: a rerun after a kill between the two commits skips them.
Embedding happens after the commits; without an embedder the memories stay pending.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from cortex.app import Cortex
from cortex.capture import write as writer
from cortex.capture.queue import QueueEntry, message_probe
from cortex.capture.supersession import supersede_by_manifest, supersede_states
from cortex.capture.undo import apply_reply, supersede_undone
from cortex.core.extract.pipeline import (
    GitContext,
    SourcedCandidate,
    extract_sourced,
    replies,
    task_ledger,
)
from cortex.core.extract.tasks import Ledger, touches_tasks
from cortex.core.extract.transcript import Message, Role, parse_chunk
from cortex.core.model import (
    Candidate,
    Memory,
    Scope,
    Source,
)
from cortex.core.write.apply import WriteOutcome
from cortex.core.write.state import is_state
from cortex.errors import CortexError
from cortex.shell.failpoints import failpoint
from cortex.shell.transcript_io import Cursor, ReadResult, read_new_records, read_task_history
from cortex.store.port import CursorRow, MemoryStore

log = logging.getLogger("cortex.capture.session")

LAG_WAIT_S = 3.0  # Claude Code may write the turn's last lines after Stop fired
LAG_POLL_S = 0.1
TAIL_BYTES = 512 * 1024  # where to look for the Stop payload's last message
LLM_MARK = "llm:"  # before a record a model answered on, in the store's read marks


@dataclass
class SessionReport:
    """What capturing one session did."""

    session_id: str
    chunks: int = 0
    messages: int = 0
    candidates: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    malformed: int = 0
    restarted: bool = False
    lagged: bool = False  # the turn's last message was not in the transcript yet
    error: str | None = None
    touched: dict[Scope, dict[str, Memory]] = field(default_factory=dict)
    read: list[Message] = field(default_factory=list)  # the messages read (use feedback judges them)

    def count(self, outcomes: Sequence[WriteOutcome]) -> None:
        for o in outcomes:
            self.actions[o.action.value] = self.actions.get(o.action.value, 0) + 1
            if o.action.changed:
                self.touched.setdefault(o.scope, {})[o.memory.id] = o.memory


def total_actions(sessions: Sequence[SessionReport]) -> dict[str, int]:
    """Write outcomes summed over sessions (stored, reinforced, duplicate, restored, ...)."""
    out: dict[str, int] = {}
    for s in sessions:
        for action, n in s.actions.items():
            out[action] = out.get(action, 0) + n
    return out


@dataclass(frozen=True, slots=True)
class GitFacts:
    """Git context for the extractors plus the recent commit subjects the LLM layer reads."""

    context: GitContext
    recent_commits: tuple[str, ...] = ()


def read_git_facts(root: Path) -> GitFacts:
    """Branch, HEAD, changed files and recent commits (all empty outside a repository)."""
    from cortex.shell import git

    commits = tuple(f"{c.sha[:8]} {c.subject}" for c in git.read_recent_commits(root))
    return GitFacts(git.read_git_context(root), commits)


def capture_session(
    cx: Cortex, entry: QueueEntry, git: GitFacts, *, closed: bool = False, lag_wait_s: float = LAG_WAIT_S
) -> SessionReport:
    """Extract and store everything new in the entry's transcript; log-and-report, never raise
    for transcript problems (store errors do raise: the queue entry is then kept)."""
    report = SessionReport(entry.session_id)
    path = Path(entry.transcript_path)
    store = cx.write_store(Scope.PROJECT)
    row = store.read_cursor(entry.session_id)
    same_file = row is not None and row.transcript_path == str(path)
    cursor = Cursor(row.byte_offset, row.last_uuid) if row is not None and same_file else Cursor()
    malformed = row.malformed if row is not None else 0
    last = _read_to_end(cx, store, entry, git, cursor, malformed, closed, report)
    probe = entry.last_message_probe
    if not probe or last is None:
        return report
    if not _landed(path, probe):
        last = _wait_for_growth(cx, store, entry, git, last, closed, report, lag_wait_s)
        if not _landed(path, probe):
            # The queue never holds the message itself (it is not redacted yet): the turn's end
            # is read from the transcript by the next run, once Claude Code has written it.
            report.lagged = True
            log.info(
                "session %s: the transcript lags behind Stop; its end is read next time", entry.session_id
            )
    return report


def _read_to_end(
    cx: Cortex,
    store: MemoryStore,
    entry: QueueEntry,
    git: GitFacts,
    cursor: Cursor,
    malformed: int,
    closed: bool,
    report: SessionReport,
) -> Cursor | None:
    """Process chunk after chunk until the end of the file; the cursor reached, or None on error."""
    path = Path(entry.transcript_path)
    while True:
        # While the session runs, a call whose result is not written yet waits for the next read.
        result = read_new_records(
            path, cursor, include_sidechains=cx.settings.include_sidechains, hold_unanswered=not closed
        )
        if result.error:
            # A session that ended before its first prompt never had a transcript: not a problem.
            missing = result.error.startswith("transcript not found")
            log.log(
                logging.INFO if missing else logging.WARNING, "session %s: %s", entry.session_id, result.error
            )
            report.error = result.error
            return None
        if result.restarted:
            log.info("session %s: reading %s again from the start: %s", entry.session_id, path, result.reason)
            report.restarted = True
        malformed += result.chunk.malformed
        report.malformed += result.chunk.malformed
        start = 0 if result.restarted else cursor.offset
        _commit_chunk(cx, store, entry, git, result, start, malformed, closed and not result.more, report)
        cursor = result.cursor
        if not result.more:
            return cursor


def _commit_chunk(
    cx: Cortex,
    store: MemoryStore,
    entry: QueueEntry,
    git: GitFacts,
    result: ReadResult,
    start: int,
    malformed: int,
    closed: bool,
    report: SessionReport,
) -> None:
    messages = result.chunk.messages
    # The task list lives across turns: a chunk that touches it starts from the transcript's.
    tasks = (
        task_ledger(read_task_history(Path(entry.transcript_path), start)) if touches_tasks(messages) else ()
    )
    found = _heuristic(cx, messages, git, entry.session_id, tasks) if messages else []
    asked, sent = _llm(cx, store, messages, git, entry.session_id) if messages else ([], set())
    prompts = [replace(r, session_id=r.session_id or entry.session_id) for r in replies(messages)]
    # A record read before (a resumed session's copy of its history, a session captured live
    # and imported again) is no news: what it made, confirmed and replaced is in the store.
    # The LLM layer looked up its own marks already (`LLM_MARK`).
    taken = {r for r in (*(s.record for s in found), *(r.record for r in prompts if r.judges)) if r}
    earlier = store.read_records(taken) if taken else set()
    found = [s for s in found if s.record not in earlier] + asked
    prompts = [r for r in prompts if r.record not in earlier]
    report.chunks += 1
    report.messages += len(messages)
    report.read.extend(messages)
    report.candidates += len(found)
    local = [s for s in found if writer.candidate_scope(s.candidate) == Scope.PROJECT]
    shared = [s for s in found if writer.candidate_scope(s.candidate) == Scope.GLOBAL]
    failpoint("capture.after_extract")
    read_at = cx.now()  # what the store held before this read: a record that made it is read again
    if shared:
        local += _write_global(cx, entry, result, shared, report, read_at)
        failpoint("capture.after_global_commit")  # the project store's commit is still to come
    row = CursorRow(
        entry.session_id,
        entry.transcript_path,
        result.cursor.offset,
        result.cursor.last_uuid,
        malformed,
        closed,
    )
    outcomes: list[WriteOutcome] = []
    with store.transaction():
        for turn in _by_turn(local):  # as a Stop hook per turn would have written them
            while prompts and prompts[0].offset < turn[0].turn_end:
                outcomes += apply_reply(cx, store, prompts.pop(0))
            others = [s for s in turn if not is_state(s.candidate.tags)]
            written = writer.write_batch(cx, store, [_item(s, git) for s in others], read_at)
            merged = supersede_by_manifest(cx, store, [o.memory for o in written])
            supersede_undone(cx, store, [o.memory for o in written])
            outcomes += [replace(o, memory=merged.get(o.memory.id, o.memory)) for o in written]
            latest = [s for s in turn if is_state(s.candidate.tags)]
            states = writer.write_batch(cx, store, [_item(s, git) for s in latest], read_at)
            said = max((s.said_at for s in latest if s.said_at is not None), default=None)
            supersede_states(cx, store, [o.memory for o in states], said)
            outcomes += states
        for reply in prompts:
            outcomes += apply_reply(cx, store, reply)
        store.mark_read((taken - earlier) | sent, cx.now())
        store.write_cursor(row, cx.now())
    failpoint("capture.after_chunk_commit")  # the chunk's memories and its cursor, both or neither
    report.count(outcomes)


def _by_turn(found: Sequence[SourcedCandidate]) -> list[list[SourcedCandidate]]:
    """Consecutive candidates grouped by the turn they come from."""
    groups: list[list[SourcedCandidate]] = []
    for s in found:
        if not groups or groups[-1][-1].turn_end != s.turn_end:
            groups.append([])
        groups[-1].append(s)
    return groups


def _write_global(
    cx: Cortex,
    entry: QueueEntry,
    result: ReadResult | None,
    shared: list[SourcedCandidate],
    report: SessionReport,
    read_at: datetime | None = None,
) -> list[SourcedCandidate]:
    """Write global candidates; returns those that must go to the project store instead."""
    try:
        gstore = cx.write_store(Scope.GLOBAL)
        done_to = 0
        grow = gstore.read_cursor(entry.session_id)
        same = grow is not None and grow.transcript_path == entry.transcript_path
        if result is not None and grow is not None and same and not result.restarted:
            done_to = grow.byte_offset
        todo = [s for s in shared if result is None or s.end_offset > done_to]
        with gstore.transaction():
            items = [_item(s, GitFacts(GitContext())) for s in todo]
            outcomes = writer.write_batch(cx, gstore, items, read_at)
            if result is not None:
                gstore.write_cursor(
                    CursorRow(
                        entry.session_id,
                        entry.transcript_path,
                        result.cursor.offset,
                        result.cursor.last_uuid,
                        0,
                        False,
                    ),
                    cx.now(),
                )
    except CortexError as exc:  # an unwritable global store must not lose the memories
        log.warning("global store unavailable (%s); storing in the project store", exc.message)
        return shared
    report.count(outcomes)
    return []


def _item(s: SourcedCandidate, git: GitFacts) -> tuple[Candidate, Source]:
    source = Source(
        session_id=s.session_id,
        transcript_offset=s.end_offset,
        branch=s.branch,
        commit=git.context.head,
        said_at=s.said_at,
        record=s.record,
    )
    return s.candidate, source


def _heuristic(
    cx: Cortex, messages: Sequence[Message], git: GitFacts, session_id: str, tasks: Ledger
) -> list[SourcedCandidate]:
    """The chunk's candidates from layers 1-3."""
    root = str(cx.paths.root)
    found = extract_sourced(messages, project_root=root, git=git.context, tasks=tasks)
    # The transcript's own session id wins; the payload's fills the gaps.
    return [s if s.session_id else _with_session(s, session_id) for s in found]


def _with_session(s: SourcedCandidate, session_id: str) -> SourcedCandidate:
    return replace(s, session_id=session_id)


def _llm(
    cx: Cortex, store: MemoryStore, messages: Sequence[Message], git: GitFacts, session_id: str
) -> tuple[list[SourcedCandidate], set[str]]:
    """Layer 4 when an LLM extractor may run (its module is only imported then): its candidates,
    and the marks of the records a model answered on (none when the cap or a failure kept the
    call back). A record a model answered on before (a resumed session's copy of its history, a
    session captured live and imported again) is not sent again: the model would only say again
    what the store holds, at the user's cost. Its marks are its own: what the heuristic layers
    took from a record says nothing of what a model would."""
    from cortex.backends.choose import llm_extraction_possible

    if not llm_extraction_possible(cx.settings):
        return [], set()
    try:
        from cortex.capture.llm_layer import llm_read
    except ImportError:
        return [], set()
    named = {LLM_MARK + m.record for m in messages if m.record}
    earlier = store.read_records(named) if named else set()
    fresh = [m for m in messages if not m.record or LLM_MARK + m.record not in earlier]
    if not fresh:
        return [], set()
    read = llm_read(cx, fresh, git.context, session_id, recent_commits=git.recent_commits)
    end = max(m.end_offset for m in fresh)
    branch = next((m.git_branch for m in reversed(fresh) if m.git_branch), git.context.branch)
    last = fresh[-1]  # `end` above needs one
    cands = read.candidates
    found = [SourcedCandidate(c, end, session_id, branch, end, last.timestamp, last.record) for c in cands]
    return found, {LLM_MARK + record for record in read.sent}


# -- a transcript that lags behind the Stop hook ----------------------------------------------
def _landed(path: Path, probe: str) -> bool:
    """True when the transcript's last lines hold the message the Stop payload's probe names
    (a message's own text, or one of its text blocks)."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - TAIL_BYTES)
            fh.seek(start)
            data = fh.read(TAIL_BYTES)
    except OSError:
        return False
    if start:
        data = data[data.find(b"\n") + 1 :]
    chunk = parse_chunk(data, start, include_sidechains=True)
    said = [m.texts for m in chunk.messages if m.role is Role.ASSISTANT and m.texts]
    return any(
        message_probe(" ".join(texts)) == probe or probe in map(message_probe, texts) for texts in said
    )


def _wait_for_growth(
    cx: Cortex,
    store: MemoryStore,
    entry: QueueEntry,
    git: GitFacts,
    cursor: Cursor,
    closed: bool,
    report: SessionReport,
    wait_s: float,
) -> Cursor:
    """Poll briefly for the transcript to grow, and read what arrives; the cursor reached."""
    path = Path(entry.transcript_path)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(LAG_POLL_S)
        try:
            grown = path.stat().st_size > cursor.offset
        except OSError:
            return cursor
        if grown:
            row = store.read_cursor(entry.session_id)
            malformed = row.malformed if row is not None else 0
            after = _read_to_end(cx, store, entry, git, cursor, malformed, closed, report)
            if after is None:
                return cursor
            cursor = after
            if _landed(path, entry.last_message_probe):
                return cursor
    return cursor
