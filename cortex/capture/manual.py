"""The writes a person asks for: `cortex remember` (and `/remember`), `supersede` and `forget`.

Input checks and the user's defaults live here; the text then takes the shared write path
(`cortex.capture.write`). Superseding and forgetting never delete: history is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cortex.app import Cortex, looks_like_id
from cortex.capture.write import fast_embedder, write_candidate
from cortex.core.extract.markers import (
    GLOBAL_SCOPE_MIN_CONFIDENCE,
    project_words,
    score_global_confidence,
    score_sentence,
)
from cortex.core.extract.transcript_model import Role
from cortex.core.model import (
    Candidate,
    Layer,
    Memory,
    MemoryType,
    Scope,
    Source,
    Status,
)
from cortex.core.redact.secrets import redact
from cortex.core.text import normalize_text
from cortex.core.write.apply import (
    DEFAULT_PRIORITY,
    WriteEffect,
    WriteOutcome,
    superseded,
    supersedes_edge,
    upgraded,
)
from cortex.errors import InputError
from cortex.shell.git import read_head_ref
from cortex.store.port import StoreAdmin

MAX_CONTENT_CHARS = 20_000  # a memory is a note, not a file; code goes through index-code
USER_CONFIDENCE = 0.95


# -- input checks -----------------------------------------------------------------------------
def clean_input(text: str) -> str:
    """Validate and normalise user text; refuse binary junk, empty and oversized text."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise InputError(
            "the text is not valid UTF-8 (binary data?); nothing was stored",
            "pass readable text; for code use `cortex index-code PATH`",
        )
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\t\r")
    if text and controls / len(text) > 0.1:
        raise InputError(
            "the text looks like binary data (many control characters); nothing was stored",
            "pass readable text; for code use `cortex index-code PATH`",
        )
    if len(text) > MAX_CONTENT_CHARS:
        raise InputError(
            f"the text is {len(text):,} characters; a memory holds at most {MAX_CONTENT_CHARS:,}",
            "store the key point (a memory is a note), or index code with `cortex index-code PATH`",
        )
    cleaned = normalize_text(text)
    if not cleaned:
        raise InputError(
            "nothing to remember: the text is empty",
            'pass the text to store, e.g. cortex remember "we use WAL mode"',
        )
    return cleaned


def guess_type(text: str) -> MemoryType:
    """The memory type the lexical markers suggest for user text (context when unmarked)."""
    scored = score_sentence(text, Role.USER) or score_sentence(text, Role.ASSISTANT)
    return scored.type if scored is not None else MemoryType.CONTEXT


# -- use cases ---------------------------------------------------------------------------------
def remember(
    cx: Cortex,
    text: str,
    *,
    mem_type: str | None = None,
    priority: int | None = None,
    scope: Scope = Scope.PROJECT,
    pin: bool = False,
    tags: tuple[str, ...] = (),
    supersedes: str | None = None,
    source: Source | None = None,
) -> WriteOutcome:
    """Store a memory the user asked for (`cortex remember`, `/remember`)."""
    content = clean_input(text)
    if not redact(content).text.strip():
        raise InputError(
            "nothing left to store after removing private and secret text",
            "<private>...</private> spans and secrets are never stored",
        )
    kind = MemoryType(mem_type) if mem_type else guess_type(content)
    old = None
    if supersedes:
        _, old = cx.find(supersedes)
    cand = Candidate(
        content=content,
        type=kind,
        layer=Layer.USER,
        confidence=USER_CONFIDENCE,
        priority=priority or DEFAULT_PRIORITY[kind],
        scope=scope,
        tags=tags,
        pinned=pin,
    )
    if source is None:
        source = where_in_git(cx) if scope == Scope.PROJECT else Source()
    outcome = write_candidate(cx, cand, source, scope=scope, embedder=fast_embedder(cx))
    note = ""
    if outcome.action is not WriteEffect.STORED and (pin or priority):
        outcome = _upgrade(cx, outcome, pin, priority)
    if old is not None:
        supersede(cx, outcome.memory.id, old.id)
        note = f"supersedes {old.id}"
    if scope == Scope.PROJECT and outcome.action is WriteEffect.STORED and _across_projects(cx, content):
        hint = "it reads as true in all your projects: stored with --global, it reaches every project"
        note = "; ".join(filter(None, [note, hint]))
    if not outcome.embedded and outcome.memory.type != MemoryType.CODE:
        note = "; ".join(
            filter(
                None,
                [
                    note,
                    "not embedded yet: keyword recall finds it now, `cortex backfill` adds vectors",
                ],
            )
        )
    return replace(outcome, note=note)


