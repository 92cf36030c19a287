"""Find the Python that has cortex's full dependencies, and start cortex child processes. Stdlib only.

The hooks and the launcher import this. The search order is `CORTEX_PYTHON`, the plugin's own
environment in `${CLAUDE_PLUGIN_DATA}/venv` (once its install marker says it is ready), a
`cortex` command on PATH, then the running interpreter if it can import click. Children get
this plugin's code first on PYTHONPATH, so hooks, worker and CLI always run one version.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from cortex.shell.files import read_text

PLUGIN_ROOT = Path(__file__).resolve().parents[2]
VENV_DIR = "venv"
MARKER = "installed.json"  # inside the venv: removing the venv removes the marker
# What the CLI needs beyond the stdlib; the hooks and the worker need none of it.
CLI_MODULES = ("click",)


class PythonChoice(NamedTuple):  # not a dataclass: `dataclasses` costs every hook ~15 ms to import
    """An interpreter to run cortex with, and where it was found."""

    path: str
    origin: str  # CORTEX_PYTHON | plugin venv | cortex on PATH | this python | fallback


def plugin_version(root: Path = PLUGIN_ROOT) -> str:
    """The plugin's version from its manifest, else the package's."""
    text = read_text(root / ".claude-plugin" / "plugin.json", 100_000)
    with contextlib.suppress(ValueError, AttributeError):
        version = json.loads(text or "").get("version")
        if isinstance(version, str) and version:
            return version
    from cortex.version import __version__

    return __version__


def venv_python(venv: Path) -> Path:
    """The interpreter inside a virtual environment (Scripts\\python.exe on Windows)."""
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def data_dir(env: Mapping[str, str]) -> Path | None:
    """The plugin's persistent data directory, when running under Claude Code."""
    value = env.get("CLAUDE_PLUGIN_DATA", "").strip()
    return Path(value) if value else None


def read_marker(data: Path) -> dict[str, object] | None:
    """The venv's install marker, when the venv and its interpreter are really there."""
    venv = data / VENV_DIR
    text = read_text(venv / MARKER, 100_000)
    if text is None or not venv_python(venv).exists():
        return None
    try:
        marker = json.loads(text)
    except ValueError:
        return None
    return marker if isinstance(marker, dict) else None


def _executable(path: str) -> bool:
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _script_python(script: str) -> str | None:
    """The interpreter a console script was installed for (its `#!` line), if absolute."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].strip().split()
    return words[0] if words and os.path.isabs(words[0]) and _executable(words[0]) else None


def _site_dirs() -> list[str]:
    """Where `site` would find packages for this interpreter; the hooks run `python3 -S`."""
    import site

    here = Path(sys.executable).parent
    for cfg in (here / "pyvenv.cfg", here.parent / "pyvenv.cfg"):
        text = read_text(cfg, 100_000)
        if text is not None:  # a virtual environment: `site` would have switched sys.prefix to it
            dirs = site.getsitepackages([str(cfg.parent)])
            if "include-system-site-packages = true" in text.replace("\t", " ").lower():
                dirs += site.getsitepackages()
            return dirs
    return [*site.getsitepackages(), site.getusersitepackages()]


def _has_cli_modules() -> bool:
    # find_spec of a top-level name locates it without importing it (the hook must stay light).
    if not sys.flags.no_site:
        import importlib.util

        return all(importlib.util.find_spec(name) is not None for name in CLI_MODULES)
    from importlib.machinery import PathFinder

    where = _site_dirs()
    return all(PathFinder.find_spec(name, where) is not None for name in CLI_MODULES)


def find_python(env: Mapping[str, str]) -> PythonChoice | None:
    """The best interpreter with cortex's full dependencies, or None when there is none yet."""
    forced = env.get("CORTEX_PYTHON", "").strip()
    if forced and _executable(forced):
        return PythonChoice(forced, "CORTEX_PYTHON")
    data = data_dir(env)
    if data is not None:
        marker = read_marker(data)
        if marker is not None and marker.get("cli") is not False:
            return PythonChoice(str(venv_python(data / VENV_DIR)), "plugin venv")
    import shutil  # only here: neither CORTEX_PYTHON nor the plugin venv answered

    script = shutil.which("cortex", path=env.get("PATH"))
    if script:
        python = _script_python(script)
        if python:
            return PythonChoice(python, "cortex on PATH")
    if sys.executable and _has_cli_modules():
        return PythonChoice(sys.executable, "this python")
    return None


def worker_python(env: Mapping[str, str]) -> PythonChoice:
    """The interpreter for the worker: the best one, else this one (extraction needs only the stdlib)."""
    return find_python(env) or PythonChoice(sys.executable or "python3", "fallback")


def child_env(env: Mapping[str, str], **extra: str) -> dict[str, str]:
    """The environment for a cortex child process: this plugin's code first on PYTHONPATH."""
    out = dict(env)
    parts = [str(PLUGIN_ROOT), *[p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p]]
    out["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    out.update(extra)
    return out


def detached_popen_kwargs() -> dict[str, object]:
    """Popen arguments that let a child outlive the hook (its own session, no inherited stdio)."""
    import subprocess

    kwargs: dict[str, object] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "close_fds": True,
    }
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0
        )
        kwargs["creationflags"] = flags
    else:
        kwargs["start_new_session"] = True
    return kwargs
