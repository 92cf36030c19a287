"""The claude-cli extractor: the real Claude Code CLI (npm, pinned) against a loopback fake API.

What a request to the model carries is measured on the wire (the fake records the raw body):
cortex's prompt and nothing of Claude Code's own system prompt, tool list, hooks or CLAUDE.md.
Stand-in executables cover what the real CLI cannot be made to do (garbage output, a hang).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cortex.backends import claude_cli
from cortex.backends.anthropic import LlmError
from cortex.backends.claude_cli import ClaudeCliLlm, child_env, command, find_claude, parse_result
from cortex.core.extract.llm_prompt import MAX_OUTPUT_TOKENS, SYSTEM_PROMPT, TokenUsage
from tests.support.claude_cli import (
    CLAUDE_MD_MARKER,
    CLAUDE_VERSION,
    OutsideWorld,
    claude_binary,
    clean_env,
    hooks_that_ran,
    user_home,
)
from tests.support.fake_api import FakeApi, Reply, error_reply, message_reply

MODEL = "claude-haiku-4-5"
USER = "<git_context>\nproject: demo\n</git_context>\n\n<transcript>\nUSER: use WAL\n</transcript>"
# Claude Code's fixed overhead around cortex's prompt, measured with 2.1.330: 1,776-1,890 bytes
# (its identity line, an environment note, the model and the date). A plain `claude -p` from the
# same HOME (subscription login, hooks, a CLAUDE.md) measured 82,492 bytes with 11 tools.
OVERHEAD_BOUND = 2_600
PLAIN_CALL_FLOOR = 30_000


# -- stand-ins and parsing ------------------------------------------------------------------------
def stand_in(folder: Path, body: str) -> Path:
    """An executable `claude` that runs `body` (Python) instead of Claude Code."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "claude"
    path.write_text(f"#!{sys.executable}\nimport sys, os, json, time\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def result_line(text: str = '{"memories": []}', **fields: object) -> str:
    doc = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 900, "output_tokens": 40},
        "modelUsage": {MODEL: {"inputTokens": 900}},
        **fields,
    }
    return json.dumps(doc)


def test_a_result_document_becomes_a_reply() -> None:
    reply = parse_result("some banner\n" + result_line("hello") + "\n", "", 0, "fallback-model")
    assert reply.text == "hello" and reply.model == MODEL and reply.stop_reason == "end_turn"
    assert reply.usage == TokenUsage(input_tokens=900, output_tokens=40)


@pytest.mark.parametrize(
    ("stdout", "code", "kind", "words"),
    [
        ("", 1, "bad_output", "without a result"),
        ("Segmentation fault", 139, "bad_output", "exited 139"),
        ('{"type": "assistant"}', 0, "bad_output", "without a result"),
        (result_line("Not logged in · Please run /login", is_error=True), 1, "auth", "authenticate"),
        (result_line("API Error: 401", is_error=True, api_error_status=401), 1, "auth", "authenticate"),
        (result_line("API Error: 429", is_error=True, api_error_status=429), 1, "rate_limited", "rate"),
        (result_line("API Error: 500", is_error=True, api_error_status=500), 1, "server_error", "(500)"),
        (result_line("Request timed out.", is_error=True), 1, "timeout", "timed out"),
        (result_line("fine", is_error=False), 2, "failed", "exit 2"),
        (result_line(None), 0, "bad_output", "without text"),  # type: ignore[arg-type]
    ],
)
def test_anything_but_a_good_result_is_an_llm_error(stdout: str, code: int, kind: str, words: str) -> None:
    with pytest.raises(LlmError) as err:
        parse_result(stdout, "", code, MODEL)
    assert err.value.kind == kind and words in err.value.message


def test_the_command_carries_the_prompt_flags_and_never_the_transcript(tmp_path: Path) -> None:
    argv = command(tmp_path / "claude", MODEL, "the system prompt")
    assert argv[argv.index("--model") + 1] == MODEL
    assert argv[argv.index("--system-prompt") + 1] == "the system prompt"
    assert argv[argv.index("--tools") + 1] == "" and argv[argv.index("--setting-sources") + 1] == ""
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    for flag in ("-p", "--strict-mcp-config", "--disable-slash-commands", "--no-session-persistence"):
        assert flag in argv
    env = child_env(
        {
            "PATH": "/bin",
            "CLAUDE_CODE_SESSION_ID": "parent",
            "CLAUDE_PROJECT_DIR": "/p",
            "ANTHROPIC_API_KEY": "k",
        },
        max_tokens=2048,
        timeout_s=20,
    )
    assert env["CORTEX_NO_HOOKS"] == "1" and env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "2048"
    assert env["API_TIMEOUT_MS"] == "20000" and env["MAX_THINKING_TOKENS"] == "0"
    assert "CLAUDE_CODE_SESSION_ID" not in env and "CLAUDE_PROJECT_DIR" not in env
    assert env["ANTHROPIC_API_KEY"] == "k" and env["PATH"] == "/bin"  # the user's own set-up stays


