"""Which embedder, reranker and extraction model to use, and why: the one place that decides.

Choices read Settings and the paths only. Each backend's module is imported inside the function
that needs it, so keyword-only recall and the hooks never pay for one. A missing or broken
backend is a Choice without one and a note saying why, never an error: cortex goes on without it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from cortex.backends.port import Choice, Embedder, Extractor, Reranker
from cortex.config import EmbedderName, ExtractorName, RerankerName, Settings
from cortex.errors import CortexError
from cortex.paths import Paths

log = logging.getLogger("cortex.backends")


class Purpose(Enum):
    """What vectors are for: a query now (cheap to load first), or many documents (fast per text)."""

    QUERY = "query"
    BULK = "bulk"


# -- embedders ----------------------------------------------------------------------------------
def embedder_name(value: str) -> EmbedderName | None:
    """The configured embedder as a name cortex knows; None for any other text."""
    try:
        return EmbedderName(value)
    except ValueError:
        return None


def embeddings_wanted(settings: Settings) -> bool:
    """False only when the config turns embeddings off (embedder = none)."""
    return embedder_name(settings.embedder) is not EmbedderName.NONE


def local_model_path(settings: Settings) -> Path | None:
    """The configured local model directory; None: the installed package, then the hub cache."""
    return Path(settings.model_path) if settings.model_path else None


def describe_local(settings: Settings, paths: Paths) -> dict[str, Any]:
    """The local model, its ONNX export and which runtime each purpose would use; loads nothing."""
    from cortex.backends import local

    return local.describe_embedders(local_model_path(settings), paths.home)


def planned_embedder(settings: Settings) -> tuple[EmbedderName, str]:
    """The embedder a choice would load, found without loading it, and why not Voyage if asked for.

    An unknown name plans as local (recall reads the local index); loading it says it is unknown.
    """
    name = embedder_name(settings.embedder)
    if name is EmbedderName.NONE:
        return EmbedderName.NONE, ""
    if name is EmbedderName.VOYAGE:
        from cortex.backends import voyage

        why = voyage.voyage_unavailable()
        return (EmbedderName.LOCAL, why) if why else (EmbedderName.VOYAGE, "")
    return EmbedderName.LOCAL, ""


def embedder_key(settings: Settings, paths: Paths) -> str | None:
    """The vector-index key of the planned embedder (None: embeddings off or no model known)."""
    name, _ = planned_embedder(settings)
    if name is EmbedderName.NONE:
        return None
    if name is EmbedderName.VOYAGE:
        from cortex.backends import voyage

        return voyage.voyage_key(settings.voyage_model)
    try:
        key = describe_local(settings, paths).get("key")
    except Exception:
        return None
    return str(key) if key else None


def query_embedder_is_cheap(settings: Settings, paths: Paths) -> bool:
    """True when a query embedder loads here without torch: the local ONNX export is ready."""
    if not embeddings_wanted(settings):
        return False
    try:
        return describe_local(settings, paths).get("query_backend") == "onnx"
    except Exception:
        return False


def choose_embedder(settings: Settings, paths: Paths, purpose: Purpose) -> Choice[Embedder]:
    """The embedder for `purpose`: none when turned off, Voyage when asked for and usable, else local."""
    name = embedder_name(settings.embedder)
    if name is EmbedderName.NONE:
        return Choice(None, "embeddings disabled in config (embedder = none)")
    if name is None:
        known = ", ".join(EmbedderName)
        return Choice(None, f"unknown backend {settings.embedder!r}; known: {known}")
    if name is EmbedderName.VOYAGE:
        return _voyage_or_local(settings, paths, purpose)
    try:
        return _local(settings, paths, purpose)
    except CortexError as exc:  # a broken model must not break keyword recall
        log.warning("embedder unavailable: %s", exc.message)
        return Choice(None, f"no embedder: {exc.message}", exc.fix)
    except Exception as exc:
        log.warning("embedder unavailable: %s", exc)
        return Choice(None, f"no embedder: {type(exc).__name__}: {exc}")


def _local(settings: Settings, paths: Paths, purpose: Purpose) -> Choice[Embedder]:
    from cortex.backends import local

    load = local.load_query_embedder if purpose is Purpose.QUERY else local.load_bulk_embedder
    return load(local_model_path(settings), paths.home)


def _voyage_or_local(settings: Settings, paths: Paths, purpose: Purpose) -> Choice[Embedder]:
    """Voyage when its key and SDK are here, else the local embedder (its own index, never mixed)."""
    try:
        from cortex.backends import voyage

        why = voyage.voyage_unavailable()
        if not why:
            timeout = voyage.QUERY_TIMEOUT_S if purpose is Purpose.QUERY else voyage.DOCUMENT_TIMEOUT_S
            embedder = voyage.load_voyage(settings.voyage_model, timeout_s=timeout)
            return Choice(
                embedder,
                f"Voyage {settings.voyage_model} ({embedder.dim}-d, own index {embedder.key}); "
                "code is never sent",
            )
        local = _local(settings, paths, purpose)
    except ImportError as exc:
        return Choice(None, f"voyage backend unavailable: {exc}")
    except Exception as exc:
        log.warning("voyage backend failed to load: %s", exc)
        return Choice(None, f"voyage backend failed: {exc}")
    log.info("Voyage not used (%s): %s", why, local.note)
    return Choice(local.backend, f"Voyage not used ({why}); {local.note}")


# -- reranker -----------------------------------------------------------------------------------
def reranker_folder(settings: Settings, paths: Paths) -> Path:
    """The configured FlashRank model's folder (it may not exist yet)."""
    from cortex.backends import rerank

    return rerank.reranker_dir(settings, paths.models_dir) / settings.reranker_model