def _across_projects(cx: Cortex, content: str) -> bool:
    """Whether the note speaks of the user across projects ("in all my projects"), as capture
    decides what goes to the global store; the project's folder name keeps it here."""
    words = project_words(str(cx.paths.root), None)
    return score_global_confidence(content, words) >= GLOBAL_SCOPE_MIN_CONFIDENCE


def where_in_git(cx: Cortex) -> Source:
    """The project's branch and HEAD commit, read from `.git` without starting git (none outside
    a repository). Only project memories get them: a global memory holds on every branch."""
    head = read_head_ref(cx.paths.root)
    return Source(branch=head.branch, commit=head.sha)


def _upgrade(cx: Cortex, outcome: WriteOutcome, pin: bool, priority: int | None) -> WriteOutcome:
    """A repeated remember with --pin/--priority still applies them to the existing memory."""
    store = cx.write_store(outcome.scope)
    now = cx.now()
    with store.transaction():
        current = store.get(outcome.memory.id)
        if current is None:
            return outcome
        changed = upgraded(current, pin, priority, now)
        store.update_memory(current, changed, cx.actor, now, "update")
    return replace(outcome, memory=changed)


def supersede(cx: Cortex, new_ref: str, old_ref: str) -> tuple[Memory, Memory]:
    """Mark OLD as superseded by NEW (a human decision; history is kept)."""
    new_store, new = cx.find(new_ref)
    old_store, old = cx.find(old_ref)
    if new.id == old.id:
        raise InputError("a memory cannot supersede itself", "pass two different ids")
    now = cx.now()
    with old_store.transaction():
        current = old_store.get(old.id)
        assert current is not None
        if current.status != Status.SUPERSEDED:
            changed = superseded(current, now)
            old_store.update_memory(current, changed, cx.actor, now, "supersede")
            current = changed
    with new_store.transaction():
        new_store.upsert_edge(supersedes_edge(new.id, old.id, now), cx.actor, now)
    return new, current


def select_for_forget(cx: Cortex, target: str, limit: int) -> list[tuple[StoreAdmin, Memory]]:
    """The memories `cortex forget TARGET` would archive: an id, else the best query matches."""
    from cortex.errors import NotFound

    try:
        return [cx.find(target)]
    except NotFound:
        if looks_like_id(target):  # a mistyped id must not archive whatever matches its text
            raise
    from cortex.core.recall.decide import RecallRequest
    from cortex.recall.search import recall

    result = recall(cx, RecallRequest(text=target, limit=limit), record=False)
    out = []
    for h in result.hits:
        if h.memory.scope is Scope.TEAM:  # a teammate's note: forgotten by id only, never by a query
            continue
        store = cx.store(h.memory.scope, create=False)
        if store is not None and h.memory.status == Status.ACTIVE:
            out.append((store, h.memory))
    return out


def forget(cx: Cortex, chosen: Sequence[tuple[StoreAdmin, Memory]]) -> list[Memory]:
    """Archive memories (kept, restorable); returns those archived, as they are now."""
    now = cx.now()
    done = []
    for store, m in chosen:
        with store.transaction():
            current = store.get(m.id)
            if current is None or current.status != Status.ACTIVE:
                continue
            archived = replace(current, status=Status.ARCHIVED, status_changed=now, updated=now)
            store.update_memory(current, archived, cx.actor, now, "forget")
            done.append(archived)
    return done


def describe_outcome(o: WriteOutcome) -> str:
    """One or two lines for the terminal."""
    where = "global store" if o.scope == Scope.GLOBAL else "project store"
    verb = {
        WriteEffect.STORED: f"Stored {o.memory.id} [{o.memory.type.value}] in the {where}",
        WriteEffect.REINFORCED: f"Reinforced existing memory {o.memory.id} ({o.reason})",
        WriteEffect.RESTORED: f"Restored archived memory {o.memory.id} (same text)",
        WriteEffect.DUPLICATE: f"Already remembered as {o.memory.id} ({o.reason}); nothing added",
    }[o.action]
    lines = [verb + (f", linked to {o.edges} related" if o.edges else "") + "."]
    if o.note:
        lines.append(f"  note: {o.note}")
    return "\n".join(lines)
