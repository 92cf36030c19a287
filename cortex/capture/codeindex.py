"""The index-code use case: store a file's symbols as raw code plus an embedded prose description."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from cortex.app import Cortex, new_id
from cortex.backends.port import Embedder
from cortex.backends.treesitter import choose_splitter
from cortex.capture.anchors import anchor_code
from cortex.capture.embed import embed_memories
from cortex.capture.write import fast_embedder
from cortex.core.code.pairing import CodePair, IndexReport, plan_pairs, split_target
from cortex.core.code.parse import Splitter, language_for, parse_symbols, top_level
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
from cortex.core.text import content_hash
from cortex.core.write.apply import DEFAULT_PRIORITY, new_memory
from cortex.core.write.sanitise import clean_summary, sanitise_text
from cortex.errors import InputError, NotFound
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.capture.codeindex")

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".memory", ".venv", "venv", "env", "node_modules", "__pycache__",
        "build", "dist", "target", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
        ".idea", ".vscode", "site-packages", ".eggs",
    }
)  # fmt: skip
MAX_FILE_BYTES = 1_000_000  # bigger files are generated or vendored, not code to recall
CODE_CONFIDENCE = 0.9
BULK_EMBED_MIN = 32  # below this, loading the bulk model costs more than it saves
CODE_TYPES = (MemoryType.CODE.value, MemoryType.CODE_DESCRIPTION.value)


# -- finding files ------------------------------------------------------------------------------
def resolve_target(cx: Cortex, target: str) -> tuple[Path, str | None]:
    """The file or directory named by `PATH[:SYMBOL]` (relative to the cwd, else the project)."""

    def locate(text: str) -> Path | None:
        p = Path(text).expanduser()
        for candidate in [p] if p.is_absolute() else [Path.cwd() / p, cx.paths.root / p]:
            if candidate.exists():
                return candidate.resolve()
        return None

    whole = locate(target)
    if whole is not None:
        return whole, None
    path, symbol = split_target(target)
    found = locate(path) if symbol else None
    if found is None:
        raise InputError(
            f"no such file or directory: {path}", "pass PATH or PATH:SYMBOL, e.g. src/app.py:main"
        )
    if found.is_dir():
        raise InputError(f"{path} is a directory; a SYMBOL needs a file", "pass FILE:SYMBOL")
    return found, symbol


def iter_code_files(folder: Path) -> Iterator[Path]:
    """Source files under `folder` in a stable order, skipping VCS, caches and environments."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if language_for(name) is not None:
                yield Path(dirpath) / name