def test_claude_is_found_by_setting_then_path_then_its_install_places(tmp_path: Path) -> None:
    exe = stand_in(tmp_path / "bin", "pass")
    assert find_claude(str(exe), {}) == (exe, "")
    missing, why = find_claude(str(tmp_path / "nope"), {"PATH": str(tmp_path / "bin")})
    assert missing is None and "is not an executable file" in why
    assert find_claude("", {"PATH": str(tmp_path / "bin")}) == (exe, "")
    home = tmp_path / "home"
    local = stand_in(home / ".local" / "bin", "pass")
    assert find_claude("", {"PATH": str(tmp_path / "empty"), "HOME": str(home)}) == (local, "")
    none, why = find_claude("", {"PATH": str(tmp_path / "empty"), "HOME": str(tmp_path)})
    assert none is None and "not on PATH" in why


def test_the_transcript_goes_on_stdin_and_the_child_runs_in_cortexs_empty_folder(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    exe = stand_in(
        tmp_path / "bin",
        f"json.dump({{'argv': sys.argv, 'stdin': sys.stdin.read(), 'cwd': os.getcwd(),"
        f" 'guard': os.environ.get('CORTEX_NO_HOOKS')}}, open({str(seen)!r}, 'w'))\n"
        f"print({result_line('ok')!r})",
    )
    llm = ClaudeCliLlm(exe, MODEL, timeout_s=5, workdir=tmp_path / "wd", env={"PATH": os.defpath})
    assert llm.complete("sys", "USER: zebra-quokka", max_tokens=100).text == "ok"
    got = json.loads(seen.read_text())
    assert got["stdin"] == "USER: zebra-quokka"
    assert all("zebra-quokka" not in a for a in got["argv"])
    assert got["cwd"] == str(tmp_path / "wd") and got["guard"] == "1"


def test_a_hung_cli_is_killed_with_everything_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claude_cli, "STARTUP_S", 0.5)
    pid_file = tmp_path / "grandchild.pid"
    exe = stand_in(
        tmp_path / "bin",
        "import subprocess\n"
        f"child = subprocess.Popen(['sleep', '60'])\nopen({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)",
    )
    llm = ClaudeCliLlm(exe, MODEL, timeout_s=0.5, workdir=tmp_path / "wd", env={"PATH": os.defpath})
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    # The stand-in sleeps a minute and then exits without a reply: a timeout says it was killed.
    assert err.value.kind == "timeout" and str(err.value).startswith("claude -p timed out")
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 60  # the kill is immediate; reaping by init may take a moment
    while _alive(grandchild):
        if time.monotonic() > deadline:
            pytest.fail(f"the CLI's child {grandchild} outlived the timeout")
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether `pid` still runs: gone, or a zombie left for init to reap, is not running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def test_a_missing_binary_is_an_llm_error(tmp_path: Path) -> None:
    llm = ClaudeCliLlm(tmp_path / "gone", MODEL, timeout_s=1, workdir=tmp_path / "wd", env={})
    with pytest.raises(LlmError) as err:
        llm.complete("s", "u", max_tokens=10)
    assert err.value.kind == "unavailable"


# -- the real CLI -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def claude() -> Path:
    return claude_binary()


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


@pytest.fixture
def outside() -> Iterator[OutsideWorld]:
    with OutsideWorld() as proxy:
        yield proxy


def real_llm(
    claude: Path, home: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path, **env: str
) -> ClaudeCliLlm:
    base = clean_env(home, api.url, outside.url)
    return ClaudeCliLlm(claude, MODEL, timeout_s=10, workdir=tmp_path / "wd", env={**base, **env})


@pytest.mark.ecosystem
def test_the_real_cli_sends_cortexs_prompt_alone_on_a_subscription_login(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path
) -> None:
    home, marks = user_home(tmp_path)  # logged in with a subscription: no API key anywhere
    api.messages_script.append(message_reply('{"memories": []}', input_tokens=700, output_tokens=12))
    llm = real_llm(claude, home, api, outside, tmp_path)
    reply = llm.complete(SYSTEM_PROMPT, USER, max_tokens=MAX_OUTPUT_TOKENS)
    assert reply.text == '{"memories": []}' and reply.usage.input_tokens == 700
    assert [r.path.split("?")[0] for r in api.received] == ["/v1/messages"]  # nothing else was sent
    [sent] = api.received
    body = sent.body
    assert sent.headers["authorization"] == "Bearer sk-ant-oat01-fake-subscription-token"
    assert "x-api-key" not in sent.headers
    assert body["tools"] == [] and body["model"] == MODEL
    assert body["max_tokens"] == MAX_OUTPUT_TOKENS and body["thinking"] == {"type": "disabled"}
    system = [block["text"] for block in body["system"]]
    assert SYSTEM_PROMPT in system
    assert "cache_control" not in json.dumps(body)  # every prompt is new: no cache-write surcharge
    assert not any("You are an agent working with the user" in t for t in system)  # Claude Code's own
    user_blocks = body["messages"][0]["content"]
    assert user_blocks[-1]["text"] == USER and len(body["messages"]) == 1
    raw = sent.raw.decode("utf-8")
    assert CLAUDE_MD_MARKER not in raw  # the user's CLAUDE.md stays home
    overhead = len(sent.raw) - len(json.dumps(SYSTEM_PROMPT)) - len(json.dumps(USER))
    print(f"\nclaude -p request: {len(sent.raw):,} bytes, Claude Code overhead {overhead:,} bytes")
    assert overhead < OVERHEAD_BOUND, overhead
    assert hooks_that_ran(marks) == []  # the user's hooks on every event: none ran
    assert not (home / ".claude" / "projects").exists()  # no transcript of the extraction session
    # Past ANTHROPIC_BASE_URL, a subscription login makes Claude Code look its profile up
    # (GET https://api.anthropic.com/api/oauth/profile, no body); nothing else leaves.
    assert outside.hosts <= {"api.anthropic.com:443"}, outside.requests
    assert b"WAL" not in outside.raw


