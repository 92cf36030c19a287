"""Extraction layer 4: ask a Haiku model for candidates, within the daily cap; [] on any failure."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from cortex.app import Cortex
from cortex.backends import spend
from cortex.backends.anthropic import API_KEY_ENV
from cortex.backends.choose import ExtractorStatus, choose_extractor, extractor_status
from cortex.core.extract.llm_prompt import (
    MAX_OUTPUT_TOKENS,
    PROMPT_BUDGET_TOKENS,
    render_extraction_prompt,
    usage_cost_usd,
    worst_case_cost_usd,
)
from cortex.core.extract.llm_reply import parse_extraction_response
from cortex.core.extract.pipeline import GitContext, redact_messages
from cortex.core.extract.transcript_model import Message
from cortex.core.model import Candidate

log = logging.getLogger("cortex.llm")

# Set for this process and whatever it starts: `cortex hook` exits at once when it sees it, so an
# extraction can never re-enter Claude Code's hooks (cortex calls the API, never `claude -p`).
HOOK_GUARD_ENV = "CORTEX_NO_HOOKS"


def llm_status(cx: Cortex, env: Mapping[str, str] | None = None) -> ExtractorStatus:
    """Is LLM extraction on today: a key, not disabled, the SDK installed, the cap not reached."""
    return extractor_status(cx.settings, cx.paths, day=_day(cx), env=env)


def llm_candidates(
    cx: Cortex,
    messages: Sequence[Message],
    git: GitContext | None,
    session_id: str | None,
    *,
    recent_commits: Sequence[str] = (),
) -> list[Candidate]:
    """LLM-layer candidates for the new part of a transcript; [] when off, capped or failing.

    The worker calls this after layers 1-3 and merges the result, so a failure here only
    costs the extra candidates: it is logged and never raised.
    """
    try:
        return _llm_candidates(cx, messages, git, session_id, recent_commits)
    except Exception as exc:  # layer 4 is optional: the heuristic candidates must still be stored
        log.warning(
            "LLM extraction failed unexpectedly (%s: %s); heuristic layers only", type(exc).__name__, exc
        )
        return []


def _llm_candidates(
    cx: Cortex,
    messages: Sequence[Message],
    git: GitContext | None,
    session_id: str | None,
    recent_commits: Sequence[str],
) -> list[Candidate]:
    choice = choose_extractor(cx.settings, cx.paths, day=_day(cx))
    llm = choice.backend
    if llm is None:
        # No key is the normal offline set-up; anything else (cap, ledger, SDK) is worth a line.
        level = logging.DEBUG if API_KEY_ENV in choice.note else logging.INFO
        log.log(level, "LLM extraction off for session %s: %s", session_id, choice.note)
        return []
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
        return []
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
        return []
    from cortex.backends.anthropic import LlmError

    try:
        reply = llm.complete(prompt.system, prompt.user, max_tokens=MAX_OUTPUT_TOKENS)
    except LlmError as exc:
        spend.settle_spend(cx.paths.home, held, usd=0.0)
        log.warning(
            "LLM extraction failed for session %s (%s); heuristic layers only", session_id, exc.message
        )
        return []
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
    from cortex.core.write.apply import DEFAULT_PRIORITY

    parsed = parse_extraction_response(reply.text, default_priority=DEFAULT_PRIORITY)
    for problem in parsed.problems:
        log.info("LLM reply for session %s: %s", session_id, problem)
    if reply.stop_reason == "max_tokens":
        log.info("LLM reply for session %s hit max_tokens", session_id)
    log.info(
        "LLM extraction for session %s: %d candidates from %d messages (%d older left out), $%.5f",
        session_id,
        len(parsed.candidates),
        prompt.included,
        prompt.dropped,
        cost,
    )
    branch = git.branch if git is not None else None
    return [_tagged(c, branch) for c in parsed.candidates]


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
