"""Reading a session's transcript for the replay: prompt boundaries, hook cut points, path rewrite. Pure.

A real user prompt is a main-thread `user` record whose message is text (not a tool result),
not a meta, compaction-summary or task-notification record, and not a marker Claude Code writes
for something that is no turn: an interruption (`[Request interrupted ...`), a local command
(`<command-name>/clear ...`, `/compact`, `/model`) or its output (`<local-command-stdout>`).
Prompt commands such as `/init` (`<command-message>init is analyzing ...`) are prompts. These
are the prompts the dataset's meta.json counts (`user_prompts`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]

NOT_PROMPTS = (
    "[request interrupted",
    "<command-name>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<task-notification>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
)


@dataclass(frozen=True, slots=True)
class Cut:
    """Write the transcript's first `end` records, then run the hook `event` with `extra` fields."""

    end: int
    event: str
    extra: tuple[tuple[str, Any], ...] = ()


def _blocks(record: Record) -> list[Any] | str | None:
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def prompt_text(record: Record) -> str | None:
    """The text of a user record that is text only (no tool result); None for anything else."""
    if record.get("type") != "user":
        return None
    content = _blocks(record)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    kinds = [b.get("type") for b in content if isinstance(b, dict)]
    if "tool_result" in kinds or "text" not in kinds:
        return None
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def is_user_prompt(record: Record) -> bool:
    """True for a prompt the user typed (or a prompt command), on the main thread."""
    if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
        return False
    origin = record.get("origin")
    if isinstance(origin, dict) and origin.get("kind") not in (None, "human"):
        return False
    text = prompt_text(record)
    if text is None:
        return False
    return not text.lstrip().lower().startswith(NOT_PROMPTS)


def is_main_assistant(record: Record) -> bool:
    return record.get("type") == "assistant" and not record.get("isSidechain")


def assistant_texts(record: Record) -> list[str]:
    content = _blocks(record)
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and b.get("text")]


def last_assistant_message(records: Sequence[Record], start: int, end: int) -> str:
    """The last main-thread assistant text in records[start:end] (what Stop's payload carries)."""
    for record in reversed(records[start:end]):
        if is_main_assistant(record):
            texts = assistant_texts(record)
            if texts:
                return texts[-1]
    return ""


def _compaction_start(records: Sequence[Record], index: int) -> int:
    """A compaction summary's index, moved back over the boundary record written just before it."""
    while (
        index > 0
        and records[index - 1].get("type") == "system"
        and (records[index - 1].get("subtype") == "compact_boundary")
    ):
        index -= 1
    return index


def plan_cuts(records: Sequence[Record]) -> list[Cut]:
    """Where the hooks fire: Stop before every real prompt that follows an answered turn,
    PreCompact before each compaction, and Stop then SessionEnd after the last record."""
    cuts: list[Cut] = []
    answered = False  # a main-thread assistant record since the last cut
    turn_start = 0
    for i, record in enumerate(records):
        if record.get("isCompactSummary") and not record.get("isSidechain"):
            cuts.append(Cut(_compaction_start(records, i), "PreCompact", (("trigger", "auto"),)))
        elif is_user_prompt(record):
            if answered:
                message = last_assistant_message(records, turn_start, i)
                cuts.append(Cut(i, "Stop", (("last_assistant_message", message),)))
            answered = False
            turn_start = i
        elif is_main_assistant(record):
            answered = True
    if answered:
        message = last_assistant_message(records, turn_start, len(records))
        cuts.append(Cut(len(records), "Stop", (("last_assistant_message", message),)))
    cuts.append(Cut(len(records), "SessionEnd", (("reason", "other"),)))
    return cuts


def main_session_id(records: Sequence[Record]) -> str:
    """The session id most main-thread records carry."""
    ids = Counter(r.get("sessionId") for r in records if not r.get("isSidechain") and r.get("sessionId"))
    return str(ids.most_common(1)[0][0]) if ids else "00000000-0000-4000-8000-000000000000"


def last_branch(records: Sequence[Record]) -> str:
    """The git branch the session ended on: the `gitBranch` of the last main-thread record that
    names one ("" when none does; `HEAD` when it ended detached)."""
    for record in reversed(records):
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch and not record.get("isSidechain"):
            return branch
    return ""


def cwd_before(records: Sequence[Record], end: int, default: str) -> str:
    """The cwd of the last main-thread record before `end` (already rewritten), else `default`."""
    for record in reversed(records[:end]):
        cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd and not record.get("isSidechain"):
            return cwd
    return default


def permission_mode_before(records: Sequence[Record], end: int) -> str:
    for record in reversed(records[:end]):
        mode = record.get("permissionMode")
        if isinstance(mode, str) and mode:
            return mode
    return "default"


# -- the original project directory becomes the throwaway one ---------------------------------
def is_windows_path(path: str) -> bool:
    return bool(re.match(r"^[A-Za-z]:[\\/]", path)) or path.startswith("\\\\")


def path_rewriter(original: str, new_root: str) -> Callable[[str], str]:
    """A function that rewrites `original` to `new_root` in a string.

    A POSIX root is replaced wherever it is not followed by a name character (so `/a/claude` is
    not rewritten inside `/a/claude-backup`). A Windows root is matched case-insensitively with
    either slash, and the backslashes of the path that follows it become `/`.
    """
    original = original.rstrip("/\\") or original
    if not is_windows_path(original):
        pattern = re.compile(re.escape(original) + r"(?![\w\-])")
        return lambda text: pattern.sub(lambda _m: new_root, text) if original in text else text
    parts = [re.escape(p) for p in re.split(r"[\\/]+", original) if p]
    root = r"[\\/]+".join(parts)
    pattern = re.compile(root + r"(?![\w\-])((?:[\\/][^\\/\s\"'<>|*?:]+)*[\\/]?)", re.IGNORECASE)
    return lambda text: pattern.sub(lambda m: new_root + m.group(1).replace("\\", "/"), text)


def rewrite_strings(value: Any, rewrite: Callable[[str], str]) -> Any:
    """`value` with `rewrite` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        return [rewrite_strings(v, rewrite) for v in value]
    if isinstance(value, dict):
        return {rewrite(k): rewrite_strings(v, rewrite) for k, v in value.items()}
    return value
