"""Replay one recorded session through the real hooks of a cortex checkout, turn by turn.

A throwaway git repository (one commit, on the session's branch when it has one) stands in for
the project; the transcript's original directory is rewritten to it in every string. The
transcript file grows prefix by prefix, and at each cut the hook runs exactly as
hooks/hooks.json runs it (`python3 -S <repo>/hooks/launch.py <Event>`, the hook JSON on
stdin); the project's files follow the session's tool calls (workspace.py). After each hook
the harness waits until the detached worker is done: no queue file is
left and nobody holds the worker lock. Nothing here imports cortex.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from benchmarks.capture import workspace
from benchmarks.capture.dataset import Session, read_records
from benchmarks.capture.transcript import (
    Cut,
    cwd_before,
    is_windows_path,
    last_branch,
    main_session_id,
    path_rewriter,
    permission_mode_before,
    plan_cuts,
    rewrite_strings,
)

STORE_DIR = ".memory"
WORKER_LOCK = "worker.lock"
QUEUE_DIR = "queue"
HOOK_TIMEOUT_S = 120.0
WORKER_TIMEOUT_S = 900.0  # generous: a long turn on a busy 2-core machine
WORKER_STALL_S = 90.0  # queue files left while nobody holds the lock: the worker died
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@cortex.invalid", "-c", "commit.gpgsign=false"]
API_KEYS = ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY")
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Plugin:
    """The cortex checkout under test and the interpreter that runs it."""

    repo: Path
    python: str = sys.executable

    def hook_command(self, event: str) -> list[str]:
        """The command the checkout's hooks/hooks.json runs for `event`, `python3` resolved."""
        config = json.loads((self.repo / "hooks" / "hooks.json").read_text(encoding="utf-8"))
        [group] = config["hooks"][event]
        [handler] = group["hooks"]
        words = shlex.split(handler["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(self.repo)))
        if words[0] != "python3":
            raise SystemExit(f"unexpected hook command for {event}: {handler['command']}")
        return [self.python, *words[1:]]

    def env(self, home: Path, root: Path) -> dict[str, str]:
        """A clean environment: this home, this interpreter for cortex, no outside cortex settings
        and no API keys (the local extraction and embedding only: repeatable, and free)."""
        dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", *API_KEYS)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CORTEX_", "CLAUDE")) and k not in dropped
        }
        env.update(
            CORTEX_HOME=str(home),
            CORTEX_PYTHON=self.python,
            CLAUDE_PROJECT_DIR=str(root),
            CLAUDE_PLUGIN_ROOT=str(self.repo),
        )
        return env

    def cli_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`python -m cortex` with the plugin root first on the path (as the launcher does)."""
        return {**env, "PYTHONPATH": str(self.repo)}


@dataclass
class Replay:
    """A replayed session: where its project and home are, and how the replay went."""

    session: str
    root: Path
    home: Path
    session_id: str
    transcript_path: Path
    records: list[dict[str, Any]]
    env: dict[str, str]
    hooks: dict[str, int] = field(default_factory=dict)
    hook_seconds: float = 0.0
    wait_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def project_name(original_cwd: str) -> str:
    """The original project folder's name (Windows or POSIX), for a realistic throwaway path."""
    pure = PureWindowsPath(original_cwd) if is_windows_path(original_cwd) else PurePosixPath(original_cwd)
    return pure.name or "project"


def _git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True, timeout=60)


def make_project(parent: Path, session: Session) -> Path:
    """A fresh git repository with one commit, on the session's branch when it names one."""
    root = parent / project_name(session.original_cwd)
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    if session.branch:
        ok = subprocess.run(["git", "check-ref-format", "--branch", session.branch], capture_output=True)
        if ok.returncode == 0:
            _git(root, "symbolic-ref", "HEAD", f"refs/heads/{session.branch}")
    (root / "README.md").write_text(f"# {root.name}\n", encoding="utf-8")
    _git(root, "add", "README.md")
    _git(root, "commit", "-q", "-m", "Initial commit")
    return root.resolve()


def make_home(parent: Path, models: Path | None) -> Path:
    """An empty CORTEX_HOME, sharing the prepared model folder when there is one."""
    home = parent / "home"
    home.mkdir(parents=True)
    if models is not None and models.is_dir():
        (home / "models").symlink_to(models, target_is_directory=True)
    return home


def lock_held(lock: Path) -> bool:
    """True while some process holds a lock on `lock` (read from /proc/locks where it exists).

    Never takes the lock itself where /proc/locks can answer: a worker that found it taken
    would give up its turn.
    """
    try:
        inode = lock.stat().st_ino
    except OSError:
        return False
    try:
        table = Path("/proc/locks").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return _probe_lock(lock)
    suffix = f":{inode}"
    return any(
        word.count(":") == 2 and word.endswith(suffix) for line in table.splitlines() for word in line.split()
    )