@pytest.mark.ecosystem
def test_control_a_plain_claude_p_in_the_same_home_is_big_and_runs_the_hooks(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path
) -> None:
    """What the flags take away: without them the same HOME sends ~48 KB and runs every hook."""
    home, marks = user_home(tmp_path)
    (tmp_path / "wd").mkdir()
    import subprocess

    env = {**clean_env(home, api.url, outside.url), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    done = subprocess.run(
        [str(claude), "-p", "--model", MODEL],
        input="hello",
        env=env,
        cwd=tmp_path / "wd",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [sent] = api.requests_to("/v1/messages")
    print(f"\nplain claude -p request: {len(sent.raw):,} bytes, {len(sent.body['tools'])} tools")
    assert len(sent.raw) > PLAIN_CALL_FLOOR and sent.body["tools"]
    assert CLAUDE_MD_MARKER in sent.raw.decode("utf-8")
    assert set(hooks_that_ran(marks)) >= {"SessionStart", "UserPromptSubmit", "Stop"}


@pytest.mark.ecosystem
def test_an_api_key_login_works_the_same(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path
) -> None:
    home, _ = user_home(tmp_path, oauth=False)
    llm = real_llm(claude, home, api, outside, tmp_path, ANTHROPIC_API_KEY="sk-ant-fake-key")
    assert llm.complete(SYSTEM_PROMPT, USER, max_tokens=MAX_OUTPUT_TOKENS).text == '{"memories": []}'
    assert [r.path.split("?")[0] for r in api.received] == ["/v1/messages"]
    [sent] = api.received
    assert sent.headers["x-api-key"] == "sk-ant-fake-key" and sent.body["tools"] == []
    assert outside.requests == []  # with a key, nothing at all goes past ANTHROPIC_BASE_URL


@pytest.mark.ecosystem
@pytest.mark.parametrize(
    ("scripted", "kind"),
    [
        ([error_reply(401, "authentication_error")] * 3, "auth"),
        ([error_reply(500, "api_error")] * 3, "server_error"),
        ([error_reply(429, "rate_limit_error", {"retry-after": "3600"})] * 3, "rate_limited"),
    ],
    ids=["401", "500", "429"],
)
def test_real_cli_failures_are_llm_errors(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path, scripted: list[object], kind: str
) -> None:
    home, _ = user_home(tmp_path)
    api.messages_script.extend(scripted)  # type: ignore[arg-type]
    with pytest.raises(LlmError) as err:
        real_llm(claude, home, api, outside, tmp_path).complete(SYSTEM_PROMPT, USER, max_tokens=100)
    assert err.value.kind == kind
    assert len(api.requests_to("/v1/messages")) <= 1 + claude_cli.MAX_RETRIES


@pytest.mark.ecosystem
def test_a_slow_api_times_out_within_the_limit(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path
) -> None:
    home, _ = user_home(tmp_path)
    api.messages_script.extend([Reply(200, message_reply("late").body, delay_s=8)] * 3)
    env = clean_env(home, api.url, outside.url)
    llm = ClaudeCliLlm(claude, MODEL, timeout_s=1.5, workdir=tmp_path / "wd", env=env)
    with pytest.raises(LlmError) as err:
        llm.complete(SYSTEM_PROMPT, USER, max_tokens=100)
    # The CLI gave up on the API itself (API_TIMEOUT_MS), before cortex's own limit killed it.
    assert err.value.kind == "timeout" and str(err.value).startswith("the API behind Claude Code timed out")


@pytest.mark.ecosystem
def test_no_login_at_all_is_an_auth_error(
    claude: Path, api: FakeApi, outside: OutsideWorld, tmp_path: Path
) -> None:
    home, _ = user_home(tmp_path, oauth=False)
    with pytest.raises(LlmError) as err:
        real_llm(claude, home, api, outside, tmp_path).complete(SYSTEM_PROMPT, USER, max_tokens=100)
    assert err.value.kind == "auth" and "log in" in err.value.fix
    assert api.received == []


def test_the_pin_is_the_one_the_ecosystem_tests_install() -> None:
    """Both install into .cache/npm: two pins would reinstall over each other on every run."""
    from tests.plugin import test_plugin_ecosystem

    assert test_plugin_ecosystem.CLAUDE_VERSION == CLAUDE_VERSION
