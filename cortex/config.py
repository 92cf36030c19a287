"""Settings, built once: defaults < ~/.claude/memory/config.toml < .memory/config.toml < CORTEX_* env.

A config file holds only settings, with values cortex can use: an unknown key (a typo such as
`embeder`) or a value outside a setting's range or choices is refused when the settings load,
naming the file, the line and the key, with the nearest valid name, never silently ignored.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from cortex.errors import ConfigError
from cortex.paths import Paths

CONFIG_FILE = "config.toml"
TABLE = "cortex"  # settings sit at the top level of a file or in a [cortex] table
ENV_PREFIX = "CORTEX_"
DEFAULT_SOURCE = "default"


class EmbedderName(StrEnum):
    """The embedders `embedder` can name (backends.choose turns the name into one)."""

    LOCAL = "local"
    VOYAGE = "voyage"
    NONE = "none"


class RerankerName(StrEnum):
    """The rerankers `reranker` can name: auto = FlashRank when its model is cached."""

    AUTO = "auto"
    FLASHRANK = "flashrank"
    NONE = "none"


class ExtractorName(StrEnum):
    """The LLM extractors `llm_extractor` can name (backends.choose turns the name into one)."""

    API = "api"  # the Anthropic API, when ANTHROPIC_API_KEY is set
    CLAUDE_CLI = "claude-cli"  # the user's own Claude Code, headless (`claude -p`): no API key
    OFF = "off"


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of cortex with its default; see README "Configuration"."""

    # briefing (SPEC §4)
    briefing_budget_tokens: int = 1500
    briefing_max_chars: int = 9500
    briefing_file: bool = True  # write .claude/rules/cortex-memory.md
    rank_weight_confidence: float = 0.5
    rank_weight_priority: float = 0.2
    rank_weight_centrality: float = 0.15
    rank_weight_access: float = 0.15
    # recall (SPEC §5)
    recall_limit: int = 8
    recall_budget_tokens: int = 2000
    recall_abstain_floor: float = 0.0  # 0 = calibrated default in core.recall
    recall_mmr_lambda: float = 1.0  # 1 = no MMR (measured best); below 1 trades relevance for diversity
    recall_candidates: int = 50
    recall_intent_weights: bool = False  # fusion weights by question kind (measured: no gain)
    # embeddings
    embedder: EmbedderName = EmbedderName.LOCAL
    model_path: str = ""  # a directory with all-MiniLM-L6-v2 files; empty = package, then hub
    voyage_model: str = "voyage-3.5-lite"
    # reranker
    reranker: RerankerName = RerankerName.AUTO
    reranker_model: str = "ms-marco-TinyBERT-L-2-v2"
    reranker_dir: str = ""  # cached FlashRank model directory; empty = <CORTEX_HOME>/models/flashrank
    # extraction (SPEC §3)
    llm_extraction: bool = True  # false: no LLM extractor at all (see llm_extractor)
    llm_model: str = "claude-haiku-5-5"
    llm_daily_cap_usd: float = 0.15
    llm_timeout_s: float = 20.0
    llm_extractor: ExtractorName = ExtractorName.API
    llm_daily_calls: int = 50  # claude-cli: at most this many `claude -p` calls per UTC day
    claude_cli_path: str = ""  # the `claude` executable; empty = PATH, then its usual install places
    include_sidechains: bool = False
    user_prompt_submit: bool = False
    user_prompt_max_memories: int = 3
    user_prompt_budget_ms: int = 300
    # lifecycle (SPEC §6)
    consolidate_every: int = 10
    consolidate_active_over: int = 80
    # team memory (README "Team memory"): a shared PostgreSQL store, keyed by the git remote
    team_dsn: str = ""  # e.g. postgresql://cortex@db.internal/cortex; empty = no team store
    team_share_types: str = ""  # comma-separated types shared without `cortex share`, e.g. decision,gotcha
    team_connect_ms: int = 300  # connect budget of recall and the worker; then local-only, with a note
    # logging
    log_level: str = "INFO"

    def rank_weights(self) -> tuple[float, float, float, float]:
        """Briefing rank weights normalised to sum 1."""
        raw = (
            self.rank_weight_confidence,
            self.rank_weight_priority,
            self.rank_weight_centrality,
            self.rank_weight_access,
        )
        total = sum(max(w, 0.0) for w in raw) or 1.0
        w = tuple(max(x, 0.0) / total for x in raw)
        return (w[0], w[1], w[2], w[3])


