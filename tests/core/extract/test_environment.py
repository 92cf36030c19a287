"""What this machine lacks: a program or Python module a command could not find, kept only
while nothing later in the turn finds or installs it. Output shapes are the real ones: zsh's
`(eval):1: command not found: X` (Claude Code on macOS), bash's `/bin/bash: line 1: X: command
not found`, dash's `sh: 1: X: not found`, cmd.exe, PowerShell and Python's ModuleNotFoundError."""

from __future__ import annotations

import pytest

from cortex.core.extract.environment import missing_tools, settles, tools_settled
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.model import MemoryType
from tests.support.transcript_builders import assistant, bash, user


def notes(*runs: tuple[str, str]) -> list[str]:
    turn = [user("check the workflows", offset=0)]
    turn += [assistant(uses=(bash(c, out, tid=f"t{i}"),), offset=i + 1) for i, (c, out) in enumerate(runs)]
    return [c.content for c, _ in missing_tools(turn)]


@pytest.mark.parametrize(
    ("command", "output", "name"),
    [
        (
            'actionlint .github/workflows/*.yml 2>&1 || echo "actionlint not installed"',
            "(eval):1: command not found: actionlint\nactionlint not installed",
            "actionlint",
        ),
        ("python /workspace/number_generator.py", "/bin/bash: line 1: python: command not found", "python"),
        ("shellcheck deploy.sh", "sh: 1: shellcheck: not found", "shellcheck"),
        ("cargo --version", "'cargo' is not recognized as an internal or external command,", "cargo"),
        # A `timeout N` wrapper runs the program itself: GNU timeout reports it (curly quotes).
        (
            "timeout 60 actionlint .github/workflows/ci.yml",
            "timeout: failed to run command \u2018actionlint\u2019: No such file or directory",
            "actionlint",
        ),
        (
            "timeout -k 5 30s shellcheck deploy.sh",
            "/bin/bash: line 1: shellcheck: command not found",
            "shellcheck",
        ),
        (
            "env FOO=1 golangci-lint run",
            "env: \u2018golangci-lint\u2019: No such file or directory",
            "golangci-lint",
        ),
        (
            "terraform plan",
            "terraform : The term 'terraform' is not recognized as the name of a cmdlet",
            "terraform",
        ),
    ],
)
def test_a_program_the_shell_could_not_find_is_a_gotcha(command: str, output: str, name: str) -> None:
    found = notes((command, output))
    assert len(found) == 1
    assert found[0].startswith(f"Program `{name}` is not installed here (or not on PATH): `")
    assert "2>&1" not in found[0]  # the step as people would retype it


def test_a_python_module_the_command_imports_is_named_with_its_error() -> None:
    command = "for f in *.yml; do python3 -c \"import yaml; yaml.safe_load(open('$f'))\" && echo ok; done"
    output = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'yaml'"
    assert notes((command, output)) == [
        "Python module `yaml` is not installed here: "
        "`python3 -c \"import yaml; yaml.safe_load(open('$f'))\"` "
        "gave ModuleNotFoundError: No module named 'yaml'"
    ]


@pytest.mark.parametrize(
    ("command", "output"),
    [
        # The project's packages are not installed yet: `vitest` runs under `npm test`.
        (
            "npm test test/config/deal-defaults.test.ts",
            "> vitest test/config\n\nsh: vitest: command not found",
        ),
        # A variable zsh took for a command: not a program.
        ("CONVEX_VERBOSE=1; npx convex dev", "(eval):1: command not found: CONVEX_VERBOSE=1"),
        # The project's own module, run from the wrong directory: the command does not import it.
        ("uvicorn llm_guard_api.app.app:create_app", "ModuleNotFoundError: No module named 'llm_guard_api'"),
        # A program the command line does not run.
        ("make lint", "make: golangci-lint: command not found"),
        # A module missing in a container is not missing here.
        ('docker compose exec api python -c "import redis"', "ModuleNotFoundError: No module named 'redis'"),
    ],
)
def test_what_the_command_line_does_not_run_itself_is_not_the_machines(command: str, output: str) -> None:
    assert notes((command, output)) == []


@pytest.mark.parametrize(
    "command",
    [
        'poetry run python -c "import httpx"',
        "uv run python -m httpx --help",
        '.venv/bin/python -c "import httpx"',
        'source .venv/bin/activate && python -c "import httpx"',
    ],
)
def test_a_module_missing_under_the_projects_virtualenv_is_the_environments(command: str) -> None:
    # The machine may well have it: the project's environment does not.
    found = notes((command, "ModuleNotFoundError: No module named 'httpx'"))
    assert len(found) == 1
    assert found[0].startswith("Python module `httpx` is not installed in the project's environment: `")
    # `poetry add httpx` (or `uv add`) settles it like any install.
    settled = notes(
        (command, "ModuleNotFoundError: No module named 'httpx'"),
        ("poetry add httpx", "Installing httpx (0.28.1)"),
    )
    assert settled == []


