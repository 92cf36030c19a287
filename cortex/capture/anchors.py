"""Record the code anchors of memories as they are written: what each saw of the code it names.

Per file a memory names (its recorded files, paths in its text, `path:Symbol` references) that
exists in the project: the symbols of it the memory names, each with a hash of its text, or
else the whole file with git's blob id of it as it is in the work tree now, and HEAD's commit.
Written after the memory's own transaction (a crash in between leaves a memory unanchored,
never a wrong anchor); rewriting a memory's anchors is how `index-code` refreshes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from cortex.app import Cortex
from cortex.briefing.stale import _relative_path
from cortex.core.code.anchors import MAX_REFERENCES, Anchor, blob_id, named_paths, named_symbols, symbol_hash
from cortex.core.code.parse import CodeSymbol, language_for, parse_symbols
from cortex.core.model import Memory, MemoryType, Scope, Status
from cortex.shell import git
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.capture.anchors")

MAX_FILE_BYTES = 1_000_000  # as `index-code`: bigger files are generated or vendored


def _read(root: Path, rel: str) -> bytes | None:
    path = root / rel
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _tag_symbols(memory: Memory) -> dict[str, set[str]]:
    """`path:Symbol` tags (as `index-code` gives its pairs) of files the memory records."""
    out: dict[str, set[str]] = {}
    for tag in memory.tags:
        path, sep, symbol = tag.rpartition(":")
        if sep and path in memory.source.files and symbol:
            out.setdefault(path, set()).add(symbol)
    return out


class _Files:
    """Each file read, hashed and split once per recording (index-code anchors many symbols of
    one file)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.read: dict[str, bytes | None] = {}
        self.symbols: dict[str, list[CodeSymbol]] = {}

    def data(self, rel: str) -> bytes | None:
        if rel not in self.read:
            self.read[rel] = _read(self.root, rel)
        return self.read[rel]

    def split(self, rel: str, data: bytes) -> list[CodeSymbol]:
        if rel not in self.symbols:
            try:
                self.symbols[rel] = parse_symbols(rel, data.decode("utf-8"))
            except UnicodeDecodeError:
                self.symbols[rel] = []
        return self.symbols[rel]


def plan_anchors(
    root: Path, memory: Memory, commit: str | None, now: datetime, files: _Files | None = None
) -> list[Anchor]:
    """The anchors of one memory against the work tree under `root`."""
    files = files or _Files(root)
    named = named_paths(memory.content, memory.source.files)
    for path, symbols in _tag_symbols(memory).items():
        named.setdefault(path, set()).update(symbols)
    anchors: list[Anchor] = []
    seen: set[str] = set()
    for raw, explicit in named.items():
        rel = _relative_path(raw, root)
        if rel is None or rel in seen or len(seen) >= MAX_REFERENCES:
            continue
        data = files.data(rel)
        if data is None:
            continue
        seen.add(rel)
        chosen = []
        # Raw code names every symbol it calls: only its own (a tag) anchors it to a symbol.
        if explicit or (language_for(rel) is not None and memory.type is not MemoryType.CODE):
            chosen = named_symbols(memory.content, files.split(rel, data), explicit)
        blob = blob_id(data)
        if chosen:
            anchors += [Anchor(rel, s.qualname, symbol_hash(s.code), commit, now, blob=blob) for s in chosen]
        else:
            anchors.append(Anchor(rel, "", blob, commit, now, blob=blob))
    return anchors


def record_anchors(cx: Cortex, store: MemoryStore, memories: Iterable[Memory]) -> int:
    """Anchor project memories to the code they name now; returns how many have anchors."""
    mine = [m for m in memories if m.scope is Scope.PROJECT]
    if store.scope is not Scope.PROJECT or store.readonly or not mine:
        return 0
    root = cx.paths.root
    commit = git.read_head_ref(root).sha
    now = cx.now()
    files = _Files(root)
    planned = {m.id: plan_anchors(root, m, commit, now, files) for m in mine}
    have = store.read_anchors(list(planned))
    changed = {mid: found for mid, found in planned.items() if found or mid in have}
    if changed:
        with store.transaction():
            for mid, found in changed.items():
                store.write_anchors(mid, found)
    return sum(1 for found in planned.values() if found)


def record_quietly(cx: Cortex, store: MemoryStore, memories: Iterable[Memory]) -> None:
    """`record_anchors` that never fails a write: anchors are a check, not the memory."""
    try:
        record_anchors(cx, store, memories)
    except Exception as exc:
        log.warning("code anchors not recorded (%s: %s)", type(exc).__name__, exc)


def anchor_code(cx: Cortex, store: MemoryStore, keys: Iterable[str]) -> None:
    """Re-anchor the code memories `index-code` wrote or found unchanged (`path:qualname` keys)."""
    types = (MemoryType.CODE.value, MemoryType.CODE_DESCRIPTION.value)
    wanted = set(keys)
    paths = sorted({key.rpartition(":")[0] for key in wanted})
    found = {
        m.id: m
        for path in paths  # one read per file, not per symbol
        for m in store.tag_prefix(path + ":", types)
        if wanted.intersection(m.tags)
    }
    record_quietly(cx, store, [m for m in found.values() if m.status is Status.ACTIVE])
