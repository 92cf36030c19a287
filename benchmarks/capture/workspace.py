"""The throwaway project's files follow the session: what its tools read or wrote appears on disk.

Without this, every note about a file would point at a file that does not exist, and cortex
would rightly call it stale. For each tool call under the project, as the replay reaches it:
Write puts its content; Edit and MultiEdit apply their replacements when the old text is there;
a file that is only read, or edited but absent, becomes an empty placeholder. Nothing is
committed and nothing deleted; `.git/`, `.memory/` and cortex's rules file are never touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FILE_TOOLS = ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit")
PROTECTED = (".git", ".memory")
RULES_FILE = Path(".claude") / "rules" / "cortex-memory.md"
MAX_BYTES = 2_000_000


def tool_calls(records: Iterable[dict[str, Any]]) -> Iterable[tuple[str, dict[str, Any]]]:
    """(tool name, input) of every file tool call in the records, in order."""
    for record in records:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") in FILE_TOOLS
            ):
                given = block.get("input")
                if isinstance(given, dict):
                    yield str(block["name"]), given


def _target(root: Path, given: dict[str, Any]) -> Path | None:
    raw = given.get("file_path") or given.get("notebook_path")
    if not isinstance(raw, str) or not raw:
        return None
    path = Path(raw) if Path(raw).is_absolute() else root / raw
    try:
        rel = path.resolve().relative_to(root)
    except (ValueError, OSError):
        return None
    if not rel.parts or rel.parts[0] in PROTECTED or rel == RULES_FILE:
        return None
    return root / rel


def _edits(name: str, given: dict[str, Any]) -> list[tuple[str, str, bool]]:
    if name == "MultiEdit":
        items = given.get("edits") if isinstance(given.get("edits"), list) else []
    else:
        items = [given]
    return [
        (str(e.get("old_string", "")), str(e.get("new_string", "")), bool(e.get("replace_all")))
        for e in items
        if isinstance(e, dict)
    ]


def apply(root: Path, records: Iterable[dict[str, Any]]) -> int:
    """Bring the project's files up to these records; how many files were written."""
    written = 0
    for name, given in tool_calls(records):
        path = _target(root, given)
        if path is None:
            continue
        with contextlib.suppress(OSError, UnicodeError):
            path.parent.mkdir(parents=True, exist_ok=True)
            if name == "Write" and isinstance(given.get("content"), str):
                path.write_text(given["content"][:MAX_BYTES], encoding="utf-8")
            elif name in ("Edit", "MultiEdit") and path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                for old, new, every in _edits(name, given):
                    if old and old in text:
                        text = text.replace(old, new) if every else text.replace(old, new, 1)
                path.write_text(text, encoding="utf-8")
            elif not path.exists():
                path.touch()
            else:
                continue
            written += 1
    return written
