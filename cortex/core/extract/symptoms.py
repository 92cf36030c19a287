"""The problem a user reports, as the subject of the turn's gotchas. Pure.

A turn that starts with "I'm getting an "Error loading page" error when I go to the UI" ends
with findings that explain it ("The issue is that the HTML file references /static/styles.css
..."). Alone, such a finding does not say what it explains: a later session that hits the same
symptom would not know it is the same problem. A gotcha found in a turn whose prompt reports a
problem carries that report as its subject: symptom, then cause and fix.

A report is a short first line of the prompt that says something fails ("... error",
"crashes", "is not working"). A pasted log, a long request or a question about something else
is not one; a gotcha that already starts from its own failing command keeps it as its subject.

A failing command's own symptom is `error_digest`: the lines of its output that name the error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cortex.core.extract.commands import clip, first_line
from cortex.core.extract.transcript import Message, Role
from cortex.core.model import Candidate, Layer, MemoryType

MAX_SYMPTOM_WORDS = 24
MAX_SYMPTOM_CHARS = 140
MAX_PASTED_CHARS = 100  # of the error line a report ending in a colon introduces
PREFIX = "Reported problem: "
MAX_ERROR_LINES = 3
MAX_ERROR_CHARS = 300

_FAILS = re.compile(
    r"\b(?:errors?|fail(?:s|ed|ing|ure)?|broken|crash(?:es|ed|ing)?|exceptions?|traceback|panic(?:s|ked)?|"
    r"(?:is|are|isn't|aren't|not|stopped|stops) (?:working|loading|rendering|showing|starting)|"
    r"(?:does|do|did|will|would|can)(?: not|n't) (?:work|load|build|compile|start|run|render|show|connect)|"
    r"won't (?:work|load|build|compile|start|run|render|show|connect)|blank (?:page|screen)|"
    r"\b[45]\d\d\b(?= error| status|\b))",
    re.IGNORECASE,
)
# A shell prompt or a log line: pasted output, not a report in the user's words.
_PASTED = re.compile(r"[❯➜]|^\s*[$%#>]\s|^\(\w+\)\s|^\[?\d{2,4}[-/:]\d{2}|^\s*at |^\s*File \"|^Traceback")

_ERROR_WORDS = re.compile(
    r"(?:error|exception|failed|fatal|not found|no such|denied|traceback|cannot|can't|unable|"
    r"invalid|refused|missing|undefined|not allowed|blocked|already in use|no matches|unused)",
    re.IGNORECASE,
)
_NO_NEWS = re.compile(r"(?:Error: )?Exit code -?\d+|error:?", re.IGNORECASE)
# A warning: `warning: ...`, or a log line at a lower level than an error, after its clock
# (`5:38PM WRN ...`, `2025-01-02T10:00:01Z [warn] ...`, `time=... level=info ...`).
_CLOCK = r"(?:\d[\d:.,TZ/+\-]*(?:\s*[AP]M)?|(?:time|ts)=\S+)\s+"
_WARNING = re.compile(
    rf"^\W*(?:{_CLOCK}){{0,2}}(?:level=)?[\[(]?(?:warn(?:ing)?|wrn|info?|dbg|debug)\b", re.IGNORECASE
)
# A compiler's notes and hints on a diagnostic (rustc's `= note: ...`, gcc's `note: ...`): they
# annotate an error or a warning and name neither.
# A quoted source line under it (rustc's `212 |     error_count += 1`) is the code, not the error.
_ANNOTATION = re.compile(r"^=?\s*(?:note|help)\b\s*:|^\d+\s*\|", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # terminal colours in a command's output


def reported_symptom(prompt: Message | None) -> str | None:
    """The prompt's first line when it is a short report that something fails, else None."""
    if prompt is None or prompt.role is not Role.USER or not prompt.texts:
        return None
    line = first_line(prompt.texts[0])
    if not line or _PASTED.search(line) or len(line.split()) > MAX_SYMPTOM_WORDS:
        return None
    if len(line) > MAX_SYMPTOM_CHARS or not _FAILS.search(line):
        return None
    if line.endswith(":"):  # "Now I'm getting this error:", the error pasted on the next line
        pasted = [x.strip() for x in prompt.texts[0].splitlines() if x.strip()][1:2]
        return f"{line} {clip(pasted[0], MAX_PASTED_CHARS)}" if pasted else line
    return line


def _takes_subject(candidate: Candidate) -> bool:
    """A gotcha the extraction found (not one the user or the model tagged in its own words)
    that does not start from its own failing command or blocked call."""
    text = candidate.content
    return (
        candidate.type is MemoryType.GOTCHA
        and candidate.layer in (Layer.STRUCTURAL, Layer.LEXICAL)
        and not text.startswith(("`", "A project hook"))
    )


def with_symptom(
    found: Sequence[tuple[Candidate, Message]], turn: Sequence[Message]
) -> list[tuple[Candidate, Message]]:
    """The turn's gotchas with the problem its prompt reports as their subject (when it
    reports one); a failure note (it names its own failing command), a tagged one and a gotcha
    that quotes the report already are left as they are."""
    symptom = reported_symptom(turn[0]) if turn else None
    if symptom is None:
        return list(found)
    said = " ".join(symptom.casefold().split())
    subject = f'{PREFIX}"{symptom}". '
    out = []
    for candidate, message in found:
        text = candidate.content
        if _takes_subject(candidate) and said not in " ".join(text.casefold().split()):
            candidate = replace(candidate, content=subject + text)
        out.append((candidate, message))
    return out


def error_digest(output: str) -> str:
    """The first distinct lines of a failure's output that name the error (up to three,
    bounded), else its first line; `Exit code N` preambles and bare `error:` lines say nothing."""
    lines = [" ".join(ln.split()) for ln in _ANSI.sub("", output).splitlines()]
    lines = [ln for ln in lines if ln and not _NO_NEWS.fullmatch(ln)]
    named = [ln for ln in lines if _ERROR_WORDS.search(ln)]
    # A compiler's warnings come before its errors: the errors name the failure.
    named = [ln for ln in named if not _WARNING.match(ln) and not _ANNOTATION.match(ln)] or named
    # Each error once: one error hit at three call sites is one error, and room for the next.
    chosen = list(dict.fromkeys(named or lines[:1]))[:MAX_ERROR_LINES]
    return clip(" / ".join(chosen), MAX_ERROR_CHARS)