def reranker_unavailable(
    settings: Settings, paths: Paths, find_spec: Callable[[str], Any] = importlib.util.find_spec
) -> str:
    """Why reranking is off ("" when FlashRank and its model files are all in place)."""
    from cortex.backends import rerank

    choice = settings.reranker
    if choice == RerankerName.NONE:
        return "reranking is off (reranker = none)"
    if choice not in (RerankerName.AUTO, RerankerName.FLASHRANK):
        return f"unknown reranker {choice!r} (use auto, flashrank or none)"
    cache = rerank.reranker_dir(settings, paths.models_dir)
    return rerank.flashrank_unavailable(cache, settings.reranker_model, find_spec)


def choose_reranker(settings: Settings, paths: Paths) -> Choice[Reranker]:
    """FlashRank when wanted and its package and cached model are here, else none and why.

    `auto` turns it on quietly when a model is cached; `flashrank` also logs why it cannot.
    Nothing is ever downloaded here (see backends.rerank).
    """
    from cortex.backends import rerank

    why = reranker_unavailable(settings, paths)
    if why:
        if settings.reranker == RerankerName.FLASHRANK:
            log.warning("reranker unavailable: %s", why)
        return Choice(None, f"no reranking: {why}")
    cache, model = rerank.reranker_dir(settings, paths.models_dir), settings.reranker_model
    try:
        reranker = rerank.load_flashrank(cache, model)
    except Exception as exc:  # a broken model folder must not break recall
        log.warning("FlashRank could not load %s: %s", cache / model, exc)
        return Choice(None, f"no reranking: FlashRank could not load {cache / model} ({exc})")
    return Choice(reranker, f"FlashRank {model} from {cache / model}")


# -- extraction model ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExtractorStatus:
    """Whether the LLM extraction layer would run now, which extractor, and why (or why not) in words."""

    active: bool
    note: str
    spent_usd: float | None = None
    extractor: ExtractorName = ExtractorName.OFF  # the one that runs (or was asked for and cannot)
    calls_today: int | None = None  # claude-cli: calls counted today
    binary: str = ""  # claude-cli: the `claude` executable found
    fix: str = ""  # what would turn it on, when something stands in the way


def llm_extraction_possible(settings: Settings, env: Mapping[str, str] | None = None) -> bool:
    """Cheap: could any LLM extractor run (so the capture path should import the layer at all)."""
    from cortex.backends.anthropic import API_KEY_ENV

    env = os.environ if env is None else env
    if not settings.llm_extraction:
        return False
    if settings.llm_extractor == ExtractorName.CLAUDE_CLI:
        return True
    return settings.llm_extractor == ExtractorName.API and bool(env.get(API_KEY_ENV, "").strip())


def extractor_status(
    settings: Settings, paths: Paths, *, day: str, env: Mapping[str, str] | None = None
) -> ExtractorStatus:
    """Is LLM extraction on, through which extractor, and why: from config, keys, files and ledgers.

    `llm_extractor` picks it: `api` (the default) runs when ANTHROPIC_API_KEY is set, the SDK
    is installed and `day`'s dollar cap is not reached; `claude-cli` when the `claude`
    executable is found and `day`'s call cap is not reached; `off` never. Found without
    importing the SDK or starting the CLI, so `cortex doctor` can say it too.
    """
    env = os.environ if env is None else env
    name = _extractor_name(settings.llm_extractor)
    if name is None:
        known = ", ".join(ExtractorName)
        why = f"unknown llm_extractor {settings.llm_extractor!r}; known: {known}"
        return ExtractorStatus(False, why, fix=f"set llm_extractor to one of {known}")
    if not settings.llm_extraction:
        return ExtractorStatus(False, "disabled in config (llm_extraction = false)")
    if name is ExtractorName.OFF:
        return ExtractorStatus(False, "disabled in config (llm_extractor = off)")
    if name is ExtractorName.CLAUDE_CLI:
        return _claude_cli_status(settings, paths, day, env)
    return _api_status(settings, paths, day, env)


