"""Layer 2b, turn reports: what the assistant reported at the end of each turn. Pure.

Claude Code ends most turns with a report of what was found, decided and changed ("Root cause:
...", "Current setup: ...", "Recommendation: ..."). It is the densest record of the turn, so each
section of it (cut at its headings, decoration and long code removed) becomes a memory typed by
its heading: a cause or fix is a gotcha, a recommendation a decision, a structure an
architecture note, a rule a convention, anything else context. Sections that report state
("Done", "Current status", "Verification results") are progress tagged `turn-state`: the
capture use case keeps only the latest turn's state per branch, because a state reported midway
is usually false by the end. Labelled lines ("Root cause: ...", "Decision: ...") also become
short typed memories, which fit on one briefing line. A subagent's closing report (a finished
`Task` or `Agent` call's result) is read the same way.
Narration ("Let me check ...") and API error banners are not reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cortex.core.extract.report_words import LABEL_TYPES, PENDING_WORK, SECTION_KINDS
from cortex.core.extract.speech import (
    LIST_ITEM,
    MIN_OPTIONS,
    ends_asking,
    is_guess,
    is_talk,
    leaves_it_open,
    only_asks,
    option_lines,
    promised_lines,
    without_acknowledgement,
    without_offers,
)
from cortex.core.extract.transcript import Message
from cortex.core.extract.transcript_blocks import CLIP_MARK
from cortex.core.extract.turn_texts import delegated_reports, final_text
from cortex.core.extract.turns import split_turns
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import STATE_TAG

REPORT_TAG = "turn-report"
FINDING_TAG = "turn-finding"
OPEN_TAG = "turn-open"  # a state that leaves a choice or a question to the user
SUBAGENT_TAG = "subagent"  # second-hand: recall finds it, the briefing leaves it out
MIN_SECTION_WORDS = 12
MAX_SECTION_CHARS = 700
MAX_CODE_LINES = 4  # a fenced block longer than this is output or a listing, not a finding
MAX_SETTING_LINES = 12  # unless each line sets something (`LOG_LEVEL=INFO`): settings are facts
MAX_HEADING_WORDS = 8
MIN_ITEM_WORDS = 5
MAX_ITEM_CHARS = 320
MAX_ITEMS_PER_TURN = 8
REPORT_CONFIDENCE = 0.6
REPORT_PRIORITY = 4
# A labelled line ("Note: ...", "Important: ...") is a fragment of a section that is kept whole
# beside it: it ranks below the section (3 of 16 briefed ones answered a key fact on 8 real
# sessions, 19 of 44 sections did).
ITEM_CONFIDENCE = 0.55
ITEM_PRIORITY = 4
SUBAGENT_CONFIDENCE = 0.5
SUBAGENT_PRIORITY = 2
# Kinds that say something is settled: a guess, options or a question are not.
_SETTLED_ONLY = (MemoryType.GOTCHA, MemoryType.DECISION)
# What only a heading says a section is: a sentence names topics in passing ("stesso schema").
_TOPIC_KINDS = (MemoryType.ARCHITECTURE, MemoryType.PATTERN)

_FENCE = re.compile(r"^\s*(```|~~~)")
# A line that sets an environment variable or a key: `PROMPT_INJECTION_MODEL_PATH=/models/v2`,
# `export X=1`, `log_level: INFO` (not code: `services.x.enable = true;`).
_SETTING = re.compile(r"^\s*(?:(?:export\s+)?[A-Za-z_]\w*=\S|[A-Za-z_][\w.-]*:\s+\S)")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
# Decoration that carries no words: emoji and pictographs, box drawing, arrows, dingbats.
# Arrows say "became" ("npm → bun"): kept as `->`, not dropped with the decoration.
_ARROW = re.compile("[\u2192\u21d2\u27a1\u279c\u27f6]\ufe0f?")
_DECORATION = re.compile(
    "[\u2190-\u21ff\u2500-\u259f\u25a0-\u25ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d\U0001f000-\U0001faff]"
)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_NUMBERED = re.compile(r"^\s*\d{1,2}[.)]\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_SPACES = re.compile(r"[ \t]{2,}")
_NARRATION = re.compile(
    r"^(?:let me|let's|now let me|now i(?:'ll| will)?|i'll|i will|i'm going to|first,? let me|"
    r"next,? (?:let me|i'll))\b",
    re.IGNORECASE,
)
# A report's first line answering a yes/no question: "No - ...", "**Yes**, ...", "No."
_ANSWER = re.compile(r"^(?:yes|no)\s*(?:[-\u2013\u2014,.!:;]|$)", re.IGNORECASE)

# A labelled line: "Root cause: ...", "**Decision**: ...".
_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z /'-]{1,40}?)\s*[:：]\s*(.+)$")

Found = list[tuple[Candidate, Message]]


def extract_reports(messages: Sequence[Message]) -> Found:
    """Each turn's closing report and its subagents' reports as typed sections and labelled lines."""
    found: Found = []
    for turn in split_turns(messages):
        # A subagent's report describes its work at length: only what it found, decided and
        # left in what state is kept, not its untyped sections. It is second-hand (the turn's
        # own report relays what matters), so its notes rank below the turn's own.
        for text, message in delegated_reports(turn):
            found.extend(
                (
                    replace(
                        c,
                        confidence=SUBAGENT_CONFIDENCE,
                        priority=SUBAGENT_PRIORITY,
                        tags=(*c.tags, SUBAGENT_TAG),
                    ),
                    m,
                )
                for c, m in _report_candidates(text, message, untyped=False)
            )
        final = final_text(turn)
        if final is not None:
            found.extend(_report_candidates(*final))
    return found


def _report_candidates(text: str, message: Message, *, untyped: bool = True) -> Found:
    found: Found = []
    lines = clean_report(text)
    # Options are counted before the cut, and over the whole report: "Option 1" and
    # "Option 2" are often sections of their own.
    choices = option_lines(lines) >= MIN_OPTIONS
    # A report that opens by answering the user's question ("No - the project uses npm",
    # "Yes - the branch is up to date") says how things stand now: all of it is state.
    answer = bool(lines) and _ANSWER.match(lines[0]) is not None
    for group in _section_groups(lines):
        headless = group[:1] == [CLIP_MARK]  # a clipped result's tail: its heading was cut away
        if section := _section_text(group[1:] if headless else group):
            asks = leaves_it_open(group) or only_asks(group) or (choices and option_lines(group) > 0)
            candidate = _section_candidate(section, answer or asks, headless, ends_asking(group), asks)
            if untyped or candidate.type is not MemoryType.CONTEXT:
                found.append((candidate, message))
    for kind, item in labelled_items(lines)[:MAX_ITEMS_PER_TURN]:
        # "Next steps:", "Status:" say where the work stands, as their section does ("once you push": open).
        state = (STATE_TAG, OPEN_TAG) if leaves_it_open([item]) else (STATE_TAG,)
        tags = (FINDING_TAG, *state) if kind is MemoryType.PROGRESS else (FINDING_TAG,)
        found.append((turn_candidate(item, kind, ITEM_CONFIDENCE, ITEM_PRIORITY, tags), message))
    return found


def clean_report(text: str) -> list[str]:
    """The report's lines without decoration, emphasis, table rules or long code blocks (a
    short block's lines are kept as inline code)."""
    out: list[str] = []
    block: list[str] = []
    in_code = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            if in_code and (len(block) <= MAX_CODE_LINES or _settings(block)):
                out.extend(f"`{b.strip()}`" for b in block if b.strip())
            block, in_code = [], not in_code
            continue
        if in_code:
            block.append(raw)
            continue
        line = _DECORATION.sub("", _ARROW.sub("->", raw))
        if _TABLE_RULE.match(line):
            continue
        row = line.lstrip().startswith("|")  # a table's row, its header too: data, not a heading
        line = _EMPHASIS.sub(r"\2", _HEADING.sub("", line)).replace("**", "").replace("|", " ")
        line = _SPACES.sub(" ", line).strip()
        if line:
            out.append(f"- {line}" if row else line)
    return out


