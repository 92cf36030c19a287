"""`cortex status | head -2`: a reader that goes away ends any command quietly, with exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.cli.main import cli

REPO = Path(__file__).resolve().parents[2]


def into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m cortex ARGS` with stdout a pipe whose reader has already closed it."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before cortex writes its first byte
    try:
        return subprocess.run(
            [sys.executable, "-m", "cortex", *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none"},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.fixture
def stored(project: Path) -> Path:
    result = CliRunner().invoke(cli, ["-C", str(project), "remember", "We use WAL mode for the store"])
    assert result.exit_code == 0, result.output
    return project


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "--json"],
        ["recall", "WAL", "mode"],
        ["export"],
        ["doctor"],
        ["recall", "--help"],
        ["--help"],
        ["--version"],
    ],
)
def test_every_kind_of_output_survives_a_closed_stdout(stored: Path, args: list[str]) -> None:
    done = into_closed_pipe("-C", str(stored), *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "internal error: BrokenPipeError", no traceback


def test_a_reader_that_stops_after_the_first_line(stored: Path) -> None:
    # What `cortex export | head -1` does: read a little, then close.
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex", "-C", str(stored), "export"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert b"header" in proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0 and err == b""
