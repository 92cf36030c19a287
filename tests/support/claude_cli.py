"""The real Claude Code CLI for tests: the pinned npm package in the git-ignored .cache/npm.

`scripts/dev.sh test` installs it before pytest starts (it reads CLAUDE_VERSION from this file);
`claude_binary()` installs it too when pytest runs on its own. `TEST_CLAUDE_CLI` names another
binary of the same version. It is never skipped: without npm the tests fail and say why.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.support.runtime import REPO

# scripts/dev.sh reads the next line; tests/plugin/test_plugin_ecosystem.py pins the same version.
CLAUDE_VERSION = "2.1.330"
PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_VERSION}"
NPM_PREFIX = REPO / ".cache" / "npm"  # git-ignored
OVERRIDE_ENV = "TEST_CLAUDE_CLI"
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
CLAUDE_MD_MARKER = "USER-CLAUDE-MD-MARKER: always answer in French"


def default_binary() -> Path:
    return NPM_PREFIX / "node_modules" / ".bin" / "claude"


def version_of(binary: Path) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


def claude_binary() -> Path:
    """The pinned CLI: TEST_CLAUDE_CLI, else .cache/npm (installed with npm when missing)."""
    override = os.environ.get(OVERRIDE_ENV)
    binary = Path(override) if override else default_binary()
    if version_of(binary).startswith(CLAUDE_VERSION + " "):
        return binary
    if override:
        pytest.fail(f"{OVERRIDE_ENV}={override} is not Claude Code {CLAUDE_VERSION} ({version_of(binary)!r})")
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            f"npm is not installed: the claude-cli tests need {PACKAGE} in {NPM_PREFIX} "
            "(install Node.js and npm, then run scripts/dev.sh test)"
        )
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    cmd = [
        npm,
        "install",
        "--prefix",
        str(NPM_PREFIX),
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        PACKAGE,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        pytest.fail(f"npm install {PACKAGE} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    assert version_of(binary).startswith(CLAUDE_VERSION + " "), version_of(binary)
    return binary


def user_home(root: Path, *, oauth: bool = True) -> tuple[Path, Path]:
    """A throwaway HOME as a Claude Code user has it: a login, hooks on every event, a CLAUDE.md.

    The login is a subscription (OAuth) token, not an API key. Each hook touches a file in the
    returned marker folder, so a test sees whether any hook ran.
    """
    home = root / "home"
    marks = root / "hook-marks"
    (home / ".claude").mkdir(parents=True)
    marks.mkdir()
    if oauth:
        expires = int(time.time() * 1000) + 3_600_000
        login = {
            "claudeAiOauth": {
                "accessToken": "sk-ant-oat01-fake-subscription-token",
                "refreshToken": "sk-ant-ort01-fake-refresh-token",
                "expiresAt": expires,
                "scopes": ["user:inference", "user:profile"],
                "subscriptionType": "pro",
            }
        }
        (home / ".claude" / ".credentials.json").write_text(json.dumps(login), encoding="utf-8")
    hooks = {
        event: [{"hooks": [{"type": "command", "command": f"touch '{marks}/{event}'"}]}]
        for event in HOOK_EVENTS
    }
    settings = {"hooks": hooks}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (home / ".claude" / "CLAUDE.md").write_text(CLAUDE_MD_MARKER + "\n", encoding="utf-8")
    return home, marks


class OutsideWorld:
    """A local proxy for everything not on 127.0.0.1: it records where a client tried to go, and
    refuses. With it as HTTPS_PROXY a test never reaches the network and sees what the CLI
    sends past ANTHROPIC_BASE_URL (with a subscription login: its profile lookup)."""

    def __init__(self) -> None:
        self.requests: list[str] = []  # first lines: "CONNECT api.anthropic.com:443 HTTP/1.1"
        self.raw = b""
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    @property
    def hosts(self) -> set[str]:
        return {line.split()[1] for line in self.requests if len(line.split()) > 1}

    def __enter__(self) -> OutsideWorld:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    data = conn.recv(65536)
                    self.raw += data
                    self.requests.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def clean_env(home: Path, base_url: str, proxy: str | None = None) -> dict[str, str]:
    """This process's environment without the user's Claude or Anthropic setup, pointed at a fake
    API; with `proxy`, every other host goes through it (see OutsideWorld)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "ANTHROPIC")) and k.lower() not in PROXY_VARS
    }
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=base_url,
        DISABLE_AUTOUPDATER="1",
        TMPDIR=os.environ.get("TMPDIR", tempfile.gettempdir()),
    )
    if proxy:
        env.update({name: proxy for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")})
        env.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


PROXY_VARS = ("https_proxy", "http_proxy", "all_proxy", "no_proxy")


def hooks_that_ran(marks: Path) -> list[str]:
    return sorted(p.name for p in marks.iterdir())