def _settings(block: Sequence[str]) -> bool:
    lines = [b for b in block if b.strip()]
    return 0 < len(lines) <= MAX_SETTING_LINES and all(_SETTING.match(b) for b in lines)


def word_count(text: str) -> int:
    """Words for spaced scripts; Chinese, Japanese and Korean count one word per two characters."""
    return len(text.split()) + len(_CJK.findall(text)) // 2


def _is_heading(line: str) -> bool:
    return not LIST_ITEM.match(line) and not line.startswith("`") and word_count(line) <= MAX_HEADING_WORDS


def report_sections(lines: Sequence[str]) -> list[str]:
    """The report cut before each heading that follows body text; sections that say too little
    are dropped, long ones cut at a line boundary."""
    return [s for s in (_section_text([x for x in g if x != CLIP_MARK]) for g in _section_groups(lines)) if s]


def _section_groups(lines: Sequence[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for line in lines:
        if line == CLIP_MARK:  # what stood between a clipped result's head and tail is gone
            groups.append([line])
            continue
        if groups[-1] == [CLIP_MARK] and _is_heading(line):
            groups[-1] = []  # the tail opens with a heading of its own: a section like any other
        if _is_heading(line) and any(not _is_heading(x) for x in groups[-1]):
            groups.append([])
        groups[-1].append(line)
    return groups


def _section_text(lines: Sequence[str]) -> str:
    promised = promised_lines(lines)
    body = [
        kept
        for i, line in enumerate(lines)
        if i in promised or not (_NARRATION.match(line) and word_count(line) < MIN_SECTION_WORDS)
        if (kept := line if i in promised else without_talk(line))
    ]
    text = without_lead_in("\n".join(_without_empty_labels(without_offers(body))).strip())
    if word_count(text) < MIN_SECTION_WORDS:
        return ""
    return without_lead_in(clip_at_line(text)) if len(text) > MAX_SECTION_CHARS else text


def clip_at_line(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    """At most `limit` characters, cut at a line's end where one is past half of them."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def without_lead_in(text: str) -> str:
    """The text without its dangling lead-ins: a sentence that ends a line in a colon ("Here's
    what you need to do:", "For production use, you'd want a model like:") with no list item
    or code after it introduced what was cut (a long code block, the rest of the report) and
    says nothing by itself. A short label line ("Current setup:") is left to the heading rules."""
    lines = text.split("\n")
    out = []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        follows = bool(nxt) and (LIST_ITEM.match(nxt) is not None or nxt.startswith("`"))
        if line.endswith((":", "\uff1a")) and not follows and not _is_heading(line):
            line = " ".join(_SENTENCE_BREAK.split(line)[:-1]).strip()
        if line:
            out.append(line)
    return "\n".join(out).strip()


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*_])")


def without_talk(line: str) -> str:
    """The line without its sentences of intent or acknowledgement ("You're right!", "Let me
    fix the script:", "I'll update the workflow to ..."): what is left, or ""."""
    sentences = _SENTENCE_BREAK.split(line)
    kept = [without_acknowledgement(s) for s in sentences if not is_talk(s)]
    if kept == sentences:
        return line
    bullet = LIST_ITEM.match(line)
    text = " ".join(kept).strip()
    if bullet and text and not LIST_ITEM.match(text):
        text = bullet.group(0).strip() + " " + text
    return text if word_count(text) > 1 else ""


def _without_empty_labels(lines: Sequence[str]) -> list[str]:
    """Lines without a label ("Basic Usage:") whose body was code left out: a heading ending in
    a colon right before another heading or at the end."""
    out = []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if line.endswith((":", "：")) and _is_heading(line) and (nxt is None or _is_heading(nxt)):
            continue
        out.append(line)
    return out


def section_kind(section: str) -> MemoryType:
    """What the section's first line says it is (`SECTION_KINDS`), else the next headings before
    the body (a title over headings whose bodies were code); context when none says."""
    lines = section.split("\n")
    heads = [lines[0]]
    for line in lines[1:]:
        if not _is_heading(line):
            break
        if not line.rstrip().endswith((".", "!", "?")):  # a short sentence is body, not a title
            heads.append(line)
    for index, head in enumerate(heads):
        said = index == 0 and not _is_heading(head)  # a sentence names a topic in passing
        kinds = (k for p, k in SECTION_KINDS if p.search(head) and not (said and k in _TOPIC_KINDS))
        if (kind := next(kinds, None)) is not None:
            return kind
    return MemoryType.CONTEXT


def labelled_items(lines: Sequence[str]) -> list[tuple[MemoryType, str]]:
    """(type, text) for each "Label: text" line whose label names a finding or a decision; a
    label alone on its line takes the next line as its text. The nearest heading is kept as
    the item's subject."""
    items: list[tuple[MemoryType, str]] = []
    pending: MemoryType | None = None
    heading = ""
    listed = False  # bullets followed a heading ending in a colon: it introduced them
    fields = _field_lines(lines)
    detail = ""  # the first untyped field of the titled item ("Location: `logs/`")
    for index, line in enumerate(lines):
        if line == CLIP_MARK:  # the tail of a clipped result: the heading over it is gone
            heading, pending, listed = "", None, False
            continue
        bullet = LIST_ITEM.match(line) is not None
        if heading.endswith((":", "\uff1a")) and listed and not bullet:
            heading = ""  # "The detector now:" covers its list, not the note after it
        listed = listed or bullet
        plain = LIST_ITEM.sub("", line).strip()
        bare = plain.rstrip(":：").strip().casefold()
        match = _LABEL.match(plain)
        kind = LABEL_TYPES.get(match.group(1).strip().casefold()) if match else None
        if kind is None and bare in LABEL_TYPES:
            pending = LABEL_TYPES[bare]
            # "Next steps:" opens a section of its own; "Problem:" is the heading's problem.
            heading = "" if pending is MemoryType.PROGRESS else heading
            continue
        # A short numbered title over a list ("### 2. **opentelemetry**" loses its `###` in
        # cleaning): the items under it are about it, not about the report's title. A numbered
        # step ("3. Press Enter.") or a labelled line ("4. Testing: before release") is not one.
        titled = _numbered_title(line)
        if kind is not None and match is not None:
            body = match.group(2).strip()
        elif pending is not None and not (titled and index + 1 in fields):
            # Not the title of the next item, with its fields: the label's text was a code block cut away.
            if plain.startswith("`#"):
                continue  # a comment in the label's code ("# Remove log files from staging") says no fix
            kind, body = pending, plain
        else:
            if index in fields:  # "Location: `logs/`" beside "Issue:": a field of the item, not its title
                detail = detail or plain
                continue
            if titled or (_is_heading(line) and not _ends_sentence(plain)):
                heading, listed, pending, detail = plain, False, None, ""
            continue
        pending = None
        if kind is not MemoryType.PROGRESS and PENDING_WORK.search(heading):
            kind = MemoryType.PROGRESS  # "MUST-FIX before merge" / "Fix: ...": a task until done
        body = without_lead_in(without_talk(body))
        guess = kind in _SETTLED_ONLY and is_guess(body)
        # "Important: Each scanner uses ONE model:" introduces a list the item does not hold.
        if word_count(body) < MIN_ITEM_WORDS or body.endswith((":", "：")) or guess:
            continue
        subject = heading.rstrip(":：")
        subject = f"{subject} ({detail})" if subject and detail and index in fields else subject
        said = subject and subject.casefold() not in body.casefold()
        items.append((kind, (f"{subject}: {body}" if said else body)[:MAX_ITEM_CHARS]))
    return items


def _field_lines(lines: Sequence[str]) -> set[int]:
    """The lines of each run of "Label: value" lines ("Location: ...", "Issue: ...", "Impact:
    ...") right under a numbered title ("2. Missing Executable Permissions on Scripts"): the
    fields of that item. Not under the last item of a list of bare titles ("2. API workarounds",
    "3. Enhanced error messages", then "Branch: ..."): that run stands on its own."""
    labelled = [_LABEL.match(LIST_ITEM.sub("", line).strip()) is not None for line in lines]
    titles = [_numbered_title(line) for line in lines]
    out: set[int] = set()
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and labelled[end]:
            end += 1
        owned = start >= 1 and titles[start - 1] and not (start >= 2 and titles[start - 2])
        if end - start >= 2 and owned:
            out.update(range(start, end))
        start = max(end, start + 1)
    return out


def _numbered_title(line: str) -> bool:
    """A numbered line that is a title ("2. **opentelemetry**"), not a step or a labelled line."""
    text = LIST_ITEM.sub("", line).strip()
    titled = _is_heading(text) and ": " not in text and not _ends_sentence(text)
    return _NUMBERED.match(line) is not None and titled


def _ends_sentence(text: str) -> bool:
    """A line that ends as a sentence does ("Added `GET /users` to the API."): not a heading."""
    return text.rstrip("*_ ").endswith((".", "!", "?"))


def _section_candidate(section: str, state: bool, headless: bool, asks: bool, waits: bool) -> Candidate:
    kind = MemoryType.CONTEXT if headless else section_kind(section)
    if state or (kind in _SETTLED_ONLY and (asks or waits or is_guess(section))):
        kind = MemoryType.PROGRESS  # options, a question to the user or a guess: not settled yet
    tags = (STATE_TAG, OPEN_TAG) if waits else (STATE_TAG,)  # options or only questions: the reply settles
    tags = tags if kind is MemoryType.PROGRESS else (REPORT_TAG,)
    return turn_candidate(section, kind, REPORT_CONFIDENCE, REPORT_PRIORITY, tags)


def turn_candidate(
    content: str, kind: MemoryType, confidence: float, priority: int, tags: tuple[str, ...]
) -> Candidate:
    """A candidate of the turn layers (reports and session signals)."""
    return Candidate(content, kind, Layer.STRUCTURAL, confidence=confidence, priority=priority, tags=tags)
