"""Manifest edits: what an edit of package.json, Cargo.toml or pyproject.toml changed, entry by
entry, and which script commands it took out (real edit shapes, shortened)."""

from __future__ import annotations

from cortex.core.extract.manifests import (
    DROPS_PREFIX,
    MANIFEST_TAG,
    extract_manifest_changes,
    kept_edit_fields,
)
from cortex.core.extract.pipeline import redact_messages
from cortex.core.extract.transcript import Message, parse_chunk
from cortex.core.model import MemoryType
from tests.support.transcript_builders import (
    V2_1,
    assistant,
    envelope,
    jsonl,
    prompt_record,
    tool,
    tool_result_record,
    user,
)

PKG = "/home/dev/golf/package.json"
# A Next.js project's scripts as an edit left them, then the edit that took `--bun` out again.
SCRIPTS_BUN = (
    '  "scripts": {\n    "dev": "bun run --parallel dev:frontend dev:backend",\n'
    '    "dev:frontend": "bun --bun next dev",\n    "dev:backend": "npx convex dev",\n'
    '    "build": "bun --bun next build",\n    "lint": "bun --bun next lint"\n  },'
)
SCRIPTS_NODE = SCRIPTS_BUN.replace("bun --bun next", "bun next")


def notes(*uses):
    found = extract_manifest_changes([user("fix the deploy"), assistant(uses=tuple(uses))])
    return [c for c, _ in found]


def edit(path: str, old: str, new: str, *, error: bool = False):
    return tool("Edit", {"file_path": path, "old_string": old, "new_string": new}, error=error)


def test_a_script_edit_says_which_words_each_script_lost_and_which_commands_it_dropped() -> None:
    [note] = notes(edit(PKG, SCRIPTS_BUN, SCRIPTS_NODE))
    assert note.content == "package.json: scripts build, dev:frontend, lint: removed `--bun`"
    assert note.type is MemoryType.DECISION
    assert MANIFEST_TAG in note.tags
    drops = {t[len(DROPS_PREFIX) :] for t in note.tags if t.startswith(DROPS_PREFIX)}
    assert drops == {"bun --bun next dev", "bun --bun next build", "bun --bun next lint"}


def test_a_command_still_in_the_new_text_is_not_dropped() -> None:
    # `next dev` became `bun --bun next dev`: the old command is still there, inside the new one.
    old = '  "scripts": {\n    "dev:frontend": "next dev",\n    "start": "next start"\n  },'
    new = (
        '  "scripts": {\n    "dev:frontend": "bun --bun next dev",\n    "start": "bun --bun next start"\n  },'
    )
    [note] = notes(edit(PKG, old, new))
    assert note.content == "package.json: scripts dev:frontend, start: added `bun --bun`"
    assert not [t for t in note.tags if t.startswith(DROPS_PREFIX)]


def test_dependencies_removed_added_and_pinned() -> None:
    old = '  "devDependencies": {\n    "eslint": "^9",\n    "npm-run-all": "^4.1.5"\n  }\n}'
    new = '  "devDependencies": {\n    "eslint": "^9"\n  },\n  "engines": {\n    "node": ">=18.0.0"\n  }\n}'
    [note] = notes(edit(PKG, old, new))
    assert (
        note.content
        == "package.json: devDependencies: removed `npm-run-all` ^4.1.5; engines: added `node` >=18.0.0"
    )
    cargo = "/home/dev/medianator/Cargo.toml"
    [pin] = notes(edit(cargo, 'ndarray = "0.16"\nort = "2.0"\n', 'ndarray = "0.15"\nort = "1.16"\n'))
    assert pin.content == "Cargo.toml: ndarray: 0.16 -> 0.15; ort: 2.0 -> 1.16"
    toml = "/home/dev/api/pyproject.toml"
    [table] = notes(
        edit(toml, 'fastapi = { version = "0.110" }\n', 'fastapi = { version = "0.115", extras = ["all"] }\n')
    )
    assert table.content == "pyproject.toml: fastapi: 0.110 -> 0.115"


def test_metadata_failed_edits_and_other_files_leave_no_note() -> None:
    meta_old = 'version = "0.2.0"\ndescription = "Hermes Agent assistant styled like Claude Code."\n'
    meta_new = 'version = "0.3.0"\ndescription = "jcode assistant."\n'
    assert notes(edit("/home/dev/pocket/pyproject.toml", meta_old, meta_new)) == []
    assert notes(edit(PKG, SCRIPTS_BUN, SCRIPTS_NODE, error=True)) == []
    assert notes(edit("/home/dev/golf/app/page.tsx", SCRIPTS_BUN, SCRIPTS_NODE)) == []


