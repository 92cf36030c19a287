#!/usr/bin/env python3
"""cortex's launcher for Claude Code: hooks run in this process, skills get the CLI. Stdlib only.

    launch.py <event>          run one hook (SessionStart, Stop, PreCompact, SessionEnd,
                               UserPromptSubmit) in process: no second Python start. hooks.json
                               runs it as `python3 -S`: the hooks need the stdlib only, and
                               skipping site-packages (and any slow .pth file in them) saves
                               most of the interpreter's start-up
    launch.py cli <args...>    run `python -m cortex <args...>` with the best Python that has
                               cortex's dependencies (CORTEX_PYTHON, the plugin's own venv,
                               a `cortex` on PATH, or this python when it can import click)

The plugin's own copy of cortex always comes first on the path, so hooks, worker and CLI run
the same version. Plain Python 3.6 syntax, so that an old `python3` fails gently: hooks then
exit 0 in silence (and log why), the CLI says what to install.
"""

import os
import sys

PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_PYTHON = (3, 11)
MISSING_COMMAND_EXIT = 2


def _use_plugin_copy():
    if os.path.isfile(os.path.join(PLUGIN_ROOT, "cortex", "__init__.py")):
        sys.path.insert(0, PLUGIN_ROOT)


def _cache_bytecode():
    """Hooks run every turn: with PYTHONDONTWRITEBYTECODE set they would compile cortex each
    time. Keep the bytecode in the plugin's data directory instead, next to nothing of the user's."""
    data = os.environ.get("CLAUDE_PLUGIN_DATA")
    if sys.dont_write_bytecode and data and sys.pycache_prefix is None:
        sys.pycache_prefix = os.path.join(data, "pycache")
        sys.dont_write_bytecode = False


def _old_python_note():
    wanted = ".".join(str(n) for n in MIN_PYTHON)
    return f"cortex needs Python {wanted} or newer; {sys.executable} is {sys.version.split()[0]}"


def _log_fallback(message):
    """Append a line to CORTEX_HOME/cortex.log when cortex itself cannot run here."""
    home = os.environ.get("CORTEX_HOME") or os.path.join(os.path.expanduser("~"), ".claude", "memory")
    try:
        if not os.path.isdir(home):
            os.makedirs(home)
        with open(os.path.join(home, "cortex.log"), "a") as fh:
            fh.write(f"cortex launcher: {message}\n")
    except Exception:
        pass


def run_hook(event):
    """Run a hook in this process; always exit 0."""
    if sys.version_info < MIN_PYTHON:
        _log_fallback(_old_python_note() + f"; hook {event} skipped")
        return 0
    _use_plugin_copy()
    _cache_bytecode()
    try:
        from cortex.plugin.hooks import main
    except Exception as exc:  # a broken install must not break the session
        _log_fallback(f"cannot import cortex.plugin.hooks ({type(exc).__name__}: {exc})")
        return 0
    return main(event)


def run_cli(args):
    """Run the cortex CLI with the best Python; a command this version lacks gets one clear line."""
    if sys.version_info < MIN_PYTHON:
        sys.stderr.write(_old_python_note() + "; set CORTEX_PYTHON to a newer interpreter\n")
        return 1
    _use_plugin_copy()
    from cortex.plugin.python_env import child_env, find_python

    python = find_python(os.environ)
    if python is None:
        sys.stdout.write(
            "cortex: no Python environment with cortex's dependencies yet. If it is being set up "
            "in the background, try again in a minute; otherwise install it with "
            "`pip install cortex-memory` or point CORTEX_PYTHON at an interpreter that has it.\n"
        )
        return 1
    import subprocess

    cmd = [python.path, "-m", "cortex", *list(args)]
    done = subprocess.run(cmd, env=child_env(os.environ), stderr=subprocess.PIPE)
    err = done.stderr.decode("utf-8", "replace")
    if done.returncode == MISSING_COMMAND_EXIT and "No such command" in err:
        name = args[0] if args else ""
        sys.stdout.write(
            f"cortex: this cortex version does not have `cortex {name}` yet; `cortex --help` lists "
            "the commands it has.\n"
        )
        return 1
    sys.stderr.write(err)
    return done.returncode


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: launch.py <hook event> | launch.py cli <cortex args...>\n")
        return 2
    if argv[1] == "cli":
        return run_cli(argv[2:])
    return run_hook(argv[1])


def end_hook(code):
    """End a hook's process at once (`cortex.shell.process.end_now`): its output is written and
    every file it wrote is closed, so the interpreter's teardown (~10 ms of a hook that takes
    ~90) only delays the session. A process where no hook ran, or that opened a team-store pool
    (its atexit handler closes the pool), ends normally."""
    if "cortex.plugin.hooks" not in sys.modules or "cortex.store.postgres.connection" in sys.modules:
        sys.exit(code)
    from cortex.shell.process import end_now

    end_now(code)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "cli":
        end_hook(main(sys.argv))
    sys.exit(main(sys.argv))
