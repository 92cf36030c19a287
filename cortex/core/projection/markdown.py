"""The git-tracked projection of a project's shared memories: render and parse its markdown. Pure.

One file a pull request can review like code: a section per memory type, one block per memory
headed by its entry id (the id of the memory the entry started as, so an edit, applied as a
superseding memory, keeps its header), its text below (a line starting with `#` is escaped
with a backslash, which markdown shows as written). Nothing in it changes unless a memory
does: no timestamps, no project name (clones live in folders of different names), a stable
order.

    ## Decisions

    ### 0a1b2c3d4e

    We use WAL mode so readers never block the writer.

    ### new

    A decision a teammate added by hand (`cortex import-projection` gives it an id).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cortex.core.model import Memory, MemoryType, Scope, Status

# The types a team shares, in file order, with their section titles. Never progress (one
# developer's scratch state), context, preferences or code.
SECTIONS: tuple[tuple[MemoryType, str], ...] = (
    (MemoryType.DECISION, "Decisions"),
    (MemoryType.ARCHITECTURE, "Architecture"),
    (MemoryType.PATTERN, "Conventions"),
    (MemoryType.GOTCHA, "Gotchas"),
)
PROJECTED_TYPES: tuple[MemoryType, ...] = tuple(t for t, _ in SECTIONS)
PRIVATE_TAG = "private"  # a memory tagged `private` never leaves the developer's store
NEW_ID = "new"  # the header of an entry added by hand: `### new`
TITLE = "# Project memory"
PREAMBLE = (
    "<!-- Written by `cortex project-file` from this project's memory store: review it like code.\n"
    "Edit an entry's text to supersede that memory, delete an entry to forget it, add one under\n"
    "a section with the header `### new`, then run `cortex import-projection`. -->"
)

_SECTION_RE = re.compile(r"^##(?!#)\s*(.*?)\s*$")
_ENTRY_RE = re.compile(r"^###(?!#)\s*(.*?)\s*$")
_ID_RE = re.compile(r"^[0-9a-f]{4,64}$")
_ESCAPED_RE = re.compile(r"^(\\*)#")


class ProjectionSyntaxError(ValueError):
    """A projection file that cannot be read; `line` is 1-based."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a projection file: its memory id (None for `### new`), type and text."""

    id: str | None
    type: MemoryType
    text: str
    line: int  # the line of its `###` header


def is_projected(m: Memory) -> bool:
    """Whether a memory belongs in the team's file: an active project memory of a shared type,
    not tagged private."""
    return (
        m.scope == Scope.PROJECT
        and m.status == Status.ACTIVE
        and m.type in PROJECTED_TYPES
        and PRIVATE_TAG not in (t.casefold() for t in m.tags)
    )


def render(entries: Sequence[tuple[str, Memory]]) -> str:
    """The file for (entry id, memory) pairs already in file order (see `plan.file_entries`)."""
    out = [TITLE, "", PREAMBLE]
    for kind, title in SECTIONS:
        out += ["", f"## {title}"]
        for key, m in entries:
            if m.type == kind:
                out += ["", f"### {key}", "", *(_escape(line) for line in m.content.splitlines())]
    return "\n".join(out) + "\n"


def _escape(line: str) -> str:
    return "\\" + line if _ESCAPED_RE.match(line) else line


def _unescape(line: str) -> str:
    return line[1:] if _ESCAPED_RE.match(line) and line.startswith("\\") else line


def parse(text: str) -> list[Entry]:
    """The entries of a projection file, in file order; raises ProjectionSyntaxError."""
    titles = {title.casefold(): kind for kind, title in SECTIONS}
    entries: list[Entry] = []
    kind: MemoryType | None = None
    head: tuple[str | None, int] | None = None  # the open entry: its id and header line
    body: list[str] = []
    seen: dict[str, int] = {}

    def close() -> None:
        if head is None or kind is None:
            return
        lines = [_unescape(line.rstrip()) for line in body]
        content = "\n".join(lines).strip("\n")
        if not content.strip():
            raise ProjectionSyntaxError(
                head[1], "this entry has no text (delete the whole entry to forget the memory)"
            )
        entries.append(Entry(head[0], kind, content, head[1]))

    for number, line in enumerate(text.splitlines(), start=1):
        section = _SECTION_RE.match(line)
        entry = _ENTRY_RE.match(line)
        if section:
            close()
            head, body = None, []
            name = section.group(1)
            if name.casefold() not in titles:
                known = ", ".join(title for _, title in SECTIONS)
                raise ProjectionSyntaxError(number, f"unknown section {name!r} (the sections are {known})")
            kind = titles[name.casefold()]
        elif entry:
            close()
            if kind is None:
                raise ProjectionSyntaxError(number, "an entry before the first `## ` section")
            ref = entry.group(1).strip().lower()
            if ref == NEW_ID:
                head = (None, number)
            elif _ID_RE.match(ref):
                if ref in seen:
                    raise ProjectionSyntaxError(number, f"id {ref} appears twice (first on line {seen[ref]})")
                seen[ref] = number
                head = (ref, number)
            else:
                raise ProjectionSyntaxError(
                    number, f"an entry header is `### <memory id>` or `### {NEW_ID}`, not {line.strip()!r}"
                )
            body = []
        elif head is not None:
            body.append(line)
        elif kind is not None and line.strip():
            raise ProjectionSyntaxError(number, "text outside an entry (start it with `### new`)")
    close()
    return entries
