"""Helpers for the stress tests: child processes, store checks, and the concurrent actors.

`python -m tests.support.stress ACTOR ...` runs one actor of the concurrency test in its own
process; every acknowledged write and every failure goes to a JSON-lines file for the test.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.support.runtime import REPO, assistant_record, line, stop_payload, user_record

SYLLABLES = ("ka", "zo", "ri", "mu", "te", "vax", "qel", "dor", "pim", "sug", "yor", "fen", "blo", "tri")


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a cortex child process: this checkout, an isolated home, no model."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CORTEX_HOME": str(home),
        "CORTEX_EMBEDDER": "none",
        **extra,
    }


def cortex_cli(
    project: Path, *args: str, env: Mapping[str, str], timeout_s: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """`python -m cortex -C PROJECT ARGS` in a new process."""
    return subprocess.run(
        [sys.executable, "-m", "cortex", "-C", str(project), *args],
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout_s,
        check=False,
    )


def nonce_word(rng: random.Random) -> str:
    """A made-up word: texts built from these share no vocabulary (no gate merges them)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(4))


def nonce_text(rng: random.Random, words: int = 7) -> str:
    return "Decision: " + " ".join(nonce_word(rng) for _ in range(words)) + "."


def _read(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of a query on a store file, read-only when SQLite allows it.

    Right after a writer was SIGKILLed, the WAL index may need rebuilding, which a read-only
    connection cannot do ("attempt to write a readonly database"); the next opener, cortex's
    included, does it on opening, so a writable connection stands in for that one case.
    """
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise
    finally:
        conn.close()
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def integrity(db: Path) -> list[str]:
    """`PRAGMA integrity_check` rows of a store file (['ok'] when healthy)."""
    return [r[0] for r in _read(db, "PRAGMA integrity_check")]


def query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return _read(db, sql, params)


def journal_gaps(db: Path) -> list[int]:
    """Journal sequence numbers missing between 1 and the last one."""
    seqs = [r[0] for r in query(db, "SELECT seq FROM journal ORDER BY seq")]
    return sorted(set(range(1, (seqs[-1] if seqs else 0) + 1)) - set(seqs))


def read_records(folder: Path) -> list[dict[str, Any]]:
    """Every record the actors wrote."""
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        out += [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw]
    return out


# -- actors (each runs in its own process) ----------------------------------------------------
class Recorder:
    def __init__(self, path: Path, actor: str) -> None:
        self.fh = path.open("a", encoding="utf-8")
        self.actor = actor

    def write(self, **record: Any) -> None:
        self.fh.write(json.dumps({"actor": self.actor, **record}) + "\n")
        self.fh.flush()  # an acknowledged write must be on record even if the actor dies


def _cli_loop(
    project: Path, rec: Recorder, deadline: float, make_args: Any, pause_s: float, min_ops: int
) -> None:
    from click.testing import CliRunner

    from cortex.cli.main import cli

    n = 0
    while time.monotonic() < deadline or n < min_ops:  # a count floor: load never shrinks the run
        args = make_args(n)
        result = CliRunner().invoke(cli, ["-C", str(project), *args])
        ok = result.exit_code == 0 and result.exception is None
        record: dict[str, Any] = {"cmd": args[0], "ok": ok}
        if not ok or "locked" in result.output.lower():
            record["output"] = result.output[-2000:] + repr(result.exception)
        if ok and args[0] == "remember":
            memory = json.loads(result.stdout)["memory"]
            record.update(id=memory["id"], text=args[1], action=json.loads(result.stdout)["action"])
        rec.write(**record)
        n += 1
        time.sleep(pause_s)


def _session_loop(
    project: Path, rec: Recorder, deadline: float, session: str, rng: random.Random, min_ops: int
) -> None:
    from cortex.plugin import hooks

    transcript = project.parent / "transcripts" / f"{session}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    turn = 0
    while time.monotonic() < deadline or turn < min_ops:
        tag = f"{nonce_word(rng)} {nonce_word(rng)} {nonce_word(rng)} {nonce_word(rng)}"
        text = f"[MEMORY: gotcha] The {tag} step fails unless {nonce_word(rng)} runs first."
        records = [
            user_record(f"turn {turn}: go on", uuid=f"{session}-u{turn}", sessionId=session),
            assistant_record(
                f"msg_{session}_{turn}",
                {"type": "text", "text": text},
                uuid=f"{session}-a{turn}",
                sessionId=session,
            ),
        ]
        with transcript.open("ab") as fh:
            fh.write(b"".join(line(r) for r in records))
        out = io.StringIO()
        payload = json.dumps(stop_payload(project, transcript, session)).encode("utf-8")
        code = hooks.main("Stop", io.BytesIO(payload), out)
        rec.write(cmd="Stop", ok=code == 0 and out.getvalue() == "", tag=tag, session=session)
        turn += 1
        time.sleep(rng.uniform(0.05, 0.4))
    hooks.wait_for_workers(120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("actor", choices=["session", "remember", "recall", "lifecycle", "consolidate"])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="")
    parser.add_argument("--min-ops", type=int, default=1, help="run at least this many operations")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    name = args.name or args.actor
    rec = Recorder(args.out / f"{name}.jsonl", name)
    deadline = time.monotonic() + args.seconds
    if args.actor == "session":
        _session_loop(args.project, rec, deadline, name, rng, args.min_ops)
        return 0
    make_args = {
        "remember": lambda n: ["remember", nonce_text(rng), "--json"],
        "recall": lambda n: ["recall", nonce_word(rng) + " decision step", "--json"],
        "lifecycle": lambda n: ["lifecycle", "--json"] if n % 2 else ["rebuild", "--verify"],
        "consolidate": lambda n: ["consolidate", "--yes", "--json"],
    }[args.actor]
    pause = {"remember": 0.02, "recall": 0.05, "lifecycle": 0.3, "consolidate": 0.5}[args.actor]
    _cli_loop(args.project, rec, deadline, make_args, pause, args.min_ops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
