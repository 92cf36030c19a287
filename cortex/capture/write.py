"""The write path shared by `cortex remember` and the extraction worker: redact, gate, apply, embed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from cortex.app import Cortex, looks_like_id, new_id
from cortex.core.extract.markers import score_sentence
from cortex.core.extract.transcript_model import Role
from cortex.core.model import (
    Candidate,
    Edge,
    EdgeStatus,
    EdgeType,
    Layer,
    Memory,
    MemoryType,
    Scope,
    Source,
    Status,
)
from cortex.core.recall import query
from cortex.core.redact.secrets import redact
from cortex.core.serial import memory_to_dict
from cortex.core.text import (
    content_hash,
    embedding_text,
    first_line_summary,
    jaccard,
    normalize_text,
    word_set,
)
from cortex.core.write import gate
from cortex.errors import InputError
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.capture.write")

MAX_CONTENT_CHARS = 20_000  # a memory is a note, not a file; code goes through index-code
NEIGHBOURS = 8
HINT_STRENGTH = 0.5  # a model's guess at a link, below the gate's own relates_to edges
HINT_MIN_OVERLAP = 0.2  # a hint described in words must share this much vocabulary with its match
GLOBAL_SCOPE_MIN_CONFIDENCE = 0.8
DEFAULT_PRIORITY = {
    MemoryType.ARCHITECTURE: 7,
    MemoryType.DECISION: 7,
    MemoryType.GOTCHA: 6,
    MemoryType.PATTERN: 6,
    MemoryType.PREFERENCE: 6,
    MemoryType.CODE_DESCRIPTION: 5,
    MemoryType.CONTEXT: 4,
    MemoryType.CODE: 4,
    MemoryType.PROGRESS: 3,
}
USER_CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What happened to one candidate."""

    action: str  # stored | reinforced | duplicate | restored | superseded-duplicate
    memory: Memory
    scope: Scope
    reason: str
    edges: int = 0
    embedded: bool = False
    note: str = ""


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


# -- gathering ---------------------------------------------------------------------------------
def _neighbours(store: Store, cand: Candidate) -> list[gate.Neighbour]:
    match = query.fts_match_sql(cand.content)
    if not match:
        return []
    found = store.fts_search(match, NEIGHBOURS, ("active", "archived", "superseded"))
    mems = store.get_many([mid for mid, _ in found])
    mine = word_set(cand.content)
    return [gate.Neighbour(m, jaccard(mine, word_set(m.content))) for m in mems.values()]


def _with_cosines(
    cx: Cortex,
    store: Store,
    cand: Candidate,
    neighbours: list[gate.Neighbour],
    ids: Sequence[str],
    embedder: Any,
) -> list[gate.Neighbour]:
    """Fill in cosines for the uncertain-band neighbours (embedding only when asked)."""
    texts = [memory_text(cx, cand.content, cand.type, store.scope)]
    by_id = {n.memory.id: n for n in neighbours}
    texts += [memory_text(cx, by_id[i].memory.content, by_id[i].memory.type, store.scope) for i in ids]
    vecs = embedder.embed_documents(texts)
    out = []
    for n in neighbours:
        if n.memory.id in ids:
            k = list(ids).index(n.memory.id) + 1
            n = replace(n, cosine=float(vecs[0] @ vecs[k]))
        out.append(n)
    return out


def memory_text(cx: Cortex, content: str, mem_type: MemoryType, scope: Scope) -> str:
    """What gets embedded for a memory."""
    return embedding_text(content, mem_type.value, cx.project_name if scope == Scope.PROJECT else None)


# -- applying ----------------------------------------------------------------------------------
def _new_memory(cand: Candidate, scope: Scope, source: Source, now: datetime) -> Memory:
    content = cand.content
    return Memory(
        id=new_id(),
        content=content,
        summary=cand.summary or first_line_summary(content),
        type=cand.type,
        scope=scope,
        confidence=round(min(max(cand.confidence, 0.0), 1.0), 4),
        priority=min(max(int(cand.priority), 1), 10),
        pinned=cand.pinned,
        source=replace(source, files=tuple(dict.fromkeys([*source.files, *cand.files]))),
        tags=tuple(dict.fromkeys(cand.tags)),
        access_count=0,
        last_accessed=None,
        created=now,
        updated=now,
        status=Status.ACTIVE,
        content_hash=content_hash(content),
    )


