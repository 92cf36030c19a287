"""One statement, one note: the lexical layer's reading of a sentence that another note of the
turn already holds whole. Pure.

The lexical layer reads sentences of any message ("The problem is that the cache key ignores the
locale."); a user's rule or a note they asked for, and a section of the assistant's report, may
hold the same sentence. Two notes of one statement repeat it in every briefing, and the copy
outlives what retires the note that holds it: a user who says the answer was wrong retires the
report's sections, not a lexical copy of one of its sentences.
"""

from __future__ import annotations

from cortex.core.extract.signals import RULE_TAG
from cortex.core.extract.summary import REPORT_TAG
from cortex.core.extract.transcript import Message
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.text import normalize_text
from cortex.core.write.state import is_state

Found = list[tuple[Candidate, Message]]


def without_quoted_copies(raw: Found) -> Found:
    """Without a lexical candidate that one of these holds whole:

    - a rule of the user's (or a note they asked for) of the same kind (`_same_kind`), anywhere
      in the turn: "The user's rule: I always use tabs, never spaces, in all my projects." holds
      the sentence the lexical layer also typed, and goes to the global store, where a project
      copy would repeat it in every briefing. Rules are not replaced by later reports, so the
      quote keeps what the copy said;
    - a section of the same message's report, of the same type, that says no state: it stays
      until the user withdraws the answer or the turn is undone, and the copy should go with it.
      A state section ("Current status: ...") is replaced by the next report, and a copy of a
      finding in it still says the finding then; a section of another type is read otherwise
      (a gotcha inside a report of progress is briefed as a gotcha)."""
    rules = [
        (c, normalize_text(c.content))
        for c, _ in raw
        if RULE_TAG in c.tags or c.layer in (Layer.EXPLICIT, Layer.USER)
    ]
    reports = [
        (c, m, normalize_text(c.content)) for c, m in raw if REPORT_TAG in c.tags and not is_state(c.tags)
    ]

    def quoted(c: Candidate, m: Message) -> bool:
        text = normalize_text(c.content)
        if any(_same_kind(rule, c.type) and text in said for rule, said in rules):
            return True
        return any(r.type is c.type and said is m and text in held for r, said, held in reports)

    return [(c, m) for c, m in raw if c.layer is not Layer.LEXICAL or not quoted(c, m)]


def _same_kind(rule: Candidate, lexical: MemoryType) -> bool:
    """A rule of the user's says what the lexical layer's reading of its words does, whatever
    type that reading has ("Please always run the linter" a preference, "don't use any, use
    unknown" a rejected decision): one note, not two. A note asked for keeps a lexical note of
    another type."""
    return rule.type is lexical or RULE_TAG in rule.tags
