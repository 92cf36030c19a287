"""What a turn report's headings and labels say a section or a line is. Pure.

"## Root cause" opens a gotcha, "Decision:" labels one, "## Status" and "Next steps:" say where
the work stands (a state a later report replaces), and a finding under a heading of work still to
do ("MUST-FIX before merge", "Action items") is that work, not a lasting finding.
"""

from __future__ import annotations

import re

from cortex.core.model import MemoryType

# Work still to do, as a heading says it: "MUST-FIX Before Merge", "Action items", "Follow-ups",
# "Remaining Issues", "What's left".
_PENDING = (
    r"must[- ]fix|to[- ]?dos?|action items?|before merg\w*|follow[- ]?ups?|"
    r"open (?:issues|items|questions)|still to do|defer\w*|remaining|left to do|what(?:'s| is) left"
)

# What a section's heading (or first line) says it is; the first pattern that matches wins.
SECTION_KINDS: tuple[tuple[re.Pattern[str], MemoryType], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind)
    for pattern, kind in (
        # Where things stand, and what is not settled yet (answers about the current state,
        # options, hypotheses, instructions for the user): all superseded by a later report.
        (
            r"^(?:yes|no)\b|\b(?:done|complete[d]?|fixed|resolved|verified|verification|results?|"
            r"status|summary|changes|changed|implemented|implementation|created|added|updated|"
            r"features?|success(?:fully)?|working|ready|applied|deployed|progress|committed|pushed|"
            r"merged|what (?:i|we|was) |now|options?|either|what to do|next steps?|your actions|"
            r"you need|tell me when|risks?|could|might|may|potential|possible|likely|hypothes[ie]s|"
            + _PENDING
            + r")\b",
            MemoryType.PROGRESS,
        ),
        (
            r"\b(?:root cause|causes?|problems?|issues?(?!\s*#\d)|why|gotchas?|pitfalls?|caveats?|warnings?|"
            r"important|lessons?|insights?|fix(?:es)?|solutions?|workarounds?|errors?|bugs?)\b",
            MemoryType.GOTCHA,
        ),
        (
            r"\b(?:decisions?|decided|recommend(?:ed|ation|ations)?|verdict|approach|trade-?offs?|"
            r"rationale|chosen|plan)\b",
            MemoryType.DECISION,
        ),
        (
            r"\b(?:architecture|structure|design|how it works|components?|data model|schema|flow)\b",
            MemoryType.ARCHITECTURE,
        ),
        (r"\b(?:conventions?|rules?|guidelines?|style|workflow)\b", MemoryType.PATTERN),
    )
)

LABEL_TYPES: dict[str, MemoryType] = {
    **dict.fromkeys(
        (
            "root cause", "cause", "problem", "the problem", "issue", "the issue", "why", "gotcha",
            "pitfall", "caveat", "warning", "important", "note", "lesson", "lesson learned",
            "key insight", "insight", "fix", "the fix", "solution", "workaround",
        ),
        MemoryType.GOTCHA,
    ),
    **dict.fromkeys(
        (
            "decision", "final decision", "decided", "recommendation", "verdict", "approach",
            "chosen approach", "rationale",
        ),
        MemoryType.DECISION,
    ),
    **dict.fromkeys(("convention", "rule"), MemoryType.PATTERN),
    **dict.fromkeys(("architecture", "design"), MemoryType.ARCHITECTURE),
    **dict.fromkeys(
        ("todo", "next step", "next steps", "status", "current status", "progress", "remaining"),
        MemoryType.PROGRESS,
    ),
}  # fmt: skip

# A heading over work still to do: its "Fix: ..." lines are tasks, done by a later turn.
PENDING_WORK = re.compile(rf"\b(?:{_PENDING})\b", re.IGNORECASE)
