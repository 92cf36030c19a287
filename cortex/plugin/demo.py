"""`cortex demo`: replay the shipped sample session through the real hooks into a throwaway project.

The sample (`cortex/data/demo_transcript.jsonl`) is a Claude Code transcript written for cortex:
a rate-limiting task with two decisions, a gotcha, a `[MEMORY: decision]` tag, a failing then
passing test run, a commit, and a FAKE API key the user pastes into `.env`. The key is not in
the file (secret scanners would flag it): the demo fills in a made-up key of the real shape,
then shows that no byte of it reached the store, the briefing or the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from cortex.app import Cortex
from cortex.capture.queue import list_files
from cortex.config import load_settings
from cortex.core.model import SearchMode
from cortex.paths import RULES_FILE, STORE_DIR, Paths
from cortex.plugin import hooks

TRANSCRIPT_ROOT = "/home/dev/acme-api"  # the project path the sample was written with
KEY_PLACEHOLDER = "<<FAKE_ANTHROPIC_KEY>>"
BRANCH = "feature/login-rate-limit"
RECALL_QUERY = "why not Redis for the login rate limiter"
WORKER_TIMEOUT_S = 300.0
KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
# The sample project's files at the commit the session made (so no memory looks stale).
PROJECT_FILES = {
    "README.md": "# acme-api\n\nLogin and account API (Flask), one instance behind the load balancer.\n",
    ".gitignore": ".env\n",
    ".env": "# secrets\n",
    "acme/__init__.py": "",
    "acme/settings.py": "LOGIN_RATE_PER_MINUTE = 5\n",
    "acme/auth.py": "def login(payload):\n    return {'ok': bool(payload)}\n",
    "acme/app.py": (
        "from flask import Flask, request\n\nfrom acme import auth\nfrom acme.ratelimit import limit\n"
        "from acme.settings import LOGIN_RATE_PER_MINUTE\n\napp = Flask(__name__)\n\n\n"
        "@app.post('/login')\n@limit(LOGIN_RATE_PER_MINUTE)\ndef login():\n"
        "    return auth.login(request.json)\n"
    ),
    "acme/ratelimit.py": (
        "import time\n\n\nclass TokenBucket:\n    def __init__(self, rate, per):\n"
        "        self.rate, self.per = rate, per\n        self.tokens = rate\n"
        "        self.stamp = time.monotonic()\n"
    ),
    "tests/test_ratelimit.py": "def test_refill():\n    pass\n",
}


@dataclass
class DemoResult:
    """Everything the demo shows, for the terminal and for tests."""

    project: Path
    transcript: Path
    turns: int
    worker_s: float
    counts: dict[str, int]
    session_start: str
    rules_file: str
    recall: str
    recall_mode: SearchMode
    embedder_note: str
    secret: str
    leaks: dict[str, int] = field(default_factory=dict)

    @property
    def redacted(self) -> bool:
        return not any(self.leaks.values())


def fake_key() -> str:
    """A made-up key in the shape of an Anthropic API key (never issued; deterministic)."""
    digest = hashlib.sha256(b"cortex demo fake key").digest() * 4
    body = "".join(KEY_ALPHABET[b % len(KEY_ALPHABET)] for b in digest)[:93]
    return "sk-" + "ant-" + "api03-" + body + "AA"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=cortex demo", "-c", "user.email=demo@cortex.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=60,
    )


def make_project(base: Path) -> Path:
    """The sample project as a git repository on the session's branch, at the session's commit."""
    root = base / "acme-api"
    for rel, text in PROJECT_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(root, "init", "-q", "-b", BRANCH)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "Add token-bucket rate limiting to POST /login")
    return root


def read_sample(project: Path, key: str) -> list[str]:
    """The sample transcript's lines with the project path and the fake key filled in."""
    text = resources.files("cortex").joinpath("data/demo_transcript.jsonl").read_text(encoding="utf-8")
    text = text.replace(TRANSCRIPT_ROOT, project.as_posix()).replace(KEY_PLACEHOLDER, key)
    return text.splitlines(keepends=True)


def turn_ends(lines: list[str]) -> list[tuple[int, str]]:
    """(line index, last assistant text) where each turn ends: where Claude Code fires Stop."""
    ends = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        message = record.get("message") if record.get("type") == "assistant" else None
        if isinstance(message, dict) and message.get("stop_reason") == "end_turn":
            blocks = message.get("content") or []
            said = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            ends.append((i, said))
    return ends


def _hook(event: str, payload: dict[str, object], env: Mapping[str, str]) -> str:
    out = io.StringIO()
    hooks.main(event, io.BytesIO(json.dumps(payload).encode("utf-8")), out, env)
    return out.getvalue()


def _wait_for_capture(project: Path, env: Mapping[str, str]) -> None:
    """Wait for the detached worker(s); start one more if a queue file was left behind."""
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    while True:
        hooks.wait_for_workers(max(deadline - time.monotonic(), 1.0))
        if not list_files(project / STORE_DIR) and not hooks.worker_running(project):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the cortex worker did not finish within {WORKER_TIMEOUT_S:.0f} s")
        if not hooks.spawn_worker(project, env):
            time.sleep(0.2)


