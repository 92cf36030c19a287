"""CLI commands for the Claude Code side: `cortex hook <event>` and `cortex demo`."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

HOOK_EVENTS = ("SessionStart", "Stop", "PreCompact", "SessionEnd", "UserPromptSubmit")


def _fresh_dir() -> Path:
    """A new private directory under the temp dir. Digits, not mkdtemp's random letters: the
    secret redactor would take a random-looking path part for a key and hide the paths."""
    base = Path(tempfile.gettempdir())
    for attempt in range(100):
        path = base / f"cortex-demo-{os.getpid()}-{int(time.time())}-{attempt}"
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
    raise click.ClickException(f"cannot create a fresh directory under {base}")


@click.command("hook")
@click.argument("event")
def hook(event: str) -> None:
    """Run a Claude Code hook (its JSON input on stdin).

    This is what the plugin's hooks run. EVENT is one of SessionStart, Stop, PreCompact,
    SessionEnd, UserPromptSubmit (any case, dashes allowed). It prints only the hook's JSON
    answer, or nothing, and exits 0 even on bad input: errors go to .memory/cortex.log.
    """
    from cortex.plugin.hooks import main

    sys.exit(main(event))


def _prepare_model(where: Path, env: dict[str, str]) -> None:
    """The model the demo's worker embeds with, prepared once in the user's CORTEX_HOME."""
    from cortex.admin.setup import prepare_model
    from cortex.app import Cortex
    from cortex.config import load_settings
    from cortex.paths import Paths
    from cortex.plugin.demo import user_cortex_home

    paths = Paths(where, user_cortex_home(env))
    with Cortex(paths, load_settings(paths, env)) as cx:
        step = prepare_model(cx)
    if step.state in ("missing", "failed"):
        click.echo(f"note: recall will be keyword-only ({step.detail}); fix: {step.fix}", err=True)


@click.command("demo")
@click.option(
    "--keyword-only",
    is_flag=True,
    help="Run without the embedding model (what cortex does when none is installed).",
)
@click.option(
    "--dir",
    "base",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the throwaway project here (default: a new temporary directory).",
)
@click.option("--keep", is_flag=True, help="Keep the throwaway project and print where it is.")
def demo(keyword_only: bool, base: Path | None, keep: bool) -> None:
    """Replay a sample session through the hooks.

    The Claude Code session shipped with cortex is fed turn by turn to the real Stop hook,
    which queues it for the detached worker. Once the worker is done, the demo prints what the
    next session would get (the SessionStart context and the rules file), runs a recall, and
    checks that the fake API key pasted in the session was redacted everywhere. Nothing outside
    its temporary directory is written, except the local embedding model, prepared once in
    CORTEX_HOME/models as `cortex init` does.
    """
    from cortex.plugin.demo import default_env, demo_home, render_result, run_demo, user_cortex_home

    env = default_env()
    if keyword_only:
        env["CORTEX_EMBEDDER"] = "none"
    owned = base is None
    where = _fresh_dir() if base is None else base
    where.mkdir(parents=True, exist_ok=True)
    try:
        if not keyword_only:
            _prepare_model(where, env)
        home = demo_home(where, user_cortex_home(env))
        result = run_demo(where, home, env)
        click.echo(render_result(result))
    finally:
        if owned and not keep:
            shutil.rmtree(where, ignore_errors=True)
    if keep or not owned:
        click.echo(f"\nthe demo project is kept in {where}")
    if not result.redacted:
        sys.exit(1)
