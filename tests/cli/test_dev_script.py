"""`scripts/dev.sh` sets the venv up once and reuses it: `demo` and `test` alternate without a
reinstall; `test` installs the pinned Claude Code CLI once, and stops when npm is missing. pip,
npm, the venv's Python and `cortex` are stand-ins that record how they were called."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash")
# The interpreter dev.sh is given: `-m venv DIR` makes a venv of stand-ins, the rest is real Python.
FAKE_PYTHON = f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    for name in pip python cortex; do
        printf '#!/bin/sh\\necho "%s $*" >> "$DEV_LOG"\\n' "$name" > "$3/bin/$name"
        chmod +x "$3/bin/$name"
    done
    echo "venv $3" >> "$DEV_LOG"
    exit 0
fi
exec {sys.executable} "$@"
"""
# npm: records the call and installs a `claude` that reports the version it was asked for.
FAKE_NPM = """#!/bin/sh
echo "npm $*" >> "$DEV_LOG"
prefix="$3"
for last; do :; done
version="${last##*@}"
mkdir -p "$prefix/node_modules/.bin"
printf '#!/bin/sh\\necho "%s (Claude Code)"\\n' "$version" > "$prefix/node_modules/.bin/claude"
chmod +x "$prefix/node_modules/.bin/claude"
"""
PIN = (REPO / "tests" / "support" / "claude_cli.py").read_text(encoding="utf-8")
CLAUDE_VERSION = next(line.split('"')[1] for line in PIN.splitlines() if line.startswith("CLAUDE_VERSION = "))
NPM_INSTALL = (
    "npm install --prefix .cache/npm --no-audit --no-fund --loglevel=error "
    f"@anthropic-ai/claude-code@{CLAUDE_VERSION}"
)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "dev.sh", root / "scripts" / "dev.sh")
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "tests" / "support").mkdir(parents=True)
    shutil.copy2(REPO / "tests" / "support" / "claude_cli.py", root / "tests" / "support" / "claude_cli.py")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "npm").write_text(FAKE_NPM, encoding="utf-8")
    (tools / "npm").chmod(0o755)
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON, encoding="utf-8")
    python.chmod(0o755)
    return root


def run_dev(root: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    log = root.parent / "calls.log"
    log.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PATH": path or str(root.parent / "tools") + os.pathsep + os.environ.get("PATH", ""),
        "PYTHON": str(root.parent / "python3"),
        "CORTEX_VENV": str(root.parent / "venv"),
        "DEV_LOG": str(log),
    }
    assert BASH is not None
    return subprocess.run(
        [BASH, str(root / "scripts" / "dev.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def dev(root: Path, *args: str) -> list[str]:
    """Run `scripts/dev.sh ARGS` in the copy; the calls the stand-ins saw."""
    done = run_dev(root, *args)
    assert done.returncode == 0, done.stderr
    log = root.parent / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


@pytest.mark.skipif(BASH is None, reason="no bash here")
def test_demo_and_test_alternate_without_reinstalling(checkout: Path) -> None:
    venv = checkout.parent / "venv"
    first = dev(checkout, "demo")  # a fresh clone: venv, cortex[local] (no torch)
    assert first[0] == f"venv {venv}"
    assert [c for c in first if c.startswith("pip")] == [
        "pip install --quiet --disable-pip-version-check -e .[local]",
    ]
    assert first[-1] == "cortex demo"
    more = dev(checkout, "test", "-q")  # only what `all` adds: no new venv; torch for the parity tests
    assert more == [
        "pip install --quiet --disable-pip-version-check torch==2.13.0",
        "pip install --quiet --disable-pip-version-check -e .[all]",
        NPM_INSTALL,
        "python -m pytest -q",
    ]
    assert dev(checkout, "demo") == ["cortex demo"]  # all covers local
    assert dev(checkout, "test") == ["python -m pytest"]
    with (checkout / "pyproject.toml").open("a", encoding="utf-8") as fh:
        fh.write("\n# changed\n")
    changed = dev(checkout, "demo")  # a new pyproject.toml is installed again, into the same venv
    assert "pip install --quiet --disable-pip-version-check -e .[local]" in changed
    assert not [c for c in changed if c.startswith("venv")]


@pytest.mark.skipif(BASH is None, reason="no bash here")
def test_a_fresh_clone_running_the_tests_sets_everything_up(checkout: Path) -> None:
    calls = dev(checkout, "test")
    assert calls == [
        f"venv {checkout.parent / 'venv'}",
        "pip install --quiet --disable-pip-version-check torch==2.13.0",
        "pip install --quiet --disable-pip-version-check -e .[all]",
        NPM_INSTALL,
        "python -m pytest",
    ]
    assert dev(checkout, "demo") == ["cortex demo"]
    assert dev(checkout, "test") == ["python -m pytest"]  # the pinned CLI is there: no second install


@pytest.mark.skipif(BASH is None, reason="no bash here")
def test_the_tests_refuse_to_start_without_npm_instead_of_skipping_the_cli_tests(
    checkout: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare-path"  # the tools dev.sh needs, and no npm
    bare.mkdir()
    for tool in ("dirname", "cat", "sed", "cut", "mkdir", "chmod", "printf"):
        found = shutil.which(tool)
        if found:
            (bare / tool).symlink_to(found)
    done = run_dev(checkout, "test", path=str(bare))
    assert done.returncode == 1
    assert "npm is not installed" in done.stderr and f"claude-code@{CLAUDE_VERSION}" in done.stderr
    log = checkout.parent / "calls.log"
    assert "python -m pytest" not in (log.read_text(encoding="utf-8") if log.exists() else "")