def _apply(
    cx: Cortex, store: Store, cand: Candidate, plan: gate.WritePlan, source: Source, now: datetime
) -> tuple[str, Memory, int]:
    """Carry out a plan inside the caller's transaction; returns (action, memory, edges)."""
    if plan.action == gate.WriteAction.INSERT:
        memory = _new_memory(cand, store.scope, source, now)
        store.insert_memory(memory, cx.actor, now)
        target = memory.id
        action = "stored"
    else:
        current = store.get(plan.target_id or "")
        if current is None:
            raise RuntimeError(f"gate planned on a missing memory {plan.target_id}")
        memory = current
        target = current.id
        if plan.action == gate.WriteAction.REINFORCE or plan.restore:
            changed = current
            if plan.action == gate.WriteAction.REINFORCE:
                content = plan.content or current.content
                changed = replace(
                    changed,
                    confidence=plan.confidence if plan.confidence is not None else current.confidence,
                    access_count=current.access_count + plan.access_delta,
                    tags=plan.tags or current.tags,
                    source=replace(current.source, files=plan.files or current.source.files),
                    content=content,
                    content_hash=content_hash(content),
                    summary=current.summary if content == current.content else first_line_summary(content),
                    updated=now,
                    low_since=None,
                )
            if plan.restore:
                changed = replace(
                    changed, status=Status.ACTIVE, status_changed=now, updated=now, low_since=None
                )
            store.update_memory(
                current,
                changed,
                cx.actor,
                now,
                "reinforce" if plan.action == gate.WriteAction.REINFORCE else "restore",
            )
            memory = changed
            action = "reinforced" if plan.action == gate.WriteAction.REINFORCE else "restored"
        else:
            action = "duplicate"
    edges = 0
    for pe in plan.edges:
        src = pe.source or target
        if src == pe.target or pe.type == EdgeType.SUPERSEDES:
            continue
        store.upsert_edge(Edge(src, pe.target, pe.type, pe.strength, pe.status, now), cx.actor, now)
        edges += 1
    for other, edge_type in _hinted_edges(store, cand, target):
        store.upsert_edge(
            Edge(target, other, edge_type, HINT_STRENGTH, EdgeStatus.SUGGESTED, now), cx.actor, now
        )
        edges += 1
    return action, memory, edges


def _hinted_edges(store: Store, cand: Candidate, target: str) -> list[tuple[str, EdgeType]]:
    """The memories an extractor's edge hints name (by id, else by their best text match).

    Hints come from a model, so they only ever become `suggested` links for the user to review,
    and never `supersedes` (a human decision)."""
    out: dict[str, EdgeType] = {}
    for ref, edge_type in cand.edge_hints:
        if edge_type == EdgeType.SUPERSEDES or not ref.strip():
            continue
        found = store.get(ref.strip().lower()) if looks_like_id(ref) else None
        if found is None:
            match = query.fts_match_sql(ref)
            ranked = store.fts_search(match, 1, ("active",)) if match else []
            best = store.get(ranked[0][0]) if ranked else None
            if best is not None and jaccard(word_set(ref), word_set(best.content)) >= HINT_MIN_OVERLAP:
                found = best
        if found is not None and found.id != target:
            out.setdefault(found.id, edge_type)
    return list(out.items())


def candidate_scope(cand: Candidate) -> Scope:
    """The store a candidate belongs in: global only when the extractor is confident it is not
    project-specific."""
    if cand.scope == Scope.GLOBAL or cand.global_confidence >= GLOBAL_SCOPE_MIN_CONFIDENCE:
        return Scope.GLOBAL
    return Scope.PROJECT