def test_only_a_manifest_edit_keeps_its_sides_and_they_are_redacted() -> None:
    secret = "sk-ant-api03-" + "x" * 40
    kept = kept_edit_fields({"file_path": PKG, "old_string": "a", "new_string": f'"token": "{secret}"'})
    assert kept["old_string"] == "a"
    assert (
        kept_edit_fields({"file_path": "/home/dev/golf/src/a.ts", "old_string": "a", "new_string": "b"}) == {}
    )
    use = tool("Edit", {"file_path": PKG, "old_string": "a", "new_string": f'"token": "{secret}"'})
    [message] = redact_messages([assistant(uses=(use,))])
    assert secret not in str(message.tool_uses[0].input)
    assert "old_string" in message.tool_uses[0].input


def test_a_makefile_target_is_a_project_command() -> None:
    # Real shape (shortened): the start target now runs a script, the old command moved to a new target.
    makefile = "/home/dev/llm-guard/llm_guard_api/Makefile"
    old = "run-uvicorn:\n\t@uvicorn app.app:create_app --host=0.0.0.0 --port=8000\n"
    new = (
        "run-uvicorn:\n\t@chmod +x startup.sh && ./startup.sh\n\n"
        "run-uvicorn-direct:\n\t@uvicorn app.app:create_app --host=0.0.0.0 --port=8000\n"
    )
    [note] = notes(edit(makefile, old, new))
    assert note.content == (
        "Makefile: added `make run-uvicorn-direct`; make run-uvicorn: removed `uvicorn "
        "app.app:create_app --host=0.0.0.0 --port=8000`, added `chmod +x startup.sh && ./startup.sh`"
    )
    assert not [t for t in note.tags if t.startswith(DROPS_PREFIX)]  # the old command is still there
    [install] = notes(
        edit(
            makefile,
            'install:\n\t@python -m pip install ".[cpu]"',
            'install:\n\t@python -m pip install ".[cpu]" huggingface_hub',
        )
    )
    assert install.content == "Makefile: make install: added `huggingface_hub`"


def test_the_turns_reason_for_a_change_rides_with_the_note() -> None:
    # The 2.1.x report shape of the turn that took `--bun` out: a heading, the reason in prose,
    # the change as a diff, and unrelated sentences naming the same flag without a reason.
    report = (
        "## Issue identified\n\n### Root cause: `--bun` flag\n\n"
        "The `bun --bun` flag forces Bun's runtime instead of Node.js, which produces sourcemaps "
        "that Convex cannot process (500 Internal Server Error).\n\n"
        "**Removed `--bun` flags from package.json:**\n```diff\n"
        '- "build": "bun --bun next build"\n+ "build": "bun next build"\n```\n'
    )
    turn = [
        user("the convex deploy fails with a 500 since the bun migration"),
        assistant("Dropping `--bun` now.", uses=(edit(PKG, SCRIPTS_BUN, SCRIPTS_NODE),)),
        assistant(report),
    ]
    [(note, _)] = extract_manifest_changes(turn)
    assert note.content.startswith("package.json: scripts build, dev:frontend, lint: removed `--bun`. Why: ")
    assert "Convex cannot process" in note.content and "Dropping" not in note.content
    # No sentence gives a reason: the note stays as it was.
    [(plain, _)] = extract_manifest_changes([*turn[:2], assistant("Removed `--bun` from the scripts.")])
    assert plain.content == "package.json: scripts build, dev:frontend, lint: removed `--bun`"


# llm-guard's scanners.yml as the session's edit left it (real shape): the timeouts raised for
# the first model load, with the reason as a comment on each changed line.
SCANNERS = "/home/dev/llm-guard/llm_guard_api/config/scanners.yml"
TIMEOUTS_OLD = (
    "  scan_prompt_timeout: ${SCAN_PROMPT_TIMEOUT:30}\n  scan_output_timeout: ${SCAN_OUTPUT_TIMEOUT:30}\n"
    "  lazy_load: ${LAZY_LOAD:true}"
)
TIMEOUTS_NEW = (
    "  scan_prompt_timeout: ${SCAN_PROMPT_TIMEOUT:120}  # Increased for model loading\n"
    "  scan_output_timeout: ${SCAN_OUTPUT_TIMEOUT:120}  # Increased for model loading\n"
    "  lazy_load: ${LAZY_LOAD:true}  # Models load on first request"
)


