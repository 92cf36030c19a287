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

from cortex.core.extract.prose import parse_prose_blocks, parse_sentences
from cortex.core.extract.transcript import Message, Role, ToolUse
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.redact.secrets import REDACTED_PREFIX

MANIFEST_TAG = "manifest"
DROPS_PREFIX = "drops:"  # a command the edit took out of the manifest
ENTRY_PREFIX = "entry:"  # `entry:<file>:<key>`, one per entry the note says changed
# A Makefile's targets are the project's commands, as a package.json's scripts are.
MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile", "justfile", "Justfile"})
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
# A package's own description, not what it depends on or runs.
METADATA_KEYS = frozenset(
    {
        "name", "version", "description", "title", "author", "authors", "license", "homepage",
        "repository", "readme", "keywords", "edition", "main", "module", "types", "icon",
        "displayName", "publisher", "category", "categories", "command", "url", "email",
    }
)  # fmt: skip
# Settings files (not manifests): the suffixes whose `key: value` lines are settings. A JSON
# file is one when its name says so (`tsconfig.json`, `.eslintrc.json`, `vercel.json`): most
# JSON a session edits is data (fixtures, translations).
SETTINGS_SUFFIXES = (".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf", ".properties")
_SETTINGS_JSON = re.compile(
    r"(?:^\.|config|settings|^(?:vercel|turbo|nx|app|netlify|renovate)\.json$)", re.IGNORECASE
)
MAX_SETTING_WORDS = 3  # a longer value is text (a message, a description), not a setting
MAX_EDIT_CHARS = 4000  # of each side of a manifest edit kept for this layer
MAX_PARTS = 8
MAX_VALUE_CHARS = 60
MAX_DROP_CHARS = 120
CONFIDENCE = 0.6
PRIORITY = 4

