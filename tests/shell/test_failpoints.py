"""The failpoints: parsing `CORTEX_FAILPOINT`, dying by SIGKILL at the N-th hit, the registry of
points kept in step with the call sites, and every point reached by some kill test."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.shell import failpoints
from tests.lifecycle.test_upkeep import MID_MERGE
from tests.plugin.test_worker_kill import WORKER_POINTS
from tests.stress.test_crash import CONSOLIDATION_POINTS, MIGRATION_POINTS, ROLLBACK_POINTS
from tests.support.crash import failpoints_of
from tests.support.runtime import REPO

HOOK_PATH = (
    "cortex.plugin.hooks",
    "cortex.capture.queue",
    "cortex.briefing.session_start",
    "cortex.recall.prompt_lookup",
)


class Crashed(Exception):
    """Stands in for the SIGKILL in the in-process tests."""


def call_sites() -> list[tuple[str, ast.expr]]:
    """(file:line, argument) of every `failpoint(...)` call in the package."""
    out = []
    for path in sorted((REPO / "cortex").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "failpoint":
                (arg,) = node.args
                out.append((f"{path.relative_to(REPO)}:{node.lineno}", arg))
    return out


@pytest.mark.parametrize(
    ("spec", "armed"),
    [
        ("", {}),
        ("store.before_commit", {"store.before_commit": 1}),
        ("store.before_commit:3", {"store.before_commit": 3}),
        (
            " worker.after_briefing , store.after_commit:2 ,",
            {"worker.after_briefing": 1, "store.after_commit": 2},
        ),
        ("a:0,b:x,c:", {"c": 1}),  # a count below 1 or not a number arms nothing
    ],
)
def test_parse(spec: str, armed: dict[str, int]) -> None:
    assert failpoints.parse(spec) == armed


def test_unarmed_points_do_nothing() -> None:
    assert failpoints._ARMED == {}  # the test process itself runs without failpoints
    for name in failpoints.POINTS:
        failpoints.failpoint(name)


def test_a_point_crashes_at_its_nth_hit_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash() -> None:
        raise Crashed

    monkeypatch.setattr(failpoints, "_ARMED", {"store.before_commit": 3})
    monkeypatch.setattr(failpoints, "_HITS", {})
    monkeypatch.setattr(failpoints, "crash", crash)
    failpoints.failpoint("store.after_commit")  # not armed
    failpoints.failpoint("store.before_commit")
    failpoints.failpoint("store.before_commit")
    with pytest.raises(Crashed):
        failpoints.failpoint("store.before_commit")
    failpoints.failpoint("store.before_commit")  # past its hit: a rerun in one process goes on


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="no SIGKILL on this platform")
def test_the_crash_is_a_real_sigkill_with_no_cleanup(tmp_path: Path) -> None:
    marker = tmp_path / "cleanup-ran"
    code = (
        "import atexit, sys\n"
        "from pathlib import Path\n"
        "from cortex.shell.failpoints import failpoint\n"
        f"atexit.register(Path({str(marker)!r}).touch)\n"
        "failpoint('store.before_commit'); print('first', flush=True)\n"
        "try:\n"
        "    failpoint('store.before_commit'); print('second', flush=True)\n"
        "finally:\n"
        f"    Path({str(marker)!r}).touch()\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        failpoints.ENV: "worker.after_briefing, store.before_commit:2",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout == "first\n"
    assert not marker.exists()  # neither `finally` nor atexit ran


def test_every_call_site_names_a_registered_point_once() -> None:
    sites = call_sites()
    literal = [a.value for _, a in sites if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    assert len(literal) == len(sites), [where for where, a in sites if not isinstance(a, ast.Constant)]
    unknown = sorted(set(literal) - failpoints.POINTS)
    assert not unknown, f"failpoints missing from POINTS: {unknown}"
    assert set(literal) == failpoints.POINTS, (
        f"registered but never placed: {failpoints.POINTS - set(literal)}"
    )
    # One place per name, except the same step in each storage adapter (store/<adapter>/).
    places: dict[str, list[str]] = {}
    for where, arg in sites:
        parts = Path(where.split(":")[0]).parts
        adapter = parts[2] if parts[:2] == ("cortex", "store") and len(parts) > 3 else ""
        places.setdefault(str(getattr(arg, "value", "")), []).append(adapter)
    repeated = [
        n
        for n, adapters in places.items()
        if len(adapters) != len(set(adapters)) or ("" in adapters and len(adapters) > 1)
    ]
    assert repeated == []


def test_the_core_and_the_hook_path_never_reach_the_failpoints() -> None:
    core = [where for where, _ in call_sites() if where.startswith("cortex/core/")]
    assert core == []
    code = f"import json, sys\nimport {', '.join(HOOK_PATH)}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "cortex.shell.failpoints" not in json.loads(proc.stdout.splitlines()[-1])


def test_every_point_is_exercised_by_a_kill_test() -> None:
    """Each kill test asserts its child died by SIGKILL at the point it armed: together they
    reach every registered point."""
    scenarios = [
        *WORKER_POINTS,
        *(spec for spec, _ in CONSOLIDATION_POINTS),
        *ROLLBACK_POINTS,
        *(spec for _, spec, _ in MIGRATION_POINTS),
        MID_MERGE,
    ]
    exercised = failpoints_of(scenarios)
    assert exercised <= failpoints.POINTS, sorted(exercised - failpoints.POINTS)
    assert exercised >= failpoints.POINTS, f"never exercised: {sorted(failpoints.POINTS - exercised)}"