def count_leaks(secret: str, places: Mapping[str, list[Path]]) -> dict[str, int]:
    """How often the secret (or its distinctive body) occurs in each group of files."""
    needles = {secret.encode(), secret[len("sk-ant-api03-") :].encode()}
    out = {}
    for name, paths in places.items():
        total = 0
        for path in paths:
            files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
            for f in files:
                try:
                    data = f.read_bytes()
                except OSError:
                    continue
                total += max(data.count(n) for n in needles)
        out[name] = total
    return out


def run_demo(base: Path, home: Path, env: Mapping[str, str]) -> DemoResult:
    """Replay the sample session turn by turn (Stop after each), end it, and gather the results."""
    from cortex.core.recall.decide import RecallRequest
    from cortex.recall.search import recall, render_result

    env = {**env, "CORTEX_HOME": str(home)}
    project = make_project(base)
    key = fake_key()
    lines = read_sample(project, key)
    session = json.loads(lines[1])["sessionId"]
    transcript = base / "claude" / "projects" / "-acme-api" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    common = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project)}
    started = time.monotonic()
    done = 0
    ends = turn_ends(lines)
    with transcript.open("w", encoding="utf-8") as fh:
        for end, said in ends:
            fh.writelines(lines[done : end + 1])
            fh.flush()
            done = end + 1
            payload = {**common, "hook_event_name": "Stop", "stop_hook_active": False}
            _hook("Stop", {**payload, "last_assistant_message": said}, env)
        fh.writelines(lines[done:])
    _hook("SessionEnd", {**common, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}, env)
    _wait_for_capture(project, env)
    worker_s = time.monotonic() - started
    start = {
        **common,
        "session_id": "demo-next-session",
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    answer = _hook("SessionStart", start, env)
    context = json.loads(answer)["hookSpecificOutput"]["additionalContext"] if answer.strip() else ""
    rules = project / RULES_FILE
    paths = Paths(project, home)
    with Cortex(paths, load_settings(paths, dict(env)), actor="demo") as cx:
        counts: dict[str, int] = {}
        for store in cx.read_stores():
            for kind, n in store.counts()["type"].items():
                counts[kind] = counts.get(kind, 0) + n
        result = recall(cx, RecallRequest(text=RECALL_QUERY, limit=3), record=False)
        note = cx.query_embedder().note if result.mode is SearchMode.HYBRID else "; ".join(result.notes)
        shown = render_result(result)
    memory_dir = project / STORE_DIR
    places = {
        "store": [*memory_dir.glob("cortex.db*"), *home.glob("cortex-global.db*")],
        "briefing": [rules, memory_dir / "briefing"],
        "log": [*memory_dir.glob("cortex.log*"), *home.glob("cortex.log*")],
    }
    return DemoResult(
        project=project,
        transcript=transcript,
        turns=len(ends),
        worker_s=worker_s,
        counts=counts,
        session_start=context,
        rules_file=rules.read_text(encoding="utf-8") if rules.exists() else "",
        recall=shown,
        recall_mode=result.mode,
        embedder_note=note,
        secret=key,
        leaks=count_leaks(key, places),
    )


def demo_home(base: Path, user_home: Path) -> Path:
    """A throwaway CORTEX_HOME that reuses the user's exported query model, if there is one."""
    home = base / "cortex-home"
    home.mkdir(parents=True, exist_ok=True)
    models = user_home / "models"
    if models.is_dir() and not (home / "models").exists():
        with contextlib.suppress(OSError):  # no symlinks here: the demo embeds with what it can load
            (home / "models").symlink_to(models, target_is_directory=True)
    return home


def render_result(r: DemoResult) -> str:
    """The demo's report for the terminal."""
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(r.counts.items(), key=lambda kv: (-kv[1], kv[0])))
    leaks = ", ".join(f"{n} in {place}" for place, n in r.leaks.items())
    verdict = "yes" if r.redacted else "NO"
    where = ", ".join(r.leaks)
    lines = [
        "cortex demo: a sample Claude Code session replayed through cortex's hooks",
        f"  project:    {r.project} (git, branch {BRANCH})",
        f"  transcript: {r.transcript}",
        f"  {r.turns} Stop hooks + SessionEnd -> detached worker done in {r.worker_s:.1f} s",
        f"  memories:   {sum(r.counts.values())} ({kinds or 'none'})",
        f"  search:     {r.recall_mode}" + (f" ({r.embedder_note})" if r.embedder_note else ""),
        "",
        "== What SessionStart adds to the next session (additionalContext) ==",
        r.session_start or "(nothing: the rules file below already carries the briefing)",
        "",
        f"== {RULES_FILE.as_posix()} (Claude Code loads it at startup) ==",
        r.rules_file or "(not written)",
        "",
        r.recall,
        "",
        f"secret redacted: {verdict} ("
        + (f"0 occurrences in {where})" if r.redacted else f"{leaks}; the fake key leaked)"),
    ]
    return "\n".join(lines)


def user_cortex_home(env: Mapping[str, str]) -> Path:
    """The user's own CORTEX_HOME (only its exported model is reused, read-only)."""
    from cortex.paths import cortex_home

    return cortex_home(dict(env))


# The demo is offline: no API key, and no LLM extractor (the claude-cli one needs no key).
OFFLINE_UNSET = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY", "CORTEX_LLM_EXTRACTOR")


def default_env() -> dict[str, str]:
    """This process's environment, without what would make the demo call a model service."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_UNSET}
    env["CORTEX_LLM_EXTRACTION"] = "false"
    return env
