"""Check memories' code anchors against HEAD, cheaply: git's object ids and a cache keyed by HEAD.

An anchor (`cortex.core.code.anchors`) holds git's blob id of a file, or a hash of one symbol's
text, as a memory saw it. At HEAD, one `git cat-file --batch-check` gives every anchored file's
blob id: an unchanged id settles the anchor without reading the file. Only a changed file is
read (a symbol's hash, by blob id, is cached for good) and asked which commit changed it; a file
gone from both HEAD and the work tree is deleted or renamed (`stale.py` marks memories whose
files are all gone: an anchor says which one went, when, and where to). Differences no commit
made since the note (it was written against uncommitted edits) do not count.

Verdicts are cached in `anchors.json` beside the briefing cache, for one HEAD at a time: a
render or a recall at the same HEAD starts no git process. The SessionStart hook never calls
this: it reads the briefing the worker rendered.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cortex.briefing.stale import _relative_path as relative_path
from cortex.briefing.stale import project_resolver
from cortex.briefing.stale import read_gone_paths as stale_gone_paths
from cortex.core.code.anchors import Anchor, AnchorCheck, AnchorState, describe, symbol_hash
from cortex.shell import git, git_objects
from cortex.store.port import BriefingReads, MemoryStore

log = logging.getLogger("cortex.briefing.anchors")

CACHE_FILE = "anchors.json"
MAX_SYMBOL_FILES = 2_000  # changed files whose symbol hashes the cache keeps (by blob id)
MAX_VERDICTS = 50_000  # verdicts kept across HEADs (by anchor and the blob it was judged at)
Verdict = tuple[str, str | None, float | None, str | None]  # state, commit, unix time, renamed to


@dataclass
class HeadCache:
    """Blob ids by path at one HEAD; verdicts by anchor and the blob they were judged at, and
    symbol hashes by blob id, both valid at any HEAD."""

    head: str
    blobs: dict[str, str | None] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    symbols: dict[str, dict[str, str]] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def load(cls, path: Path | None, head: str) -> HeadCache:
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path else {}
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        verdicts = {k: tuple(v) for k, v in (data.get("verdicts") or {}).items()}
        blobs = (data.get("blobs") or {}) if data.get("head") == head else {}
        return cls(head, blobs, verdicts, data.get("symbols") or {})

    def save(self, path: Path | None) -> None:
        if path is None or not self.dirty:
            return
        symbols = dict(list(self.symbols.items())[-MAX_SYMBOL_FILES:])
        verdicts = dict(list(self.verdicts.items())[-MAX_VERDICTS:])
        body = {"head": self.head, "blobs": self.blobs, "verdicts": verdicts, "symbols": symbols}
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(body, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # a cache: the next check asks git again
            log.debug("anchor cache not written: %s", exc)


def _key(a: Anchor, blob: str | None, present: bool) -> str:
    at = blob or ("+" if present else "-")  # gone at HEAD: in the work tree still, or not
    return "\x1f".join((a.path, a.symbol, a.hash, a.commit or "", at))


class _Checker:
    def __init__(self, root: Path, cache: HeadCache) -> None:
        self.root = root
        self.cache = cache
        self.changes: dict[tuple[str, str | None], tuple[str, datetime] | None] = {}
        self.renames: dict[tuple[str, str], str | None] = {}

    def blobs(self, paths: Iterable[str]) -> None:
        missing = sorted({p for p in paths if p not in self.cache.blobs})
        if not missing:
            return
        found = git_objects.read_blob_ids(self.root, self.cache.head, missing)
        if found is None:
            return  # git did not answer: nothing is judged
        self.cache.blobs.update(found)
        self.cache.dirty = True

    def settled(self, a: Anchor) -> bool:
        """Fresh without a look inside: the file is the blob the anchor saw."""
        blob = self.cache.blobs.get(a.path)
        return blob is not None and blob == (a.blob or (a.hash if not a.symbol else None))

    def read_symbols(self, anchors: Iterable[Anchor]) -> None:
        """Symbol hashes of the changed files that symbol anchors need (one git process)."""
        need = {}
        for a in anchors:
            blob = self.cache.blobs.get(a.path)
            if a.symbol and blob and blob not in self.cache.symbols and not self.settled(a):
                need[blob] = a.path
        if not need:
            return
        from cortex.core.code.parse import parse_symbols  # only when a changed file is read

        for blob, text in git_objects.read_blob_texts(self.root, need).items():
            hashes: dict[str, str] = {}
            for s in parse_symbols(need[blob], text):
                hashes.setdefault(s.qualname, symbol_hash(s.code))
                hashes.setdefault(s.name, symbol_hash(s.code))
            self.cache.symbols[blob] = hashes
            self.cache.dirty = True

    def verdict(self, a: Anchor) -> Verdict | None:
        if a.path not in self.cache.blobs:
            return None  # git could not say
        if self.settled(a):
            return (AnchorState.FRESH.value, None, None, None)
        blob = self.cache.blobs[a.path]
        present = blob is None and (self.root / a.path).exists()
        key = _key(a, blob, present)
        if key in self.cache.verdicts:
            return self.cache.verdicts[key]
        state = AnchorState.FRESH
        if blob is None:
            state = AnchorState.FRESH if present else AnchorState.DELETED
        elif not a.symbol:
            state = AnchorState.FRESH if blob == a.hash else AnchorState.CHANGED
        else:
            hashes = self.cache.symbols.get(blob)
            if hashes is None:
                return None
            now = hashes.get(a.symbol)
            if now is None:
                state = AnchorState.DELETED
            elif now != a.hash:
                state = AnchorState.CHANGED
        found: Verdict = (state.value, None, None, None)
        if state is not AnchorState.FRESH:
            found = self._when(a, state, blob)
        self.cache.verdicts[key] = found
        self.cache.dirty = True
        return found

    def _when(self, a: Anchor, state: AnchorState, blob: str | None) -> Verdict:
        """The commit that made the change, and whether it renamed the file."""
        if (a.path, a.commit) not in self.changes:
            self.changes[(a.path, a.commit)] = git_objects.read_last_change(self.root, a.path, a.commit)
        change = self.changes[(a.path, a.commit)]
        if change is None:
            # No commit since the note touched the file: it saw uncommitted edits (or git
            # cannot say); a file gone without a commit is deleted all the same.
            return (AnchorState.FRESH.value if blob is not None else state.value, None, None, None)
        commit, when = change
        renamed = None
        if blob is None:
            if (commit, a.path) not in self.renames:
                self.renames[(commit, a.path)] = git_objects.read_renamed_to(self.root, commit, a.path)
            renamed = self.renames[(commit, a.path)]
            state = AnchorState.RENAMED if renamed else AnchorState.DELETED
        return (state.value, commit, when.timestamp(), renamed)


def _judge(checker: _Checker, anchors: Mapping[str, Sequence[Anchor]]) -> dict[str, list[AnchorCheck]]:
    checker.blobs(a.path for found in anchors.values() for a in found)
    checker.read_symbols(a for found in anchors.values() for a in found)
    out: dict[str, list[AnchorCheck]] = {}
    for memory_id, found in anchors.items():
        for a in found:
            v = checker.verdict(a)
            if v is None or v[0] == AnchorState.FRESH.value:
                continue
            when = datetime.fromtimestamp(v[2], tz=UTC) if v[2] is not None else None
            out.setdefault(memory_id, []).append(AnchorCheck(a, AnchorState(v[0]), v[1], when, v[3]))
    return out


def _checker(root: Path, cache_file: Path | None) -> _Checker | None:
    head = git.read_head_ref(root).sha  # from `.git`, no process
    return _Checker(root, HeadCache.load(cache_file, head)) if head else None


def check_anchors(
    root: Path, anchors: Mapping[str, Sequence[Anchor]], cache_file: Path | None = None
) -> dict[str, list[AnchorCheck]]:
    """Memory id -> its anchors that are not fresh at HEAD (memories all fresh are left out)."""
    checker = _checker(root, cache_file) if anchors else None
    if checker is None:
        return {}
    out = _judge(checker, anchors)
    checker.cache.save(cache_file)
    return out


def cache_path(briefing_dir: Path) -> Path:
    """Where the verdicts of the current HEAD are kept."""
    return briefing_dir / CACHE_FILE


def anchor_checks(
    root: Path,
    stores: Iterable[MemoryStore],
    ids: Iterable[str] | None = None,
    cache_file: Path | None = None,
) -> dict[str, list[AnchorCheck]]:
    """The project stores' memories (`ids`, else every active one) whose anchors changed at HEAD.

    For every memory, the store is asked only for the anchors whose file is not the blob HEAD
    has (`read_moved_anchors`): the rest are fresh without being read."""
    if ids is not None:
        wanted = sorted(set(ids))
        anchors: dict[str, list[Anchor]] = {}
        for store in stores if wanted else ():
            anchors.update(store.read_anchors(wanted))
        return check_anchors(root, anchors, cache_file)
    checker = _checker(root, cache_file)
    if checker is None:
        return {}
    out: dict[str, list[AnchorCheck]] = {}
    for store in stores:
        paths = store.anchored_paths()
        checker.blobs(paths)
        known = {p: checker.cache.blobs[p] for p in paths if p in checker.cache.blobs}
        out.update(_judge(checker, store.read_moved_anchors(known)) if known else {})
    checker.cache.save(cache_file)
    return out


def read_gone_paths(
    root: Path, paths: Iterable[str], cache_file: Path | None = None
) -> dict[str, str | None]:
    """`stale.read_gone_paths` answered from the blob ids cached for HEAD (a git process only
    for paths not asked at this HEAD yet)."""
    resolve = project_resolver(root)
    rel = {f: resolve(relative_path(f, root)) for f in paths}
    checker = _checker(root, cache_file) if any(rel.values()) else None
    if checker is None:
        return dict.fromkeys(rel)
    checker.blobs(r for r in rel.values() if r)
    checker.cache.save(cache_file)
    blobs = checker.cache.blobs
    return {
        f: r if r and r in blobs and blobs[r] is None and not (root / r).exists() else None
        for f, r in rel.items()
    }


def read_stale(
    stores: Sequence[BriefingReads], root: Path, cache_file: Path | None, limit: int
) -> tuple[int, list[str], dict[str, str | None]]:
    """(how many active memories are stale, the first `limit` of their ids store by store and
    newest first, what `stale.read_gone_paths` says of every path): stale memories name only
    files gone from both the work tree and HEAD (`stale.read_stale_ids`). Whether a file is at
    HEAD comes from the blob ids cached for HEAD (`read_gone_paths`) when there is a HEAD, so a
    briefing render at an unchanged HEAD starts no git process (two before: ~10 ms of CPU each
    to start from a worker holding a large store); without one, as `stale.read_gone_paths`."""
    head = cache_file is not None and git.read_head_ref(root).sha
    count, first, gone_all = 0, [], {}
    for s in stores:
        paths = s.brief_paths()
        gone = read_gone_paths(root, paths, cache_file) if head and paths else stale_gone_paths(root, paths)
        gone_all.update(gone)
        n, ids = s.brief_stale(
            [f for f, r in gone.items() if r is not None], [f for f, r in gone.items() if r is None], limit
        )
        count += n
        first.extend(ids)
    return count, first[:limit], gone_all


def marks(checks: Mapping[str, Sequence[AnchorCheck]]) -> dict[str, str]:
    """Memory id -> the mark it carries ("may be stale: ...", "stale: ...")."""
    return {mid: text for mid, found in checks.items() if (text := describe(found))}
