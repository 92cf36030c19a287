"""`cortex doctor` names the active extractor, embedder and reranker, and why the others are not.

The offline runs hide the hosted and rerank extras from a fresh interpreter (a `None` entry in
sys.modules makes both `import x` and `find_spec(x)` say "not installed"), so they show what a
user without those extras sees, on this machine where they happen to be installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.admin.backend_checks import backend_checks
from cortex.admin.doctor import doctor
from cortex.app import Cortex
from cortex.config import Settings
from cortex.paths import resolve_paths

REPO = Path(__file__).resolve().parents[2]
EXTRAS = ("anthropic", "voyageai", "flashrank")
RUN_WITHOUT_EXTRAS = (
    "import sys\n"
    "for name in {extras!r}: sys.modules[name] = None\n"
    "sys.argv = ['cortex', *sys.argv[1:]]\n"
    "from cortex.cli.main import main\n"
    "main()\n"
)


def doctor_json(project: Path, env: dict[str, str], *, hide_extras: bool) -> dict[str, dict[str, str]]:
    code = RUN_WITHOUT_EXTRAS.format(extras=EXTRAS if hide_extras else ())
    done = subprocess.run(
        [sys.executable, "-c", code, "-C", str(project), "doctor", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)}


def test_no_keys_no_extras_reports_the_offline_configuration(project: Path) -> None:
    checks = doctor_json(project, {}, hide_extras=True)
    assert checks["backends"]["detail"].startswith("extractor heuristic, embedder local, reranker none")
    assert "offline: nothing leaves this machine" in checks["backends"]["detail"]
    assert checks["extractor"]["state"] == "ok"
    assert "ANTHROPIC_API_KEY is not set" in checks["extractor"]["detail"]
    assert checks["hosted embedder"]["state"] == "ok" and "not used" in checks["hosted embedder"]["detail"]
    assert checks["reranker"]["state"] == "ok"
    assert "flashrank is not installed" in checks["reranker"]["detail"]
    assert "cortex-memory[rerank]" in checks["reranker"]["fix"]
    assert all(c["state"] != "fail" for c in checks.values())


def test_keys_without_the_extras_say_what_to_install(project: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "VOYAGE_API_KEY": "pa-x", "CORTEX_EMBEDDER": "voyage"}
    checks = doctor_json(project, env, hide_extras=True)
    assert checks["extractor"]["state"] == "warn"
    assert "anthropic package is not installed" in checks["extractor"]["detail"]
    assert "cortex-memory[hosted]" in checks["extractor"]["fix"]
    assert checks["hosted embedder"]["state"] == "warn"
    assert "voyageai package is not installed" in checks["hosted embedder"]["detail"]
    assert "embedder local" in checks["backends"]["detail"]


def test_an_explicit_flashrank_choice_without_a_model_warns(project: Path) -> None:
    pytest.importorskip("flashrank", reason="the rerank extra (flashrank) is not installed")
    checks = doctor_json(project, {"CORTEX_RERANKER": "flashrank"}, hide_extras=False)
    assert checks["reranker"]["state"] == "warn"
    assert "no cached model" in checks["reranker"]["detail"]
    assert "--fetch-reranker" in checks["reranker"]["fix"]


def test_with_keys_and_extras_the_hosted_backends_are_active(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("anthropic", reason="the hosted extra is not installed")
    pytest.importorskip("voyageai", reason="the hosted extra is not installed")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-x")
    cx = Cortex(resolve_paths(project), Settings(embedder="voyage"))
    try:
        checks = {c.name: c for c in backend_checks(cx)}
        assert set(checks) <= {c.name for c in doctor(cx)}
    finally:
        cx.close()
    assert checks["extractor"].detail.startswith("LLM layer on: claude-haiku-5-5 via the Anthropic API")
    assert "$0.0000 of $0.15 today" in checks["extractor"].detail
    assert "voyage-3.5-lite-1024" in checks["hosted embedder"].detail
    assert checks["backends"].detail.startswith("extractor llm + heuristic, embedder voyage")
    assert "offline" not in checks["backends"].detail
