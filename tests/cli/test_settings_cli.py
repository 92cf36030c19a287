"""Settings at the command line: a config mistake is a clear error (never for a hook), `doctor`
shows every setting with where it came from, and `recall_intent_weights` reaches recall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cortex.cli.main import cli

QUEUE = "We chose Postgres advisory locks for the job queue because Redis locks expired"


def run(project: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], env=env, input=stdin, catch_exceptions=False)


def config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "says", "fix"),
    [
        ("recall_limit = 4\nembeder = 'none'\n", ":2: unknown setting `embeder`; did you mean `embedder`?",
         "rename it to `embedder`"),
        ("[cortex]\nembedder = 'nonee'\n", ":2: embedder = 'nonee' is not one of local, voyage, none",
         "set `embedder` to one of local, voyage, none"),
    ],
)  # fmt: skip
def test_a_config_mistake_stops_every_command_with_the_line_and_the_fix(
    project: Path, cortex_home: Path, text: str, says: str, fix: str
) -> None:
    path = config(cortex_home, text)
    for args in (["status"], ["recall", "locks"], ["remember", QUEUE]):
        result = run(project, *args)
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(f"cortex: error: {path}{says}")
        assert f"  fix: {fix}" in result.stderr and "internal error" not in result.stderr
    assert not (project / ".memory").exists()  # nothing was stored with the wrong settings


def test_the_hook_command_runs_whatever_the_config_says(project: Path, cortex_home: Path) -> None:
    config(cortex_home, "recall_limit = 0\n")  # a value every command refuses
    payload = json.dumps({"session_id": "s", "cwd": str(project), "source": "startup"})
    result = run(project, "hook", "SessionStart", stdin=payload)
    assert result.exit_code == 0 and result.stderr == ""


def test_doctor_lists_every_setting_with_its_source(project: Path, cortex_home: Path) -> None:
    path = config(project / ".memory", "# mine\n[cortex]\nembedder = 'none'\n")
    env = {"CORTEX_RECALL_LIMIT": "5"}
    text = run(project, "doctor", env=env)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert "[ok  ] settings: 2 of" in text.stdout and "(recall_limit, embedder)" in text.stdout
    assert any(line.split() == ["recall_limit", "=", "5", "CORTEX_RECALL_LIMIT"] for line in lines)
    assert any(line.split() == ["embedder", "=", '"none"', f"{path}:3"] for line in lines)
    assert any(line.split() == ["briefing_budget_tokens", "=", "1500", "default"] for line in lines)
    assert any(line.split() == ["recall_intent_weights", "=", "false", "default"] for line in lines)
    checks = {c["name"]: c for c in json.loads(run(project, "doctor", "--json", env=env).stdout)}
    rows = {r["name"]: r for r in checks["settings"]["settings"]}
    assert rows["recall_limit"] == {"name": "recall_limit", "value": 5, "source": "CORTEX_RECALL_LIMIT"}
    assert rows["embedder"] == {"name": "embedder", "value": "none", "source": f"{path}:3"}
    assert rows["log_level"]["source"] == "default" and "settings" not in checks["python"]


def recall_intent(project: Path, env: dict[str, str]) -> str:
    result = run(project, "recall", "why", "did", "we", "choose", "advisory", "locks", "--json", env=env)
    assert result.exit_code == 0, result.output
    intent: str = json.loads(result.stdout)["intent"]
    return intent


def test_intent_weights_are_a_setting(project: Path, cortex_home: Path) -> None:
    assert run(project, "remember", QUEUE, "--type", "decision").exit_code == 0
    assert recall_intent(project, {}) == "plain"  # off by default
    assert recall_intent(project, {"CORTEX_RECALL_INTENT_WEIGHTS": "true"}) == "causal"
    config(cortex_home, "recall_intent_weights = true\n")
    assert recall_intent(project, {}) == "causal"
