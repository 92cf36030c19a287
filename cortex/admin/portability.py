"""Export and import as JSON lines: memories, edges and the journal, losslessly."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from cortex.app import Cortex
from cortex.core.graph import normalize_edge_type
from cortex.core.model import Edge, Memory, Scope, ScopeFilter, Status
from cortex.core.redact.secrets import redact_value
from cortex.core.serial import (
    dumps,
    edge_from_dict,
    edge_to_dict,
    format_time,
    memory_from_dict,
    memory_to_dict,
)
from cortex.core.write.sanitise import sanitise_memory
from cortex.errors import InputError
from cortex.recall.traverse import refresh_centrality
from cortex.store.packing import pack
from cortex.store.port import StoreAdmin
from cortex.version import __version__

log = logging.getLogger("cortex.admin.portability")

EXPORT_FORMAT = "cortex-export"
EXPORT_VERSION = 1
LIVE = (Status.ACTIVE, Status.ARCHIVED)
Progress = Callable[[int, int], None]


# -- export -------------------------------------------------------------------------------------
def export(cx: Cortex, out: TextIO, *, scope: str = "all") -> dict[str, dict[str, Any]]:
    """Write every memory, edge and journal record of the chosen stores as JSON lines."""
    stores = cx.read_stores(ScopeFilter(scope))
    out.write(
        dumps(
            {
                "kind": "header",
                "format": EXPORT_FORMAT,
                "version": EXPORT_VERSION,
                "cortex": __version__,
                "exported_at": format_time(cx.now()),
            }
        )
        + "\n"
    )
    summary: dict[str, dict[str, Any]] = {}
    for store in stores:
        memories = store.all_memories()
        edges = store.edges()
        journal = store.journal_rows()
        digest = store.state_digest()
        schema = store.stats().schema
        out.write(
            dumps(
                {
                    "kind": "store",
                    "scope": store.scope.value,
                    "schema": schema,
                    "digest": digest.digest,
                    "memories": len(memories),
                    "edges": len(edges),
                    "journal": len(journal),
                }
            )
            + "\n"
        )
        for m in memories:
            out.write(dumps({"kind": "memory", "memory": memory_to_dict(m)}) + "\n")
        for e in edges:
            out.write(dumps({"kind": "edge", "edge": edge_to_dict(e)}) + "\n")
        for row in journal:
            entry = {k: row[k] for k in ("seq", "at", "actor", "op", "memory_id", "payload")}
            out.write(dumps({"kind": "journal", "entry": entry}) + "\n")
        summary[store.scope.value] = {
            "memories": len(memories),
            "edges": len(edges),
            "journal": len(journal),
            "digest": digest.digest,
        }
    return summary


# -- import -------------------------------------------------------------------------------------
@dataclass(slots=True)
class Section:
    """One store's part of an export file."""

    scope: Scope
    digest: str = ""
    memories: list[Memory] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    journal: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class ImportReport:
    """Counts per outcome for one target store."""

    scope: Scope
    inserted: int = 0
    updated: int = 0  # the file had a newer version
    kept: int = 0  # the store's version is as new or newer: never overwritten
    duplicates: int = 0  # the same content already stored under another id
    conflicts: int = 0  # a newer version would duplicate another live memory's text
    edges: int = 0
    edges_skipped: int = 0
    journal: int = 0
    embedded: int = 0
    notes: list[str] = field(default_factory=list)


def parse_export(lines: Iterable[str]) -> list[Section]:
    """Read an export file into sections; raises InputError naming the first bad line."""
    sections: list[Section] = []
    seen_header = False
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            kind = record["kind"]
            if kind == "header":
                if record.get("format") != EXPORT_FORMAT or int(record.get("version", 0)) > EXPORT_VERSION:
                    raise ValueError(f"not a cortex export (format {record.get('format')!r})")
                seen_header = True
            elif not seen_header:
                raise ValueError("the file does not start with a cortex export header")
            elif kind == "store":
                sections.append(Section(Scope(record["scope"]), str(record.get("digest", ""))))
            elif not sections:
                raise ValueError("a record before any store section")
            elif kind == "memory":
                sections[-1].memories.append(memory_from_dict(record["memory"]))
            elif kind == "edge":
                sections[-1].edges.append(dict(record["edge"]))
            elif kind == "journal":
                sections[-1].journal.append(dict(record["entry"]))
            else:
                raise ValueError(f"unknown record kind {kind!r}")
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"line {n} of the import is not valid: {exc}",
                "pass a file written by `cortex export`",
            ) from None
    if not seen_header:
        raise InputError(
            "the import is empty or not a cortex export", "pass a file written by `cortex export`"
        )
    return sections


def _sanitised_edge(d: dict[str, Any]) -> Edge | None:
    etype = normalize_edge_type(str(d.get("type", "")))
    if etype is None:
        return None
    try:
        return edge_from_dict({**d, "type": etype.value})
    except (ValueError, KeyError):
        return None


