"""Capture-side supersession: what a turn makes no longer current, applied as it is written.

- A state note (a test's verdict, a command's result, a turn's reported state) is replaced by
  a newer note of the same key on the same branch (`core/write/state.py` decides which).
- What an answer reported as found is withdrawn when the user's next prompt says that answer
  was wrong ("wrong, you must open the link", "read what I said").
- A state that left a choice or a question to the user is closed by the next turn of its session.
- What later notes undo (a revert, a change of course, a merge the user reports) is in undo.py.

Nothing is deleted: superseded memories stay in history and `cortex get` shows them. Applied
turn by turn inside the chunk's transaction, so a session captured per Stop and in one go end
with the same active memories.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from cortex.app import Cortex
from cortex.core.extract.environment import settles, tool_of, tool_state_tag
from cortex.core.extract.failures import CAUSE_ONLY_TAG
from cortex.core.extract.manifest_merge import (
    MAX_MERGED_CHARS,
    ManifestNote,
    manifest_entries,
    merge_notes,
    overlaps,
)
from cortex.core.extract.manifests import DROPS_PREFIX, MANIFEST_TAG
from cortex.core.extract.pipeline import Reply
from cortex.core.extract.signals import PLAN_TAG, TODO_TAG
from cortex.core.extract.structural import EDITS_TAG, PASSED_TAG
from cortex.core.extract.summary import FINDING_TAG, OPEN_TAG, REPORT_TAG
from cortex.core.model import Memory, MemoryType, Status
from cortex.core.text import content_hash
from cortex.core.write.apply import superseded, supersedes_edge
from cortex.core.write.state import (
    REPORT_KEY,
    STATE_PREFIX,
    STATE_TAG,
    branch_key,
    newest_states,
    plan_state_supersession,
    state_keys,
    superseded_by,
)
from cortex.store.port import MemoryStore


def supersede_states(
    cx: Cortex, store: MemoryStore, latest: Sequence[Memory], said_at: datetime | None = None
) -> None:
    """Mark the state notes the latest turn (said at `said_at`) replaces as superseded (history
    keeps them). A note the turn found already superseded (the same record read again, as a
    resumed session's copy of its history) is history, not the latest state: it replaces
    nothing; nor does a turn replace a note said after it (a transcript read again from the
    start)."""
    newest = newest_states([m for m in latest if m.status is Status.ACTIVE])
    if not newest:
        return
    now = cx.now()
    # What state notes are; a decision record's note is a decision keyed by its file.
    types = [MemoryType.PROGRESS.value, MemoryType.CONTEXT.value, MemoryType.DECISION.value]
    held = {m.id: m for m in store.tagged(STATE_TAG, types)}
    held.update((m.id, m) for m in store.tag_prefix(STATE_PREFIX, types))
    topics = report_topics(latest)
    for old in plan_state_supersession(newest, list(held.values())):
        if is_report_section(old) and not same_topic(old, topics):
            continue  # another topic's report: the latest report does not say where that stands
        if _said_after(old, said_at):
            continue
        retire(cx, store, old, superseded_by(newest, old), now)
    _fixed_later(cx, store, latest, said_at, now)


FIXED_LATER = "; fixed later"
FIXED_LATER_PRIORITY = 4  # a report's prose; a failure with its fix seen is 5


def _fixed_later(
    cx: Cortex, store: MemoryStore, latest: Sequence[Memory], said_at: datetime | None, now: datetime
) -> None:
    """A failure's gotcha not seen fixed in its turn ("`cargo check` failed (...); fix: ...")
    holds its command's state; once a later turn's run of that command passes, it was fixed.
    The gotcha stays (its error and what was done about it are the knowledge), says so, and is
    no longer state: read as a current failure, it would contradict the passing run. One that
    gives only a cause says nothing of how it was fixed: what it says was true midway, so the
    passing run replaces it (history keeps it)."""
    passed = newest_states([m for m in latest if m.status is Status.ACTIVE and PASSED_TAG in m.tags])
    if not passed:
        return
    for old in store.tag_prefix(STATE_PREFIX, [MemoryType.GOTCHA.value]):
        branch = branch_key(old.source.branch)
        if old.status is not Status.ACTIVE or not any((branch, k) in passed for k in state_keys(old.tags)):
            continue
        if _said_after(old, said_at):
            continue  # said after the passing run (a transcript read again from the start)
        if CAUSE_ONLY_TAG in old.tags:
            retire(cx, store, old, superseded_by(passed, old), now)
            continue
        content = f"{old.content.rstrip().rstrip('.')}{FIXED_LATER}"
        digest = content_hash(content)
        if (same := _holder(store, old, digest)) is not None:
            retire(cx, store, old, same.id, now)  # the same gotcha, already said fixed: one note
            continue
        tags = tuple(t for t in old.tags if not t.startswith(STATE_PREFIX))
        # Resolved without the session saying how: below a failure and its fix in the briefing.
        priority = min(old.priority, FIXED_LATER_PRIORITY)
        store.update_memory(
            old,
            replace(old, content=content, content_hash=digest, tags=tags, priority=priority, updated=now),
            cx.actor,
            now,
            "fixed",
        )


def close_open_states(cx: Cortex, store: MemoryStore, session_id: str | None, reply_at: int) -> None:
    """A state that left a choice or a question to the user ("Option A ... Option B ... Which do
    you prefer?") is where things stood until the user replied: their prompt at `reply_at` in
    the session's transcript answered it, so it no longer says where they stand. History
    keeps it."""
    if session_id is None:
        return
    now = cx.now()
    for old in store.tagged(OPEN_TAG, [MemoryType.PROGRESS.value]):
        offset = old.source.transcript_offset
        if old.status is not Status.ACTIVE or old.source.session_id != session_id or offset is None:
            continue
        if offset < reply_at:
            retire(cx, store, old, None, now)


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


def settle_tools(cx: Cortex, store: MemoryStore, reply: Reply) -> None:
    """A note that a program or module is missing ("Program `actionlint` is not installed
    here") ends when a later turn ran it or installed it (`reply.settled`, read from the turn
    the reply opens). Notes said after that turn stay (a transcript read again)."""
    now = cx.now()
    for old in store.tag_prefix(tool_state_tag(""), [MemoryType.GOTCHA.value]):
        name = tool_of(old.tags)
        if old.status is not Status.ACTIVE or name is None or not settles(reply.settled, name):
            continue
        if _said_after(old, reply.said_at):
            continue
        retire(cx, store, old, None, now)


def withdraw_answer(cx: Cortex, store: MemoryStore, reply: Reply) -> None:
    """The user said the previous answer was wrong: what it reported as found is superseded;
    history keeps it."""
    now = cx.now()
    for old in previous_answer(store, reply):
        retire(cx, store, old, None, now)


def previous_answer(store: MemoryStore, reply: Reply) -> list[Memory]:
    """The active notes of what the previous answer reported as found. The previous answer is
    the latest turn of this session before the prompt that left notes of any kind (its report,
    its state, its edits or plan), so an older turn's findings are never taken for it."""
    mine = {
        m.id: m
        for tag in (*_ANSWER_TAGS, *_TURN_TAGS)
        for m in store.tagged(tag, _ALL_TYPES)
        if m.source.session_id == reply.session_id
        and m.source.transcript_offset is not None
        and m.source.transcript_offset < reply.offset
    }
    latest = max((m.source.transcript_offset or 0 for m in mine.values()), default=None)
    return [
        m
        for m in mine.values()
        if any(t in m.tags for t in _ANSWER_TAGS)
        and m.type.value in _ANSWER_TYPES
        and m.status is Status.ACTIVE
        and m.source.transcript_offset == latest
    ]


# -- which earlier turn reports the latest one replaces ----------------------------------------
# A turn report's state sections say where a piece of work stands. The work a section is about
# is named by its issue or pull request number or its commit ("PR #387 merged with squash commit
# b77f523", "PR #390 created"): the latest report replaces an earlier section when it names the
# same work. A report of where PR #389 stands says nothing of PR #387's merge, which stays
# current. A section that names no work item but reports work built on files ("Successfully
# implemented the update script: `./update.sh` bumps the version and hash") is about those
# files: a later report replaces it only when it names one of them too, so a report on the NixOS
# module does not retire what was done to the update script. Any other section is where the work
# as a whole stood: the latest report replaces it.
_REF = re.compile(
    r"(?:(?<![\w&])#|\b(?:pr|pull request|issue|mr)\s+#?|/(?:pull|issues|merge_requests)/)(\d+)\b",
    re.IGNORECASE,
)
_SHA = re.compile(r"(?<![\w/.-])([0-9a-f]{7,40})(?![\w/.-])")


def work_items(text: str) -> frozenset[str]:
    """The issues, pull requests and commits `text` names: `#389` (also "PR 389" and a
    `/pull/389` link) and commit ids such as `b77f523`."""
    refs = {f"#{n}" for n in _REF.findall(text)}
    shas = {h for h in _SHA.findall(text) if any(c.isdigit() for c in h) and any(c.isalpha() for c in h)}
    return frozenset(refs | shas)


def is_report_section(memory: Memory) -> bool:
    """A turn report's state section: not a task list or a plan (each is one state), not a
    keyed state (a check's verdict)."""
    return state_keys(memory.tags) == {REPORT_KEY} and not {TODO_TAG, PLAN_TAG} & set(memory.tags)


def report_topics(latest: Sequence[Memory]) -> Mapping[str, frozenset[str]]:
    """Branch key -> the work items and files (`file:<path>`) the latest turn's state notes name."""
    out: dict[str, frozenset[str]] = {}
    for m in latest:
        if STATE_TAG in m.tags:
            key = branch_key(m.source.branch)
            out[key] = out.get(key, frozenset()) | work_items(m.content) | _file_items(m)
    return out


def same_topic(old: Memory, topics: Mapping[str, frozenset[str]]) -> bool:
    """The latest report speaks of the work `old` names, else of the files it names (or `old`
    names neither)."""
    named = work_items(old.content) or (_file_items(old) if reports_built_work(old.content) else frozenset())
    return not named or bool(named & topics.get(branch_key(old.source.branch), frozenset()))


# What was built stays built until a report on the same files says otherwise ("Done! Number
# inputs now format with commas: created `lib/utils/format.ts`"). A diagnosis ("Issue resolved:
# the flag caused it"), open work ("Next steps"), instructions, a guess or a question to the
# user is where the work stood at that moment: any later report replaces it, whatever it names.
_BUILT = re.compile(
    r"\b(?:done|complete[d]?|implemented|created|added|updated|built|success(?:ful(?:ly)?)?)\b", re.IGNORECASE
)
_OPEN = re.compile(
    r"\b(?:fix(?:ed|es)?|resolved|issues?|problems?|errors?|bugs?|caused?|next steps?|to ?do|"
    r"remaining|should|needs? to)\b",
    re.IGNORECASE,
)


def reports_built_work(content: str) -> bool:
    """The section opens by reporting work done and holds no diagnosis, open item or question."""
    first = content.split("\n", 1)[0].rstrip()
    return bool(_BUILT.search(first)) and not first.endswith("?") and not _OPEN.search(content)


def _file_items(memory: Memory) -> frozenset[str]:
    return frozenset(f"file:{path}" for path in memory.source.files)


# -- what a manifest edit makes out of date -----------------------------------------------------
# A manifest note lists the commands its edit took out of the manifest's scripts (`drops:`): an
# earlier plan, decision or report of where things stood that still names one of them verbatim
# ("start the frontend with `bun --bun next dev`", after an edit made it `bun next dev`) no
# longer says how the project runs. A gotcha naming it stays: why the command had to go is the
# knowledge. An earlier manifest note whose every entry a later edit changed again is history.
_PLANNED = (PLAN_TAG, REPORT_TAG, FINDING_TAG, STATE_TAG)
_PLANNED_TYPES = [
    t.value
    for t in (
        MemoryType.DECISION,
        MemoryType.PATTERN,
        MemoryType.ARCHITECTURE,
        MemoryType.PROGRESS,
        MemoryType.CONTEXT,
    )
]


def supersede_by_manifest(cx: Cortex, store: MemoryStore, latest: Sequence[Memory]) -> dict[str, Memory]:
    """Retire what the latest turn's manifest edits make out of date (history keeps it); returns
    the latest notes whose text changed (they took over an older note's statements)."""
    notes = [m for m in latest if MANIFEST_TAG in m.tags]
    if not notes:
        return {}
    now = cx.now()
    mine = {m.id for m in latest}
    held: dict[str, Memory] | None = None  # read once, for the first note that drops a command
    for note in notes:
        drops = [_plain(t[len(DROPS_PREFIX) :]) for t in note.tags if t.startswith(DROPS_PREFIX)]
        if not drops:
            continue
        if held is None:
            held = {m.id: m for tag in _PLANNED for m in store.tagged(tag, _PLANNED_TYPES)}
        for old in list(held.values()):
            if old.id in mine or old.status is not Status.ACTIVE:
                continue
            if any(drop in _plain(old.content) for drop in drops):
                retire(cx, store, old, note.id, now)
                del held[old.id]  # retired: a later note has nothing more to say of it
    return _merge_manifest_notes(cx, store, notes, now)


def _merge_manifest_notes(
    cx: Cortex, store: MemoryStore, notes: Sequence[Memory], now: datetime
) -> dict[str, Memory]:
    """Each new manifest note takes over what the older notes of its manifest that it overlaps
    still say (`core/extract/manifest_merge.py`); they become history. Returns the notes whose
    text changed, as written."""
    held = [m for m in store.tagged(MANIFEST_TAG, [MemoryType.DECISION.value]) if m.status is Status.ACTIVE]
    current = {m.id: m for m in held}  # store order: oldest first
    changed: dict[str, Memory] = {}
    for new in notes:
        note = current.get(new.id)
        if note is None or note.status is not Status.ACTIVE:
            continue
        mine = ManifestNote(note.content, note.tags)
        order = list(current)
        before = order[: order.index(note.id)]  # written before it: store order is oldest first
        older = [
            m
            for m in (current[i] for i in reversed(before))
            if m.status is Status.ACTIVE
            and branch_key(m.source.branch) == branch_key(note.source.branch)
            and overlaps(mine, ManifestNote(m.content, m.tags))
        ]
        if not older:
            continue
        merged = merge_notes(mine, [ManifestNote(m.content, m.tags) for m in older])
        if len(merged.content) > MAX_MERGED_CHARS:  # a long history stays in several notes
            # Only the older notes it says again in full become history.
            older = [m for m in older if manifest_entries(m.tags) <= manifest_entries(note.tags)]
        else:
            digest = content_hash(merged.content)
            if _holder(store, note, digest) is not None:
                continue  # the same text is already a live note: leave both as they are
            updated = replace(
                note, content=merged.content, content_hash=digest, tags=merged.tags, updated=now
            )
            store.update_memory(note, updated, cx.actor, now, "merge")
            current[note.id] = changed[note.id] = updated
        for old in older:
            current[old.id] = retire(cx, store, old, note.id, now)
    return changed


def _said_after(note: Memory, at: datetime | None) -> bool:
    """Whether `note` was said after the moment `at` (both known): a transcript read again from
    the start, whose later notes an earlier turn does not replace."""
    said = note.source.said_at
    return at is not None and said is not None and said > at


def _holder(store: MemoryStore, note: Memory, digest: str) -> Memory | None:
    """The live note other than `note` that already says the text of this hash (a store holds
    one live note per text), else None: `note` cannot be rewritten to that text."""
    other = store.by_hash(digest)
    live = other is not None and other.id != note.id and other.status in (Status.ACTIVE, Status.ARCHIVED)
    return other if live else None


def retire(cx: Cortex, store: MemoryStore, old: Memory, newer: str | None, now: datetime) -> Memory:
    """Supersede `old` (history keeps it), linked from the note that replaces it when there is
    one; returns it as written."""
    retired = superseded(old, now)
    store.update_memory(old, retired, cx.actor, now, "supersede")
    if newer is not None:
        store.upsert_edge(supersedes_edge(newer, old.id, now), cx.actor, now)
    return retired


def _plain(text: str) -> str:
    """Lower-cased, without backticks, whitespace runs as one space."""
    return " ".join(text.replace("`", "").lower().split())
