"""Settings: defaults < global config < project config < CORTEX_* variables, with clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex.config import CHOICES, Settings, load_settings
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


def test_unknown_keys_are_kept_as_extra(project: Path, cortex_home: Path) -> None:
    write_config(cortex_home, "recall_limit = 4\nsome_plugin_option = 'x'\n")
    settings = load_settings(paths_for(project, cortex_home), env={})
    assert settings.extra == {"some_plugin_option": "x"}


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
