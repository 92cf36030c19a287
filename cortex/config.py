"""Settings, built once: defaults < ~/.claude/memory/config.toml < .memory/config.toml < CORTEX_* env."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from cortex.errors import ConfigError
from cortex.paths import Paths

CONFIG_FILE = "config.toml"


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
    # embeddings
    # An unknown name stays text: recall then runs keyword-only and says why, as a missing model does.
    embedder: EmbedderName | str = EmbedderName.LOCAL
    model_path: str = ""  # a directory with all-MiniLM-L6-v2 files; empty = package, then hub
    voyage_model: str = "voyage-3.5-lite"
    # reranker
    reranker: RerankerName = RerankerName.AUTO
    reranker_model: str = "ms-marco-TinyBERT-L-2-v2"
    reranker_dir: str = ""  # cached FlashRank model directory; empty = <CORTEX_HOME>/models/flashrank
    # extraction (SPEC §3)
    llm_extraction: bool = True  # only used when ANTHROPIC_API_KEY is set
    llm_model: str = "claude-haiku-5-5"
    llm_daily_cap_usd: float = 0.15
    llm_timeout_s: float = 20.0
    include_sidechains: bool = False
    user_prompt_submit: bool = False
    user_prompt_max_memories: int = 3
    user_prompt_budget_ms: int = 300
    # lifecycle (SPEC §6)
    consolidate_every: int = 10
    consolidate_active_over: int = 80
    # logging
    log_level: str = "INFO"
    extra: dict[str, Any] = field(default_factory=dict)

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


_FIELDS = {f.name: f for f in fields(Settings) if f.name != "extra"}
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
    "user_prompt_max_memories": 0,
    "user_prompt_budget_ms": 0,
    "consolidate_every": 1,
    "consolidate_active_over": 1,
}
CHOICES: dict[str, tuple[str, ...]] = {
    "reranker": tuple(RerankerName),
    "log_level": ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
}


def _coerce(name: str, value: Any, source: str) -> Any:
    default = getattr(Settings(), name)
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
        text = _checked(name, str(value).strip(), source)
        return _named(type(default), text) if isinstance(default, Enum) else text
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(
            f"{source}: {name} = {value!r} is not a valid {type(default).__name__}",
            f"fix or remove `{name}` in {source}",
        ) from None


def _checked(name: str, value: Any, source: str) -> Any:
    """Refuse values of the right type that cortex still cannot use."""
    low = MINIMUM.get(name)
    if low is not None and value < low:
        raise ConfigError(
            f"{source}: {name} = {value!r} is below its minimum {low}", f"set `{name}` to {low} or more"
        )
    allowed = CHOICES.get(name)
    if allowed is not None:
        value = value.upper() if name == "log_level" else value.lower()
        if value not in allowed:
            raise ConfigError(
                f"{source}: {name} = {value!r} is not one of {', '.join(allowed)}",
                f"set `{name}` to one of {', '.join(allowed)}",
            )
    return value


def _named(kind: type[Enum], text: str) -> Any:
    """The member of `kind` spelled `text`; text cortex does not know is kept for the error note."""
    try:
        return kind(text)
    except ValueError:
        return text


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", f"fix the TOML syntax in {path}") from exc
    section = data.get("cortex", data)
    return section if isinstance(section, dict) else {}


def load_settings(paths: Paths, env: dict[str, str] | None = None) -> Settings:
    """Merge defaults, the global and project config files, and CORTEX_* variables."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for path in (paths.home / CONFIG_FILE, paths.store_dir / CONFIG_FILE):
        for key, value in _read_toml(path).items():
            if key in _FIELDS:
                values[key] = _coerce(key, value, str(path))
            else:
                extra[key] = value
    for name in _FIELDS:
        var = "CORTEX_" + name.upper()
        if var in env:
            values[name] = _coerce(name, env[var], var)
    return dataclasses.replace(Settings(), **values, extra=extra)
