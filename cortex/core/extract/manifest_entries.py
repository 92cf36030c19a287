"""What a manifest or settings snippet says: its entries and settings, and what changed
between two of them (an edit's sides, a rewrite's hunks). Pure.

Entries are (section, key) -> value: a dependency and its version, a script and its command,
a Makefile target and its recipe. Settings are `key: value` lines read as text, one value per
key, with the comment written on the line.
"""

from __future__ import annotations

import re

from cortex.core.redact.secrets import REDACTED_PREFIX

# A Makefile's targets are the project's commands, as a package.json's scripts are.
MAKEFILES = frozenset({"Makefile", "makefile", "GNUmakefile", "justfile", "Justfile"})
# A package's own description, not what it depends on or runs.
METADATA_KEYS = frozenset(
    {
        "name", "version", "description", "title", "author", "authors", "license", "homepage",
        "repository", "readme", "keywords", "edition", "main", "module", "types", "icon",
        "displayName", "publisher", "category", "categories", "command", "url", "email",
    }
)  # fmt: skip
MAX_SETTING_WORDS = 3  # a longer value is text (a message, a description), not a setting
MAX_VALUE_CHARS = 60
MAX_DROP_CHARS = 120
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
# A setting's line: `key: value` (YAML, JSON), `key = value` (TOML, INI), `KEY=value` (.env),
# optionally quoted or exported; a list item's (`- type: X`) is no setting of its own.
_SETTING = re.compile(r"""^\s*(?:export\s+)?["']?([A-Za-z_][\w.\-]*)["']?\s*[:=]\s*(.*)$""")
_QUOTED_VALUE = re.compile(r"""^("(?:[^"\\]|\\.)*"|'[^']*')\s*,?\s*(.*)$""")
_COMMENT = re.compile(r"\s(?:#|//)\s*(.*)$")
_BLOCK_START = frozenset({"", "{", "[", "|", ">", "|-", ">-", "(", "{{"})
_RECIPE = re.compile(r"^(?:\t| {4})\s*[@\-+]*(.*\S)")

Entries = dict[tuple[str, str], str]  # (section, key) -> value


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


def setting_change(before: str, after: str) -> str:
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
