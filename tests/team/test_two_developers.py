"""Two developers, two clones of one repository, one team store (SQLite stand-in and PostgreSQL).

What the first shares reaches the second's recall and next briefing, attributed; progress
notes and private notes never do; a secret planted in a shared note never reaches the server;
unshare, forget and supersede take the note back out of the second's briefing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.briefing.deliver import render_current
from cortex.capture.manual import forget, remember, supersede
from cortex.cli.main import cli
from cortex.core.briefing.compose import BriefingPart
from cortex.core.model import EdgeStatus, EdgeType, MemoryType, Scope
from cortex.core.output.documents import recall_to_dict
from cortex.core.recall.decide import RecallRequest
from cortex.core.team.rules import TEAM_TAG
from cortex.errors import InputError
from cortex.recall.search import recall
from cortex.team.push import push
from cortex.team.share import share, unshare
from tests.support.fakes import FakeEmbedder
from tests.support.postgres import postgres_dsn  # noqa: F401  (fixture)
from tests.support.team import Developer, make_team, server_text, team_store_dsn  # noqa: F401

DECISION = "The job queue uses PostgreSQL advisory locks instead of Redis: one less service to run"
PROGRESS = "Half done with the advisory lock migration of the job queue; the retry path is next"
TOKEN = "ghp_" + "Zq8Lw3Rt6Yp1Xc5Vb9Nm2Ks4Dg7Hj0Fa3Qe"


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


@pytest.fixture
def team(tmp_path: Path, team_store_dsn: str) -> list[Developer]:  # noqa: F811
    return make_team(tmp_path, team_store_dsn)


def briefing(dev: Developer) -> str:
    with dev.cortex() as cx:
        return render_current(cx).parts[BriefingPart.FULL].text


def recalled(dev: Developer, text: str) -> list[tuple[str, str]]:
    with dev.cortex() as cx:
        result = recall(cx, RecallRequest(text=text, limit=8))
        assert result.team == "merged", result.notes
        return [(h.memory.id, h.store.value) for h in result.hits]


def test_a_shared_decision_reaches_the_other_clone_attributed(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex() as cx:
        decision = remember(cx, DECISION, mem_type="decision").memory
        progress = remember(cx, PROGRESS, mem_type="progress").memory
        done = share(cx, decision.id)
        assert done.delivered and done.push.shared == [decision.id]
        with pytest.raises(InputError, match="never shared"):
            share(cx, progress.id)
        assert cx.team().key == bob.cortex().team().key  # a path and a file:// URL meet
    assert (decision.id, "team") in recalled(bob, "job queue advisory locks")
    assert progress.id not in {mid for mid, _ in recalled(bob, "advisory lock migration retry path")}
    text = briefing(bob)
    assert decision.id in text and progress.id not in text
    line = next(x for x in text.splitlines() if decision.id in x)
    assert "team" in line and "by Ada <ada@example.invalid>" in line
    assert "branch" not in line  # a briefing leaves the default branch unsaid
    runner = CliRunner()
    said = runner.invoke(
        cli,
        ["-C", str(bob.root), "recall", "job queue advisory locks"],
        env={**bob.env(), "CORTEX_EMBEDDER": "none"},
    )
    assert said.exit_code == 0, said.output
    assert "team · by Ada <ada@example.invalid> · branch main" in said.output  # recall says it all
    out = runner.invoke(
        cli,
        ["-C", str(bob.root), "recall", "--json", "job queue advisory locks"],
        env={**bob.env(), "CORTEX_EMBEDDER": "none"},
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["team"] == "merged"
    hit = next(h for h in doc["hits"] if h["memory"]["id"] == decision.id)
    assert hit["store"] == "team" and "shared-by:Ada <ada@example.invalid>" in hit["memory"]["tags"]


def test_a_planted_secret_never_reaches_the_team_store(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex() as cx:
        note = remember(
            cx, "Deploys read the GitHub token from the vault, never from the repo", mem_type="gotcha"
        )
        project = cx.write_store(Scope.PROJECT)
        current = project.get(note.memory.id)
        assert current is not None
        planted = current.__class__(
            **{
                **{f: getattr(current, f) for f in current.__dataclass_fields__},
                "content": f"Deploys read the GitHub token {TOKEN} from the vault",
                "summary": f"token {TOKEN}",
                "tags": (f"t-{TOKEN}",),
            }
        )
        with project.transaction():  # an old note, stored before the gate knew this kind of secret
            project.update_memory(current, planted, "test", cx.now(), "update")
        assert share(cx, note.memory.id).delivered
    assert TOKEN not in server_text(ada.dsn)
    assert "[REDACTED:github]" in briefing(bob)


def test_unshare_forget_and_supersede_take_it_out_of_the_other_briefing(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex() as cx:
        one = remember(cx, DECISION, mem_type="decision").memory
        two = remember(
            cx, "Gotcha: the staging database rejects connections without sslmode=require", mem_type="gotcha"
        ).memory
        three = remember(
            cx, "Convention: every migration file name starts with its ticket number", mem_type="pattern"
        ).memory
        for m in (one, two, three):
            share(cx, m.id)
    before = briefing(bob)
    assert all(m.id in before for m in (one, two, three))
    with ada.cortex() as cx:
        assert unshare(cx, one.id).delivered
        forget(cx, [(cx.write_store(Scope.PROJECT), two)])
        newer = remember(
            cx, "Convention: every migration file name starts with its date", mem_type="pattern"
        ).memory
        supersede(cx, newer.id, three.id)
        report = push(cx)
        assert report.done and set(report.withdrawn) == {two.id, three.id}
    after = briefing(bob)
    assert not any(m.id in after for m in (one, two, three))
    with bob.cortex() as cx:
        team_store = cx.team_store()
        assert team_store is not None
        statuses = {m.id: m.status.value for m in team_store.get_many([one.id, two.id, three.id]).values()}
    assert statuses == {one.id: "archived", two.id: "archived", three.id: "superseded"}  # kept, not deleted
    with ada.cortex() as cx:  # sharing again brings it back
        assert share(cx, one.id).delivered
    assert one.id in briefing(bob)


def test_types_the_team_config_lists_are_shared_without_asking(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex(team_share_types="decision,gotcha") as cx:
        decision = remember(cx, DECISION, mem_type="decision").memory
        private = remember(
            cx, "Decision: my local checkout keeps the fixtures in /tmp", mem_type="decision"
        ).memory
        unshare(cx, private.id, push_now=False)
        remember(cx, PROGRESS, mem_type="progress")
        report = push(cx)
        assert report.done and report.shared == [decision.id]
    text = briefing(bob)
    assert decision.id in text and private.id not in text and "Half done" not in text


def test_remember_team_shares_through_the_cli(team: list[Developer]) -> None:
    ada, bob = team
    runner = CliRunner()
    env = {**ada.env(), "CORTEX_EMBEDDER": "none"}
    out = runner.invoke(
        cli, ["-C", str(ada.root), "remember", "--team", "--type", "decision", "--json", DECISION], env=env
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["team"]["delivered"] is True and TEAM_TAG in doc["memory"]["tags"]
    assert doc["memory"]["id"] in briefing(bob)
    doctor = runner.invoke(cli, ["-C", str(ada.root), "doctor", "--json"], env=env)
    checks = {c["name"]: c for c in json.loads(doctor.output)}
    assert checks["team store"]["state"] == "ok" and "namespace" in checks["team store"]["detail"]


def test_opposite_decisions_of_two_developers_become_a_suggestion(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex() as cx:
        ours = remember(cx, "We use Redis for the job queue locks", mem_type="decision").memory
        share(cx, ours.id)
    with bob.cortex() as cx:
        theirs = remember(cx, "We do not use Redis for the job queue locks", mem_type="decision").memory
        report = share(cx, theirs.id).push
        assert report.contradictions == 1
        store = cx.team_store()
        assert store is not None
        edges = store.edges([theirs.id])
        assert [(e.source, e.target, e.type, e.status) for e in edges] == [
            (theirs.id, ours.id, EdgeType.CONTRADICTS, EdgeStatus.SUGGESTED)
        ]
        assert {m.status.value for m in store.get_many([ours.id, theirs.id]).values()} == {"active"}


def test_a_teammates_memory_opens_with_get(team: list[Developer]) -> None:
    ada, bob = team
    with ada.cortex() as cx:
        m = remember(cx, DECISION, mem_type="decision").memory
        share(cx, m.id)
    with bob.cortex() as cx:
        store, found = cx.find(m.id)
        assert store.scope is Scope.TEAM and found.type is MemoryType.DECISION


def test_nothing_changes_without_a_team_store(cx: Cortex) -> None:
    remember(cx, DECISION, mem_type="decision")
    result = recall(cx, RecallRequest(text="job queue locks"))
    assert result.team == "off" and recall_to_dict(result)["team"] == "off"
    assert not any("team" in n for n in result.notes)
    assert push(cx).error == "no team store configured"


def test_shared_vectors_travel_with_the_note(team: list[Developer]) -> None:
    ada, bob = team
    fake = Choice(FakeEmbedder(), "fake")

    def cortex(dev: Developer) -> Cortex:
        cx = dev.cortex()
        return Cortex(cx.paths, cx.settings, query_embedder=fake, bulk_embedder=fake)

    with cortex(ada) as cx:
        m = remember(cx, DECISION, mem_type="decision").memory
        assert share(cx, m.id).delivered
        team_store = cx.team_store()
        assert team_store is not None
        index = team_store.vector_index(fake.backend.key)  # type: ignore[union-attr]
        assert index is not None and m.id in team_store.read_vectors(index.name, [m.id])
    with cortex(bob) as cx:
        result = recall(cx, RecallRequest(text="which service holds the job queue locks"))
        assert result.mode.value == "hybrid" and result.hits[0].memory.id == m.id
