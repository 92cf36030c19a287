"""`cortex doctor` checks for the optional backends: which extractor, embedder, reranker and why.

It loads no model, imports no SDK and starts no CLI: it looks at keys, config, installed packages
and files only.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortex.admin.checks import Check
from cortex.app import Cortex
from cortex.backends import choose, rerank, treesitter, voyage
from cortex.backends.anthropic import API_KEY_ENV as ANTHROPIC_KEY_ENV
from cortex.config import EmbedderName, RerankerName


@dataclass(frozen=True, slots=True)
class ExtractorCheck(Check):
    """The extractor's check, also saying which LLM extractor runs (`doctor --json` carries both)."""

    extractor: str = "off"  # api | claude-cli | off: the one that runs, or was asked for and cannot
    active: bool = False  # whether LLM extraction runs today


def backend_checks(cx: Cortex) -> list[Check]:
    """A one-line summary, then one check each for the extractor, the hosted embedder, the reranker."""
    extractor = _extractor(cx)
    embedder, embedder_name = _embedder(cx)
    reranker = _reranker(cx)
    rerank_on = reranker.detail.startswith("FlashRank")
    offline = not extractor.active and embedder_name != "voyage"
    llm = {"api": "llm + heuristic", "claude-cli": "llm (claude -p) + heuristic"}
    summary = Check(
        "backends",
        "ok",
        f"extractor {llm.get(extractor.extractor, 'heuristic') if extractor.active else 'heuristic'}, "
        f"embedder {embedder_name}, reranker {'flashrank' if rerank_on else 'none'}"
        + ("; offline: nothing leaves this machine" if offline else ""),
    )
    return [summary, extractor, embedder, reranker, _symbols()]


def _symbols() -> Check:
    """Which splitter index-code (and code anchors) use per language; imports no parser."""
    by_language = treesitter.splitter_by_language()
    parsed = [lang for lang, how in by_language.items() if how != "regex"]
    regex = [lang for lang, how in by_language.items() if how == "regex"]
    if not parsed:
        detail = "regex splitter for every language (no tree-sitter grammar installed)"
        return Check("code symbols", "ok", detail, f"{treesitter.INSTALL_HINT} for tree-sitter symbols")
    detail = f"tree-sitter for {', '.join(parsed)}; regex splitter for {', '.join(regex)}"
    return Check("code symbols", "ok", detail)


def _extractor(cx: Cortex) -> ExtractorCheck:
    status = choose.extractor_status(cx.settings, cx.paths, day=cx.now().date().isoformat())
    kind = status.extractor.value

    def check(state: str, detail: str, fix: str = "") -> ExtractorCheck:
        return ExtractorCheck("extractor", state, detail, fix, extractor=kind, active=status.active)

    if status.active:
        return check("ok", f"LLM layer on: {status.note}; plus the heuristic layers")
    heuristic = "heuristic layers (explicit, structural, lexical); LLM layer off"
    if "disabled in config" in status.note:
        return check("ok", f"{heuristic}: {status.note}")
    if ANTHROPIC_KEY_ENV in status.note:
        hint = ' (llm_extractor = "claude-cli" uses your Claude Code login instead: no key)'
        return check("ok", f"{heuristic}: {status.note}{hint}")
    fix = status.fix or "see the detail above"
    return check("warn", f"{heuristic}: {status.note}", fix)


def _embedder(cx: Cortex) -> tuple[Check, str]:
    chosen, why = choose.planned_embedder(cx.settings)
    if chosen is EmbedderName.NONE:
        return Check("hosted embedder", "ok", "embeddings off (embedder = none)"), "none"
    if chosen is EmbedderName.LOCAL and not why:
        return (
            Check(
                "hosted embedder",
                "ok",
                'not used (embedder = local); set embedder = "voyage" and VOYAGE_API_KEY for voyage-3.5-lite',
            ),
            "local",
        )
    if why:
        return (
            Check(
                "hosted embedder",
                "warn",
                f"embedder = voyage, but {why}: the local embedder is used (its own index)",
                f"set {voyage.API_KEY_ENV}, or pip install 'cortex-memory[hosted]'",
            ),
            "local",
        )
    key = voyage.voyage_key(cx.settings.voyage_model)
    return (
        Check(
            "hosted embedder",
            "ok",
            f"Voyage {cx.settings.voyage_model} (index {key}, never mixed with local vectors); "
            "code is never sent; `cortex backfill` embeds older memories",
        ),
        "voyage",
    )


def _reranker(cx: Cortex) -> Check:
    why = choose.reranker_unavailable(cx.settings, cx.paths)
    if not why:
        folder = choose.reranker_folder(cx.settings, cx.paths)
        return Check("reranker", "ok", f"FlashRank {cx.settings.reranker_model} from {folder}")
    state = "warn" if cx.settings.reranker == RerankerName.FLASHRANK else "ok"
    if "not installed" in why:
        fix = rerank.RERANK_EXTRA_FIX
    elif "model at" in why:
        fix = rerank.FETCH_FIX
    elif "reranker = none" in why:
        fix = 'set reranker = "auto" in config.toml to rerank when a model is cached'
    else:
        fix = f"set reranker (auto, flashrank or none) and reranker_model ({', '.join(rerank.MODEL_FILES)})"
    return Check("reranker", state, f"none: recall runs unreranked ({why})", fix)