def redacted(cand: Candidate) -> Candidate:
    """The candidate with secrets and private text removed and its content normalised."""
    red = redact(cand.content)
    return replace(cand, content=normalize_text(red.text), summary=redact(cand.summary).text)


def plan_candidate(cx: Cortex, store: Store, cand: Candidate, embedder: Any = None) -> gate.WritePlan:
    """The write gate's plan for a redacted candidate against `store`; with an embedder, the
    neighbours in the uncertain band are compared by cosine too."""
    exact = store.by_hash(content_hash(cand.content))
    neighbours = _neighbours(store, cand)
    plan = gate.plan_write(cand, exact=exact, neighbours=neighbours)
    if plan.needs_cosine and embedder is not None:
        neighbours = _with_cosines(cx, store, cand, neighbours, plan.needs_cosine, embedder)
        plan = gate.plan_write(cand, exact=exact, neighbours=neighbours)
    return plan


def write_candidate(
    cx: Cortex,
    cand: Candidate,
    source: Source,
    *,
    scope: Scope | None = None,
    embedder: Any = None,
) -> WriteOutcome:
    """Redact, gate and store one candidate; embed it when an embedder is given."""
    cand = redacted(cand)
    if not cand.content:
        raise InputError("nothing left to store after removing private and secret text", "")
    if scope is None:
        scope = candidate_scope(cand)
    store = cx.write_store(scope)
    chash = content_hash(cand.content)
    neighbours = _neighbours(store, cand)
    plan = gate.plan_write(cand, exact=store.by_hash(chash), neighbours=neighbours)
    if plan.needs_cosine and embedder is not None:
        try:
            neighbours = _with_cosines(cx, store, cand, neighbours, plan.needs_cosine, embedder)
            plan = gate.plan_write(cand, exact=store.by_hash(chash), neighbours=neighbours)
        except Exception as exc:  # the uncertain band then gets suggested edges
            log.warning("cosine for the write gate failed: %s", exc)
    now = cx.now()
    with store.transaction():
        exact = store.by_hash(chash)  # another writer may have stored it meanwhile
        if exact is not None and plan.action != gate.WriteAction.SKIP:
            plan = gate.plan_write(cand, exact=exact, neighbours=neighbours)
        action, memory, edges = _apply(cx, store, cand, plan, source, now)
    embedded = False
    if embedder is not None and action in ("stored", "reinforced", "restored"):
        embedded = embed_memories(cx, store, [memory], embedder)
    return WriteOutcome(action, memory, scope, plan.reason, edges, embedded)


def write_batch(cx: Cortex, store: Store, items: Sequence[tuple[Candidate, Source]]) -> list[WriteOutcome]:
    """Redact, gate and apply candidates in order, inside the caller's open transaction on `store`.

    Nothing is embedded: the worker commits a chunk's candidates together with its transcript
    cursor (so a kill -9 leaves both or neither) and embeds after the commit. Candidates left
    empty by redaction are dropped.
    """
    now = cx.now()
    out = []
    for cand, source in items:
        cand = redacted(cand)
        if not cand.content:
            continue
        plan = plan_candidate(cx, store, cand)
        action, memory, edges = _apply(cx, store, cand, plan, source, now)
        out.append(WriteOutcome(action, memory, store.scope, plan.reason, edges))
    return out


def embed_memories(cx: Cortex, store: Store, memories: Sequence[Memory], embedder: Any) -> bool:
    """Embed and store vectors for memories (never code); False when it could not."""
    from cortex.capture.ingest import write_embeddings  # it imports this module

    todo = [m for m in memories if m.type != MemoryType.CODE]
    if not todo or not store.vectors:
        return False
    try:
        # One path for every writer: the memory's vector plus the windows of a long memory.
        write_embeddings(cx, store, todo, embedder)
        return True
    except Exception as exc:  # the memory is stored; backfill embeds it later
        log.warning("embedding failed, left for backfill: %s", exc)
        return False


