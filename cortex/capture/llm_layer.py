"""Extraction layer 4: ask a small model for candidates, within the daily cap; [] on any failure.

The model is reached through the extractor `backends.choose` picks: the Anthropic API (a dollar
cap), or the user's own Claude Code run headless (`claude -p`, a call cap). Both get the same
redacted prompt and their replies the same parser.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from cortex.app import Cortex
from cortex.backends import calls, spend
from cortex.backends.anthropic import API_KEY_ENV, LlmError
from cortex.backends.choose import ExtractorStatus, choose_extractor, extractor_status
from cortex.backends.claude_cli import HOOK_GUARD_ENV
from cortex.backends.port import Extractor, LlmReply
from cortex.config import ExtractorName
from cortex.core.extract.llm_prompt import (
    MAX_OUTPUT_TOKENS,
    PROMPT_BUDGET_TOKENS,
    ExtractionPrompt,
    render_extraction_prompt,
    usage_cost_usd,
    worst_case_cost_usd,
)
from cortex.core.extract.llm_reply import parse_extraction_response
from cortex.core.extract.pipeline import GitContext, project_relative, redact_messages
from cortex.core.extract.transcript_model import Message
from cortex.core.model import Candidate

log = logging.getLogger("cortex.llm")

# HOOK_GUARD_ENV ("CORTEX_NO_HOOKS") is set for this process and whatever it starts: `cortex hook`
# exits at once when it sees it, so an extraction can never re-enter Claude Code's hooks (the
# claude-cli extractor also runs its child with every hook off).
__all__ = ["HOOK_GUARD_ENV", "LlmRead", "llm_candidates", "llm_read", "llm_status"]


@dataclass(frozen=True, slots=True)
class LlmRead:
    """What one LLM read gave: its candidates, and the records of the messages a model answered
    on. A call the cap or a failure kept back, or messages the prompt budget left out, name no
    record: a later read of the same transcript may still send them."""

    candidates: list[Candidate]
    sent: frozenset[str] = frozenset()


def llm_status(cx: Cortex, env: Mapping[str, str] | None = None) -> ExtractorStatus:
    """Is LLM extraction on today, through which extractor, and why (see `extractor_status`)."""
    return extractor_status(cx.settings, cx.paths, day=_day(cx), env=env)


def llm_candidates(
    cx: Cortex,
    messages: Sequence[Message],
    git: GitContext | None,
    session_id: str | None,
    *,
    recent_commits: Sequence[str] = (),
) -> list[Candidate]:
    """LLM-layer candidates for the new part of a transcript; [] when off, capped or failing."""
    return llm_read(cx, messages, git, session_id, recent_commits=recent_commits).candidates


def llm_read(
    cx: Cortex,
    messages: Sequence[Message],
    git: GitContext | None,
    session_id: str | None,
    *,
    recent_commits: Sequence[str] = (),
) -> LlmRead:
    """The LLM layer over the new part of a transcript: its candidates and the records it sent.

    The worker calls this after layers 1-3 and merges the result, so a failure here only
    costs the extra candidates: it is logged and never raised.
    """
    try:
        return _llm_read(cx, messages, git, session_id, recent_commits)
    except Exception as exc:  # layer 4 is optional: the heuristic candidates must still be stored
        log.warning(
            "LLM extraction failed unexpectedly (%s: %s); heuristic layers only", type(exc).__name__, exc
        )
        return LlmRead([])


def _llm_read(
    cx: Cortex,
    messages: Sequence[Message],
    git: GitContext | None,
    session_id: str | None,
    recent_commits: Sequence[str],
) -> LlmRead:
    status = llm_status(cx)
    choice = choose_extractor(cx.settings, cx.paths, day=_day(cx), status=status)
    llm = choice.backend
    if llm is None:
        # No key is the normal offline set-up; anything else (cap, ledger, SDK, CLI) is worth a line.
        quiet = API_KEY_ENV in choice.note or "disabled in config" in choice.note
        level = logging.DEBUG if quiet else logging.INFO
        log.log(level, "LLM extraction off for session %s: %s", session_id, choice.note)
        return LlmRead([])
    os.environ[HOOK_GUARD_ENV] = "1"
    commits = tuple(recent_commits) or _commit_subjects(cx)
    prompt = render_extraction_prompt(
        redact_messages(messages),
        git=git,
        recent_commits=commits,
        project=cx.project_name,
        budget_tokens=PROMPT_BUDGET_TOKENS,
    )
    if prompt.included == 0:
        return LlmRead([])
    if status.extractor is ExtractorName.CLAUDE_CLI:
        answered = _via_claude_cli(cx, llm, prompt, session_id)
    else:
        answered = _via_api(cx, llm, prompt, session_id)
    if answered is None:
        return LlmRead([])
    reply, cost = answered
    from cortex.core.write.apply import DEFAULT_PRIORITY

    parsed = parse_extraction_response(reply.text, default_priority=DEFAULT_PRIORITY)
    for problem in parsed.problems:
        log.info("LLM reply for session %s: %s", session_id, problem)
    if reply.stop_reason == "max_tokens":
        log.info("LLM reply for session %s hit max_tokens", session_id)
    log.info(
        "LLM extraction (%s) for session %s: %d candidates from %d messages (%d older left out), $%.5f%s",
        status.extractor.value,
        session_id,
        len(parsed.candidates),
        prompt.included,
        prompt.dropped,
        cost,
        " estimated at API prices" if status.extractor is ExtractorName.CLAUDE_CLI else "",
    )
    branch = git.branch if git is not None else None
    root = str(cx.paths.root)
    found = [
        _tagged(replace(c, content=project_relative(c.content, root)), branch) for c in parsed.candidates
    ]
    return LlmRead(found, frozenset(r for m in messages[prompt.start :] if (r := m.record)))


def _via_api(
    cx: Cortex, llm: Extractor, prompt: ExtractionPrompt, session_id: str | None
) -> tuple[LlmReply, float] | None:
    """One API call within the dollar cap: its worst case is held while it runs, then settled."""
    s = cx.settings
    estimate = worst_case_cost_usd(s.llm_model, prompt.input_tokens, MAX_OUTPUT_TOKENS)
    held = spend.reserve_spend(cx.paths.home, _day(cx), estimate, s.llm_daily_cap_usd)
    if held is None:
        log.info(
            "LLM extraction skipped for session %s: this call (up to $%.4f) would pass the daily cap $%.2f",
            session_id,
            estimate,
            s.llm_daily_cap_usd,
        )
        return None
    try:
        reply = llm.complete(prompt.system, prompt.user, max_tokens=MAX_OUTPUT_TOKENS)
    except LlmError as exc:
        spend.settle_spend(cx.paths.home, held, usd=0.0)
        log.warning(
            "LLM extraction failed for session %s (%s); heuristic layers only", session_id, exc.message
        )
        return None
    except BaseException:
        spend.settle_spend(cx.paths.home, held, usd=0.0)
        raise
    cost = usage_cost_usd(s.llm_model, reply.usage)
    spend.settle_spend(
        cx.paths.home,
        held,
        usd=cost,
        input_tokens=reply.usage.input_tokens,
        output_tokens=reply.usage.output_tokens,
    )
    return reply, cost


def _via_claude_cli(
    cx: Cortex, llm: Extractor, prompt: ExtractionPrompt, session_id: str | None
) -> tuple[LlmReply, float] | None:
    """One `claude -p` within the daily call cap: the call is counted before it starts."""
    s, home, day = cx.settings, cx.paths.home, _day(cx)
    if not calls.take_call(home, day, s.llm_daily_calls):
        log.info(
            "LLM extraction skipped for session %s: the daily cap of %d claude -p calls is reached",
            session_id,
            s.llm_daily_calls,
        )
        return None
    try:
        reply = llm.complete(prompt.system, prompt.user, max_tokens=MAX_OUTPUT_TOKENS)
    except LlmError as exc:
        calls.record_call(home, day, failed=True)
        log.warning(
            "LLM extraction via claude -p failed for session %s (%s); heuristic layers only",
            session_id,
            exc.message,
        )
        return None
    cost = usage_cost_usd(s.llm_model, reply.usage)
    calls.record_call(
        home,
        day,
        failed=False,
        input_tokens=reply.usage.input_tokens + reply.usage.cache_creation_input_tokens,
        output_tokens=reply.usage.output_tokens,
        estimated_usd=cost,
    )
    return reply, cost


def _tagged(cand: Candidate, branch: str | None) -> Candidate:
    """The branch tag the heuristic layers give their candidates too."""
    if not branch or branch == "HEAD":
        return cand
    return replace(cand, tags=tuple(dict.fromkeys((*cand.tags, f"branch:{branch}"))))


def _commit_subjects(cx: Cortex) -> tuple[str, ...]:
    from cortex.core.extract.llm_prompt import MAX_COMMITS
    from cortex.shell.git import read_recent_commits

    return tuple(c.subject for c in read_recent_commits(cx.paths.root, limit=MAX_COMMITS))


def _day(cx: Cortex) -> str:
    return cx.now().date().isoformat()
