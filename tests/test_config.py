"""Settings: defaults < global config < project config < CORTEX_* variables, with clear errors."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from cortex.config import (
    CHOICES,
    SETTING_NAMES,
    EmbedderName,
    Settings,
    line_of,
    load_settings,
    load_settings_with_sources,
)
from cortex.errors import ConfigError
from cortex.paths import Paths, cortex_home, find_project_root, resolve_paths


def paths_for(project: Path, home: Path) -> Paths:
    return Paths(project, home)


def write_config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_files_or_env(project: Path, cortex_home: Path) -> None:
    settings = load_settings(paths_for(project, cortex_home), env={})
    assert settings == Settings()
    assert settings.recall_limit == 8 and settings.briefing_budget_tokens == 1500
    assert settings.briefing_max_chars < 10_000  # Claude Code inlines hook output below 10,000


def test_project_file_beats_global_file_and_env_beats_both(project: Path, cortex_home: Path) -> None:
    paths = paths_for(project, cortex_home)
    write_config(cortex_home, "recall_limit = 3\nrecall_budget_tokens = 900\nembedder = 'none'\n")
    write_config(paths.store_dir, "[cortex]\nrecall_limit = 5\n")
    settings = load_settings(paths, env={"CORTEX_RECALL_BUDGET_TOKENS": "1200", "UNRELATED": "x"})
    assert settings.recall_limit == 5  # project file over global file
    assert settings.recall_budget_tokens == 1200  # env over both
    assert settings.embedder == "none"  # global file over default


def test_an_unknown_key_is_refused_with_its_file_line_and_the_nearest_setting(
    project: Path, cortex_home: Path
) -> None:
    path = write_config(cortex_home, "recall_limit = 4\n\nembeder = 'none'\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert f"{path}:3: unknown setting `embeder`; did you mean `embedder`?" in err.value.message
    assert "`embedder`" in err.value.fix


def test_an_unknown_key_in_the_cortex_table_of_the_project_file_names_its_line(
    project: Path, cortex_home: Path
) -> None:
    paths = paths_for(project, cortex_home)
    text = "# recall_limt = 1\n[cortex]\nrecall_limit = 5\n\nrecall_limt = 2\n"
    path = write_config(paths.store_dir, text)
    with pytest.raises(ConfigError) as err:
        load_settings(paths, env={})
    assert f"{path}:5: unknown setting `recall_limt`; did you mean `recall_limit`?" in err.value.message


def test_a_key_far_from_any_setting_is_refused_without_a_guess(project: Path, cortex_home: Path) -> None:
    path = write_config(cortex_home, "some_plugin_option = 'x'\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert f"{path}:1: unknown setting `some_plugin_option`" in err.value.message
    assert "did you mean" not in err.value.message and "remove it" in err.value.fix


def test_a_setting_outside_the_cortex_table_is_refused(project: Path, cortex_home: Path) -> None:
    path = write_config(cortex_home, "recall_limit = 3\n\n[cortex]\nembedder = 'none'\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert f"{path}:1: `recall_limit` is outside the [cortex] table" in err.value.message


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("embedder = 'nonee'", "embedder = 'nonee' is not one of local, voyage, none; did you mean 'none'?"),
        ("reranker = 'flashrnk'", "is not one of auto, flashrank, none; did you mean 'flashrank'?"),
        ("log_level = 'verbose'", "log_level = 'VERBOSE' is not one of DEBUG, INFO"),
        ("recall_mmr_lambda = 1.5", "is above its maximum 1.0"),
        ("recall_intent_weights = 'sometimes'", "not a valid bool"),
        ("embedder = ['local']", "not a valid str"),
    ],
)
def test_every_enumerated_or_bounded_value_is_checked_naming_file_and_line(
    project: Path, cortex_home: Path, line: str, says: str
) -> None:
    path = write_config(cortex_home, f"[cortex]\n{line}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert err.value.message.startswith(f"{path}:2: ") and says in err.value.message
    assert err.value.fix


def test_each_value_says_where_it_came_from(project: Path, cortex_home: Path) -> None:
    paths = paths_for(project, cortex_home)
    home_file = write_config(cortex_home, "recall_limit = 3\nembedder = 'None'\n")
    project_file = write_config(paths.store_dir, "[cortex]\n\nrecall_limit = 5\n")
    env = {"CORTEX_LOG_LEVEL": "debug", "CORTEX_RECALL_INTENT_WEIGHTS": "on"}
    settings, sources = load_settings_with_sources(paths, env)
    assert settings.recall_limit == 5 and sources["recall_limit"] == f"{project_file}:3"
    assert settings.embedder is EmbedderName.NONE and sources["embedder"] == f"{home_file}:2"
    assert settings.log_level == "DEBUG" and sources["log_level"] == "CORTEX_LOG_LEVEL"
    assert settings.recall_intent_weights is True
    assert sources["briefing_budget_tokens"] == "default" and set(sources) == set(SETTING_NAMES)


def test_variables_that_are_not_settings_are_left_alone(project: Path, cortex_home: Path) -> None:
    env = {"CORTEX_HOME": str(cortex_home), "CORTEX_PYTHON": "/usr/bin/python3", "CORTEX_DEBUG": "1"}
    assert load_settings(paths_for(project, cortex_home), env=env) == Settings()


def test_line_of_finds_keys_under_their_table() -> None:
    text = '[a]\nx = 1\n[cortex] # mine\n"x" = 2\n[b.c]\ncortex.y = 3\n[embedder]\n'
    assert line_of(text, "x", "cortex") == 4 and line_of(text, "x", "a") == 2
    assert line_of(text, "y", "cortex") == 6  # a dotted key: found by its last part
    assert line_of(text, "embedder", None) == 7 and line_of(text, "zzz", None) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("yes", True), ("ON", True), ("true", True), ("0", False), ("off", False), ("", False)],
)
def test_boolean_env_values(project: Path, cortex_home: Path, raw: str, expected: bool) -> None:
    settings = load_settings(paths_for(project, cortex_home), env={"CORTEX_BRIEFING_FILE": raw})
    assert settings.briefing_file is expected


@pytest.mark.parametrize(
    ("var", "raw", "expected"),
    [
        ("CORTEX_RECALL_LIMIT", " 12 ", 12),
        ("CORTEX_RECALL_MMR_LAMBDA", "0.5", 0.5),
        ("CORTEX_LOG_LEVEL", "debug", "DEBUG"),
        ("CORTEX_RERANKER", "None", "none"),
        ("CORTEX_MODEL_PATH", "/models/minilm", "/models/minilm"),
    ],
)
def test_env_values_are_coerced(
    project: Path, cortex_home: Path, var: str, raw: str, expected: object
) -> None:
    settings = load_settings(paths_for(project, cortex_home), env={var: raw})
    field = var.removeprefix("CORTEX_").lower()
    assert getattr(settings, field) == expected


@pytest.mark.parametrize(
    ("var", "raw", "says"),
    [
        ("CORTEX_RECALL_LIMIT", "many", "not a valid int"),
        ("CORTEX_RECALL_LIMIT", "2.5", "not a valid int"),
        ("CORTEX_RECALL_LIMIT", "0", "below its minimum"),
        ("CORTEX_BRIEFING_FILE", "maybe", "not a valid bool"),
        ("CORTEX_RECALL_MMR_LAMBDA", "lots", "not a valid float"),
        ("CORTEX_LOG_LEVEL", "chatty", "not one of"),
        ("CORTEX_RERANKER", "gpt", "not one of"),
    ],
)
def test_bad_env_values_name_the_variable_and_the_fix(
    project: Path, cortex_home: Path, var: str, raw: str, says: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={var: raw})
    assert var in err.value.message and says in err.value.message
    assert err.value.fix


def test_bad_file_values_name_the_file(project: Path, cortex_home: Path) -> None:
    path = write_config(cortex_home, "recall_limit = true\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert str(path) in err.value.message


def test_team_settings_come_from_a_file_or_the_environment(project: Path, cortex_home: Path) -> None:
    paths = paths_for(project, cortex_home)
    write_config(paths.store_dir, "team_share_types = ['decision', 'gotcha']\n")
    settings = load_settings(paths, env={"CORTEX_TEAM_DSN": "postgresql://cortex@db.internal/cortex"})
    assert settings.team_dsn == "postgresql://cortex@db.internal/cortex"
    assert settings.team_share_types == "decision,gotcha" and settings.team_connect_ms == 300
    assert load_settings(paths, env={"CORTEX_TEAM_SHARE_TYPES": "pattern"}).team_share_types == "pattern"


@pytest.mark.parametrize("listed", ["['decision', 'progress']", "'decision,preference'"])
def test_types_that_are_never_shared_cannot_be_listed(project: Path, cortex_home: Path, listed: str) -> None:
    path = write_config(cortex_home, f"team_share_types = {listed}\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert str(path) in err.value.message and "never shared" in err.value.message


def test_whole_float_is_a_valid_int_in_toml(project: Path, cortex_home: Path) -> None:
    write_config(cortex_home, "recall_limit = 6.0\n")
    assert load_settings(paths_for(project, cortex_home), env={}).recall_limit == 6


def test_broken_toml_is_a_config_error_naming_the_file(project: Path, cortex_home: Path) -> None:
    path = write_config(cortex_home, "recall_limit = = 3\n")
    with pytest.raises(ConfigError) as err:
        load_settings(paths_for(project, cortex_home), env={})
    assert str(path) in err.value.message and "TOML" in err.value.fix


def test_rank_weights_are_normalised_and_ignore_negatives() -> None:
    weights = Settings(
        rank_weight_confidence=2, rank_weight_priority=1, rank_weight_centrality=1, rank_weight_access=-5
    ).rank_weights()
    assert weights == pytest.approx((0.5, 0.25, 0.25, 0.0))
    assert sum(Settings().rank_weights()) == pytest.approx(1.0)
    zero = Settings(
        rank_weight_confidence=0, rank_weight_priority=0, rank_weight_centrality=0, rank_weight_access=0
    )
    assert zero.rank_weights() == (0.0, 0.0, 0.0, 0.0)


def test_every_choice_default_is_allowed() -> None:
    for name, allowed in CHOICES.items():
        assert getattr(Settings(), name) in allowed


# -- paths -----------------------------------------------------------------------------------------


def test_project_root_is_the_git_top_level(project: Path) -> None:
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    assert find_project_root(nested) == project.resolve()


def test_project_root_without_git_is_the_directory_itself(tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    assert find_project_root(folder) == folder.resolve()


def test_cortex_home_comes_from_the_environment(tmp_path: Path) -> None:
    assert cortex_home({"CORTEX_HOME": str(tmp_path)}) == tmp_path
    assert cortex_home({}) == Path.home() / ".claude" / "memory"


def test_store_locations_follow_the_spec(project: Path, cortex_home: Path) -> None:
    paths = resolve_paths(project)
    assert paths.project_db == project.resolve() / ".memory" / "cortex.db"
    assert paths.global_db == cortex_home / "cortex-global.db"
    assert paths.rules_file == project.resolve() / ".claude" / "rules" / "cortex-memory.md"


@pytest.mark.parametrize("event", ["UserPromptSubmit", "SessionStart"])
def test_a_bad_config_never_breaks_a_hook(project: Path, cortex_home: Path, event: str) -> None:
    from cortex.plugin import hooks

    write_config(project / ".memory", "user_prompt_submit = true\nembeder = 'none'\n")
    payload = {"session_id": "s1", "cwd": str(project), "prompt": "how do we lock", "source": "startup"}
    out = io.StringIO()
    env = {"CORTEX_HOME": str(cortex_home), "PATH": os.environ.get("PATH", "")}
    stdin = io.BytesIO(json.dumps(payload).encode())
    assert hooks.main(event, stdin=stdin, stdout=out, env=env) == 0
    text = out.getvalue()
    assert not text or isinstance(json.loads(text), dict)  # nothing, or the hook's one JSON answer
    if event == "UserPromptSubmit":  # the one hook that reads settings: it logs why it did nothing
        assert text == ""
        assert "unknown setting `embeder`" in (project / ".memory" / "cortex.log").read_text()
