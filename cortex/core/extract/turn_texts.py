"""Where a turn's reports are: its closing prose, and its subagents' closing reports. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cortex.core.extract.transcript import Message, Role

_ERROR_BANNER = re.compile(r"^(?:API Error|Request timed out|Claude AI usage limit)", re.IGNORECASE)
_DELEGATION_TOOLS = frozenset({"Task", "Agent"})  # a subagent's call: 1.x and 2.x names
_LAUNCHED = re.compile(r"^Async agent launched", re.IGNORECASE)


def delegated_reports(turn: Sequence[Message]) -> list[tuple[str, Message]]:
    """What the turn's subagents reported: a finished `Task` (1.x) or `Agent` (2.x) call's
    result is its subagent's closing report. A background launch ("Async agent launched"), a
    refused, failed or interrupted call and an API error banner report nothing. A background
    subagent's report arrives later as a notice (2.1.x) that starts a turn of its own: the main
    thread's answer to it is that turn's report and says what it made of the findings; the raw
    report is not read (an evaluation's recommendation the user then overruled took the
    briefing's decision places)."""
    out = []
    for message in turn:
        if message.role is not Role.ASSISTANT or message.is_sidechain:
            continue
        for use in message.tool_uses:
            result = use.result
            if use.name not in _DELEGATION_TOOLS or result is None:
                continue
            if result.is_error or result.rejected or result.interrupted:
                continue
            text = result.content.strip()
            if text and not _ERROR_BANNER.match(text) and not _LAUNCHED.match(text):
                out.append((text, message))
    return out


def final_text(turn: Sequence[Message]) -> tuple[str, Message] | None:
    """The turn's closing prose: the longer of its last two assistant text blocks (a turn often
    ends with a short sign-off after the real report); None for an API error banner."""
    texts = [
        (t, m) for m in turn if m.role is Role.ASSISTANT and not m.is_sidechain for t in m.texts if t.strip()
    ]
    if not texts:
        return None
    text, message = max(texts[-2:], key=lambda tm: len(tm[0]))
    if _ERROR_BANNER.match(text.strip()):
        return None
    return text, message