def test_a_settings_value_changed_is_a_decision_with_the_comment_as_its_reason() -> None:
    [note] = notes(edit(SCANNERS, TIMEOUTS_OLD, TIMEOUTS_NEW))
    assert note.type is MemoryType.DECISION and MANIFEST_TAG in note.tags
    # The comment put on an unchanged value (lazy_load) is no change.
    assert note.content == (
        "scanners.yml: `scan_prompt_timeout`: ${SCAN_PROMPT_TIMEOUT:30} -> ${SCAN_PROMPT_TIMEOUT:120}; "
        "`scan_output_timeout`: ${SCAN_OUTPUT_TIMEOUT:30} -> ${SCAN_OUTPUT_TIMEOUT:120}. "
        "Why: Increased for model loading"
    )
    assert {t for t in note.tags if t.startswith("entry:")} == {
        "entry:scanners.yml:scan_prompt_timeout",
        "entry:scanners.yml:scan_output_timeout",
    }
    # .env, TOML and a config JSON read the same way; a quoted value is compared unquoted.
    for path, old, new, said in (
        (
            "/app/.env.local",
            "PORT=3000\nexport DEBUG=false",
            "PORT=3001\nexport DEBUG=false",
            "`PORT`: 3000 -> 3001",
        ),
        (
            "/app/config.toml",
            'timeout = "30s"',
            "timeout = '2m' # cold start",
            "`timeout`: 30s -> 2m. Why: cold start",
        ),
        ("/app/tsconfig.json", '    "target": "es5",', '    "target": "ES2020",', "`target`: es5 -> ES2020"),
        # A key set once per job and changed alike in each is one setting.
        (
            "/repo/.github/workflows/ci.yml",
            "  lint:\n    runs-on: ubuntu-20.04\n  test:\n    runs-on: ubuntu-20.04",
            "  lint:\n    runs-on: ubuntu-24.04  # 20.04 runners are retired\n"
            "  test:\n    runs-on: ubuntu-24.04",
            "`runs-on`: ubuntu-20.04 -> ubuntu-24.04. Why: 20.04 runners are retired",
        ),
        # A block replaced by a one-line value (real shape: llm-guard emptied its output scanners).
        (
            "/app/scanners.yml",
            "output_scanners:\n  # Empty - we only care about input prompt injection detection",
            "output_scanners: []  # Empty - we only care about input prompt injection detection",
            "`output_scanners`: now []. Why: Empty - we only care about input prompt injection detection",
        ),
    ):
        [note] = notes(edit(path, old, new))
        assert note.content == f"{path.rsplit('/', 1)[-1]}: {said}"


def test_settings_added_or_set_in_blocks_lists_text_or_data_files_leave_no_note() -> None:
    workflow = "/repo/.github/workflows/ci.yml"
    for path, old, new in (
        # A setting added (a new block of config is the code's business), and one removed.
        (
            workflow,
            "      with:\n        fetch-depth: 0",
            "      with:\n        fetch-depth: 0\n        token: x",
        ),
        (workflow, "        submodules: true\n        lfs: true", "        lfs: true"),
        # A key set per job to different values says nothing alone; list items are no settings
        # of their own.
        (
            workflow,
            "  a:\n    runs-on: ubuntu-22.04\n  b:\n    runs-on: macos-14",
            "  a:\n    runs-on: ubuntu-24.04\n  b:\n    runs-on: macos-15",
        ),
        ("/app/scanners.yml", "  - type: BanCode\n  - type: Anonymize", "  - type: PromptInjection"),
        # Text, metadata, a block opened, and a data file.
        ("/app/config/en.yml", "  greeting: Hello there, friend", "  greeting: Hi there, my old friend"),
        ("/app/config.yml", "name: api\nversion: 1", "name: web\nversion: 2"),
        ("/app/scanners.yml", "output_scanners: []", "output_scanners:\n  - type: Regex"),
        ("/app/messages/en.json", '  "title_key": "a",', '  "title_key": "b",'),
    ):
        assert notes(edit(path, old, new)) == [], (path, new)