# `"key": "value"` (JSON) or `key = "value"` (TOML); a quoted TOML key too.
_ENTRY = re.compile(r'^\s*"?([\w@./:\-]+)"?\s*[:=]\s*"((?:[^"\\]|\\.)*)"\s*,?\s*$')
# `name = { version = "1.2", ... }` (TOML inline table): its version.
_TABLE = re.compile(r'^\s*"?([\w@./:\-]+)"?\s*=\s*\{.*?\bversion\s*=\s*"([^"]*)"')
# `name>=1.2` (a requirements line or a TOML array item `"name>=1.2",`).
_REQUIREMENT = re.compile(r'^\s*"?([A-Za-z0-9][\w.\-\[\]]*)\s*((?:[=<>!~]=?|===)\s*[^",;#\s]+)?"?\s*,?\s*$')
# Where an entry sits: a JSON object's key (`"scripts": {`), a TOML table (`[tool.poetry]`) or
# a TOML array (`dependencies = [`).
_SECTION = re.compile(r'^\s*(?:"([\w@./:\-]+)"\s*:\s*[{\[]|\[+\s*([\w.\-"]+)\s*\]+|([\w.\-]+)\s*=\s*\[)\s*$')
# Sections whose values are commands: a plan naming a command they lost is out of date.
_COMMAND_SECTIONS = re.compile(r"(?:^|\.)(?:scripts|tasks|targets)$")
# A Makefile target (`run-uvicorn:` or `build: deps`) and its recipe's lines (tab-indented).
_TARGET = re.compile(r"^([A-Za-z0-9][\w.\-]*)\s*:(?!=)(.*)$")
# A sentence that gives a reason: the change was made because of, or to avoid, something.
_REASON = re.compile(
    r"\b(?:because|caus(?:e|es|ed|ing)|forc(?:e|es|ed|ing)|breaks?|broke|incompatib\w*|conflicts?"
    r"|so that|to avoid|due to|required by)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"`([^`]{3,})`")
# A setting's line: `key: value` (YAML, JSON), `key = value` (TOML, INI), `KEY=value` (.env),
# optionally quoted or exported; a list item's (`- type: X`) is no setting of its own.
_SETTING = re.compile(r"""^\s*(?:export\s+)?["']?([A-Za-z_][\w.\-]*)["']?\s*[:=]\s*(.*)$""")
_QUOTED_VALUE = re.compile(r"""^("(?:[^"\\]|\\.)*"|'[^']*')\s*,?\s*(.*)$""")
_COMMENT = re.compile(r"\s(?:#|//)\s*(.*)$")
_BLOCK_START = frozenset({"", "{", "[", "|", ">", "|-", ">-", "(", "{{"})
_RECIPE = re.compile(r"^(?:\t| {4})\s*[@\-+]*(.*\S)")

Entries = dict[tuple[str, str], str]  # (section, key) -> value


def is_manifest(path: str) -> bool:
    """True for a dependency manifest's file name (any folder)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name in MANIFEST_NAMES or (name.startswith("requirements") and name.endswith(".txt"))


def is_settings(path: str) -> bool:
    """True for a settings file's name (`app.yml`, `config.toml`, `.env.local`), manifests aside."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    env = name == ".env" or name.startswith(".env.")
    json = name.lower().endswith(".json") and _SETTINGS_JSON.search(name) is not None
    return not is_manifest(path) and (env or json or name.lower().endswith(SETTINGS_SUFFIXES))


def _read_here(tool_input: Mapping[str, object]) -> bool:
    path = tool_input.get("file_path")
    return isinstance(path, str) and (is_manifest(path) or is_settings(path))


def kept_edit_fields(tool_input: Mapping[str, object]) -> dict[str, object]:
    """The sides of a manifest or settings edit this layer reads (nothing for any other file)."""
    if not _read_here(tool_input):
        return {}
    out: dict[str, object] = {}
    for field in ("old_string", "new_string"):
        value = tool_input.get(field)
        if isinstance(value, str):
            out[field] = value[:MAX_EDIT_CHARS]
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        out["edits"] = [
            {k: e[k][:MAX_EDIT_CHARS] for k in ("old_string", "new_string") if isinstance(e.get(k), str)}
            for e in edits
            if isinstance(e, Mapping)
        ]
    return out


Sides = tuple[tuple[str, str], ...]  # (old, new) text of each hunk


def kept_patch(tool_input: Mapping[str, object], patch: Sides) -> Sides:
    """The sides of a manifest or settings file a Write rewrote, as the client's patch gives
    them (nothing for any other file)."""
    if not _read_here(tool_input):
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


def _sides(use: ToolUse) -> list[tuple[str, str]]:
    pairs = [(use.input.get("old_string"), use.input.get("new_string"))]
    edits = use.input.get("edits")
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
    path = use.input.get("file_path")
    if not isinstance(path, str) or not (is_manifest(path) or is_settings(path)):
        return None
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    settings_file = is_settings(path)
    parts: list[str] = []
    drops: list[str] = []
    keys: list[str] = []
    whys: list[str] = []
    hunks = use.result.patch if use.result is not None else ()  # a Write that replaced the file
    if settings_file:
        for old_text, new_text in [*_sides(use), *hunks]:
            changes = changed_settings(old_text, new_text)
            parts += [f"`{key}`: {_setting_change(before, after)}" for key, before, after, _ in changes]
            keys += [key for key, *_ in changes]
            whys += [why for *_, why in changes if why]
    else:
        compared = [(entries(o, name), entries(n, name), n) for o, n in _sides(use)]
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


def entries(text: str, name: str = "") -> Entries:
    """The manifest entries a snippet holds, by section and key (a Makefile's: `make <target>`
    in section `targets`, its recipe as the value)."""
    if name in MAKEFILES:
        return _targets(text, "just" if name.lower() == "justfile" else "make")
    out: Entries = {}
    section = ""
    for line in text.splitlines():
        head = _SECTION.match(line)
        if head:
            section = (head.group(1) or head.group(2) or head.group(3) or "").strip('"')
            continue
        match = _ENTRY.match(line) or _TABLE.match(line)
        if match:
            out[(section, match.group(1))] = match.group(2).replace('\\"', '"')
            continue
        req = _REQUIREMENT.match(line)
        if req and (req.group(2) or section.endswith("dependencies") or not section):
            out[(section, req.group(1))] = (req.group(2) or "").replace(" ", "")
    return out


def settings(text: str) -> dict[str, tuple[str, str]]:
    """key -> (value, comment) for each setting of a snippet, "" for a block's (`key:` over nested
    lines); a key set twice to different values (one per job of a workflow, say) says nothing
    alone and is left out, as are list items. Set alike each time, it is one setting."""
    out: dict[str, tuple[str, str]] = {}
    twice: set[str] = set()
    for line in text.splitlines():
        m = _SETTING.match(line)
        if m is None or line.lstrip().startswith(("-", "#", "//", ";")):
            continue
        key, rest = m.group(1), m.group(2).strip()
        if key in METADATA_KEYS:
            continue
        quoted = _QUOTED_VALUE.match(rest)
        if quoted:
            value, tail = quoted.group(1), quoted.group(2)
        else:
            comment = _COMMENT.search(rest)
            value, tail = (rest[: comment.start()], comment.group(0)) if comment else (rest, "")
        value = value.strip().rstrip(",").strip()
        note = _COMMENT.search(" " + tail)
        value = "" if value in _BLOCK_START else value.strip("\"'")
        if key in out and out[key][0] != value:
            twice.add(key)
        out[key] = (value, note.group(1).strip() if note else out.get(key, ("", ""))[1])
    return {k: v for k, v in out.items() if k not in twice}


def changed_settings(old_text: str, new_text: str) -> list[tuple[str, str, str, str]]:
    """(key, old value, new value, the comment the edit gave it) for each setting the edit gave
    a new one-line value (the old one is "" for a block it replaced): a setting added or removed
    is not one, nor a secret's (redacted) value."""
    old, new = settings(old_text), settings(new_text)
    out = []
    for key, (value, comment) in new.items():
        if key not in old:
            continue
        before, said_before = old[key]
        short = all(len(v.split()) <= MAX_SETTING_WORDS for v in (value, before))
        secret = REDACTED_PREFIX in value or REDACTED_PREFIX in before
        if value and before != value and short and not secret:
            out.append((key, before, value, comment if comment != said_before else ""))
    return out


def _setting_change(before: str, after: str) -> str:
    """`30 -> 120`; a block replaced by a one-line value says the value (`now []`)."""
    return f"{_clip(before)} -> {_clip(after)}" if before else f"now {_clip(after)}"


def _targets(text: str, runner: str) -> Entries:
    recipes: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        target = _TARGET.match(line)
        if target:
            current = recipes.setdefault(f"{runner} {target.group(1)}", [])
            continue
        recipe = _RECIPE.match(line)
        if recipe and current is not None:
            current.append(recipe.group(1))
        elif line.strip():
            current = None
    return {("targets", key): " && ".join(lines) for key, lines in recipes.items()}


def changed_keys(old: Entries, new: Entries) -> set[tuple[str, str]]:
    """The entries added, removed or changed (a package's metadata left out)."""
    keys = (old.keys() ^ new.keys()) | {k for k in old.keys() & new.keys() if old[k] != new[k]}
    return {k for k in keys if k[1] not in METADATA_KEYS}


def describe_changes(old: Entries, new: Entries) -> list[str]:
    """What changed between two versions of the same entries, grouped by section and change:
    `scripts dev:frontend, build: removed --bun`, `dependencies: added zod ^3.23`."""
    changes: dict[tuple[str, str], list[str]] = {}
    for key in changed_keys(old, new):
        if key not in new:
            changes.setdefault((key[0], _removed_entry(key[1], old[key])), [])
        elif key not in old:
            changes.setdefault((key[0], _added_entry(key[1], new[key])), [])
        else:
            changes.setdefault((key[0], _changed_value(old[key], new[key])), []).append(key[1])
    out = []
    for (section, change), keys in sorted(changes.items()):
        shown = "" if section == "targets" else section  # `make test` says where it is
        where = " ".join(x for x in (shown, ", ".join(sorted(keys))) if x)
        out.append(f"{where}: {change}" if where else change)
    return out


def dropped_commands(old: Entries, new: Entries, new_text: str) -> list[str]:
    """The commands (script values of two words or more) the edit took out: no longer in the
    new text at all, so a plan that still names one is out of date."""
    out = []
    for key, value in old.items():
        value = " ".join(value.split())
        if (
            not _COMMAND_SECTIONS.search(key[0])
            or new.get(key) == value
            or len(value.split()) < 2
            or len(value) > MAX_DROP_CHARS
        ):
            continue
        if value not in " ".join(new_text.split()):
            out.append(value)
    return out


def _removed_entry(key: str, value: str) -> str:
    return f"removed `{key}`" + (f" {_clip(value)}" if value and " " not in value else "")


def _added_entry(key: str, value: str) -> str:
    return f"added `{key}`" + (f" {_clip(value)}" if value and " " not in value else "")


def _changed_value(old: str, new: str) -> str:
    """A version bump as `old -> new`; a command by the words it lost and gained."""
    if " " not in old.strip() and " " not in new.strip():
        return f"{_clip(old)} -> {_clip(new)}"
    before, after = old.split(), new.split()
    # What lies between the words both share at the start and at the end: a flag taken out,
    # a runner put in front (`next dev` -> `bun --bun next dev`).
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    lost = dict.fromkeys(w for w in before[head : len(before) - tail] if w not in after)
    gained = dict.fromkeys(w for w in after[head : len(after) - tail] if w not in before)
    said = []
    if lost:
        said.append(f"removed `{_clip(' '.join(lost))}`")
    if gained:
        said.append(f"added `{_clip(' '.join(gained))}`")
    return ", ".join(said) or "reordered"


def _clip(value: str) -> str:
    return value if len(value) <= MAX_VALUE_CHARS else value[: MAX_VALUE_CHARS - 3] + "..."
