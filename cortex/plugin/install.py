"""The one-time background install of cortex's Python environment into the plugin's data dir.

Stdlib only: SessionStart calls `start_install` when `cortex.plugin.python_env` finds no interpreter
with cortex's dependencies. That starts `python -m cortex.plugin.install` detached: it creates
`${CLAUDE_PLUGIN_DATA}/venv`, pip-installs the plugin with its extras (`CORTEX_INSTALL_EXTRAS`,
default `local,mcp`; `CORTEX_INSTALL_SOURCE` and `CORTEX_INSTALL_PIP_ARGS` point pip elsewhere, e.g.
at a wheelhouse), prepares the local embedding model once (`cortex init --model-only`, so no
`/recall` ever pays for it), and writes the venv's marker last. A lock and a state file holding the plugin
version make it run once per version.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from cortex.plugin.python_env import (
    CLI_MODULES,
    MARKER,
    PLUGIN_ROOT,
    VENV_DIR,
    child_env,
    data_dir,
    detached_popen_kwargs,
    find_python,
    plugin_version,
    read_marker,
    venv_python,
)
from cortex.shell.files import LockBusy, atomic_write, file_lock, read_text

log = logging.getLogger("cortex.plugin.install")

STATE_FILE = "install-state.json"
LOCK_FILE = "install.lock"
PIP_LOG = "install.log"
# The local model (no torch: ~300 MB with the model) and the SDK of the MCP server the plugin
# declares in .mcp.json.
DEFAULT_EXTRAS = "local,mcp"
WARM_UP_TIMEOUT_S = 600.0
PIP_TIMEOUT_S = 1800.0
VENV_TIMEOUT_S = 300.0
NOTICE = (
    "cortex: setting up its Python environment in the background (one time); memory capture works meanwhile."
)


def read_state(data: Path) -> dict[str, object]:
    """What the last install attempt recorded ({} when none)."""
    text = read_text(data / STATE_FILE, 100_000)
    try:
        state = json.loads(text or "{}")
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def install_wanted(env: Mapping[str, str], version: str) -> bool:
    """True when no full environment exists and this plugin version has not tried to make one."""
    data = data_dir(env)
    if data is None or env.get("CORTEX_NO_INSTALL", "").strip() in ("1", "true", "yes"):
        return False
    marker = read_marker(data)
    if marker is not None and marker.get("version") == version:
        return False
    if marker is None and find_python(env) is not None:
        return False
    return read_state(data).get("version") != version


def start_install(env: Mapping[str, str], log_file: Path | None, version: str) -> bool:
    """Start the one-time background install; False when it is running, done, or not wanted."""
    data = data_dir(env)
    if data is None:
        return False
    try:
        data.mkdir(parents=True, exist_ok=True)
        with file_lock(data / LOCK_FILE, blocking=False):
            if read_state(data).get("version") == version:
                return False
            _write_state(data, version, "starting")
    except (LockBusy, OSError) as exc:
        log.info("background install not started: %s", exc)
        return False
    import subprocess

    extras = env.get("CORTEX_INSTALL_EXTRAS", DEFAULT_EXTRAS).strip()
    cmd = [sys.executable, "-m", "cortex.plugin.install", "--data", str(data), "--extras", extras]
    source = env.get("CORTEX_INSTALL_SOURCE", "").strip()
    if source:
        cmd += ["--source", source]
    if log_file is not None:
        cmd += ["--log", str(log_file)]
    try:
        subprocess.Popen(cmd, env=child_env(env), **detached_popen_kwargs())  # type: ignore[call-overload]
    except OSError as exc:
        log.warning("could not start the background install: %s", exc)
        _write_state(data, version, "failed", error=str(exc))
        return False
    log.info("background install of cortex[%s] started into %s", extras, data / VENV_DIR)
    return True


def _write_state(data: Path, version: str, state: str, **extra: object) -> None:
    record = {"version": version, "state": state, "pid": os.getpid(), "at": time.time(), **extra}
    atomic_write(data / STATE_FILE, json.dumps(record))


# -- the install itself (detached process) ----------------------------------------------------
def _run(cmd: list[str], out: Path, timeout_s: float) -> int:
    import subprocess

    with out.open("ab") as fh:
        fh.write(("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n").encode("utf-8"))
        fh.flush()
        # Without PYTHONPATH: the plugin root on it would hide what really got installed.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            done = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                env=env,
            )
        except subprocess.TimeoutExpired:
            return -1
    return done.returncode


def run_install(data: Path, source: str, extras: str, pip_args: list[str]) -> bool:
    """Create the venv, pip-install `source` (the plugin root) into it, verify, write the marker last."""
    version = plugin_version()
    try:
        with file_lock(data / LOCK_FILE, blocking=False):
            return _install(data, source, extras, pip_args, version)
    except LockBusy:
        log.info("another cortex install is running; this one stops")
        return False
    except OSError as exc:
        return _failed(data, version, str(exc))


def _install(data: Path, source: str, extras: str, pip_args: list[str], version: str) -> bool:
    _write_state(data, version, "running")
    venv = data / VENV_DIR
    pip_log = data / PIP_LOG
    started = time.monotonic()
    if not venv_python(venv).exists():
        log.info("install: creating %s", venv)
        if _run([sys.executable, "-m", "venv", str(venv)], pip_log, VENV_TIMEOUT_S) != 0:
            return _failed(data, version, f"creating the venv failed; see {pip_log}")
    python = str(venv_python(venv))
    target = f"{source}[{extras}]" if extras else source
    log.info("install: pip install %s (output in %s)", target, pip_log)
    cmd = [python, "-m", "pip", "install", "--disable-pip-version-check", *pip_args, target]
    if _run(cmd, pip_log, PIP_TIMEOUT_S) != 0:
        return _failed(data, version, f"pip install failed; see {pip_log}")
    if _run([python, "-c", "import cortex"], pip_log, 120.0) != 0:
        return _failed(data, version, f"cortex does not import in {venv}; see {pip_log}")
    cli = _run([python, "-c", "import " + ", ".join(CLI_MODULES)], pip_log, 120.0) == 0
    if cli:
        _warm_up(python, pip_log)
    marker = {"version": version, "extras": extras, "python": python, "cli": cli, "at": time.time()}
    atomic_write(venv / MARKER, json.dumps(marker, indent=2))
    _write_state(data, version, "done")
    log.info("install: done in %.0f s (%s)", time.monotonic() - started, python)
    return True


def _warm_up(python: str, pip_log: Path) -> None:
    """Build the embedding model's ONNX file now, so neither the worker nor a /recall waits for it.

    A failure is logged, not fatal: recall stays keyword-only until the worker or `cortex init`
    manages it, and `cortex doctor` says why.
    """
    started = time.monotonic()
    code = _run([python, "-m", "cortex", "init", "--model-only"], pip_log, WARM_UP_TIMEOUT_S)
    if code != 0:
        log.warning("install: preparing the embedding model failed (exit %s); see %s", code, pip_log)
    else:
        log.info("install: embedding model ready in %.1f s", time.monotonic() - started)


def _failed(data: Path, version: str, why: str) -> bool:
    log.error("install failed: %s (remove %s to retry)", why, data / STATE_FILE)
    with contextlib.suppress(OSError):
        _write_state(data, version, "failed", error=why)
    return False


def main(argv: list[str] | None = None) -> int:
    """`python -m cortex.plugin.install --data DIR [--extras E] [--log FILE]`."""
    parser = argparse.ArgumentParser(prog="python -m cortex.plugin.install", description=__doc__)
    parser.add_argument("--data", required=True, type=Path, help="the plugin's data directory")
    parser.add_argument(
        "--source", default=str(PLUGIN_ROOT), help="what pip installs (default: the plugin root)"
    )
    parser.add_argument("--extras", default=DEFAULT_EXTRAS, help="pip extras, e.g. query or local")
    parser.add_argument("--log", type=Path, default=None, help="append progress lines here")
    args = parser.parse_args(argv)
    from cortex.shell.logs import configure

    args.data.mkdir(parents=True, exist_ok=True)
    configure(args.log or args.data / "cortex.log", fallback=args.data / "cortex.log")
    pip_args = shlex.split(os.environ.get("CORTEX_INSTALL_PIP_ARGS", ""))
    return 0 if run_install(args.data, args.source, args.extras.strip(), pip_args) else 1


if __name__ == "__main__":
    sys.exit(main())
