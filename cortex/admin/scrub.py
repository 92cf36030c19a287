"""`cortex scrub`: run the sanitising gate again over what a store already holds.

For stores written by a version that let a secret through: every memory's content, summary,
tags and source go through the gate again; a changed memory is rewritten (journaled as `scrub`)
and the keyword index is rebuilt so its old terms go too. Two notes that redaction would make
identical both stay, told apart by their ids (never merged).

The journal is append-only, with one exception made for privacy: payloads of earlier records
that still hold redactable text are redacted in place (identifiers, hashes and times are left
as they are). History then still replays to the live state: where a rewritten record would
change what a memory replays to, a `scrub` record with the memory's whole current state
follows, and one more `scrub` record says how many records were rewritten. Last, the file is
compacted and the WAL emptied, so the old text is gone from the disk files, not only the tables,
and the briefing is rendered again. Checkpoints taken earlier are copies made before the scrub:
they are left as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from cortex.app import Cortex
from cortex.core.digest import digest_state
from cortex.core.model import Memory, Scope, Status
from cortex.core.redact.secrets import redact_value
from cortex.core.replay import replay
from cortex.core.serial import memory_from_dict, memory_to_dict
from cortex.core.text import content_hash
from cortex.core.write.sanitise import sanitise_memory
from cortex.store.port import StoreAdmin

LIVE = (Status.ACTIVE, Status.ARCHIVED)
# Payload keys that name or date things, never free text: left as they are.
IDENTITY_KEYS = frozenset(
    {
        "id", "ids", "content_hash", "into", "absorbed", "target", "type", "scope", "status",
        "created", "updated", "last_accessed", "low_since", "status_changed", "at",
    }
)  # fmt: skip


@runtime_checkable
class JournalScrub(Protocol):
    """What a store offers for scrubbing its history (the SQLite adapter)."""

    def rewrite_journal_payloads(self, payloads: dict[int, Any]) -> int: ...
    def purge_free_space(self) -> None: ...


@dataclass(slots=True)
class ScrubbedMemory:
    id: str
    fields: list[str]  # which fields changed: content, summary, tags, source


@dataclass(slots=True)
class ScrubReport:
    scope: str
    memories: int = 0
    changed: list[ScrubbedMemory] = field(default_factory=list)
    journal_records_scrubbed: int = 0  # earlier records whose payload was redacted (would be, dry run)
    journal_records_with_secrets: int = 0  # records still holding redactable text afterwards
    text_index_rebuilt: bool = False
    file_compacted: bool = False
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


def scrub_payload(payload: Any) -> Any:
    """A journal payload with its free text redacted; identifiers, hashes and times kept."""
    if not isinstance(payload, Mapping):
        return redact_value(payload)
    return {
        key: value
        if key in IDENTITY_KEYS or (key == "source" and isinstance(value, str))  # an edge's end
        else _redact_field(key, value)
        for key, value in payload.items()
    }


def _redact_field(key: str, value: Any) -> Any:
    out = redact_value({key: value})  # judged under its key, as in the payload
    return out[key] if isinstance(out, dict) else value


def _scrub_memories(cx: Cortex, store: StoreAdmin, report: ScrubReport) -> None:
    memories = store.all_memories()
    report.memories = len(memories)
    taken = {m.content_hash for m in memories if m.status in LIVE}
    for m in memories:
        clean = _scrubbed(m, taken)
        fields = _changed_fields(m, clean)
        if not fields:
            continue
        report.changed.append(ScrubbedMemory(m.id, fields))
        if not report.dry_run:
            store.update_memory(m, clean, cx.actor, cx.now(), "scrub")
            if clean.status in LIVE:
                taken.discard(m.content_hash)
                taken.add(clean.content_hash)


def _scrub_journal(cx: Cortex, store: StoreAdmin, report: ScrubReport) -> None:
    cleaned = {}
    touched: set[str] = set()
    for row in store.journal_rows():
        payload = scrub_payload(row.get("payload"))
        if payload != row.get("payload"):
            cleaned[int(row["seq"])] = payload
            if row.get("memory_id"):
                touched.add(str(row["memory_id"]))
    if report.dry_run or not cleaned or not isinstance(store, JournalScrub):
        report.journal_records_with_secrets = len(cleaned)
        report.journal_records_scrubbed = len(cleaned) if report.dry_run else 0
        return
    report.journal_records_scrubbed = store.rewrite_journal_payloads(cleaned)
    now = cx.now()
    replayed = replay(store.journal_rows()).memories
    live = {m.id: m for m in store.all_memories() if m.id in touched}
    for mid, m in sorted(live.items()):
        seen = replayed.get(mid)
        if seen is None or digest_state([memory_from_dict(seen)], []) != digest_state([m], []):
            store.journal(cx.actor, "scrub", mid, memory_to_dict(m), now)  # history replays to it
    store.journal(cx.actor, "scrub", None, {"journal_records_redacted": len(cleaned)}, now)


def scrub_store(cx: Cortex, scope: Scope, *, dry_run: bool = False) -> ScrubReport | None:
    """Scrub one store; None when it does not exist."""
    if not cx.store_path(scope).exists():
        return None
    store = cx.store(scope, create=False)
    if store is None:
        return None
    report = ScrubReport(scope.value, dry_run=dry_run)
    with store.transaction():
        _scrub_memories(cx, store, report)
        _scrub_journal(cx, store, report)
    if dry_run or not (report.changed or report.journal_records_scrubbed):
        return report
    if report.changed:
        store.rebuild_text_index()
        report.text_index_rebuilt = True
    if isinstance(store, JournalScrub):
        store.purge_free_space()
        report.file_compacted = True
    return report


def scrub(cx: Cortex, *, dry_run: bool = False) -> list[ScrubReport]:
    """Scrub the project and global stores that exist; the briefing is rendered again after a
    change, so the rules file and its caches lose the old text too."""
    out = []
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        found = scrub_store(cx, scope, dry_run=dry_run)
        if found is not None:
            out.append(found)
    if not dry_run and any(r.changed for r in out):
        from cortex.briefing.deliver import refresh_briefing

        refresh_briefing(cx)
    return out
