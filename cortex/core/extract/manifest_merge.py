"""One current note per manifest: a newer manifest note absorbs what older ones still say. Pure.

A session that tries dependencies one after another leaves a chain of notes ("Cargo.toml: added
`rustface` 0.1; removed `ort`", then "added `opencv` 0.92; removed `rustface` 0.1", then ...).
Each older note is partly out of date: a later edit changed some of its entries again. The
newest note of the chain takes over the older notes' statements about entries nothing changed
since (so no current fact is lost), says which dependencies were tried and dropped on the way,
and keeps every reason given; the older notes are then history. A note's entries are its
`entry:<file>:<key>` tags; a statement is one `; `-separated part of its text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cortex.core.write.state import ENTRY_PREFIX

WHY = ". Why: "
# A note that took over a long history would grow with every edit: past this, the newer note
# keeps its own text and only the older notes it says again in full become history.
MAX_MERGED_CHARS = 1_200
TRIED = "tried and dropped "
_ADDED = re.compile(r"^(?:[^`]*: )?added `([^`]+)`(?: (\S+))?$")
_REMOVED = re.compile(r"^(?:[^`]*: )?removed `([^`]+)`")


@dataclass(frozen=True, slots=True)
class ManifestNote:
    content: str
    tags: tuple[str, ...]


def manifest_entries(tags: Sequence[str]) -> frozenset[str]:
    """`entry:<file>:<key>` tags: the entries a note says changed."""
    return frozenset(t for t in tags if t.startswith(ENTRY_PREFIX))


def _entries(tags: Sequence[str]) -> list[tuple[str, str]]:
    """(file, key) of each `entry:<file>:<key>` tag (a key may hold colons: `dev:frontend`)."""
    out = []
    for tag in manifest_entries(tags):
        file, _, key = tag[len(ENTRY_PREFIX) :].partition(":")
        if key:
            out.append((file, key))
    return out


def manifest_file(tags: Sequence[str]) -> str | None:
    """The manifest's file name a note is about (its entry tags name it), or None."""
    names = {file for file, _ in _entries(tags)}
    return names.pop() if len(names) == 1 else None


def overlaps(newer: ManifestNote, older: ManifestNote) -> bool:
    """Both notes are about the same manifest and share an entry a later edit changed again."""
    file = manifest_file(newer.tags)
    shared = manifest_entries(newer.tags) & manifest_entries(older.tags)
    return file is not None and file == manifest_file(older.tags) and bool(shared)


def merge_notes(newer: ManifestNote, older: Sequence[ManifestNote]) -> ManifestNote:
    """`newer` with what `older` (newest first) still says: their statements about entries
    `newer` does not change (the most recent statement per entry), the dependencies an older
    note added and a later one removed (`tried and dropped`), and every reason. Its tags name
    all the entries."""
    file = manifest_file(newer.tags) or ""
    head, whys = _split(newer.content, file)
    covered = set(_keys(newer.tags))
    # Dependencies the newer note removes: an entry's name in backticks (a script's change
    # also says `removed ...`, of the words of a command).
    removed = {m.group(1) for part in head if (m := _REMOVED.match(part)) and m.group(1) in covered}
    tried = _tried(head)
    carried: list[str] = []
    for note in older:
        parts, reasons = _split(note.content, file)
        keys = _keys(note.tags)
        tried += _tried(parts)
        for part in parts:
            if part.startswith(TRIED):
                continue
            mine = {k for k in keys if _names(part, k)}
            added = _ADDED.match(part)
            if added and added.group(1) in removed and added.group(1) in keys:
                tried.append(f"`{added.group(1)}`" + (f" {added.group(2)}" if added.group(2) else ""))
            elif not mine or not mine & covered:
                carried.append(part)
            covered |= mine
        whys += [w for w in reasons if w not in whys]
    # A dependency the newer note adds is in the manifest now, whatever was dropped on the way.
    back = {m.group(1) for part in head if (m := _ADDED.match(part))}
    tried = [t for t in tried if _tried_name(t) not in back]
    dropped = {name for t in tried if (name := _tried_name(t))}
    parts = [p for p in head + carried if not p.startswith(TRIED) and not _removes(p, dropped)]
    if tried:
        parts.append(TRIED + ", ".join(dict.fromkeys(tried)))
    content = f"{file}: " + "; ".join(dict.fromkeys(parts)) + "".join(WHY + w for w in whys)
    entries = dict.fromkeys([*newer.tags, *(t for n in older for t in n.tags if t.startswith(ENTRY_PREFIX))])
    return ManifestNote(content, tuple(entries))


def _split(content: str, file: str) -> tuple[list[str], list[str]]:
    """The note's statements and its reasons."""
    head, *whys = content.split(WHY)
    prefix = f"{file}: "
    if head.startswith(prefix):
        head = head[len(prefix) :]
    return [p.strip() for p in head.split("; ") if p.strip()], [w.strip() for w in whys if w.strip()]


def _tried_name(item: str) -> str | None:
    """The dependency a `tried and dropped` item names (`` `rustface` 0.1 ``), if it names one."""
    return item.split("`")[1] if item.count("`") >= 2 else None


def _removes(part: str, names: set[str]) -> bool:
    """A removal of a dependency that `tried and dropped` already names."""
    m = _REMOVED.match(part)
    return m is not None and m.group(1) in names


def _tried(parts: Sequence[str]) -> list[str]:
    return [item for p in parts if p.startswith(TRIED) for item in p[len(TRIED) :].split(", ") if item]


def _keys(tags: Sequence[str]) -> list[str]:
    return [key for _, key in _entries(tags)]


def _names(part: str, key: str) -> bool:
    """The statement names the entry `key` as a whole word (`ort`, not `sort`)."""
    return re.search(rf"(?<![\w@./:-]){re.escape(key)}(?![\w./-])(?!:\S)", part) is not None