def _probe_lock(lock: Path) -> bool:  # pragma: no cover - systems without /proc/locks
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def queued(store_dir: Path) -> list[str]:
    try:
        return [n for n in os.listdir(store_dir / QUEUE_DIR) if n.endswith(".json") and not n.startswith(".")]
    except OSError:
        return []


def wait_for_worker(root: Path, timeout_s: float = WORKER_TIMEOUT_S, stall_s: float = WORKER_STALL_S) -> str:
    """Wait until the queue is empty and no worker holds the lock; "" when so, else why not."""
    store_dir = root / STORE_DIR
    start = last_seen = time.monotonic()
    while True:
        pending = queued(store_dir)
        held = lock_held(store_dir / WORKER_LOCK)
        now = time.monotonic()
        if not pending and not held:
            return ""
        if held:
            last_seen = now
        if now - last_seen > stall_s:
            return f"{len(pending)} queue file(s) left and no worker for {stall_s:.0f} s"
        if now - start > timeout_s:
            return f"worker still busy after {timeout_s:.0f} s"
        time.sleep(0.05)


def run_hook(
    plugin: Plugin, event: str, payload: Mapping[str, Any], env: Mapping[str, str], cwd: Path
) -> str:
    """Run one hook as Claude Code would; its stdout."""
    done = subprocess.run(
        plugin.hook_command(event),
        input=json.dumps(payload).encode("utf-8"),
        capture_output=True,
        env=dict(env),
        cwd=cwd,
        timeout=HOOK_TIMEOUT_S,
        check=False,
    )
    return done.stdout.decode("utf-8", "replace")


def session_start(plugin: Plugin, env: Mapping[str, str], root: Path, transcript: Path, sid: str) -> str:
    """A new session's SessionStart (source startup): the context it adds (plain or JSON)."""
    payload = {
        "session_id": sid,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    out = run_hook(plugin, "SessionStart", payload, env, root).strip()
    if not out.startswith("{"):
        return out
    try:
        value = json.loads(out)
    except ValueError:
        return out
    specific = value.get("hookSpecificOutput") if isinstance(value, dict) else None
    context = specific.get("additionalContext") if isinstance(specific, dict) else None
    return context if isinstance(context, str) else ""


def _payload(cut: Cut, replay: Replay, cwd: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "session_id": replay.session_id,
        "transcript_path": str(replay.transcript_path),
        "cwd": cwd,
        "hook_event_name": cut.event,
    }
    if cut.event == "Stop":
        payload["permission_mode"] = permission_mode_before(replay.records, cut.end)
        payload["stop_hook_active"] = False
    if cut.event == "PreCompact":
        payload["custom_instructions"] = ""
    for key, value in cut.extra:
        if value != "":
            payload[key] = value
    return payload


def _prepare(session: Session, work: Path, models: Path | None, plugin: Plugin) -> Replay:
    root = make_project(work / "project", session)
    home = make_home(work, models)
    records = read_records(session.transcript)
    if session.original_cwd:
        rewrite = path_rewriter(session.original_cwd, str(root))
        records = [rewrite_strings(r, rewrite) for r in records]
    for record in records:  # the session's subfolders exist, as they did for the session
        cwd = record.get("cwd")
        if isinstance(cwd, str) and cwd.startswith(str(root) + "/"):
            Path(cwd).mkdir(parents=True, exist_ok=True)
    sid = main_session_id(records)
    transcript = work / "claude" / "projects" / root.name.replace(" ", "-") / f"{sid}.jsonl"
    transcript.parent.mkdir(parents=True)
    return Replay(session.name, root, home, sid, transcript, records, plugin.env(home, root))


def replay_session(
    session: Session, plugin: Plugin, work: Path, models: Path | None, progress: Progress
) -> Replay:
    """Replay the whole session; returns once the worker has finished the last hook's work."""
    started = time.monotonic()
    replay = _prepare(session, work, models, plugin)
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in replay.records]
    cuts = plan_cuts(replay.records)
    first = session_start(plugin, replay.env, replay.root, replay.transcript_path, replay.session_id)
    if first.strip():
        replay.problems.append("the first SessionStart of an empty store printed a briefing")
    written = 0
    on_branch = session.branch or ""
    with replay.transcript_path.open("a", encoding="utf-8") as fh:
        for n, cut in enumerate(cuts, 1):
            if cut.end > written:
                workspace.apply(replay.root, replay.records[written : cut.end])
                fh.writelines(lines[written : cut.end])
                fh.flush()
                written = cut.end
            cwd = cwd_before(replay.records, cut.end, str(replay.root))
            branch = last_branch(replay.records[: cut.end])
            if branch != on_branch:  # the session switched branches: the project does too
                follow_branch(replay.root, branch)
                on_branch = branch
            at = time.monotonic()
            run_hook(plugin, cut.event, _payload(cut, replay, cwd), replay.env, replay.root)
            waited = time.monotonic()
            problem = wait_for_worker(replay.root)
            replay.hook_seconds += waited - at
            replay.wait_seconds += time.monotonic() - waited
            replay.hooks[cut.event] = replay.hooks.get(cut.event, 0) + 1
            if problem:
                replay.problems.append(f"{cut.event} at record {cut.end}: {problem}")
            progress(f"  {session.name}: hook {n}/{len(cuts)} {cut.event} at record {cut.end}")
    replay.seconds = time.monotonic() - started
    return replay