def _relative(cx: Cortex, path: Path) -> str:
    try:
        return path.relative_to(cx.paths.root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def read_source(path: Path) -> tuple[str | None, str]:
    """A source file's text, or (None, why) for binary, huge or undecodable files."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, f"larger than {MAX_FILE_BYTES // 1_000_000} MB"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable: {exc.strerror}"
    if b"\x00" in data[:8192]:
        return None, "binary"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


# -- writing ------------------------------------------------------------------------------------
def _memory(
    cx: Cortex, kind: MemoryType, content: str, summary: str, tags: tuple[str, ...], rel: str
) -> Memory:
    cand = Candidate(
        content,
        kind,
        Layer.STRUCTURAL,
        summary=summary,
        confidence=CODE_CONFIDENCE,
        priority=DEFAULT_PRIORITY[kind],
        tags=tags,
        files=(rel,),
    )
    return new_memory(new_id(), cand, Scope.PROJECT, Source(), cx.now())


def _refreshed(cx: Cortex, old: Memory, content: str, summary: str) -> Memory:
    now = cx.now()
    revived = old.status is not Status.ACTIVE
    return replace(
        old,
        content=content,
        content_hash=content_hash(content),
        summary=summary,
        updated=now,
        status=Status.ACTIVE,
        status_changed=now if revived else old.status_changed,
        low_since=None,
    )


def _write_pair(cx: Cortex, store: MemoryStore, pair: CodePair, rel: str) -> tuple[str, Memory | None]:
    """Insert or update one pair inside the caller's transaction: (action, description to embed)."""
    code, prose = sanitise_text(pair.code), sanitise_text(pair.description)
    pair = replace(
        pair,
        code_summary=clean_summary(pair.code_summary),
        description_summary=clean_summary(pair.description_summary),
    )
    tags = (pair.key, pair.symbol.language)
    found = store.tagged(pair.key, CODE_TYPES)
    old_code = next((m for m in found if m.type is MemoryType.CODE), None)
    old_desc = next((m for m in found if m.type is MemoryType.CODE_DESCRIPTION), None)
    now = cx.now()
    if old_code is not None and old_desc is not None:
        same = (old_code.content, old_code.summary, old_desc.content) == (code, pair.code_summary, prose)
        if same and old_code.status is old_desc.status is Status.ACTIVE:
            return "unchanged", None
        new_code = _refreshed(cx, old_code, code, pair.code_summary)
        new_desc = _refreshed(cx, old_desc, prose, pair.description_summary)
        store.update_memory(old_code, new_code, cx.actor, now, "index-code")
        store.update_memory(old_desc, new_desc, cx.actor, now, "index-code")
        code_mem, desc_mem, action = new_code, new_desc, "updated"
    else:
        for clash in (store.by_hash(content_hash(code)), store.by_hash(content_hash(prose))):
            if clash is not None and clash.status in (Status.ACTIVE, Status.ARCHIVED):
                return "clash", None
        code_mem = _memory(cx, MemoryType.CODE, code, pair.code_summary, tags, rel)
        desc_mem = _memory(cx, MemoryType.CODE_DESCRIPTION, prose, pair.description_summary, tags, rel)
        store.insert_memory(code_mem, cx.actor, now, "index-code")
        store.insert_memory(desc_mem, cx.actor, now, "index-code")
        action = "stored"
    linked = any(e.type is EdgeType.SOURCE_OF and e.target == code_mem.id for e in store.edges([desc_mem.id]))
    if not linked:
        store.upsert_edge(
            Edge(desc_mem.id, code_mem.id, EdgeType.SOURCE_OF, 1.0, EdgeStatus.ACTIVE, now), cx.actor, now
        )
    embed = desc_mem if action == "stored" or old_desc is None or old_desc.content != prose else None
    return action, embed


def _retire_missing(cx: Cortex, store: MemoryStore, rel: str, keep: set[str]) -> list[str]:
    """Archive the pairs of symbols that are no longer in the file."""
    prefix = rel + ":"
    gone: list[str] = []
    now = cx.now()
    for m in store.tag_prefix(prefix, CODE_TYPES):
        key = next((t for t in m.tags if t.startswith(prefix)), None)
        if key is None or key in keep or m.status is not Status.ACTIVE:
            continue
        store.update_memory(
            m,
            replace(m, status=Status.ARCHIVED, status_changed=now, updated=now),
            cx.actor,
            now,
            "index-code",
        )
        if key not in gone:
            gone.append(key)
    return gone


def index_file(
    cx: Cortex,
    store: MemoryStore,
    path: Path,
    symbol: str | None,
    report: IndexReport,
    split: Splitter = parse_symbols,
) -> list[Memory]:
    """Index one file (or one symbol of it) in one transaction, split by `split` (tree-sitter or
    the regex splitter); returns descriptions to embed."""
    rel = _relative(cx, path)
    text, why = read_source(path)
    if text is None:
        report.skipped.append((rel, why))
        return []
    pairs = plan_pairs(rel, text, symbol, split)
    if symbol and not pairs:
        names = ", ".join(s.qualname for s in top_level(split(rel, text))[:12])
        raise NotFound(f"no symbol {symbol!r} in {rel}", f"symbols there: {names or '(none)'}")
    if symbol and len(pairs) > 1:
        names = ", ".join(p.symbol.qualname for p in pairs)
        raise InputError(
            f"{symbol!r} is ambiguous in {rel} ({names})", f"name one, e.g. {rel}:{pairs[0].symbol.qualname}"
        )
    to_embed = []
    with store.transaction():
        for pair in pairs:
            action, embed = _write_pair(cx, store, pair, rel)
            if action == "clash":
                report.skipped.append((pair.key, "the same text is already stored as another memory"))
                continue
            getattr(report, action).append(pair.key)
            if embed is not None:
                to_embed.append(embed)
        if symbol is None:
            report.removed.extend(_retire_missing(cx, store, rel, {p.key for p in pairs}))
    report.files += 1
    return to_embed


def _embedder(cx: Cortex, count: int) -> Embedder | None:
    embedder = fast_embedder(cx)
    if embedder is None and count >= BULK_EMBED_MIN:
        embedder = cx.bulk_embedder().backend
    return embedder


def index_code(cx: Cortex, target: str, *, progress: Callable[[int, int], None] | None = None) -> IndexReport:
    """`cortex index-code PATH[:SYMBOL]`: pair raw code with an embedded prose description."""
    path, symbol = resolve_target(cx, target)
    files = list(iter_code_files(path)) if path.is_dir() else [path]
    store = cx.write_store(Scope.PROJECT)
    report = IndexReport()
    split = choose_splitter()  # tree-sitter where a grammar is installed, else the regex splitter
    pending: list[Memory] = []
    for n, file in enumerate(files, 1):
        pending.extend(index_file(cx, store, file, symbol, report, split))
        if progress:
            progress(n, len(files))
    anchor_code(cx, store, [*report.stored, *report.updated, *report.unchanged])  # as the code is now
    if pending:
        embedder = _embedder(cx, len(pending))
        if embedder is not None:
            for start in range(0, len(pending), 64):
                batch = pending[start : start + 64]
                if embed_memories(cx, store, batch, embedder):
                    report.embedded += len(batch)
        if report.embedded < len(pending):
            report.note = (
                f"{len(pending) - report.embedded} descriptions not embedded yet: keyword recall "
                "finds them now, `cortex backfill` adds vectors"
            )
    return report
