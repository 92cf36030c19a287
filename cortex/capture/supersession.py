"""Capture-side supersession: what a turn makes no longer current, applied as it is written.

- A state note (a test's verdict, a command's result, a turn's reported state) is replaced by
  a newer note of the same key on the same branch (`core/write/state.py` decides which).
- What an answer reported as found is withdrawn when the user's next prompt says that answer
  was wrong ("wrong, you must open the link", "read what I said").

Nothing is deleted: superseded memories stay in history and `cortex get` shows them. Applied
turn by turn inside the chunk's transaction, so a session captured per Stop and in one go end
with the same active memories.
"""

from __future__ import annotations

from collections.abc import Sequence

from cortex.app import Cortex
from cortex.core.extract.pipeline import Rejection
from cortex.core.extract.signals import PLAN_TAG
from cortex.core.extract.structural import EDITS_TAG
from cortex.core.extract.summary import FINDING_TAG, REPORT_TAG
from cortex.core.model import Memory, MemoryType, Status
from cortex.core.write.apply import superseded, supersedes_edge
from cortex.core.write.state import (
    STATE_PREFIX,
    STATE_TAG,
    newest_states,
    plan_state_supersession,
    superseded_by,
)
from cortex.store.port import MemoryStore


def supersede_states(cx: Cortex, store: MemoryStore, latest: Sequence[Memory]) -> None:
    """Mark the state notes the latest turn replaces as superseded (history keeps them)."""
    newest = newest_states(latest)
    if not newest:
        return
    now = cx.now()
    types = [MemoryType.PROGRESS.value, MemoryType.CONTEXT.value]  # what state notes are
    held = {m.id: m for m in store.tagged(STATE_TAG, types)}
    held.update((m.id, m) for m in store.tag_prefix(STATE_PREFIX, types))
    for old in plan_state_supersession(newest, list(held.values())):
        store.update_memory(old, superseded(old, now), cx.actor, now, "supersede")
        newer = superseded_by(newest, old)
        if newer is not None:
            store.upsert_edge(supersedes_edge(newer, old.id, now), cx.actor, now)


# What a turn's answer reported as found; its state notes are replaced by the state rule.
_ANSWER_TAGS = (REPORT_TAG, FINDING_TAG)
# What else a turn leaves: where its previous answer ends, whatever that answer stored.
_TURN_TAGS = (STATE_TAG, EDITS_TAG, PLAN_TAG)
_ALL_TYPES = [t.value for t in MemoryType]
_ANSWER_TYPES = [
    t.value
    for t in (
        MemoryType.GOTCHA,
        MemoryType.DECISION,
        MemoryType.CONTEXT,
        MemoryType.ARCHITECTURE,
        MemoryType.PATTERN,
    )
]


def retract_answer(cx: Cortex, store: MemoryStore, rejection: Rejection) -> None:
    """The user said the previous answer was wrong: what it reported as found is superseded;
    history keeps it. The previous answer is the latest turn of this session before the prompt
    that left notes of any kind (its report, its state, its edits or plan), so an older turn's
    findings are never taken for it."""
    mine = {
        m.id: m
        for tag in (*_ANSWER_TAGS, *_TURN_TAGS)
        for m in store.tagged(tag, _ALL_TYPES)
        if m.source.session_id == rejection.session_id
        and m.source.transcript_offset is not None
        and m.source.transcript_offset < rejection.offset
    }
    if not mine:
        return
    latest = max(m.source.transcript_offset or 0 for m in mine.values())
    now = cx.now()
    for old in mine.values():
        answer = any(t in old.tags for t in _ANSWER_TAGS) and old.type.value in _ANSWER_TYPES
        if answer and old.status is Status.ACTIVE and old.source.transcript_offset == latest:
            store.update_memory(old, superseded(old, now), cx.actor, now, "supersede")