def reopen_session(session: Session, plugin: Plugin, work: Path) -> Replay:
    """A session an earlier run replayed and kept under `work`, re-read without replaying it:
    its briefing is rendered again by this checkout (`cortex brief --refresh`, what the worker
    runs after each extraction), so a change to the briefing is measured on the same stores."""
    root = (work / "project" / project_name(session.original_cwd)).resolve()
    records = read_records(session.transcript)
    if session.original_cwd:
        rewrite = path_rewriter(session.original_cwd, str(root))
        records = [rewrite_strings(r, rewrite) for r in records]
    sid = main_session_id(records)
    transcript = work / "claude" / "projects" / root.name.replace(" ", "-") / f"{sid}.jsonl"
    if not transcript.is_file():
        raise SystemExit(f"no kept replay of {session.name} under {work} (run with --keep first)")
    home = work / "home"
    restore_stores(work)
    replay = Replay(session.name, root, home, sid, transcript, records, plugin.env(home, root))
    done = cortex_cli(plugin, replay, ["brief", "--refresh"])
    if done.returncode:
        replay.problems.append(f"`cortex brief --refresh` failed: {done.stderr.strip()[-300:]}")
    return replay


PRISTINE_DIR = "pristine"


def _store_files(work: Path) -> list[Path]:
    """The kept replay's SQLite files (project and global stores, with their WAL files)."""
    return sorted(
        p
        for p in work.rglob("*.db*")
        if p.is_file() and PRISTINE_DIR not in p.relative_to(work).parts[:1] and "models" not in p.parts
    )


def keep_stores(work: Path) -> None:
    """Copy the stores as the replay left them, before the measurement's recalls count their
    accesses: `--reuse` starts from these, so its briefing ranks what a fresh run's did."""
    for path in _store_files(work):
        target = work / PRISTINE_DIR / path.relative_to(work)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def restore_stores(work: Path) -> None:
    """Put back the stores `keep_stores` copied (a kept run from before it: left as they are)."""
    pristine = work / PRISTINE_DIR
    if not pristine.is_dir():
        return
    for path in _store_files(work):
        path.unlink()
    for saved in pristine.rglob("*"):
        if saved.is_file():
            shutil.copy2(saved, work / saved.relative_to(pristine))


def follow_branch(root: Path, branch: str) -> None:
    """Put the project on `branch` (made at HEAD when new), as the session left its repository:
    a session that switched branches ends on another branch than it began on. A detached `HEAD`
    or a name git refuses leaves the project as it is; the work tree is kept either way."""
    if not branch or branch == "HEAD":
        return
    ok = subprocess.run(["git", "check-ref-format", "--branch", branch], capture_output=True)
    if ok.returncode == 0:
        _git(root, "checkout", "-q", "-B", branch)


def next_session_context(plugin: Plugin, replay: Replay) -> str:
    """What a new session in the project gets from the SessionStart hook, on the branch the
    session ended on."""
    follow_branch(replay.root, last_branch(replay.records))
    transcript = replay.transcript_path.with_name(f"{uuid.uuid4()}.jsonl")
    text = session_start(plugin, replay.env, replay.root, transcript, transcript.stem)
    wait_for_worker(replay.root)  # it may resume leftover queue work
    return text


def cortex_cli(
    plugin: Plugin, replay: Replay, args: Sequence[str], timeout_s: float = 600.0
) -> subprocess.CompletedProcess[str]:
    """`python -m cortex ARGS` in the project, with the checkout's code first on the path."""
    return subprocess.run(
        [plugin.python, "-m", "cortex", *args],
        cwd=replay.root,
        env=plugin.cli_env(replay.env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
