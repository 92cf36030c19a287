"""A transcript's messages grouped into turns: a real user prompt and everything it caused. Pure.

Every layer reads a turn at a time, so a session read turn by turn (a Stop hook per turn) and
the same session read in one go (history import, a worker that fell behind) yield the same
candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

from cortex.core.extract.transcript import Message, Role


def starts_turn(message: Message) -> bool:
    """A main-thread user message with text or a slash command, or the client's notice that a
    background task stopped (the answer to it is a turn of its own); tool results do not
    start one."""
    said = bool(message.texts or message.command or any(r.notice for r in message.tool_results))
    return message.role is Role.USER and said and not message.is_sidechain


def split_turns(messages: Sequence[Message]) -> list[list[Message]]:
    """Consecutive runs of messages, each starting at a prompt that follows an answer.

    Prompts with no answer in between (a prompt, an interruption, the prompt again) stay in one
    turn; messages before the first prompt form a turn of their own.
    """
    turns: list[list[Message]] = []
    for message in messages:
        answered = bool(turns) and any(m.role is Role.ASSISTANT for m in turns[-1])
        if not turns or (starts_turn(message) and answered):
            turns.append([])
        turns[-1].append(message)
    return turns
