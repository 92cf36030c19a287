"""Spot memory text that reads like instructions to the model (prompt injection). Pure.

The briefing reaches the model as project context that Claude Code labels as instructions, so
text that tries to steer the model ("ignore previous instructions", fake system tags, a line
that opens with "SYSTEM:") is kept out of it. Such memories stay stored and recallable, where
they are shown fenced as data. The check errs towards withholding: a false positive only means
a note waits for `/recall`, a false negative puts an order in front of the model.
"""

from __future__ import annotations

import re
import unicodedata

# (reason, pattern); patterns run on NFKC-folded, lowercased text with runs of spaces collapsed.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, re.compile(pattern, re.MULTILINE))
    for reason, pattern in (
        (
            "overrides earlier instructions",
            r"\b(?:ignore|disregard|forget|override|bypass)\b(?: \w+){0,3} "
            r"(?:previous|prior|above|earlier|preceding|all|any|your|the|system)\b(?: \w+){0,2} "
            r"(?:instructions?|prompts?|directions|directives|guidelines|guardrails)\b",
        ),
        ("addresses the model with orders", r"\byou (?:must|shall|have to|are required to)\b"),
        ("redefines the model", r"\b(?:you are now|from now on,? you|pretend (?:to be|you are))\b"),
        (
            "announces new instructions",
            r"\b(?:new|updated|real|hidden|secret) (?:instructions?|system prompt)\b",
        ),
        (
            "fake chat-markup tag",
            r"</?\s*(?:system|system-reminder|instructions?|assistant)\b[^>]*>"
            r"|</?\s*(?:user|human|admin|developer)\s*>",
        ),
        (
            "fake chat-markup tag",
            r"<\|(?:im_start|im_end|system|endoftext)[^>]*\|?>|\[/?inst\]|<<\s*/?sys\s*>>",
        ),
        ("fake role line", r"^\s*[#>*\-\s]*(?:system|assistant|human)\s*:"),
        ("cortex marker", r"<!--\s*cortex:"),
    )
)
_SPACES = re.compile(r"[ \t\u00a0]+")
_INVISIBLE = re.compile(r"[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")


def _fold(text: str) -> str:
    # NFKC maps full-width and styled letters to plain ones; invisible characters would
    # otherwise split a trigger word in two.
    plain = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    return _SPACES.sub(" ", plain).casefold()


def score_instruction_like(text: str) -> tuple[str, ...]:
    """Why `text` reads like instructions to the model (empty when it reads like a note)."""
    folded = _fold(text)
    reasons = [reason for reason, pattern in _PATTERNS if pattern.search(folded)]
    return tuple(dict.fromkeys(reasons))


def is_instruction_like(text: str) -> bool:
    """True when `text` should not be promoted into the briefing."""
    return bool(score_instruction_like(text))
