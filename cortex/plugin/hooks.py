"""Claude Code hook entry points: fail open, print only the final JSON, return fast. Stdlib only.

`main(event)` always returns 0. SessionStart prints the briefing JSON the worker prepared;
Stop, PreCompact and SessionEnd write a queue entry and start the detached worker unless one
is running (they print nothing: a Stop hook's output would make Claude keep going);
UserPromptSubmit adds a few keyword-matched memories when enabled. Nothing heavy is imported
here (a test checks `sys.modules`): the worker does the real work in its own process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from cortex.paths import STORE_DIR, WORKER_LOCK, Paths, cortex_home, ensure_store_dir, find_project_root

log = logging.getLogger("cortex.plugin.hooks")

MAX_STDIN_BYTES = 8 * 1024 * 1024
GUARD_ENV = "CORTEX_NO_HOOKS"  # set by cortex's own API calls: never re-enter the hooks
EVENTS = {
    "sessionstart": "SessionStart",
    "stop": "Stop",
    "precompact": "PreCompact",
    "sessionend": "SessionEnd",
    "userpromptsubmit": "UserPromptSubmit",
}
# Workers started by this process (pids, or Popen objects where posix_spawn is missing), so an
# in-process caller (tests, the demo) can wait for them and reap them.
SPAWNED: list[Any] = []
# Work a hook does once its output is written (SessionStart's queued briefing render).
AFTER_OUTPUT: list[Callable[[], object]] = []


class _LazyFileLog(logging.Handler):
    """Sets up the rotating log file on the first record, so a quiet hook never pays for it."""

    def __init__(self, log_file: Path, fallback: Path) -> None:
        super().__init__()
        self.log_file = log_file
        self.fallback = fallback

    def emit(self, record: logging.LogRecord) -> None:
        from cortex.shell.logs import configure

        root = logging.getLogger("cortex")
        configure(self.log_file, fallback=self.fallback)
        if record.levelno >= root.getEffectiveLevel():
            root.handle(record)


def canonical_event(name: str) -> str | None:
    """`SessionStart`, `session-start`, `session_start` ... -> `SessionStart`; None if unknown."""
    return EVENTS.get("".join(c for c in name.lower() if c.isalpha()))


def project_root(payload: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """The project a payload belongs to: its cwd, else CLAUDE_PROJECT_DIR, else this directory."""
    cwd = payload.get("cwd")
    start = cwd if isinstance(cwd, str) and cwd else env.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    return find_project_root(Path(start))


def _log_to(root: Path, env: Mapping[str, str]) -> None:
    home = cortex_home(env)
    store_dir = root / STORE_DIR
    target = store_dir / "cortex.log" if store_dir.is_dir() else home / "cortex.log"
    logger = logging.getLogger("cortex")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.propagate = False
    level = env.get("CORTEX_LOG_LEVEL", "INFO").strip().upper()
    logger.setLevel(level if level in logging.getLevelNamesMapping() else "INFO")
    logger.addHandler(_LazyFileLog(target, home / "cortex.log"))


def read_payload(stdin: IO[bytes]) -> dict[str, Any] | None:
    """The hook's stdin JSON object; None (logged) when it is empty, too big, not JSON or not an object."""
    raw = stdin.read(MAX_STDIN_BYTES + 1)
    if isinstance(raw, str):  # a text stream handed in by a caller
        raw = raw.encode("utf-8", "replace")
    if len(raw) > MAX_STDIN_BYTES:
        log.warning("hook input is over %d MB; ignored", MAX_STDIN_BYTES // (1024 * 1024))
        return None
    if not raw.strip():
        log.warning("hook input is empty; ignored")
        return None
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        log.warning("hook input is not JSON (%s); ignored", str(exc)[:200])
        return None
    if not isinstance(payload, dict):
        log.warning("hook input is JSON but not an object (%s); ignored", type(payload).__name__)
        return None
    return payload


def main(
    event: str,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run one hook; always 0, whatever happens (errors go to the log, never to the session)."""
    env = os.environ if env is None else env
    out = sys.stdout if stdout is None else stdout
    if env.get(GUARD_ENV):
        return 0
    AFTER_OUTPUT.clear()
    try:
        # Until the payload names the project, the session's directory stands in for it.
        _log_to(project_root({}, env), env)
        name = canonical_event(event)
        if name is None:
            log.warning("unknown hook event %r; nothing done", event)
            return 0
        payload = read_payload(sys.stdin.buffer if stdin is None else stdin)
        if payload is None:
            return 0
        root = project_root(payload, env)
        _log_to(root, env)
        result = _dispatch(name, payload, root, env)
        if result is not None:
            out.write(json.dumps(result, ensure_ascii=True) + "\n")
            out.flush()
        while AFTER_OUTPUT:
            AFTER_OUTPUT.pop(0)()
    except BaseException as exc:  # fail open: a hook must never hurt the session
        with contextlib.suppress(BaseException):  # even logging may fail (disk full): stay silent
            log.error("%s hook failed: %s: %s", event, type(exc).__name__, exc, exc_info=True)
    return 0


def _dispatch(
    name: str, payload: dict[str, Any], root: Path, env: Mapping[str, str]
) -> dict[str, Any] | None:
    if name == "SessionStart":
        return session_start(payload, root, env)
    if name == "UserPromptSubmit":
        return user_prompt_submit(payload, root, env)
    capture(name, payload, root, env)
    return None


# -- SessionStart -----------------------------------------------------------------------------
def session_start(payload: dict[str, Any], root: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The briefing JSON (moment or full part), plus a one-time notice when setup starts."""
    result = None
    try:
        from cortex.briefing.session_start import plan_session_start

        plan = plan_session_start(payload, env)
        if plan is not None:
            result = plan.output
            if plan.refresh:  # after the output is written: the session reads it first
                AFTER_OUTPUT.append(lambda: spawn_briefing_refresh(plan.root, plan.cwd, env))
    except Exception as exc:
        log.warning("no briefing this session: %s: %s", type(exc).__name__, exc)
    notice = _maybe_install(root, env)
    if notice:
        result = {**(result or {}), "systemMessage": notice}
    _resume_leftover_work(root, env)
    return result


def _maybe_install(root: Path, env: Mapping[str, str]) -> str | None:
    if not env.get("CLAUDE_PLUGIN_DATA"):
        return None
    try:
        from cortex.plugin import install
        from cortex.plugin.python_env import plugin_version

        version = plugin_version()
        if not install.install_wanted(env, version):
            return None
        store_dir = root / STORE_DIR
        log_file = store_dir / "cortex.log" if store_dir.is_dir() else cortex_home(env) / "cortex.log"
        return install.NOTICE if install.start_install(env, log_file, version) else None
    except Exception as exc:
        log.warning("background install check failed: %s", exc)
        return None


def _resume_leftover_work(root: Path, env: Mapping[str, str]) -> None:
    """Queue files left by a worker that died (or a read-only spell) get a worker now."""
    # A bare listing, not `cortex.queue`: SessionStart is the hook whose start-up counts most.
    try:
        names = os.listdir(root / STORE_DIR / "queue")
    except OSError:
        return
    if any(n.endswith(".json") and not n.startswith(".") for n in names):
        spawn_worker(root, env)


# -- Stop, PreCompact, SessionEnd -------------------------------------------------------------
def capture(name: str, payload: dict[str, Any], root: Path, env: Mapping[str, str]) -> None:
    """Queue the session for extraction and make sure a worker will take it."""
    from cortex.capture.queue import QueueEntry, message_probe, write_entry

    session = payload.get("session_id")
    transcript = payload.get("transcript_path")
    if not (isinstance(session, str) and session and isinstance(transcript, str) and transcript):
        log.warning("%s input has no session_id/transcript_path; nothing to capture", name)
        return
    message = payload.get("last_assistant_message") if name == "Stop" else None
    cwd = payload.get("cwd")
    entry = QueueEntry(
        event=name,
        session_id=session,
        transcript_path=transcript,
        cwd=cwd if isinstance(cwd, str) else "",
        last_message_probe=message_probe(message) if isinstance(message, str) else "",
        closed=name == "SessionEnd",
        at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    try:
        store_dir = ensure_store_dir(Paths(root, cortex_home(env)))
        write_entry(store_dir, entry)
    except OSError as exc:
        log.warning("%s: cannot queue session %s under %s: %s", name, session, root, exc)
        return
    spawn_worker(root, env)


def worker_running(root: Path) -> bool:
    """True while a worker holds the project's lock (it will pick up new queue files)."""
    from cortex.shell.files import LockBusy, file_lock

    try:
        with file_lock(root / STORE_DIR / WORKER_LOCK, blocking=False):
            return False
    except LockBusy:
        return True


def spawn_worker(root: Path, env: Mapping[str, str]) -> bool:
    """Start `python -m cortex.plugin.worker --root ROOT` detached, unless a worker is running."""
    try:
        if worker_running(root):
            return False
        from cortex.plugin.python_env import child_env, worker_python

        python = worker_python(env)
        cmd = [python.path, "-m", "cortex.plugin.worker", "--root", str(root)]
        child = _spawn_detached(cmd, child_env(env, CORTEX_WORKER="1"))
    except OSError as exc:
        log.warning("cannot start the cortex worker for %s: %s", root, exc)
        return False
    SPAWNED.append(child)
    log.debug("worker started with %s (%s)", python.path, python.origin)
    return True


def spawn_briefing_refresh(root: Path, cwd: Path, env: Mapping[str, str]) -> bool:
    """Start `python -m cortex.briefing.refresh` detached: the next session finds a cached briefing."""
    try:
        from cortex.plugin.python_env import child_env, worker_python

        python = worker_python(env)
        cmd = [python.path, "-m", "cortex.briefing.refresh", "--root", str(root), "--cwd", str(cwd)]
        child = _spawn_detached(cmd, child_env(env, CORTEX_WORKER="1"))
    except OSError as exc:
        log.warning("cannot start the briefing render for %s: %s", root, exc)
        return False
    SPAWNED.append(child)
    return True


def _spawn_detached(cmd: list[str], env: dict[str, str]) -> Any:
    """A child in its own session with stdio on /dev/null: a pid, or a Popen where needed."""
    if hasattr(os, "posix_spawn"):
        # posix_spawn needs no `subprocess` import, which is a good part of the Stop hook's time.
        null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        with contextlib.suppress(NotImplementedError):  # setsid is missing on some platforms
            return os.posix_spawn(cmd[0], cmd, env, file_actions=null, setsid=True)
    import subprocess

    from cortex.plugin.python_env import detached_popen_kwargs

    return subprocess.Popen(cmd, env=env, **detached_popen_kwargs())  # type: ignore[call-overload]


def wait_for_workers(timeout_s: float = 120.0) -> bool:
    """Wait for the workers this process started; True when all have exited in time."""
    deadline = time.monotonic() + timeout_s
    for child in list(SPAWNED):
        while not _exited(child):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        SPAWNED.remove(child)
    return True


def _exited(child: Any) -> bool:
    if not isinstance(child, int):
        return child.poll() is not None
    try:
        pid, _ = os.waitpid(child, os.WNOHANG)
    except ChildProcessError:  # reaped already
        return True
    return pid != 0


# -- UserPromptSubmit -------------------------------------------------------------------------
def user_prompt_submit(payload: dict[str, Any], root: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """A few clearly matching memories for the prompt, within the time budget; off by default."""
    from cortex.config import load_settings

    paths = Paths(root, cortex_home(env))
    settings = load_settings(paths, dict(env))
    prompt = payload.get("prompt")
    if not settings.user_prompt_submit or not isinstance(prompt, str) or not prompt.strip():
        return None
    import threading

    from cortex.recall.prompt_lookup import prompt_output

    answer: list[dict[str, Any] | None] = []

    def look() -> None:
        try:
            answer.append(
                prompt_output([paths.project_db, paths.global_db], prompt, settings.user_prompt_max_memories)
            )
        except Exception as exc:
            log.warning("prompt lookup failed: %s: %s", type(exc).__name__, exc)

    worker = threading.Thread(target=look, name="cortex-prompt-lookup", daemon=True)
    worker.start()
    worker.join(settings.user_prompt_budget_ms / 1000)
    if worker.is_alive() or not answer:
        if worker.is_alive():
            log.info("prompt lookup passed its %d ms budget; nothing added", settings.user_prompt_budget_ms)
        return None
    _record_recalled(root, payload, answer[0])
    return answer[0]


def _record_recalled(root: Path, payload: Mapping[str, Any], output: Mapping[str, Any] | None) -> None:
    """One appended line: the memories the prompt lookup added (the worker judges their use)."""
    session = payload.get("session_id")
    context = (output or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
    if not (isinstance(session, str) and session and isinstance(context, str)):
        return
    import re

    ids = re.findall(r"^- ([0-9a-f]{6,}) · ", context, re.MULTILINE)
    if not ids:
        return
    from cortex.shell.usage_log import append_note

    try:
        append_note(root / STORE_DIR, session, "recalled", ids, via="prompt")
    except OSError as exc:
        log.info("recalled ids not recorded: %s", exc)