# -- use cases ---------------------------------------------------------------------------------
def fast_embedder(cx: Cortex) -> Any:
    """An embedder that is cheap to load here (the ONNX export), else None: never load torch."""
    choice = cx.query_embedder() if _onnx_ready(cx) else None
    return choice.embedder if choice is not None else None


def _onnx_ready(cx: Cortex) -> bool:
    if cx._query_embedder is not None:  # injected (tests) or already loaded
        return cx._query_embedder.embedder is not None
    if cx.settings.embedder == "none":
        return False
    try:
        from pathlib import Path

        from cortex.backends import local as embed

        model_path = Path(cx.settings.model_path) if cx.settings.model_path else None
        return embed.describe_embedders(model_path, cx.paths.home).get("query_backend") == "onnx"
    except Exception:
        return False


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
    outcome = write_candidate(cx, cand, source or Source(), scope=scope, embedder=fast_embedder(cx))
    note = ""
    if outcome.action != "stored" and (pin or priority):
        outcome = _upgrade(cx, outcome, pin, priority)
    if old is not None:
        supersede(cx, outcome.memory.id, old.id)
        note = f"supersedes {old.id}"
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


def _upgrade(cx: Cortex, outcome: WriteOutcome, pin: bool, priority: int | None) -> WriteOutcome:
    """A repeated remember with --pin/--priority still applies them to the existing memory."""
    store = cx.write_store(outcome.scope)
    now = cx.now()
    with store.transaction():
        current = store.get(outcome.memory.id)
        if current is None:
            return outcome
        changed = replace(
            current,
            pinned=current.pinned or pin,
            priority=priority or current.priority,
            updated=now,
        )
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
            old_store.update_memory(
                current,
                replace(current, status=Status.SUPERSEDED, status_changed=now, updated=now),
                cx.actor,
                now,
                "supersede",
            )
    with new_store.transaction():
        new_store.upsert_edge(
            Edge(new.id, old.id, EdgeType.SUPERSEDES, 1.0, EdgeStatus.ACTIVE, now), cx.actor, now
        )
    return new, old


def select_for_forget(cx: Cortex, target: str, limit: int) -> list[tuple[Store, Memory]]:
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
        store = cx.store(h.memory.scope, create=False)
        if store is not None and h.memory.status == Status.ACTIVE:
            out.append((store, h.memory))
    return out


def forget(cx: Cortex, chosen: Sequence[tuple[Store, Memory]]) -> list[Memory]:
    """Archive memories (kept, restorable); returns those archived."""
    now = cx.now()
    done = []
    for store, m in chosen:
        with store.transaction():
            current = store.get(m.id)
            if current is None or current.status != Status.ACTIVE:
                continue
            store.update_memory(
                current,
                replace(current, status=Status.ARCHIVED, status_changed=now, updated=now),
                cx.actor,
                now,
                "forget",
            )
            done.append(current)
    return done


def describe_outcome(o: WriteOutcome) -> str:
    """One or two lines for the terminal."""
    where = "global store" if o.scope == Scope.GLOBAL else "project store"
    verb = {
        "stored": f"Stored {o.memory.id} [{o.memory.type.value}] in the {where}",
        "reinforced": f"Reinforced existing memory {o.memory.id} ({o.reason})",
        "restored": f"Restored archived memory {o.memory.id} (same text)",
        "duplicate": f"Already remembered as {o.memory.id} ({o.reason}); nothing added",
    }[o.action]
    lines = [verb + (f", linked to {o.edges} related" if o.edges else "") + "."]
    if o.note:
        lines.append(f"  note: {o.note}")
    return "\n".join(lines)


def outcome_dict(o: WriteOutcome) -> dict[str, Any]:
    """A write outcome as JSON-able data."""
    return {
        "action": o.action,
        "reason": o.reason,
        "scope": o.scope.value,
        "edges": o.edges,
        "embedded": o.embedded,
        "note": o.note,
        "memory": memory_to_dict(o.memory),
    }
