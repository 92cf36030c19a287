"""Push the project's shares to the team store: the outbox is the project store's own journal.

A share, an unshare, a forget or a supersede is a journaled change of a project memory (the
`team`/`private` tags say what is meant), so nothing is pending anywhere but in the project
store. The push reads the journal after the cursor kept for this team store
(`team.pushed_seq:<key>` in the project store's meta), makes the team store agree with each
changed memory as it is now, and only then moves the cursor: a push cut short (server gone,
process killed) is redone from the same place, and redoing it changes nothing twice, since a
team copy keeps its memory's id. One push at a time per project (a file lock).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cortex.app import Cortex
from cortex.core.model import Memory, Scope, Status
from cortex.core.recall.query import text_query
from cortex.core.team.rules import (
    contradiction_edges,
    parse_share_types,
    same_copy,
    team_copy,
    wants_shared,
    withdrawn,
)
from cortex.errors import CortexError
from cortex.shell.files import LockBusy, file_lock
from cortex.shell.git import read_user
from cortex.store.port import StoreAdmin

log = logging.getLogger("cortex.team")

CURSOR = "team.pushed_seq:"  # + the team store's key
LOCK_FILE = "team-push.lock"
LOCK_WAIT_S = 10.0
PAGE = 1000  # journal records read at a time
BATCH = 200  # memories compared with the team store at a time
CONTRADICTION_CANDIDATES = 20
# One's own upkeep (usage_priority: the briefing priority use feedback lowers or gives back).
IGNORED_OPS = frozenset({"access", "decay", "archive", "prune", "edge", "edge_delete", "usage_priority"})


@dataclass
class PushReport:
    """What one push did, or why it could not run (the changes then stay pending)."""

    shared: list[str] = field(default_factory=list)  # ids now in the team store (new or changed)
    withdrawn: list[str] = field(default_factory=list)  # ids taken out (unshared, forgotten, superseded)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, why) not shared
    contradictions: int = 0  # `contradicts` suggestions added in the team store
    pending: int = 0  # journal records still to push
    error: str = ""  # why the push did not run or stopped ("" when it completed)

    @property
    def done(self) -> bool:
        return not self.error


def cursor_key(key: str) -> str:
    return CURSOR + key


def pending_count(project: StoreAdmin, key: str) -> int:
    """Journal records of the project store the team store `key` has not seen yet."""
    return max(0, project.journal_seq() - int(project.get_meta(cursor_key(key)) or 0))


def push(cx: Cortex, *, wait_s: float = LOCK_WAIT_S) -> PushReport:
    """Make the team store agree with every project memory changed since the last push."""
    report = PushReport()
    link = cx.team()
    project = cx.store(Scope.PROJECT, create=False)
    if not link.configured or project is None or link.key is None:
        report.error = link.note or (
            "no project store yet" if link.configured else "no team store configured"
        )
        return report
    report.pending = pending_count(project, link.key)
    team = link.store
    if team is None:
        report.error = link.note
        return report
    try:
        with file_lock(cx.paths.store_dir / LOCK_FILE, timeout_s=wait_s):
            _push(cx, project, team, link.key, report)
    except LockBusy:
        report.error = "another push is running; it takes these changes too"
    except CortexError as exc:  # the server went away mid-push: the cursor did not move
        log.warning("team push stopped: %s", exc.message)
        cx.drop_team(exc.message)
        report.error = exc.message
    report.pending = pending_count(project, link.key)
    return report


def _push(cx: Cortex, project: StoreAdmin, team: StoreAdmin, key: str, report: PushReport) -> None:
    cursor = int(project.get_meta(cursor_key(key)) or 0)
    auto = parse_share_types(cx.settings.team_share_types)
    author = read_user(cx.paths.root) or "unknown"
    while True:
        rows = project.journal_rows(cursor, PAGE)
        if not rows:
            return
        changed: dict[str, None] = {}
        forgot: set[str] = set()
        for row in rows:
            mid = row.get("memory_id")
            if mid and row["op"] not in IGNORED_OPS:
                changed[str(mid)] = None
                if row["op"] == "forget":
                    forgot.add(str(mid))
        ids = list(changed)
        for start in range(0, len(ids), BATCH):
            _reconcile(cx, project, team, ids[start : start + BATCH], forgot, auto, author, report)
        cursor = int(rows[-1]["seq"])
        with project.transaction():
            project.set_meta(cursor_key(key), str(cursor))


def _reconcile(
    cx: Cortex,
    project: StoreAdmin,
    team: StoreAdmin,
    ids: Sequence[str],
    forgot: set[str],
    auto: Sequence[str],
    author: str,
    report: PushReport,
) -> None:
    local = project.get_many(ids)
    theirs = team.get_many(ids)
    now = cx.now()
    copied: list[str] = []
    for mid in ids:
        mine, current = local.get(mid), theirs.get(mid)
        if mine is None:
            continue  # gone from this machine (a reset): the team's copy is not this store's to drop
        if wants_shared(mine, auto):
            copy = team_copy(mine, author, now)
            if copy is None:
                report.skipped.append((mid, "nothing left after redaction"))
            elif _put(team, copy, author, now, report):
                copied.append(mid)
            continue
        if current is None or current.status is not Status.ACTIVE:
            continue
        if mine.status is Status.ACTIVE or mine.status is Status.SUPERSEDED or mid in forgot:
            op = {Status.SUPERSEDED: "supersede", Status.ACTIVE: "unshare"}.get(mine.status, "forget")
            with team.transaction():
                team.update_memory(current, withdrawn(current, mine, now), author, now, op)
            report.withdrawn.append(mid)
    if copied:
        _copy_vectors(cx, project, team, copied, now)


def _put(team: StoreAdmin, copy: Memory, author: str, now: datetime, report: PushReport) -> bool:
    """Insert or refresh one team copy; True when the team store changed."""
    with team.transaction():
        current = team.get(copy.id)  # under the team store's write lock
        if current is not None:
            if same_copy(current, copy):
                return False
            team.update_memory(current, copy, author, now, "share")
            report.shared.append(copy.id)
            return True
        twin = team.by_hash(copy.content_hash)
        if twin is not None and twin.status is Status.ACTIVE:
            report.skipped.append((copy.id, f"the team store already holds this text as {twin.id}"))
            return False
        team.insert_memory(copy, author, now, "share")
        words = text_query(copy.content)
        found = team.search_text(words, CONTRADICTION_CANDIDATES) if words else []
        others = list(team.get_many([i for i, _ in found if i != copy.id]).values())
        for edge in contradiction_edges(copy, others, now):
            team.upsert_edge(edge, author, now)
            report.contradictions += 1
    report.shared.append(copy.id)
    return True


def _copy_vectors(
    cx: Cortex, project: StoreAdmin, team: StoreAdmin, ids: Sequence[str], now: datetime
) -> None:
    """The project store's vectors of the shared memories, so the team store searches by meaning
    without embedding anything again (best effort: keyword search finds them regardless)."""
    if not (project.vectors and team.vectors):
        return
    key = cx.embedder_key()
    index = project.vector_index(key) if key else None
    if index is None:
        return
    try:
        vectors = project.read_vectors(index.name, ids)
        if vectors:
            name = team.ensure_vector_index(index.embedder_key, index.dim, now)
            team.write_vectors(name, sorted(vectors.items()))
    except CortexError as exc:
        log.info("vectors of shared memories not copied: %s", exc.message)