def test_a_later_run_that_finds_the_program_settles_it() -> None:
    # b4's shape: cargo and rustc missing, Rust installed from Homebrew, cargo run by full path.
    missing = (
        "=== cargo ===\n(eval):1: command not found: cargo\n=== rustc ===\n(eval):1: command not found: rustc"
    )
    probe = 'echo "=== cargo ===" && cargo --version 2>&1; echo "=== rustc ===" && rustc --version 2>&1'
    assert len(notes((probe, missing))) == 2
    install = "brew install rust 2>&1 | tail -25; /opt/homebrew/bin/cargo --version; rustc --version"
    assert notes((probe, missing), (install, "cargo 1.96.0\nrustc 1.96.0")) == []


def test_an_install_that_names_the_package_settles_it_and_a_failed_one_does_not() -> None:
    missing = ('python3 -c "import yaml"', "ModuleNotFoundError: No module named 'yaml'")
    assert notes(missing, ("pip install pyyaml", "Successfully installed PyYAML-6.0.2")) == []
    failed = ("pip install pyyaml", "ERROR: Could not find a version that satisfies the requirement")
    turn = [user("x", offset=0), assistant(uses=(bash(*missing, tid="a"),), offset=1)]
    turn.append(assistant(uses=(bash(*failed, error=True, tid="b"),), offset=2))
    assert [c.content.split(":")[0] for c, _ in missing_tools(turn)] == [
        "Python module `yaml` is not installed here"
    ]


def test_missing_again_after_a_run_is_the_last_word() -> None:
    found = notes(("jq . a.json", "{}"), ("jq . b.json", "bash: jq: command not found"))
    assert len(found) == 1 and found[0].startswith("Program `jq`")


def test_a_command_that_reports_a_missing_tool_finds_nothing_else() -> None:
    # `cargo build && ./target/release/app`: the step after the missing one never ran.
    turn = [
        user("build it", offset=0),
        assistant(
            uses=(bash("cargo build && ./target/release/app", "zsh: command not found: cargo"),), offset=1
        ),
    ]
    assert tools_settled(turn) == frozenset()


def test_what_a_turn_ran_or_installed_settles_an_earlier_note() -> None:
    turn = [
        user("install it", offset=0),
        assistant(
            uses=(bash("pip install 'pyyaml>=6'", "Successfully installed PyYAML-6.0.2", tid="a"),), offset=1
        ),
        assistant(uses=(bash("actionlint -version", "1.7.1", tid="b"),), offset=2),
    ]
    settled = tools_settled(turn)
    assert settles(settled, "yaml") and settles(settled, "actionlint")
    assert not settles(settled, "cargo") and not settles(settled, "go")  # a short name matches whole
    # Installs said other ways: through `python -m pip`, and a package named after its program.
    for install, name in (
        ("python3 -m pip install --user pyyaml", "yaml"),
        ("cargo install sqlx-cli --no-default-features --features sqlite", "sqlx"),
        ("sudo apt-get install -y shellcheck", "shellcheck"),
        ("go install github.com/rhysd/actionlint/cmd/actionlint@latest", "actionlint"),
    ):
        turn = [user("install it", offset=0), assistant(uses=(bash(install, "done", tid="a"),), offset=1)]
        assert settles(tools_settled(turn), name), install
    # Staging a file installs nothing: `git add flake.nix` does not bring `nix`.
    turn = [user("stage it", offset=0), assistant(uses=(bash("git add flake.nix", "", tid="a"),), offset=1)]
    assert not settles(tools_settled(turn), "nix")


def test_the_pipeline_stores_it_as_a_gotcha_with_its_tools_state() -> None:
    turn = [
        user("lint the workflows", offset=0),
        assistant(uses=(bash("actionlint", "(eval):1: command not found: actionlint"),), offset=1),
        assistant("actionlint is not installed, so I checked the YAML syntax by hand instead.", offset=2),
    ]
    found = [c for c in extract_candidates(turn, project_root=None, git=None) if "actionlint" in c.content]
    tool_notes = [c for c in found if c.content.startswith("Program `actionlint`")]
    assert len(tool_notes) == 1
    assert tool_notes[0].type is MemoryType.GOTCHA and "state:tool:actionlint" in tool_notes[0].tags
