"""`cortex init` and `cortex upgrade`: set a project up, and bring its stores up to date.

`init` is idempotent: it creates the project store (migrated to the current schema), builds
the local embedding model's ONNX file from its weights when the local embedder is installed,
keeps the rules file out of git through the clone's exclude file, and looks for the Claude
Code plugin; a second run changes nothing and says that each step was already done.

`upgrade` takes a checkpoint of every store whose schema is older than this cortex's, then
migrates it, and reports each store's schema before and after with the checkpoint's path.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.backends import choose
from cortex.backends.model_locate import ModelLocation
from cortex.config import EmbedderName
from cortex.core.model import Scope
from cortex.errors import CortexError
from cortex.paths import RULES_FILE
from cortex.shell import git
from cortex.shell.briefing_files import ensure_git_exclude
from cortex.shell.claude_home import claude_dir, read_plugin_record
from cortex.store import open as stores

PLUGIN_FIX = (
    "in Claude Code: `/plugin marketplace add <path or git URL of cortex>`, then "
    "`/plugin install cortex@cortex-marketplace` (or `claude --plugin-dir <path>` for one session)"
)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of `cortex init`: done now, already done, skipped, or failed (with the fix)."""

    name: str
    state: str  # created | present | skipped | missing | failed
    detail: str
    fix: str = ""


@dataclass(frozen=True, slots=True)
class InitReport:
    """What `cortex init` did, step by step."""

    project: str
    steps: tuple[Step, ...]

    @property
    def ok(self) -> bool:
        return all(s.state != "failed" for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form (its keys are a public interface: keep them)."""
        return {"project": self.project, "ok": self.ok, "steps": [asdict(s) for s in self.steps]}


def init(cx: Cortex, env: Mapping[str, str], *, model_only: bool = False) -> InitReport:
    """Set the project up; every step is safe to repeat. `model_only`: the model step alone."""
    if model_only:
        return InitReport(str(cx.paths.root), (_model_step(cx),))
    steps = (_store_step(cx), _model_step(cx), _exclude_step(cx), _plugin_step(env))
    return InitReport(str(cx.paths.root), steps)


def _store_step(cx: Cortex) -> Step:
    path = cx.paths.project_db
    existed = path.exists()
    try:
        cx.write_store(Scope.PROJECT)
        schema = stores.inspect_file(path).schema
    except CortexError as exc:
        return Step("store", "failed", exc.message, exc.fix)
    return Step("store", "present" if existed else "created", f"{path} (schema {schema})")


def prepare_model(cx: Cortex) -> Step:
    """Fetch the local model's files and build its ONNX model when missing (init's model step)."""
    return _model_step(cx)


def _model_step(cx: Cortex) -> Step:
    name, why_not_voyage = choose.planned_embedder(cx.settings)
    if name is EmbedderName.NONE:
        return Step("model", "skipped", "embedder = none: recall is keyword-only")
    if name is EmbedderName.VOYAGE:
        return Step("model", "skipped", "embedder = voyage: no local model to export")
    ready = choose.query_embedder_is_cheap(cx.settings, cx.paths)
    try:
        from cortex.backends.model_locate import resolve_model
        from cortex.backends.onnx_export import ensure_onnx_export

        configured = choose.local_model_path(cx.settings)
        location = resolve_model(configured, home=cx.paths.home)
        fetched = ""
        if location.origin == "hub" and location_is_missing(location):
            from cortex.backends.model_fetch import fetch_model

            fetch_model(cx.paths.home, progress=say)
            location = resolve_model(configured, home=cx.paths.home)
            fetched = "model files fetched; "
        target = ensure_onnx_export(location, cx.paths.home, progress=say)
    except CortexError as exc:
        note = f" ({why_not_voyage})" if why_not_voyage else ""
        return Step("model", "missing", f"no local embedding model{note}: {exc.message}", exc.fix)
    return Step("model", "present" if ready else "created", f"{fetched}ONNX model at {target}")


def location_is_missing(location: ModelLocation) -> bool:
    """True when the hub name is all there is (no local snapshot of it): a fetch is needed."""
    from cortex.backends.model_locate import read_hub_snapshot

    return read_hub_snapshot(location.path_or_name) is None


def say(message: str) -> None:
    """Progress of the one-time model preparation, on stderr (stdout may carry --json)."""
    print(f"cortex init: {message}", file=sys.stderr, flush=True)


def _exclude_step(cx: Cortex) -> Step:
    root = cx.paths.root
    common, top = git.read_repo_dirs(root)
    if common is None or top is None:
        return Step("rules-file exclusion", "skipped", f"{root} is not a git repository: nothing to keep out")
    try:
        entry = "/" + (root / RULES_FILE).resolve().relative_to(top.resolve()).as_posix()
        added = ensure_git_exclude(common, entry)
    except (OSError, ValueError) as exc:
        return Step(
            "rules-file exclusion",
            "failed",
            f"cannot write {common / 'info' / 'exclude'}: {exc}",
            "make the repository's .git folder writable",
        )
    where = common / "info" / "exclude"
    return Step("rules-file exclusion", "created" if added else "present", f"{entry} in {where}")


def _plugin_step(env: Mapping[str, str]) -> Step:
    if env.get("CLAUDE_PLUGIN_ROOT"):
        return Step("plugin", "present", f"running inside the plugin at {env['CLAUDE_PLUGIN_ROOT']}")
    record = read_plugin_record(claude_dir(env))
    if record.installed:
        return Step("plugin", "present", f"{', '.join(record.installed)} in {record.record}")
    found = "lists no cortex plugin" if record.readable else "is absent"
    return Step("plugin", "missing", f"Claude Code's plugin record {record.record} {found}", PLUGIN_FIX)


# -- upgrade ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoreUpgrade:
    """One store's upgrade: schema before and after, and the checkpoint taken first."""

    scope: str
    path: str
    before: int | None  # None: no store there
    after: int | None
    checkpoint: str | None = None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True, slots=True)
class UpgradeReport:
    """What `cortex upgrade` did to each store."""

    latest: int | None  # the schema this cortex writes (None: no store to look at)
    stores: tuple[StoreUpgrade, ...]

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form (its keys are a public interface: keep them)."""
        return {
            "latest": self.latest,
            "changed": any(s.changed for s in self.stores),
            "stores": [asdict(s) | {"changed": s.changed} for s in self.stores],
        }


def upgrade(cx: Cortex) -> UpgradeReport:
    """Checkpoint, then migrate, every store older than this cortex; newer or foreign files raise."""
    run = uuid.uuid4().hex[:12]
    done: list[StoreUpgrade] = []
    latest: int | None = None
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        path = cx.store_path(scope)
        if not path.exists():
            done.append(StoreUpgrade(scope.value, str(path), None, None))
            continue
        check = stores.inspect_file(path)  # refuses a newer or foreign file without writing
        latest = check.latest
        if check.schema >= check.latest:
            done.append(StoreUpgrade(scope.value, str(path), check.schema, check.schema))
            continue
        saved = _checkpoint(cx, scope, path, run) if check.schema > 0 else None
        cx.write_store(scope)  # opening migrates, one transaction per step
        after = stores.inspect_file(path).schema
        done.append(StoreUpgrade(scope.value, str(path), check.schema, after, saved))
    return UpgradeReport(latest, tuple(done))


def _checkpoint(cx: Cortex, scope: Scope, path: Path, run: str) -> str:
    return str(stores.checkpoint_file(scope, path, reason="before-upgrade", run=run, at=cx.now()).path)
