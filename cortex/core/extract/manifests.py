"""Layer 2d, manifest changes: what an edit of a dependency manifest added, removed or changed. Pure.

An edit of `package.json`, `pyproject.toml`, `Cargo.toml` and the like is a decision in one
line: a dependency added, removed or pinned, a script's command changed. The note says what
changed, entry by entry (`devDependencies: removed npm-run-all ^4.1.5`; `scripts dev:frontend,
build: removed --bun`), not the file's state midway. It also carries the commands the edit took
out (`drops:` tags), so capture can retire an earlier plan or decision that still names them
(`bun --bun next dev` in a plan, after an edit turned it into `bun next dev`). When the turn's
prose gives the reason for a change it names (`the --bun flag forces Bun's runtime, which ...`),
the note carries that sentence too.

A settings file (`scanners.yml`, `config.toml`, `.env`, `tsconfig.json`) is read the same way,
for values changed only: `scan_prompt_timeout: ${SCAN_PROMPT_TIMEOUT:30} -> ${SCAN_PROMPT_TIMEOUT:120}`
is a decision, where a block of new settings is the code's business. A comment the edit put on
the changed line is the reason (`# Increased for model loading`).

A file rewritten whole with Write is read from the patch the client records for it, hunk by
hunk, as if each hunk were an edit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from cortex.core.extract.manifest_entries import (
    MAKEFILES,
    Entries,
    changed_keys,
    changed_settings,
    describe_changes,
    dropped_commands,
    entries,
    setting_change,
)
from cortex.core.extract.prose import parse_prose_blocks, parse_sentences
from cortex.core.extract.transcript import Message, Role, ToolUse
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import ENTRY_PREFIX

MANIFEST_TAG = "manifest"
DROPS_PREFIX = "drops:"  # a command the edit took out of the manifest
# ENTRY_PREFIX (`entry:<file>:<key>`): one tag per entry the note says changed; the write gate
# reads it as what the note gives the current word on (core/write/state.py).
MANIFEST_NAMES = frozenset(
    {
        "package.json",
        "pyproject.toml",
        "Cargo.toml",
        "composer.json",
        "deno.json",
        "Pipfile",
        "requirements.txt",
        "requirements-dev.txt",
        *MAKEFILES,
    }
)
# Settings files (not manifests): the suffixes whose `key: value` lines are settings. A JSON
# file is one when its name says so (`tsconfig.json`, `.eslintrc.json`, `vercel.json`): most
# JSON a session edits is data (fixtures, translations).
SETTINGS_SUFFIXES = (".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf", ".properties")
_SETTINGS_JSON = re.compile(
    r"(?:^\.|config|settings|^(?:vercel|turbo|nx|app|netlify|renovate)\.json$)", re.IGNORECASE
)
MAX_EDIT_CHARS = 4000  # of each side of a manifest edit kept for this layer
MAX_PARTS = 8
CONFIDENCE = 0.6
PRIORITY = 4

# A sentence that gives a reason: the change was made because of, or to avoid, something.
_REASON = re.compile(
    r"\b(?:because|caus(?:e|es|ed|ing)|forc(?:e|es|ed|ing)|breaks?|broke|incompatib\w*|conflicts?"
    r"|so that|to avoid|due to|required by)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`([^`]{3,})`")


def _file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def is_manifest(path: str) -> bool:
    """True for a dependency manifest's file name (any folder)."""
    name = _file_name(path)
    return name in MANIFEST_NAMES or (name.startswith("requirements") and name.endswith(".txt"))


def is_settings(path: str) -> bool:
    """True for a settings file's name (`app.yml`, `config.toml`, `.env.local`), manifests aside."""
    name = _file_name(path)
    env = name == ".env" or name.startswith(".env.")
    json = name.lower().endswith(".json") and _SETTINGS_JSON.search(name) is not None
    return not is_manifest(path) and (env or json or name.lower().endswith(SETTINGS_SUFFIXES))


def _path_read_here(tool_input: Mapping[str, object]) -> str | None:
    """The call's file when it is a manifest or a settings file, else None."""
    path = tool_input.get("file_path")
    return path if isinstance(path, str) and (is_manifest(path) or is_settings(path)) else None


def kept_edit_fields(tool_input: Mapping[str, object]) -> dict[str, object]:
    """The sides of a manifest or settings edit this layer reads (nothing for any other file)."""
    return {} if _path_read_here(tool_input) is None else edit_sides(tool_input, MAX_EDIT_CHARS)


def edit_sides(tool_input: Mapping[str, object], limit: int) -> dict[str, object]:
    """An edit's sides as a layer keeps them: `old_string`, `new_string` and MultiEdit's `edits`,
    each cut at `limit` characters."""
    out: dict[str, object] = {}
    for field in ("old_string", "new_string"):
        value = tool_input.get(field)
        if isinstance(value, str):
            out[field] = value[:limit]
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        out["edits"] = [
            {k: e[k][:limit] for k in ("old_string", "new_string") if isinstance(e.get(k), str)}
            for e in edits
            if isinstance(e, Mapping)
        ]
    return out


