"""`cortex scrub`: run the sanitising gate again over what a store already holds.

For stores written by a version that let a secret through: every memory's content, summary,
tags and source go through the gate again; a changed memory is rewritten (journaled as `scrub`)
and the keyword index is rebuilt so its old terms go too. Two notes that redaction would make
identical both stay, told apart by their ids (never merged). Journal records written before
the scrub keep their payloads; they are counted so the report says what is left.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cortex.app import Cortex
from cortex.core.model import Memory, Scope, Status
from cortex.core.redact.secrets import redact_value
from cortex.core.text import content_hash
from cortex.core.write.sanitise import sanitise_memory

LIVE = (Status.ACTIVE, Status.ARCHIVED)


@dataclass(slots=True)
class ScrubbedMemory:
    id: str
    fields: list[str]  # which fields changed: content, summary, tags, source


@dataclass(slots=True)
class ScrubReport:
    scope: str
    memories: int = 0
    changed: list[ScrubbedMemory] = field(default_factory=list)
    journal_records_with_secrets: int = 0
    text_index_rebuilt: bool = False
    dry_run: bool = False


def _changed_fields(old: Memory, new: Memory) -> list[str]:
    names = ("content", "summary", "tags", "source")
    return [n for n in names if getattr(old, n) != getattr(new, n)]


def _scrubbed(m: Memory, taken: set[str]) -> Memory:
    clean = replace(sanitise_memory(m), id=m.id)
    if clean.content != m.content and clean.status in LIVE and clean.content_hash in taken:
        # Redaction made it equal to another note: keep both, told apart by id.
        content = f"{clean.content} (note {m.id})"
        clean = replace(clean, content=content, content_hash=content_hash(content))
    return clean


def scrub_store(cx: Cortex, scope: Scope, *, dry_run: bool = False) -> ScrubReport | None:
    """Scrub one store; None when it does not exist."""
    if not cx.store_path(scope).exists():
        return None
    store = cx.store(scope, create=False)
    if store is None:
        return None
    report = ScrubReport(scope.value, dry_run=dry_run)
    now = cx.now()
    with store.transaction():
        memories = store.all_memories()
        report.memories = len(memories)
        taken = {m.content_hash for m in memories if m.status in LIVE}
        for m in memories:
            clean = _scrubbed(m, taken)
            fields = _changed_fields(m, clean)
            if not fields:
                continue
            report.changed.append(ScrubbedMemory(m.id, fields))
            if not dry_run:
                store.update_memory(m, clean, cx.actor, now, "scrub")
                if clean.status in LIVE:
                    taken.discard(m.content_hash)
                    taken.add(clean.content_hash)
        report.journal_records_with_secrets = sum(
            1
            for row in store.journal_rows()
            if row.get("op") != "scrub" and redact_value(row.get("payload")) != row.get("payload")
        )
    if report.changed and not dry_run:
        store.rebuild_text_index()
        report.text_index_rebuilt = True
    return report


def scrub(cx: Cortex, *, dry_run: bool = False) -> list[ScrubReport]:
    """Scrub the project and global stores that exist."""
    out = []
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        found = scrub_store(cx, scope, dry_run=dry_run)
        if found is not None:
            out.append(found)
    return out