SETTING_NAMES = tuple(f.name for f in fields(Settings))
_DEFAULTS = Settings()
# Values outside these would fail later, far from the line in the config that caused them.
MINIMUM: dict[str, float] = {
    "briefing_budget_tokens": 1,
    "briefing_max_chars": 1,
    "recall_limit": 1,
    "recall_budget_tokens": 1,
    "recall_candidates": 1,
    "recall_mmr_lambda": 0.0,
    "recall_abstain_floor": 0.0,
    "llm_daily_cap_usd": 0.0,
    "llm_timeout_s": 0.0,
    "llm_daily_calls": 0,
    "user_prompt_max_memories": 0,
    "user_prompt_budget_ms": 0,
    "consolidate_every": 1,
    "consolidate_active_over": 1,
    "team_connect_ms": 1,
}
MAXIMUM: dict[str, float] = {"recall_mmr_lambda": 1.0}
CHOICES: dict[str, tuple[str, ...]] = {
    "embedder": tuple(e.value for e in EmbedderName),
    "reranker": tuple(e.value for e in RerankerName),
    "llm_extractor": tuple(e.value for e in ExtractorName),
    "log_level": ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
}


# Settings holding a comma-separated list (a TOML array is accepted too), and the names allowed.
LIST_SETTINGS: dict[str, tuple[str, ...]] = {
    "team_share_types": ("decision", "pattern", "architecture", "gotcha", "code_description"),
}


def _did_you_mean(word: str, options: Iterable[str]) -> str | None:
    """The option closest to a misspelt `word`, if one is close enough."""
    import difflib  # only on an error: the prompt hook loads settings too

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return close[0] if close else None


def _coerce(name: str, value: Any, source: str) -> Any:
    default = getattr(_DEFAULTS, name)
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        if isinstance(value, bool):  # TOML true is not a number or a name
            raise ValueError(value)
        if isinstance(default, int):
            number = float(value) if isinstance(value, float) else int(str(value).strip())
            if number != int(number):
                raise ValueError(value)
            return _checked(name, int(number), source)
        if isinstance(default, float):
            return _checked(name, float(value), source)
        if name in LIST_SETTINGS and isinstance(value, list):  # `team_share_types = ["decision"]`
            value = ",".join(str(v) for v in value)
        if isinstance(value, dict | list):  # a TOML table or array where text belongs
            raise ValueError(value)
        text = _checked(name, str(value).strip(), source)
        return type(default)(text) if isinstance(default, Enum) else text
    except (TypeError, ValueError, OverflowError):
        kind = "str" if isinstance(default, Enum) else type(default).__name__
        raise ConfigError(
            f"{source}: {name} = {value!r} is not a valid {kind}",
            f"fix or remove `{name}` in {source}",
        ) from None


def _checked(name: str, value: Any, source: str) -> Any:
    """Refuse values of the right type that cortex still cannot use."""
    low, high = MINIMUM.get(name), MAXIMUM.get(name)
    if low is not None and value < low:
        raise ConfigError(
            f"{source}: {name} = {value!r} is below its minimum {low}", f"set `{name}` to {low} or more"
        )
    if high is not None and value > high:
        raise ConfigError(
            f"{source}: {name} = {value!r} is above its maximum {high}", f"set `{name}` to {high} or less"
        )
    if name in LIST_SETTINGS:
        for item in filter(None, (part.strip().lower() for part in value.split(","))):
            if item not in LIST_SETTINGS[name]:
                raise ConfigError(
                    f"{source}: {name} names {item!r}, which is never shared",
                    f"list only {', '.join(LIST_SETTINGS[name])} in `{name}`",
                )
    allowed = CHOICES.get(name)
    if allowed is not None:
        value = value.upper() if name == "log_level" else value.lower()
        if value not in allowed:
            near = _did_you_mean(value, allowed)
            raise ConfigError(
                f"{source}: {name} = {value!r} is not one of {', '.join(allowed)}"
                + (f"; did you mean {near!r}?" if near else ""),
                f"set `{name}` to one of {', '.join(allowed)}",
            )
    return value