Sides = tuple[tuple[str, str], ...]  # (old, new) text of each hunk


def kept_patch(tool_input: Mapping[str, object], patch: Sides) -> Sides:
    """The sides of a manifest or settings file a Write rewrote, as the client's patch gives
    them (nothing for any other file)."""
    if _path_read_here(tool_input) is None:
        return ()
    return tuple((old[:MAX_EDIT_CHARS], new[:MAX_EDIT_CHARS]) for old, new in patch)


def extract_manifest_changes(turn: Sequence[Message]) -> list[tuple[Candidate, Message]]:
    """One note per successful manifest edit (or rewrite) of the turn that changes an entry."""
    found: list[tuple[Candidate, Message]] = []
    for message in turn:
        for use in message.tool_uses:
            if use.name in ("Edit", "MultiEdit", "Write") and use.result is not None and not use.failed:
                candidate = _edit_note(use)
                if candidate is not None:
                    found.append((_with_reason(candidate, turn), message))
    return found


def _with_reason(candidate: Candidate, turn: Sequence[Message]) -> Candidate:
    """The note and the first sentence of the turn's prose that names one of the values it
    says changed (`--bun`) and gives a reason; the note alone when there is none."""
    values = [v for v in _CODE.findall(candidate.content) if v.strip()]
    for message in turn:
        if message.role is not Role.ASSISTANT:
            continue
        for text in message.texts:
            for block in parse_prose_blocks(text):
                for sentence in parse_sentences(block):
                    if _REASON.search(sentence) and any(v in sentence for v in values):
                        return replace(candidate, content=f"{candidate.content}. Why: {sentence}")
    return candidate


def edit_pairs(tool_input: Mapping[str, object]) -> list[tuple[str, str]]:
    """An Edit's or MultiEdit's (old, new) text pairs, in order."""
    pairs = [(tool_input.get("old_string"), tool_input.get("new_string"))]
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        pairs += [(e.get("old_string"), e.get("new_string")) for e in edits if isinstance(e, Mapping)]
    return [(old, new) for old, new in pairs if isinstance(old, str) and isinstance(new, str)]


def _rewritten(hunks: Sides, name: str) -> tuple[Entries, Entries, str]:
    """A rewritten manifest's entries before and after, over all its hunks at once: an entry
    the rewrite moved (a sorted `dependencies` block) is in both and no change. A hunk that
    does not show its section's opening line leaves its entries' section unknown; such an
    entry takes the section its key has on the other side."""
    old: Entries = {}
    new: Entries = {}
    for before, after in hunks:
        old.update(entries(before, name))
        new.update(entries(after, name))
    for side, other in ((old, new), (new, old)):
        for unknown in [k for k in side if not k[0]]:
            known = {s for s, k in other if k == unknown[1] and s}
            placed = (known.pop(), unknown[1]) if len(known) == 1 else None
            if placed is not None and placed not in side:
                side[placed] = side.pop(unknown)
    return old, new, "\n".join(after for _, after in hunks)


def _edit_note(use: ToolUse) -> Candidate | None:
    path = _path_read_here(use.input)
    if path is None:
        return None
    name = _file_name(path)
    settings_file = is_settings(path)
    parts: list[str] = []
    drops: list[str] = []
    keys: list[str] = []
    whys: list[str] = []
    hunks = use.result.patch if use.result is not None else ()  # a Write that replaced the file
    if settings_file:
        for old_text, new_text in [*edit_pairs(use.input), *hunks]:
            changes = changed_settings(old_text, new_text)
            parts += [f"`{key}`: {setting_change(before, after)}" for key, before, after, _ in changes]
            keys += [key for key, *_ in changes]
            whys += [why for *_, why in changes if why]
    else:
        compared = [(entries(o, name), entries(n, name), n) for o, n in edit_pairs(use.input)]
        compared += [_rewritten(hunks, name)] if hunks else []
        for old, new, new_text in compared:
            parts += describe_changes(old, new)
            drops += dropped_commands(old, new, new_text)
            keys += sorted(k[1] for k in changed_keys(old, new))
    if not parts:
        return None
    content = f"{name}: " + "; ".join(dict.fromkeys(parts[:MAX_PARTS]))
    content += "".join(f". Why: {why}" for why in dict.fromkeys(whys))
    tags = (
        MANIFEST_TAG,
        *(f"{ENTRY_PREFIX}{name}:{k}" for k in dict.fromkeys(keys)),
        *(DROPS_PREFIX + d for d in dict.fromkeys(drops)),
    )
    return Candidate(
        content=content,
        type=MemoryType.DECISION,
        layer=Layer.STRUCTURAL,
        confidence=CONFIDENCE,
        priority=PRIORITY,
        tags=tags,
    )
