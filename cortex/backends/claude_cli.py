"""The claude-cli extractor: the user's own Claude Code, run headless (`claude -p`), as a small request.

No API key: the child authenticates the way the user's Claude Code does (its login, or whatever
its environment names). A plain `claude -p` sends Claude Code's system prompt, its tool list and
the user's CLAUDE.md: 48 KB of request body for a one-line prompt (Claude Code 2.1.330, measured
against a loopback fake). The flags and variables below replace all of that by cortex's prompt;
what is left is about 1.8 KB of fixed overhead (an identity line, an environment note, the model
and date) around the prompt. The child runs no hooks, loads no settings files, plugins, MCP
servers, skills or CLAUDE.md, keeps no transcript, and has no tools.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cortex.backends.anthropic import LlmError
from cortex.backends.port import LlmReply
from cortex.core.extract.llm_prompt import TokenUsage

log = logging.getLogger("cortex.llm")

CLI_NAME = "claude"
# Where Claude Code's own installers put it, for a worker whose PATH lacks it.
INSTALL_PLACES = (".local/bin/claude", ".claude/local/claude")
WORKDIR = "claude-cli"  # an empty folder under CORTEX_HOME: no project files, no CLAUDE.md
STARTUP_S = 15.0  # on top of the request timeouts: the CLI's own start and exit
MAX_RETRIES = 1  # the CLI's retries of 429/5xx; cortex adds none
MAX_STDOUT_CHARS = 1_000_000
HOOK_GUARD_ENV = "CORTEX_NO_HOOKS"  # `cortex hook` exits at once when it sees this
LOGIN_FIX = 'run `claude` once and log in (or set claude_cli_path), or set llm_extractor = "off"'

# Each one measured against the fake (tests/backends/test_claude_cli_real.py).
FLAGS = (
    "-p",  # headless: the prompt comes on stdin, the answer goes to stdout
    "--output-format",
    "json",  # one result object: the text, the usage, is_error
    "--tools",
    "",  # no built-in tools: the request carries no tool list
    "--setting-sources",
    "",  # no user, project or local settings: their hooks, plugins and CLAUDE.md stay out
    "--settings",
    '{"disableAllHooks": true}',  # and no hooks from anywhere else either
    "--strict-mcp-config",  # no MCP servers (none are given)
    "--disable-slash-commands",  # no skills or commands
    "--no-session-persistence",  # the extraction session leaves no transcript behind
)
CHILD_ENV = {
    HOOK_GUARD_ENV: "1",  # should any cortex hook still start in the child, it does nothing
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, error reports or update checks
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "MAX_THINKING_TOKENS": "0",  # thinking off: output tokens are the answer only
    "DISABLE_PROMPT_CACHING": "1",  # every prompt is new: a cache write would cost 1.25x for nothing
    "CLAUDE_CODE_MAX_RETRIES": str(MAX_RETRIES),
}
# The session that started the worker, not the child's: a child must not pass for it.
PARENT_SESSION_ENV = (
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_ENV_FILE",
    "CLAUDE_PLUGIN_ROOT",
    "CLAUDE_PLUGIN_DATA",
)


def find_claude(configured: str, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The `claude` executable and "", or None and why not: `configured`, else PATH, else install places."""
    if configured.strip():
        path = Path(configured.strip()).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path, ""
        return None, f"claude_cli_path = {configured.strip()!r} is not an executable file"
    found = shutil.which(CLI_NAME, path=env.get("PATH", os.defpath))
    if found:
        return Path(found), ""
    home = env.get("HOME", "")
    for place in INSTALL_PLACES if home else ():
        path = Path(home) / place
        if path.is_file() and os.access(path, os.X_OK):
            return path, ""
    return None, "the claude CLI (Claude Code) is not on PATH; set claude_cli_path"


def command(binary: Path, model: str, system: str) -> list[str]:
    """The argument list: cortex's system prompt and model, and the flags that keep the request small."""
    return [str(binary), *FLAGS, "--model", model, "--system-prompt", system]