def _extractor_name(value: str) -> ExtractorName | None:
    try:
        return ExtractorName(value)
    except ValueError:
        return None


def _api_status(settings: Settings, paths: Paths, day: str, env: Mapping[str, str]) -> ExtractorStatus:
    from cortex.backends import spend
    from cortex.backends.anthropic import API_KEY_ENV, HOSTED_EXTRA_FIX

    api = ExtractorName.API
    if not env.get(API_KEY_ENV, "").strip():
        return ExtractorStatus(False, f"{API_KEY_ENV} is not set", extractor=api)
    if importlib.util.find_spec("anthropic") is None:
        why = f"the anthropic package is not installed ({HOSTED_EXTRA_FIX})"
        return ExtractorStatus(False, why, extractor=api, fix=HOSTED_EXTRA_FIX)
    try:
        today = spend.read_spend(paths.home, day)
    except spend.LedgerUnreadable as exc:
        why = f"{exc}; delete it to resume LLM extraction"
        return ExtractorStatus(False, why, extractor=api, fix=f"delete {spend.ledger_path(paths.home)}")
    spent, cap = today.committed_usd, settings.llm_daily_cap_usd
    if spent >= cap:
        why = f"daily cap reached (${spent:.4f} of ${cap:.2f}); resumes tomorrow (UTC)"
        fix = "wait for tomorrow (UTC) or raise llm_daily_cap_usd in config.toml"
        return ExtractorStatus(False, why, spent, extractor=api, fix=fix)
    why = f"{settings.llm_model} via the Anthropic API (${spent:.4f} of ${cap:.2f} today)"
    return ExtractorStatus(True, why, spent, extractor=api)


def _claude_cli_status(settings: Settings, paths: Paths, day: str, env: Mapping[str, str]) -> ExtractorStatus:
    from cortex.backends import calls
    from cortex.backends.claude_cli import find_claude

    cli = ExtractorName.CLAUDE_CLI
    binary, why = find_claude(settings.claude_cli_path, env)
    if binary is None:
        fix = 'install Claude Code or set claude_cli_path (or llm_extractor = "off")'
        return ExtractorStatus(False, f"llm_extractor = claude-cli, but {why}", extractor=cli, fix=fix)
    try:
        today = calls.read_calls(paths.home, day)
    except calls.LedgerUnreadable as exc:
        why = f"{exc}; delete it to resume LLM extraction"
        return ExtractorStatus(False, why, extractor=cli, fix=f"delete {calls.ledger_path(paths.home)}")
    made, cap = today.calls, settings.llm_daily_calls
    if made >= cap:
        why = f"daily call cap reached ({made} of {cap} claude -p calls); resumes tomorrow (UTC)"
        fix = "wait for tomorrow (UTC) or raise llm_daily_calls in config.toml"
        return ExtractorStatus(False, why, extractor=cli, calls_today=made, binary=str(binary), fix=fix)
    why = (
        f"{settings.llm_model} via your own Claude Code, headless ({binary} -p: needs no API key; "
        f"no tools, no hooks; {made} of {cap} calls today)"
    )
    return ExtractorStatus(True, why, extractor=cli, calls_today=made, binary=str(binary))


def choose_extractor(
    settings: Settings,
    paths: Paths,
    *,
    day: str,
    env: Mapping[str, str] | None = None,
    status: ExtractorStatus | None = None,
) -> Choice[Extractor]:
    """The extraction model when LLM extraction is on (see `extractor_status`), else none and why."""
    status = extractor_status(settings, paths, day=day, env=env) if status is None else status
    if not status.active:
        return Choice(None, status.note, status.fix)
    env = os.environ if env is None else env
    if status.extractor is ExtractorName.CLAUDE_CLI:
        from cortex.backends.claude_cli import WORKDIR, ClaudeCliLlm

        cli = ClaudeCliLlm(
            Path(status.binary),
            settings.llm_model,
            timeout_s=settings.llm_timeout_s,
            workdir=paths.home / WORKDIR,
            env=env,
        )
        return Choice(cli, status.note)
    from cortex.backends.anthropic import API_KEY_ENV, LlmError, load_anthropic

    try:
        llm = load_anthropic(env[API_KEY_ENV].strip(), settings.llm_model, timeout_s=settings.llm_timeout_s)
    except LlmError as exc:
        return Choice(None, exc.message, exc.fix)
    return Choice(llm, status.note)
