"""Layer 2, compaction: the errors and fixes listed in Claude Code's summary of a compacted
conversation. Pure.

When a conversation fills its context, Claude Code replaces it with a summary written under
numbered headings; one of them, "Errors and fixes", lists each error met so far with its cause,
its fix and what the user said about it. It is the session's own digest of its gotchas, often
the only place where a fix made over several turns is said in one breath, so each item of it
becomes a gotcha. Not every item: one marked unresolved ("Current Status: UNFIXED", "Currently
fixing by ...", "Still failing") says where things stood midway, and one that names no trouble
("Branch cleanup: deleted the merged branch") is no gotcha.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cortex.core.extract.commands import clip
from cortex.core.extract.speech import LIST_ITEM
from cortex.core.extract.summary import (
    MAX_SECTION_CHARS,
    MIN_ITEM_WORDS,
    REPORT_CONFIDENCE,
    REPORT_PRIORITY,
    clean_report,
    turn_candidate,
    word_count,
)
from cortex.core.extract.transcript import Message
from cortex.core.model import Candidate, MemoryType

COMPACTION_TAG = "compaction"
Found = list[tuple[Candidate, Message]]

# "4. Errors and fixes:", "4. **Errors and Fixes:**", "## 4. Errors and Fixes:".
_SECTION = re.compile(
    r"^(?P<indent>[ \t]*)(?:#{1,6}[ \t]*)?(?:\*\*)?[ \t]*\d{1,2}\.[ \t]*(?:\*\*)?[ \t]*"
    r"errors?[ \t]+(?:and|&)[ \t]+(?:fix(?:es)?|solutions?)\b",
    re.IGNORECASE,
)
# The summary's next numbered heading ("5. Problem Solving:") ends the section.
_HEADING = re.compile(
    r"^(?P<indent>[ \t]*)(?:#{1,6}[ \t]*)?(?:\*\*)?[ \t]*\d{1,2}\.[ \t]+(?:\*\*)?[ \t]*[A-Z]"
)
_SUBHEADING = re.compile(r"^[ \t]*#{2,6}[ \t]+\S")  # "### Error 1: Convex 500 Internal Server Error"
_BULLET = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+\u2022]|\d{1,2}[.)])[ \t]+\S")
_UNRESOLVED = re.compile(
    r"\b(?:unfixed|unresolved|not (?:yet )?(?:fixed|resolved)|still (?:failing|broken|fails)"
    r"|current(?:ly)? (?:issue|fixing|investigating|blocked|debugging))\b",
    re.IGNORECASE,
)
# Words that name trouble. A branch or path (`fix/issue-365-notes`) is no word of it.
_TROUBLE = re.compile(
    r"(?<![\w/.-])(?:errors?|fail\w*|fix\w*|broke\w*|break\w*|issues?|problems?|bugs?|crash\w*"
    r"|incompatib\w*|conflict\w*|timeouts?|timed out|denied|missing|not found|wrong|invalid"
    r"|unable|cannot|can't|couldn't|doesn't|didn't|won't|[45]\d\d)(?![\w/-])",
    re.IGNORECASE,
)
_NOTHING_SAID = re.compile(r"^[\w ]{1,30}:\s*(?:none|n/a)\b", re.IGNORECASE)  # "User feedback: None"


def extract_compacted_fixes(messages: Sequence[Message]) -> Found:
    """One gotcha per resolved item of each compaction summary's "Errors and fixes" section."""
    found: Found = []
    for message in messages:
        for item in fix_items(message.compacted) if message.compacted else ():
            candidate = turn_candidate(
                item, MemoryType.GOTCHA, REPORT_CONFIDENCE, REPORT_PRIORITY, (COMPACTION_TAG,)
            )
            found.append((candidate, message))
    return found


def fix_items(summary: str) -> list[str]:
    """The resolved items of the summary's "Errors and fixes" section, each on one line."""
    out: list[str] = []
    for raw in _items(_section(summary.splitlines())):
        lines = [LIST_ITEM.sub("", line).strip() for line in clean_report("\n".join(raw))]
        lines = [line for line in lines if line and not _NOTHING_SAID.match(line)]
        text = clip(_one_line(lines), MAX_SECTION_CHARS)
        if word_count(text) < MIN_ITEM_WORDS or _UNRESOLVED.search(text) or not _TROUBLE.search(text):
            continue
        out.append(text)
    return out


def _one_line(lines: Sequence[str]) -> str:
    """An item's lines as one: its title, then each detail after "; " ("Missing lazy_static:
    Fixed by adding ...; User feedback: ..."); a label line ("Description:") runs on into the
    line it introduces, and a sentence into the next."""
    text = lines[0] if lines else ""
    for index, line in enumerate(lines[1:]):
        runs_on = text.endswith((":", "\uff1a", ".", "!", "?"))
        text = f"{text}{' ' if runs_on else ('; ' if index else ': ')}{line}"
    return text


def _section(lines: Sequence[str]) -> list[str]:
    """The lines under the "Errors and fixes" heading, up to the next heading of its rank."""
    for start, line in enumerate(lines):
        head = _SECTION.match(line)
        if head is None:
            continue
        depth = len(head.group("indent").expandtabs())
        body: list[str] = []
        for later in lines[start + 1 :]:
            nxt = _HEADING.match(later)
            if nxt is not None and len(nxt.group("indent").expandtabs()) <= depth:
                break
            body.append(later)
        return body
    return []


def _items(body: Sequence[str]) -> list[list[str]]:
    """The section cut into its items: at its subheadings when it has any ("### Error 1: ..."),
    else at its outermost bullets, each with the lines under it."""
    if any(_SUBHEADING.match(line) for line in body):
        starts = [_SUBHEADING.match(line) is not None for line in body]
    else:
        depths = [len(m.group("indent").expandtabs()) if (m := _BULLET.match(line)) else -1 for line in body]
        top = min((d for d in depths if d >= 0), default=-1)
        starts = [d == top >= 0 for d in depths]
    items: list[list[str]] = []
    for line, starts_item in zip(body, starts, strict=True):
        if starts_item:
            items.append([line])
        elif items:
            items[-1].append(line)
    return items