def child_env(env: Mapping[str, str], *, max_tokens: int, timeout_s: float) -> dict[str, str]:
    """The worker's environment (the user's login and proxies) plus cortex's limits and guards."""
    out = {k: v for k, v in env.items() if k not in PARENT_SESSION_ENV}
    out.update(CHILD_ENV)
    out["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(max_tokens)
    out["API_TIMEOUT_MS"] = str(max(int(timeout_s * 1000), 1000))
    return out


class ClaudeCliLlm:
    """An Extractor: one `claude -p` per call, the transcript on stdin (never in argv), a hard timeout."""

    def __init__(
        self,
        binary: Path,
        model: str,
        *,
        timeout_s: float,
        workdir: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.binary = binary
        self.model = model
        self.timeout_s = timeout_s
        self.workdir = workdir
        self._env = env

    @property
    def process_timeout_s(self) -> float:
        """The whole child's limit: every attempt the CLI may make, plus its start."""
        return self.timeout_s * (MAX_RETRIES + 1) + STARTUP_S

    def complete(self, system: str, user: str, *, max_tokens: int) -> LlmReply:
        """The reply of one headless turn; raises LlmError for anything else (the caller falls back)."""
        env = os.environ if self._env is None else self._env
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LlmError(f"cannot create {self.workdir}: {exc.strerror}", "unavailable") from exc
        stdout, stderr, code = self._run(
            command(self.binary, self.model, system),
            user,
            child_env(env, max_tokens=max_tokens, timeout_s=self.timeout_s),
        )
        return parse_result(stdout, stderr, code, self.model)

    def _run(self, argv: list[str], stdin: str, env: dict[str, str]) -> tuple[str, str, int]:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.workdir,
                env=env,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,  # its own process group: a timeout ends all of it
            )
        except OSError as exc:
            why = f"cannot run {self.binary}: {exc.strerror or exc}"
            raise LlmError(why, "unavailable", LOGIN_FIX) from exc
        try:
            stdout, stderr = proc.communicate(stdin, timeout=self.process_timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise LlmError(f"claude -p timed out after {self.process_timeout_s:.0f} s", "timeout") from None
        except BaseException:
            _kill_group(proc)
            raise
        return stdout, stderr, proc.returncode


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """End the child's process group (ours: start_new_session made it) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=5)


def parse_result(stdout: str, stderr: str, code: int, model: str) -> LlmReply:
    """The reply in `claude -p --output-format json` output; LlmError for an error or anything unreadable."""
    doc = _result_document(stdout[:MAX_STDOUT_CHARS])
    if doc is None:
        detail = _tail(stderr) or _tail(stdout) or "no output"
        raise LlmError(f"claude -p exited {code} without a result ({detail})", "bad_output")
    if doc.get("is_error") or code != 0:
        raise _cli_error(doc, code)
    text = doc.get("result")
    if not isinstance(text, str):
        raise LlmError("claude -p gave a result without text", "bad_output")
    models = doc.get("modelUsage")
    used = next(iter(models), model) if isinstance(models, dict) and models else model
    return LlmReply(
        text=text,
        usage=_usage(doc.get("usage")),
        model=str(used),
        stop_reason=doc.get("stop_reason") if isinstance(doc.get("stop_reason"), str) else None,
        attempts=1,
    )


def _result_document(stdout: str) -> dict[str, Any] | None:
    """The last line of stdout that is a JSON object of type "result"."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and doc.get("type") == "result":
            return doc
    return None


def _cli_error(doc: dict[str, Any], code: int) -> LlmError:
    message = _tail(str(doc.get("result") or doc.get("errors") or doc.get("subtype") or ""))
    status = doc.get("api_error_status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    lowered = message.lower()
    if status in (401, 403) or "not logged in" in lowered or "/login" in lowered:
        return LlmError(f"Claude Code could not authenticate: {message}", "auth", LOGIN_FIX)
    if "timed out" in lowered:
        return LlmError(f"the API behind Claude Code timed out: {message}", "timeout")
    if status == 429:
        return LlmError(f"Claude Code is rate limited: {message}", "rate_limited")
    if status is not None and status >= 500:
        return LlmError(f"the API behind Claude Code failed ({status}): {message}", "server_error")
    return LlmError(f"claude -p failed (exit {code}): {message or 'no message'}", "failed")


def _usage(raw: object) -> TokenUsage:
    usage = raw if isinstance(raw, dict) else {}

    def count(name: str) -> int:
        value = usage.get(name)
        return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else 0

    return TokenUsage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_creation_input_tokens=count("cache_creation_input_tokens"),
        cache_read_input_tokens=count("cache_read_input_tokens"),
    )


def _tail(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else "…" + line[-limit:]
