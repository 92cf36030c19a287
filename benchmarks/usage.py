"""Use feedback on real sessions: brief a session's second half with what its first half left.

For each session under ../shared/benchmarks/sessions/ (dataset.py): a throwaway git project;
the transcript's first half (up to the Stop before the middle prompt) is captured through the
Stop/SessionEnd hooks and the worker, in this process; the briefing is rendered; then the
second half runs as a new session: SessionStart (which records what it briefed), a Stop after
every turn and SessionEnd, each followed by the worker, which judges use after each turn. The
verdict journaled for the second session says which briefed memories it used, ignored or
contradicted. A sample of judgements, with the terms that decided them, goes to a JSONL file
for a hand check (`usage.sample.json`).

    python -m benchmarks.usage [--sessions DIR] [--only NAME] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.capture.dataset import SESSIONS_DIR, Session, list_sessions, read_records
from benchmarks.capture.transcript import main_session_id, path_rewriter, plan_cuts, rewrite_strings

SAMPLE_PER_SESSION = 4  # judgements per session written for the hand check
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@cortex.invalid", "-c", "commit.gpgsign=false"]


def _git_project(root: Path, branch: str | None) -> None:
    root.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q", "-b", branch or "main"], cwd=root, check=True)
    (root / "README.md").write_text("# replay\n", encoding="utf-8")
    subprocess.run([*GIT, "add", "README.md"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "replay"], cwd=root, check=True)


def _hook(event: str, payload: dict[str, Any], project: Path) -> None:
    from cortex.plugin import hooks
    from cortex.shell.files import file_lock

    raw = io.BytesIO(json.dumps(payload).encode("utf-8"))
    if event == "SessionStart":
        hooks.main(event, raw, io.StringIO())
        return
    with file_lock(project / ".memory" / "worker.lock", blocking=False):  # queue only: no spawn
        hooks.main(event, raw, io.StringIO())


def _run_half(
    project: Path, transcript: Path, records: list[dict[str, Any]], sid: str, *, start_hook: bool
) -> None:
    from cortex.plugin import worker

    base = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)}
    if start_hook:
        _hook("SessionStart", {**base, "source": "startup", "hook_event_name": "SessionStart"}, project)
    with transcript.open("wb"):
        pass
    written = 0
    for cut in plan_cuts(records):
        with transcript.open("ab") as fh:
            for r in records[written : cut.end]:
                fh.write(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n")
        written = cut.end
        _hook(cut.event, {**base, **dict(cut.extra), "hook_event_name": cut.event}, project)
        worker.run(project, lag_wait_s=0.0)


def _split(records: list[dict[str, Any]]) -> int:
    stops = [c.end for c in plan_cuts(records) if c.event == "Stop"]
    return stops[max(0, len(stops) // 2 - 1)] if len(stops) > 1 else len(records) // 2


def replay_session(session: Session, work: Path, rng: random.Random) -> dict[str, Any]:
    """Capture the first half, brief and replay the second; the verdict and a sample."""
    from cortex.app import Cortex
    from cortex.briefing.deliver import refresh_briefing
    from cortex.core.lifecycle.usage import terms_of
    from cortex.core.model import Scope
    from cortex.lifecycle.usage import OP, distinct_of, turn_text
    from cortex.shell.transcript_io import Cursor, read_new_records

    project = work / session.name / "project"
    _git_project(project, session.branch)
    records = rewrite_strings(
        read_records(session.transcript), path_rewriter(session.original_cwd, str(project))
    )
    cut = _split(records)
    first, second = records[:cut], records[cut:]
    sid = main_session_id(records)
    t0 = time.process_time()
    _run_half(project, work / session.name / "first.jsonl", first, sid, start_hook=False)
    with Cortex.for_cwd(project) as cx:
        refresh_briefing(cx, cwd=project)
    branch = next((str(r["gitBranch"]) for r in reversed(first) if r.get("gitBranch")), "")
    if branch and branch not in ("HEAD", session.branch or "main"):  # where the first half ended
        subprocess.run([*GIT, "checkout", "-q", "-B", branch], cwd=project, check=True)
        with Cortex.for_cwd(project) as cx:
            refresh_briefing(cx, cwd=project)
    second_sid = f"{sid}-second-half"
    second_path = work / session.name / "second.jsonl"
    _run_half(project, second_path, second, second_sid, start_hook=True)
    cpu = time.process_time() - t0
    with Cortex.for_cwd(project) as cx:
        store = cx.write_store(Scope.PROJECT)
        verdicts = [r["payload"] for r in store.journal_rows() if r["op"] == OP]
        mine = next((v for v in verdicts if v["session"] == second_sid), None)
        stored = store.counts()["status"].get("active", 0)
        briefed = sorted(mine["briefed"]) if mine else []
        mems = store.get_many(briefed)
        found = {mid: (store, m) for mid, m in mems.items()}
        distinct = distinct_of(found, terms_of(cx.project_name))
        read = read_new_records(second_path, Cursor(), include_sidechains=False, hold_unanswered=False)
        said = turn_text(read.chunk.messages)
    spoken = terms_of(said.assistant)
    judged = []
    for mid in briefed:
        verdict = (
            "used"
            if mid in mine["used"]
            else "contradicted"
            if mid in mine["contradicted"]
            else "unused"
            if mid in mine["unused"]
            else "not judged"
        )
        m = mems.get(mid)
        judged.append(
            {
                "session": session.name,
                "id": mid,
                "verdict": verdict,
                "type": m.type.value if m else "?",
                "memory": (m.content[:300] if m else ""),
                "distinctive": sorted(distinct.get(mid, ())),
                "hits": sorted(t for t in distinct.get(mid, ()) if t in spoken),
            }
        )
    used = [j for j in judged if j["verdict"] == "used"]
    unused = [j for j in judged if j["verdict"] != "used"]
    sample = rng.sample(used, min(len(used), SAMPLE_PER_SESSION // 2))
    sample += rng.sample(unused, min(len(unused), SAMPLE_PER_SESSION - len(sample)))
    return {
        "session": session.name,
        "records": [len(first), len(second)],
        "stored_after_first_half": stored,
        "turns_second_half": mine["turns"] if mine else 0,
        "briefed": len(briefed),
        "used": len(mine["used"]) if mine else 0,
        "briefed_used": len(set(mine["used"]) & set(briefed)) if mine else 0,
        "unused": len(mine["unused"]) if mine else 0,
        "contradicted": len(mine["contradicted"]) if mine else 0,
        "recalled": len(mine["recalled"]) if mine else 0,
        "cpu_s": round(cpu, 2),
        "judgements": judged,
        "sample": sample,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.usage", description=__doc__)
    parser.add_argument("--sessions", type=Path, default=SESSIONS_DIR)
    parser.add_argument("--only")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--all-judgements", type=Path, help="also write every judgement to this JSONL file")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cortex-usage-") as tmp:
        work = Path(tmp)
        os.environ.update(
            {
                "CORTEX_HOME": str(work / "home"),
                "CORTEX_EMBEDDER": "none",
                "CORTEX_LLM_EXTRACTION": "false",
                "CORTEX_USER_PROMPT_SUBMIT": "false",
            }
        )
        for session in list_sessions(args.sessions.resolve(), args.only):
            print(f"{session.name} ...", file=sys.stderr, flush=True)
            rows.append(replay_session(session, work, rng))
    args.out.mkdir(parents=True, exist_ok=True)
    sample = [j for row in rows for j in row["sample"]]
    (args.out / "usage.sample.json").write_text(
        json.dumps(sample, ensure_ascii=False, indent=1) + "\n", "utf-8"
    )
    if args.all_judgements:
        with args.all_judgements.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(j, ensure_ascii=False) + "\n" for r in rows for j in r["judgements"])
    summary = [{k: v for k, v in r.items() if k not in ("judgements", "sample")} for r in rows]
    (args.out / "usage.summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    for r in summary:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