# -- config files ------------------------------------------------------------------------------
_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]*?)\s*\]\]?\s*(?:#.*)?$")


def line_of(text: str, key: str, table: str | None) -> int | None:
    """The line (from 1) where `key` is set under `table` (None: the top level) in TOML text.

    tomllib reports no positions, so the text is scanned: table headers, then `key =`, bare or
    quoted; a dotted key (`cortex.recall_limit = 3`) is found by its last part anywhere."""
    name = re.escape(key)
    own = re.compile(rf"""^\s*(?:{name}|"{name}"|'{name}')\s*=""")
    dotted = re.compile(rf"""^\s*[\w"'.\- ]*\.\s*(?:{name}|"{name}"|'{name}')\s*=""")
    current: str | None = None
    fallback = None
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1).strip().strip("\"'") or None
            if table is None and current == key:  # a table where a setting belongs: `[embedder]`
                return number
        elif own.match(line) and current == table:
            return number
        elif fallback is None and (own.match(line) or dotted.match(line)):
            fallback = number
    return fallback


def _read_file(path: Path) -> tuple[dict[str, Any], str] | None:
    """The parsed file and its text; None when there is no such file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read {path}: {exc}", f"make {path} a readable UTF-8 file, or remove it"
        ) from exc
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}", f"fix the TOML syntax in {path}") from exc


def _file_settings(path: Path) -> Iterator[tuple[str, Any, str]]:
    """(setting, value, `path:line`) of every key in one config file; any other key is an error."""
    found = _read_file(path)
    if found is None:
        return
    data, text = found
    table = data.get(TABLE)
    entries: list[tuple[str, Any, str | None]] = []
    if isinstance(table, dict):
        entries += [(k, v, None) for k, v in data.items() if k != TABLE]
        entries += [(k, v, TABLE) for k, v in table.items()]
    else:
        entries += [(k, v, None) for k, v in data.items()]
    for key, value, under in entries:
        line = line_of(text, key, under)
        where = f"{path}:{line}" if line else str(path)
        if key not in SETTING_NAMES:
            near = _did_you_mean(key.lower(), SETTING_NAMES)
            fix = f"rename it to `{near}`" if near else "remove it"
            raise ConfigError(
                f"{where}: unknown setting `{key}`" + (f"; did you mean `{near}`?" if near else ""),
                fix + ' (README "Configuration" lists every setting)',
            )
        if isinstance(table, dict) and under is None:
            raise ConfigError(
                f"{where}: `{key}` is outside the [{TABLE}] table, so it would not apply",
                f"move it under [{TABLE}] in {path}",
            )
        yield key, value, where


def config_files(paths: Paths) -> tuple[Path, Path]:
    """The global, then the project config file (the later one wins)."""
    return (paths.home / CONFIG_FILE, paths.store_dir / CONFIG_FILE)


def load_settings_with_sources(
    paths: Paths, env: dict[str, str] | None = None
) -> tuple[Settings, dict[str, str]]:
    """The settings and, for each, where its value came from: `default`, `FILE:LINE` or a variable."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    sources = dict.fromkeys(SETTING_NAMES, DEFAULT_SOURCE)
    for path in config_files(paths):
        for key, value, where in _file_settings(path):
            values[key] = _coerce(key, value, where)
            sources[key] = where
    for name in SETTING_NAMES:
        var = ENV_PREFIX + name.upper()
        if var in env:
            values[name] = _coerce(name, env[var], var)
            sources[name] = var
    return dataclasses.replace(_DEFAULTS, **values), sources


def load_settings(paths: Paths, env: dict[str, str] | None = None) -> Settings:
    """Merge defaults, the global and project config files, and CORTEX_* variables."""
    return load_settings_with_sources(paths, env)[0]
