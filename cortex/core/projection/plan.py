"""What importing an edited projection file changes, and the order the file lists memories in. Pure.

An entry's id is the id of the memory it started as: an edit supersedes that memory with a new
one, and the entry keeps its header, so the file does not churn and every clone that imports
it agrees on its ids. Entries are matched to the projected memories by entry id (or current
id) first, then by text (an entry whose id is unknown, or written by hand, that says what a
projected memory says is that memory: importing the same file twice adds nothing). Then:

- an entry with a known id and other text: an edit, applied as a new memory superseding the
  old one (the old is kept, superseded);
- an entry with no id, or an id the projection does not hold: a new memory;
- a projected memory no entry matches, that the file showed when it was last written or
  imported here: removed from the file, so forgotten (archived, kept). A memory the file never
  showed (remembered since, or never shared) is kept; the next `project-file` adds it.

Texts are compared as they would be stored (redacted, normalised) by content hash, so an edit
of whitespace or letter case alone is no change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cortex.core.model import Edge, EdgeType, Memory
from cortex.core.projection.markdown import PROJECTED_TYPES, Entry
from cortex.core.text import content_hash
from cortex.core.write.sanitise import sanitise_text


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """The changes an import makes; `unchanged` counts entries that match their memory."""

    add: tuple[Entry, ...] = ()
    edit: tuple[tuple[Memory, Entry], ...] = ()  # (memory superseded, entry with its new text)
    retype: tuple[tuple[Memory, Entry], ...] = ()  # same text, moved to another section
    forget: tuple[Memory, ...] = ()
    unchanged: int = 0
    matched: dict[int, str] = field(default_factory=dict)  # entry line -> entry id it matched

    @property
    def empty(self) -> bool:
        """True when importing changes nothing."""
        return not (self.add or self.edit or self.retype or self.forget)


def stored_hash(text: str) -> str:
    """The content hash `text` gets once through the sanitising gate."""
    return content_hash(sanitise_text(text))


def plan_import(
    entries: Sequence[Entry], projected: Sequence[tuple[str, Memory]], shown: Collection[str]
) -> ImportPlan:
    """The changes that make the store's projection say what `entries` say. `projected` holds
    (entry id, memory) pairs; `shown` the entry ids the file held when last written or imported."""
    by_id: dict[str, tuple[str, Memory]] = {key: (key, m) for key, m in projected}
    for key, m in projected:
        by_id.setdefault(m.id, (key, m))
    matched: dict[int, str] = {}
    taken: set[str] = set()
    edit: list[tuple[Memory, Entry]] = []
    retype: list[tuple[Memory, Entry]] = []
    unchanged = 0
    rest: list[Entry] = []
    for e in entries:
        found = by_id.get(e.id or "")
        if found is None or found[0] in taken:
            rest.append(e)
            continue
        key, m = found
        matched[e.line] = key
        taken.add(key)
        if stored_hash(e.text) != m.content_hash:
            edit.append((m, e))
        elif e.type != m.type:
            retype.append((m, e))
        else:
            unchanged += 1
    free = {m.content_hash: (key, m) for key, m in projected if key not in taken}
    add: list[Entry] = []
    for e in rest:
        found = free.pop(stored_hash(e.text), None)
        if found is None:
            add.append(e)
            continue
        key, m = found
        matched[e.line] = key
        taken.add(key)
        if e.type != m.type:
            retype.append((m, e))
        else:
            unchanged += 1
    forget = tuple(m for key, m in projected if key not in taken and (key in shown or m.id in shown))
    return ImportPlan(tuple(add), tuple(edit), tuple(retype), forget, unchanged, matched)


def file_entries(
    memories: Iterable[Memory], edges: Iterable[Edge], older: Mapping[str, Memory]
) -> list[tuple[str, Memory]]:
    """(entry id, memory) in the file's order. A memory's entry id is the id of the earliest
    memory it supersedes, directly or down a chain (its own when none, or when an entry before
    it took that id); memories go by section, then by when that earliest memory was created, so
    an edited entry keeps its place and a new one goes last in its section. `older` holds the
    superseded memories the edges name."""
    replaced: dict[str, list[str]] = {}  # newer id -> the older ids it supersedes
    for e in edges:
        if e.type == EdgeType.SUPERSEDES and e.target in older:
            replaced.setdefault(e.source, []).append(e.target)

    def first(m: Memory) -> tuple[datetime, str]:
        best = (m.created, m.id)
        seen, todo = {m.id}, list(replaced.get(m.id, ()))
        while todo:
            oid = todo.pop()
            if oid in seen:
                continue
            seen.add(oid)
            best = min(best, (older[oid].created, oid))
            todo.extend(replaced.get(oid, ()))
        return best

    section = {t: i for i, t in enumerate(PROJECTED_TYPES)}
    keyed = sorted(((first(m), m) for m in memories), key=lambda p: (section[p[1].type], p[0], p[1].id))
    out: list[tuple[str, Memory]] = []
    used: set[str] = set()
    for (_, key), m in keyed:
        if key in used:  # one older memory superseded by two: the later one shows its own id
            key = m.id
        used.add(key)
        out.append((key, m))
    return out
