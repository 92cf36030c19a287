"""The git-tracked projection: `cortex project-file` and `cortex import-projection`.

The file is rendered and parsed in `cortex.core.projection`; here it is read and written, and
an edited file's changes are applied to the project store in one transaction: new entries take
the write path (the sanitising gate, then the write gate), an edited entry becomes a new memory
superseding the old one (kept, superseded), a removed entry is forgotten (archived, kept).
Nothing is applied unless every entry of the file is valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from cortex.app import ID_BYTES, Cortex
from cortex.capture.apply import apply_plan
from cortex.capture.embed import embed_memories
from cortex.capture.manual import USER_CONFIDENCE, clean_input, where_in_git
from cortex.capture.write import fast_embedder, plan_candidate, redacted
from cortex.core.model import Candidate, Edge, EdgeType, Layer, Memory, Scope, Source, Status
from cortex.core.projection.markdown import (
    PROJECTED_TYPES,
    Entry,
    ProjectionSyntaxError,
    is_projected,
    parse,
    render,
)
from cortex.core.projection.plan import ImportPlan, file_entries, plan_import
from cortex.core.write import gate
from cortex.core.write.apply import DEFAULT_PRIORITY, WriteOutcome, superseded, supersedes_edge
from cortex.core.write.sanitise import sanitise_text
from cortex.errors import CortexError, InputError
from cortex.store.port import StoreAdmin

DEFAULT_PATH = Path("docs") / "memory.md"  # relative to the project root; `.memory/` is never tracked
CHUNK = 500  # ids per edge lookup
SHOWN_META = "projection.shown:"  # + the file's path: the entry ids it held when last written or imported


@dataclass(frozen=True, slots=True)
class FileReport:
    """What `cortex project-file` wrote."""

    path: Path
    entries: tuple[tuple[str, Memory], ...]  # (entry id, memory) in file order
    changed: bool  # False when the file already said exactly this


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What `cortex import-projection` changed (or, with --dry-run, would change)."""

    path: Path
    dry_run: bool
    plan: ImportPlan
    added: tuple[tuple[Entry, WriteOutcome], ...] = ()
    superseded: tuple[tuple[Memory, Entry, Memory], ...] = ()  # (old as it is now, entry, new)
    forgotten: tuple[Memory, ...] = ()
    retyped: tuple[Memory, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def resolve(cx: Cortex, path: Path | None) -> Path:
    """The projection file: `path` as given, else `docs/memory.md` in the project root."""
    return path if path is not None else cx.paths.root / DEFAULT_PATH


def projected(store: StoreAdmin | None) -> list[tuple[str, Memory]]:
    """The store's memories the file shows, as (entry id, memory) in file order."""
    if store is None:
        return []
    types = [t.value for t in PROJECTED_TYPES]
    current = [m for m in store.list_memories(statuses=("active",), types=types) if is_projected(m)]
    known: dict[str, Memory] = {m.id: m for m in current}
    edges: list[Edge] = []
    frontier = list(known)
    while frontier:  # down the supersedes chains: an edited entry keeps its first memory's id
        found: list[Edge] = []
        for i in range(0, len(frontier), CHUNK):
            ids = set(frontier[i : i + CHUNK])
            found += [
                e for e in store.edges(sorted(ids)) if e.type == EdgeType.SUPERSEDES and e.source in ids
            ]
        edges += found
        older = store.get_many(sorted({e.target for e in found} - set(known)))
        known.update(older)
        frontier = list(older)
    return file_entries(current, edges, known)


def _shown_key(cx: Cortex, path: Path) -> str:
    full = path.resolve()
    root = cx.paths.root.resolve()
    return SHOWN_META + (full.relative_to(root).as_posix() if full.is_relative_to(root) else str(full))


def _shown(cx: Cortex, store: StoreAdmin, path: Path) -> frozenset[str]:
    raw = store.get_meta(_shown_key(cx, path))
    return frozenset(json.loads(raw)) if raw else frozenset()


def _remember_shown(cx: Cortex, store: StoreAdmin, path: Path, ids: set[str]) -> None:
    store.set_meta(_shown_key(cx, path), json.dumps(sorted(ids)))


def project_file(cx: Cortex, path: Path | None = None) -> FileReport:
    """Write the projection of the project store to `path` (only when its text changes)."""
    target = resolve(cx, path)
    store = cx.store(Scope.PROJECT, create=False)
    entries = projected(store)
    text = render(entries)
    changed = not (target.is_file() and target.read_bytes() == text.encode("utf-8"))
    if changed:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(text.encode("utf-8"))
            tmp.replace(target)
        except OSError as exc:
            raise CortexError(f"cannot write {target}: {exc.strerror}", "pass a writable --path") from exc
    if store is not None and not store.readonly:
        with store.transaction():
            _remember_shown(cx, store, target, {key for key, _ in entries})
    return FileReport(target, tuple(entries), changed)


def read_entries(path: Path) -> list[Entry]:
    """The entries of a projection file, each checked as `cortex remember` checks text."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"no projection file at {path}", "write one with `cortex project-file`") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", "") from exc
    fix = "fix that line and import again; nothing was imported"
    try:
        entries = parse(text)
    except ProjectionSyntaxError as exc:
        raise InputError(f"{path}:{exc.line}: {exc.message}", fix) from None
    for e in entries:
        try:
            clean = clean_input(e.text)
        except InputError as exc:
            raise InputError(f"{path}:{e.line}: {exc.message}", fix) from None
        if not sanitise_text(clean).strip():
            raise InputError(f"{path}:{e.line}: nothing left after removing private and secret text", fix)
    return [replace(e, text=clean_input(e.text)) for e in entries]


def import_projection(cx: Cortex, path: Path | None = None, *, dry_run: bool = False) -> ImportReport:
    """Apply a teammate's edits of the projection file to the project store."""
    target = resolve(cx, path)
    entries = read_entries(target)
    if dry_run:
        store = cx.store(Scope.PROJECT, create=False)
        shown = _shown(cx, store, target) if store is not None else frozenset()
        return ImportReport(target, True, plan_import(entries, projected(store), shown))
    store = cx.write_store(Scope.PROJECT)
    source = where_in_git(cx)
    with store.transaction():  # planned inside the transaction: no writer slips in between
        plan = plan_import(entries, projected(store), _shown(cx, store, target))
        report = _apply(cx, store, plan, source, target)
        ids = (
            set(plan.matched.values())
            | {e.id for e in entries if e.id}
            | {o.memory.id for _, o in report.added}
        )
        _remember_shown(cx, store, target, ids)
    embedder = fast_embedder(cx)
    fresh = [o.memory for _, o in report.added if o.action.changed] + [new for _, _, new in report.superseded]
    if embedder is not None and fresh:
        embed_memories(cx, store, fresh, embedder)
    return report


def _apply(cx: Cortex, store: StoreAdmin, plan: ImportPlan, source: Source, path: Path) -> ImportReport:
    now = cx.now()
    tick = iter(now + timedelta(microseconds=i) for i in range(1_000_000))  # file order = time order
    forgotten = []
    for m in plan.forget:
        gone = replace(m, status=Status.ARCHIVED, status_changed=now, updated=now)
        store.update_memory(m, gone, cx.actor, now, "forget")
        forgotten.append(gone)
    replaced = []
    for old, e in plan.edit:
        at = next(tick)
        new = _write(cx, store, _candidate(e, old), source, at, instead_of=old).memory
        current = store.get(old.id)
        assert current is not None
        done = superseded(current, at)
        store.update_memory(current, done, cx.actor, at, "supersede")
        store.upsert_edge(supersedes_edge(new.id, old.id, at), cx.actor, at)
        replaced.append((done, e, new))
    added = []
    for e in plan.add:
        # A teammate's entry keeps its id here too (when free), so every clone shows the same file.
        keep = e.id if e.id and len(e.id) == 2 * ID_BYTES and store.get(e.id) is None else None
        added.append((e, _write(cx, store, _candidate(e, None), source, next(tick), memory_id=keep)))
    retyped = []
    for m, e in plan.retype:
        current = store.get(m.id)
        assert current is not None
        moved = replace(current, type=e.type, updated=now)
        store.update_memory(current, moved, cx.actor, now, "update")
        retyped.append(moved)
    notes = tuple(
        f"{path}:{e.line}: {o.reason} ({o.memory.id}); nothing added"
        for e, o in added
        if not o.action.changed or not is_projected(o.memory)
    )
    return ImportReport(
        path, False, plan, tuple(added), tuple(replaced), tuple(forgotten), tuple(retyped), notes
    )


def _candidate(e: Entry, like: Memory | None) -> Candidate:
    """The entry as a user's candidate; an edit keeps the old memory's priority, pin and tags."""
    return Candidate(
        content=e.text,
        type=e.type,
        layer=Layer.USER,
        confidence=USER_CONFIDENCE,
        priority=like.priority if like is not None else DEFAULT_PRIORITY[e.type],
        tags=like.tags if like is not None else (),
        pinned=like.pinned if like is not None else False,
    )


def _write(
    cx: Cortex,
    store: StoreAdmin,
    cand: Candidate,
    source: Source,
    at: datetime,
    *,
    instead_of: Memory | None = None,
    memory_id: str | None = None,
) -> WriteOutcome:
    """One candidate through the sanitising and write gates, inside the open transaction.

    An edit must leave a live memory other than the one it replaces: where the gate would fold
    the new text into the old memory (a small edit is a near-duplicate) or into a superseded
    one, the edited text is stored as a new memory instead."""
    cand = redacted(cand)
    plan = plan_candidate(cx, store, cand)
    if instead_of is not None and plan.action is not gate.WriteAction.INSERT:
        target = store.get(plan.target_id or "")
        if target is None or target.id == instead_of.id or target.status == Status.SUPERSEDED:
            plan = gate.plan_write(cand, exact=None, neighbours=[])
    return apply_plan(cx, store, cand, plan, source, at, memory_id=memory_id)
