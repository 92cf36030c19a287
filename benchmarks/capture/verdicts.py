"""Test and build verdicts: the transcript's final outcome per check command, and memories that
contradict it. Pure. A deliberately simple rule, stated in the report:

- A check command is one of `CHECKS` (cargo test/build/check/clippy, pytest, npm/bun/pnpm/yarn
  test/build/lint, go test/build, nix flake check/build, make test, tsc, eslint, jest, vitest,
  next build) found in a Bash tool call, main thread or subagent. Its run failed when the tool
  result is an error or says `exit code N` (N > 0) or shows a failure marker (`test result:
  FAILED`, `3 failed`, `error:` at a line start, a line starting `FAIL`/`FAILED`/`ERROR`,
  `npm ERR!`, `build failed`); a timed-out,
  interrupted or refused call has no outcome. The final state of a check is its last run's.
- A memory gives a verdict on a check when it names the check and says that it passed (pass,
  succeeded, works, green, `0 failed`, `no errors`, ...) or that it failed (fail, error, broken,
  `does not build`, ...), not both; a fix, workaround or solution counts on the passing side, so
  a gotcha that gives a failure and its fix is no verdict. The memory is wrong when its verdict
  is the opposite of the check's final state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.capture.matching import contains_term, normalize

_PM = r"(?:npm|bun|pnpm|yarn)"
CHECKS: tuple[tuple[str, str], ...] = (
    ("cargo test", r"\bcargo\s+(?:\+\S+\s+)?test\b"),
    ("cargo build", r"\bcargo\s+(?:\+\S+\s+)?build\b"),
    ("cargo check", r"\bcargo\s+(?:\+\S+\s+)?check\b"),
    ("cargo clippy", r"\bcargo\s+(?:\+\S+\s+)?clippy\b"),
    ("pytest", r"\bpytest\b"),
    ("npm test", rf"\b{_PM}\s+(?:run\s+)?test\b"),
    ("npm run build", rf"\b{_PM}\s+(?:run\s+)?build\b"),
    ("npm run lint", rf"\b{_PM}\s+(?:run\s+)?lint\b"),
    ("go test", r"\bgo\s+test\b"),
    ("go build", r"\bgo\s+build\b"),
    ("nix flake check", r"\bnix\s+flake\s+check\b"),
    ("nix build", r"\bnix\s+build\b"),
    ("make test", r"\bmake\s+test\b"),
    ("tsc", r"\btsc\b"),
    ("eslint", r"\beslint\b"),
    ("jest", r"\bjest\b"),
    ("vitest", r"\bvitest\b"),
    ("next build", r"\bnext\s+build\b"),
)
# How a memory may name a check: the key itself, or the package-manager spellings of it.
ALIASES: dict[str, tuple[str, ...]] = {
    "npm test": ("npm test", "npm run test", "bun test", "bun run test", "pnpm test", "yarn test"),
    "npm run build": (
        "npm run build",
        "bun run build",
        "bun build",
        "pnpm build",
        "pnpm run build",
        "yarn build",
    ),
    "npm run lint": ("npm run lint", "bun run lint", "bun lint", "pnpm lint", "pnpm run lint", "yarn lint"),
}
_NO_OUTCOME = re.compile(
    r"timed out|interrupted by user|user doesn't want to proceed|tool use was rejected|permission to use",
    re.I,
)
_FAILED_OUTPUT = re.compile(
    r"exit code [1-9]\d*|test result: failed|\b[1-9]\d* (?:failed|failing)\b|^\s*error(?:\[\w+\])?:|"
    r"npm err!|\bbuild failed\b|could not compile",
    re.I | re.M,
)
_FAILED_LINE = re.compile(r"^\s*(?:FAIL|FAILED|ERROR)\b", re.M)  # jest/vitest/pytest, upper case only
_NEUTRAL = re.compile(r"\b(?:0|no|zero|without) (?:failed|failures?|failing|errors?)\b")
_PASS = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|success(?:ful(?:ly)?)?|green|works|working|"
    r"fix|fixe[sd]|resolved?|workaround|solution|compiles|clean(?:ly)?)\b"
)
_FAIL = re.compile(
    r"\b(?:fail(?:s|ed|ing|ures?)?|broken|breaks|errors?|red|"
    r"(?:does not|doesn't|did not|didn't|cannot|can't) (?:compile|build|pass|work))\b"
)


@dataclass(frozen=True, slots=True)
class CheckRun:
    key: str
    failed: bool
    index: int  # the tool result's record index


@dataclass(frozen=True, slots=True)
class WrongVerdict:
    memory_id: str
    key: str
    said: str  # passed | failed
    final: str  # passed | failed
    text: str


def checks_in(command: str) -> list[str]:
    low = command.lower()
    return [key for key, pattern in CHECKS if re.search(pattern, low)]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def check_runs(records: Sequence[dict[str, Any]]) -> list[CheckRun]:
    """Every check command's run with an outcome, in transcript order."""
    commands: dict[str, str] = {}
    runs: list[CheckRun] = []
    for index, record in enumerate(records):
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == "Bash":
                command = (block.get("input") or {}).get("command")
                if isinstance(command, str):
                    commands[str(block.get("id"))] = command
            elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in commands:
                text = _result_text(block)
                if _NO_OUTCOME.search(text[:400]):
                    continue
                failed = bool(
                    block.get("is_error") or _FAILED_OUTPUT.search(text) or _FAILED_LINE.search(text)
                )
                command = commands[str(block.get("tool_use_id"))]
                runs += [CheckRun(key, failed, index) for key in checks_in(command)]
    return runs


def final_states(runs: Iterable[CheckRun]) -> dict[str, str]:
    """Each check's last outcome: passed or failed."""
    out: dict[str, str] = {}
    for run in runs:
        out[run.key] = "failed" if run.failed else "passed"
    return out


def verdict_of(memory: str) -> str | None:
    """passed, failed, or None when the memory says neither or both (a failure and its fix)."""
    text = _NEUTRAL.sub(" passed ", normalize(memory))
    says_pass, says_fail = bool(_PASS.search(text)), bool(_FAIL.search(text))
    if says_pass == says_fail:
        return None
    return "passed" if says_pass else "failed"


def names_check(memory: str, key: str) -> bool:
    norm = normalize(memory)
    return any(contains_term(norm, alias) for alias in ALIASES.get(key, (key,)))


def wrong_verdicts(memory_id: str, content: str, finals: dict[str, str]) -> list[WrongVerdict]:
    """The checks the memory names whose final state is the opposite of the memory's verdict."""
    verdict = verdict_of(content)
    if verdict is None:
        return []
    return [
        WrongVerdict(memory_id, key, verdict, final, content.strip()[:300])
        for key, final in finals.items()
        if verdict != final and names_check(content, key)
    ]
