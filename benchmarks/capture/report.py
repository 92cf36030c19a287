"""The markdown report: headline against the issue's targets, per session, per fact kind, and
the baseline's numbers side by side when a baseline summary is given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.capture.score import TARGETS

HEADLINE = (
    ("captured", "captured"),
    ("recalled@3", "recalled@3"),
    ("briefed", "briefed"),
    ("wrong", "wrong (memories)"),
    ("wrong_stale", "  of which assert a stale claim"),
    ("wrong_verdict", "  of which contradict a final test/build state"),
    ("file-list share", "file-list share of the briefing"),
    ("precision", "precision proxy"),
    ("memories_per_session", "memories per session"),
)
SESSION_COLUMNS = (
    ("memories", "memories"),
    ("captured", "captured"),
    ("recalled@3", "recalled@3"),
    ("briefed", "briefed"),
    ("wrong", "wrong"),
    ("precision", "precision"),
    ("file-list share", "file-list"),
)
KIND_COLUMNS = (
    ("captured", "captured"),
    ("recalled@3", "recalled@3"),
    ("briefed", "briefed"),
    ("stale_memories", "stale-claim memories"),
)
SHARES = {"captured", "recalled@3", "briefed", "precision", "file-list share"}


def fmt(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if key in SHARES:
        return f"{value:.2f}" if key != "file-list share" else f"{100 * value:.0f}%"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def target_text(key: str) -> str:
    if key not in TARGETS:
        return ""
    op, value = TARGETS[key]
    shown = f"{100 * value:.0f}%" if key == "file-list share" else (f"{value:.2f}" if value else "0")
    return f"{'≥' if op == '>=' else '≤' if op == '<=' else '='} {shown}"


def met(key: str, value: Any) -> str:
    if key not in TARGETS or value is None:
        return ""
    op, target = TARGETS[key]
    ok = value >= target if op == ">=" else value <= target if op == "<=" else value == target
    return "yes" if ok else "no"


def _pair(key: str, base: Mapping[str, Any] | None, cur: Mapping[str, Any], paired: bool) -> str:
    now = fmt(key, cur.get(key))
    return f"{fmt(key, (base or {}).get(key))} / {now}" if paired else now


def render(run: Mapping[str, Any], baseline: Mapping[str, Any] | None, definitions: str) -> str:
    meta, summary = run["meta"], run["summary"]
    base_summary = baseline["summary"] if baseline else None
    cur_label = meta["code"]
    base_label = baseline["meta"]["code"] if baseline else None
    overall = summary["overall"]
    lines = [
        "# Capture quality on real Claude Code sessions",
        "",
        f"`python -m benchmarks.capture`, run {meta['date']} on {meta['machine']}.",
        "",
        f"- Code under test: {cur_label}; its `cortex` package was imported from `{meta['code_path']}`"
        f" and its worker logged as {', '.join(f'`{n}`' for n in meta['worker_loggers']) or 'nothing'}.",
    ]
    if baseline:
        bm = baseline["meta"]
        lines.append(
            f"- Baseline: {base_label} through the same harness (run {bm['date']}, {bm['minutes']:.1f} min; "
            f"`cortex` from `{bm['code_path']}`, worker logged as "
            f"{', '.join(f'`{n}`' for n in bm['worker_loggers']) or 'nothing'})."
        )
    if meta.get("only"):
        lines.append(f"- Partial run: only the session `{meta['only']}`.")
    if meta.get("reused"):
        lines.append(
            "- Stores of an earlier replay, not replayed again (`--reuse`): only the briefing was "
            "rendered anew, by the code under test; the run time below has no replay in it."
        )
    lines += [
        f"- Dataset: {overall['sessions']} sessions, {overall['facts']} facts "
        f"({overall['briefed_facts']} of a briefed kind), read from `{meta['sessions_label']}` "
        "(not copied here).",
        f"- Run time: {meta['minutes']:.1f} min for the code under test (replay, briefing and "
        f"{overall['facts']} recalls); embedder: {meta['embedder']}.",
        "",
        "## Headline",
        "",
    ]
    head = ["metric", "target"] + ([base_label] if baseline else []) + [cur_label, "met"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label in HEADLINE:
        row = [label.replace("  ", "&nbsp;&nbsp;"), target_text(key)]
        if base_summary:
            row.append(fmt(key, base_summary["overall"].get(key)))
        row += [fmt(key, overall.get(key)), met(key, overall.get(key))]
        lines.append("| " + " | ".join(row) + " |")
    pair_note = f" Cells read `{base_label} / {cur_label}`." if baseline else ""
    lines += ["", "## Per session", "", f"Facts per session in brackets.{pair_note}", ""]
    head = ["session"] + [label for _, label in SESSION_COLUMNS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in summary["per_session"].items():
        base_row = base_summary["per_session"].get(name) if base_summary else None
        cells = [f"{name} ({row['facts']})"] + [
            _pair(k, base_row, row, baseline is not None) for k, _ in SESSION_COLUMNS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    kinds_note = "Briefed counts decision, convention, gotcha and architecture facts only."
    lines += ["", "## Per fact kind", "", f"{kinds_note}{pair_note}", ""]
    head = ["kind", "facts"] + [label for _, label in KIND_COLUMNS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind, row in summary["per_kind"].items():
        base_row = base_summary["per_kind"].get(kind) if base_summary else None
        cells = [kind, str(row["facts"])] + [
            _pair(k, base_row, row, baseline is not None) for k, _ in KIND_COLUMNS
        ]
        lines.append("| " + " | ".join(cells) + " |")
    problems = meta.get("problems") or []
    if baseline and baseline["meta"].get("problems"):
        problems = problems + [f"baseline: {p}" for p in baseline["meta"]["problems"]]
    if problems:
        lines += ["", "## Problems seen during the run", ""] + [f"- {p}" for p in problems]
    lines += ["", definitions.strip(), ""]
    return "\n".join(lines)