def test_a_settings_edit_keeps_its_sides_and_a_secret_set_there_is_no_note() -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6  # the shape of a real key
    # A secret's value is redacted wherever it sits, and under a key named for one whatever the
    # value: what changed is a secret, which is nothing to remember.
    by_value = edit("/app/.env", "BACKEND_URL=http://127.0.0.1:8080", f"BACKEND_URL={secret}")
    by_name = edit("/app/.env", "ANTHROPIC_API_KEY=old", f"ANTHROPIC_API_KEY={secret}")
    port = edit("/app/.env", "PORT=3000", "PORT=3001")
    messages = redact_messages([user("rotate the key"), assistant(uses=(by_value, by_name, port))])
    assert messages[1].tool_uses[0].input["old_string"] == "BACKEND_URL=http://127.0.0.1:8080"
    assert secret not in str(messages)
    assert [c.content for c, _ in extract_manifest_changes(messages)] == [".env: `PORT`: 3000 -> 3001"]


def rewrite_records(path: str, *hunks: list[str], kind: str = "update") -> bytes:
    """A Write over `path` and its result as Claude Code 2.1 records it: the client's patch of
    the old file in `structuredPatch` (one hunk per list of lines)."""
    patch = [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3, "lines": lines} for lines in hunks]
    top = {
        "type": kind,
        "filePath": path,
        "content": "...",
        "structuredPatch": patch if kind == "update" else [],
    }
    use = {"type": "tool_use", "id": "w1", "name": "Write", "input": {"file_path": path, "content": "..."}}
    message = {"id": "msg_w", "type": "message", "role": "assistant", "content": [use]}
    return jsonl(
        [
            prompt_record("update the settings"),
            {**envelope("assistant", "a1", V2_1), "message": message},
            tool_result_record("w1", f"The file {path} has been updated.", is_error=False, top=top),
        ]
    )


def rewritten(path: str, *hunks: list[str], kind: str = "update") -> list[Message]:
    return redact_messages(parse_chunk(rewrite_records(path, *hunks, kind=kind), 0).messages)


def test_a_file_rewritten_with_write_is_read_from_the_clients_patch() -> None:
    lines = [
        ' "dependencies": {',
        '-    "zod": "^3.22.0",',
        '+    "zod": "^3.23.8",',
        '+    "nanoid": "^5.0.7",',
        " },",
    ]
    messages = rewritten(PKG, lines)
    assert [c.content for c, _ in extract_manifest_changes(messages)] == [
        "package.json: dependencies zod: ^3.22.0 -> ^3.23.8; dependencies: added `nanoid` ^5.0.7"
    ]
    settings = [
        " server:",
        "-  port: 8000",
        "+  port: 8080  # 8000 is taken by the docs server",
        "   host: 0.0.0.0",
    ]
    [(note, _)] = extract_manifest_changes(rewritten("/srv/app/config.yml", settings))
    assert note.content == "config.yml: `port`: 8000 -> 8080. Why: 8000 is taken by the docs server"
    # A new file is no change; another file's patch is not kept past redaction.
    assert extract_manifest_changes(rewritten(PKG, lines, kind="create")) == []
    [_, reply, _] = rewritten("/home/dev/golf/src/app.ts", lines)
    assert reply.tool_uses[0].result is not None and reply.tool_uses[0].result.patch == ()


def test_an_entry_a_rewrite_moved_is_no_change() -> None:
    # A rewrite that sorted `dependencies`: zod leaves the first hunk and comes back in the
    # second, whose context does not show the section's opening line.
    first = [
        ' "dependencies": {',
        '-    "zod": "^3.22.0",',
        '     "next": "15.2.3",',
        '     "react": "19.0.0",',
    ]
    second = ['     "react-dom": "19.0.0",', '+    "zod": "^3.22.0"', "   },"]
    assert extract_manifest_changes(rewritten(PKG, first, second)) == []
    bumped = [line.replace("^3.22.0", "^3.23.8") if line.startswith("+") else line for line in second]
    assert [c.content for c, _ in extract_manifest_changes(rewritten(PKG, first, bumped))] == [
        "package.json: dependencies zod: ^3.22.0 -> ^3.23.8"
    ]


def test_a_secret_in_a_rewritten_settings_file_is_redacted_and_no_note() -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6
    lines = ["-ANTHROPIC_API_KEY=old", f"+ANTHROPIC_API_KEY={secret}", "-PORT=3000", "+PORT=3001"]
    messages = rewritten("/app/.env", lines)
    assert secret not in str(messages)
    assert [c.content for c, _ in extract_manifest_changes(messages)] == [".env: `PORT`: 3000 -> 3001"]
