"""Layer 2, structural: what Claude Code's own service refused in this environment. Pure.

Some tools run through the service rather than on the machine (`WebFetch` summarises a page
with a model call), and their result then carries the service's answer: `API Error: 401
{"type":"error","error":{"type":"authentication_error","message":"OAuth authentication is
currently not supported."}}`. A 4xx answer (other than a timeout or a rate limit) says the tool
does not work with this setup, and every later session would try it again: one gotcha, with
the tool the assistant used instead. A prompt the service refused under its usage policy (the
assistant's whole answer is `API Error: ... appears to violate our Usage Policy`) is a gotcha
of the work too: that prompt, pasted again, is refused again. Transient answers (429, 5xx,
overloaded, timed out) are nothing to remember.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from cortex.core.extract.commands import clip
from cortex.core.extract.summary import turn_candidate
from cortex.core.extract.transcript import Message, Role, ToolUse
from cortex.core.model import Candidate, MemoryType

CONFIDENCE = 0.6
PRIORITY = 5
MAX_MESSAGE_CHARS = 160
MAX_PROMPT_CHARS = 240
TRANSIENT_CODES = frozenset({408, 429})  # a timeout or a rate limit: another try may work
_API_ERROR = re.compile(r"^\s*API Error:\s*(?P<code>4\d\d)\b\s*(?P<body>.*)", re.DOTALL)
_POLICY = re.compile(r"^\s*API Error:.*\bUsage Policy\b", re.DOTALL | re.IGNORECASE)
_SHELL_TOOLS = frozenset({"Bash", "BashOutput", "TaskOutput"})  # their errors are the command's (failures.py)

Found = list[tuple[Candidate, Message]]


def extract_service_errors(turn: Sequence[Message]) -> Found:
    """A tool the service refused with a 4xx (once per tool and error), and a prompt refused
    under the usage policy, in one turn."""
    found: Found = []
    seen: set[str] = set()
    calls = [(use, m) for m in turn if not m.is_sidechain for use in m.tool_uses]
    for index, (use, message) in enumerate(calls):
        refusal = _refusal(use)
        if refusal is None or refusal in seen or _worked_later(calls[index + 1 :], use.name):
            continue
        seen.add(refusal)
        instead = _instead(calls[index + 1 :], use.name)
        tail = f"; used {instead} instead" if instead else ""
        found.append((_gotcha(f"{use.name} does not work in this environment: {refusal}{tail}"), message))
    prompt = next((m for m in turn if m.role is Role.USER and m.texts), None)
    for message in turn:
        if message.role is not Role.ASSISTANT or message.is_sidechain:
            continue
        if prompt is not None and any(_POLICY.match(text) for text in message.texts):
            quoted = clip(prompt.texts[0], MAX_PROMPT_CHARS)
            content = f'Claude Code refused this prompt as a Usage Policy violation (API Error): "{quoted}"'
            found.append((_gotcha(content), message))
            break
    return found


def _refusal(use: ToolUse) -> str | None:
    """`API Error 401 (OAuth authentication is currently not supported.)` for a tool call the
    service refused with a lasting 4xx, else None."""
    result = use.result
    if use.name in _SHELL_TOOLS or result is None or result.rejected:
        return None
    answer = _API_ERROR.match(result.content)
    if answer is None or int(answer.group("code")) in TRANSIENT_CODES:
        return None
    said = _error_message(answer.group("body"))
    return f"API Error {answer.group('code')}" + (f" ({said})" if said else "")


def _error_message(body: str) -> str:
    """The error's own message of the JSON the service sent (`error.message`, else its type);
    the request id and the advice after it vary from call to call and are left out."""
    start = body.find("{")
    if start == -1:
        return ""
    try:
        parsed, _ = json.JSONDecoder().raw_decode(body[start:])
    except ValueError:
        return ""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return ""
    said = error.get("message") or error.get("type")
    return clip(said, MAX_MESSAGE_CHARS) if isinstance(said, str) else ""


def _worked_later(later: Sequence[tuple[ToolUse, Message]], tool: str) -> bool:
    """The same tool answered later in the turn (the refusal did not last: a login, a retry)."""
    return any(
        use.name == tool and use.result is not None and not use.failed and _refusal(use) is None
        for use, _ in later
    )


def _instead(later: Sequence[tuple[ToolUse, Message]], tool: str) -> str:
    """The next other tool that worked, when it is not a shell command (that is the work going
    on, not a stand-in for the tool)."""
    for use, _ in later:
        if use.name == tool or use.result is None or use.failed:
            continue
        return "" if use.name in _SHELL_TOOLS else use.name
    return ""


def _gotcha(content: str) -> Candidate:
    return turn_candidate(content, MemoryType.GOTCHA, CONFIDENCE, PRIORITY, ())