def _import_memories(
    cx: Cortex, store: StoreAdmin, section: Section, report: ImportReport
) -> tuple[dict[str, str], set[str]]:
    """Insert or update memories; returns (incoming id -> stored id, ids inserted as they are)."""
    before = store.all_memories()
    by_hash: dict[str, str] = {}
    for m in sorted(before, key=lambda m: m.status not in LIVE):
        by_hash.setdefault(m.content_hash, m.id)
    live = {m.content_hash for m in before if m.status in LIVE}
    mapping: dict[str, str] = {}
    inserted: set[str] = set()
    now = cx.now()
    for m in section.memories:
        m = sanitise_memory(replace(m, scope=store.scope))  # an import is a write like any other
        current = store.get(m.id)
        if current is not None:
            mapping[m.id] = m.id
            if m.updated <= current.updated:
                report.kept += 1
                continue
            if m.status in LIVE and m.content_hash != current.content_hash and m.content_hash in live:
                report.conflicts += 1
                continue
            store.update_memory(current, m, cx.actor, now, "import")
            live.add(m.content_hash)
            report.updated += 1
        elif m.content_hash in by_hash:
            mapping[m.id] = by_hash[m.content_hash]
            report.duplicates += 1
        elif m.status in LIVE and m.content_hash in live:
            report.conflicts += 1
        else:
            store.import_memory(m)
            mapping[m.id] = m.id
            inserted.add(m.id)
            if m.status in LIVE:
                live.add(m.content_hash)
            report.inserted += 1
    return mapping, inserted


def _import_edges(
    cx: Cortex,
    store: StoreAdmin,
    section: Section,
    mapping: dict[str, str],
    inserted: set[str],
    report: ImportReport,
) -> None:
    now = cx.now()
    known = {m.id for m in store.all_memories()}
    for d in section.edges:
        e = _sanitised_edge(d)
        if e is None:
            report.edges_skipped += 1
            continue
        src, tgt = mapping.get(e.source, e.source), mapping.get(e.target, e.target)
        if src == tgt or src not in known or tgt not in known:
            report.edges_skipped += 1
            continue
        e = replace(e, source=src, target=tgt)
        if not store.import_edge(e, now):
            continue
        report.edges += 1
        if not (d.get("source") in inserted and d.get("target") in inserted):
            # Not described by the records copied below: journal it here.
            store.journal(cx.actor, "edge", src, {**edge_to_dict(e), "import": True}, now)


def _journal_to_copy(section: Section, inserted: set[str]) -> list[dict[str, Any]]:
    """The history of the memories this import inserted (others keep the store's own)."""
    out = []
    for row in section.journal:
        op, mid, payload = row.get("op"), row.get("memory_id"), row.get("payload")
        if op in ("edge", "edge_delete") and isinstance(payload, dict):
            if payload.get("source") in inserted and payload.get("target") in inserted:
                out.append(row)
        elif op == "access" and isinstance(payload, dict):
            ids = [i for i in payload.get("ids", []) if i in inserted]
            if ids:
                out.append({**row, "payload": {**payload, "ids": ids}})
        elif op == "merge" and mid is None and isinstance(payload, dict):
            if payload.get("into") in inserted:
                out.append(row)
        elif mid is not None and mid in inserted:
            out.append(row)
    # The history is stored text too: its payloads (content, summaries, tags) go through redaction.
    return [{**row, "payload": redact_value(row.get("payload"))} for row in out]


def import_section(cx: Cortex, store: StoreAdmin, section: Section) -> ImportReport:
    """Import one section into one store, in one transaction (all or nothing)."""
    report = ImportReport(store.scope)
    with store.transaction():
        mapping, inserted = _import_memories(cx, store, section, report)
        _import_edges(cx, store, section, mapping, inserted, report)
        report.journal = store.append_journal(_journal_to_copy(section, inserted))
        store.journal(
            cx.actor,
            "import",
            None,
            {
                k: getattr(report, k)
                for k in ("inserted", "updated", "kept", "duplicates", "conflicts", "edges")
            },
            cx.now(),
        )
        refresh_centrality(store)
    return report


def import_file(
    cx: Cortex, lines: Iterable[str], *, into: str | None = None, progress: Progress | None = None
) -> list[ImportReport]:
    """Import an export file; each section goes to its own store unless `into` names one."""
    sections = parse_export(lines)
    reports = []
    for n, section in enumerate(sections, 1):
        scope = Scope(into) if into else section.scope
        store = cx.write_store(scope)
        report = import_section(cx, store, section)
        report.embedded = _embed_new(cx, store, report)
        reports.append(report)
        if progress:
            progress(n, len(sections))
    return reports


def _embed_new(cx: Cortex, store: StoreAdmin, report: ImportReport) -> int:
    """Embed what the import brought when a cheap embedder is ready; else leave it to backfill."""
    if not (report.inserted or report.updated) or not store.vectors:
        return 0
    from cortex.admin.checks import memory_embedding_text
    from cortex.capture.write import fast_embedder

    embedder = fast_embedder(cx)
    if embedder is None:
        report.notes.append("imported memories are not embedded yet: run `cortex backfill`")
        return 0
    with store.transaction():
        table = store.ensure_vector_index(embedder.key, embedder.dim, cx.now())
    ids = store.unembedded(table)
    done = 0
    for start in range(0, len(ids), 64):
        batch = ids[start : start + 64]
        mems = store.get_many(batch)
        vecs = embedder.embed_documents([memory_embedding_text(mems[mid], cx.project_name) for mid in batch])
        with store.transaction():
            store.write_vectors(
                table, [(mid, pack([float(x) for x in v])) for mid, v in zip(batch, vecs, strict=True)]
            )
        done += len(batch)
    return done
