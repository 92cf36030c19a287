"""Project files only: home-directory, Windows and out-of-tree paths are never project files."""

from __future__ import annotations

import pytest

from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.prose import parse_mentioned_paths
from cortex.core.extract.structural import extract_structural, relative_path
from cortex.core.extract.transcript import parse_chunk
from tests.support.transcript_builders import (
    bash_result_record,
    bash_use_record,
    envelope,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
)

POSIX_ROOT = "/home/dev/proj"
WINDOWS_ROOT = "C:\\Users\\dev\\proj"


def edit(tid: str, path: str, cwd: str) -> list[dict[str, object]]:
    """An Edit call and its result, as 2.1.x writes them (Windows sessions keep `\\`)."""
    block = {"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": path}}
    message = {"id": f"msg_{tid}", "type": "message", "role": "assistant", "content": [block]}
    top = {"filePath": path, "oldString": "a", "newString": "b", "userModified": False}
    return [
        {**envelope("assistant", f"a-{tid}", "2.1.191", cwd=cwd), "message": message},
        tool_result_record(tid, "The file has been updated.", is_error=False, top=top),
    ]


def edited_files(root: str, *paths: str) -> tuple[str, ...]:
    records: list[dict[str, object]] = [prompt_record("tidy the settings loader please")]
    for i, path in enumerate(paths):
        records += edit(f"t{i}", path, root)
    chunk = parse_chunk(jsonl(records), 0)
    found = extract_structural(chunk.messages, project_root=root)
    return found[0][0].files if found else ()


def test_a_windows_session_keeps_its_project_files_and_drops_the_rest() -> None:
    files = edited_files(
        WINDOWS_ROOT,
        "C:\\Users\\dev\\proj\\src\\settings.py",
        "c:\\users\\dev\\proj\\README.md",  # the drive and names in another case
        "C:/Users/dev/proj/tests/test_settings.py",
        "C:\\Program Files\\Git\\etc\\gitconfig.ini",
        "C:\\Users\\dev\\.claude\\settings.json",
        "D:\\scratch\\notes.md",
    )
    assert files == ("src/settings.py", "README.md", "tests/test_settings.py")


def test_home_directory_files_are_not_project_files() -> None:
    files = edited_files(
        POSIX_ROOT,
        f"{POSIX_ROOT}/app/config.py",
        "/home/dev/.claude/settings.json",
        "~/.zshrc.sh",
        "/Users/dev/Library/app.json",
    )
    assert files == ("app/config.py",)


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        (f"{POSIX_ROOT}/a/b.py", POSIX_ROOT, "a/b.py"),
        (f"{POSIX_ROOT}/a/b.py", POSIX_ROOT + "/", "a/b.py"),
        ("/elsewhere/b.py", POSIX_ROOT, None),
        (POSIX_ROOT, POSIX_ROOT, None),
        ("a/b.py", POSIX_ROOT, "a/b.py"),
        ("./a/b.py", POSIX_ROOT, "a/b.py"),
        ("../other/b.py", POSIX_ROOT, None),
        ("~/.config/x.toml", POSIX_ROOT, None),
        ("$HOME/.config/x.toml", POSIX_ROOT, None),
        ("C:/Program Files/Git/bin/bash.exe", POSIX_ROOT, None),
        ("C:\\Users\\dev\\proj\\src\\a.py", WINDOWS_ROOT, "src/a.py"),
        ("c:/USERS/dev/proj/src/a.py", WINDOWS_ROOT, "src/a.py"),
        ("src\\a.py", WINDOWS_ROOT, "src/a.py"),
        ("C:\\Users\\dev\\other\\a.py", WINDOWS_ROOT, None),
        ("\\\\server\\share\\a.py", WINDOWS_ROOT, None),
        ("/x/b.py", None, "/x/b.py"),
    ],
)
def test_relative_path(path: str, root: str | None, expected: str | None) -> None:
    assert relative_path(path, root) == expected


def test_a_windows_path_with_spaces_is_one_path_not_a_project_file() -> None:
    text = "Git Bash lives at C:/Program Files/Git/bin/bash.exe, so I edited src/shell.py."
    assert parse_mentioned_paths(text) == ["C:/Program Files/Git/bin/bash.exe", "src/shell.py"]
    paths = [relative_path(p, POSIX_ROOT) for p in parse_mentioned_paths(text)]
    assert paths == [None, "src/shell.py"]


def test_backslash_and_home_paths_in_prose() -> None:
    text = (
        "Opened C:\\Users\\dev\\proj\\src\\app.py then edit src/db.py; your ~/.claude/settings.json "
        "and $HOME/.config/tool/config.toml stay as they are."
    )
    found = parse_mentioned_paths(text)
    assert found == ["C:/Users/dev/proj/src/app.py", "src/db.py", "~/.claude/settings.json"]
    assert [relative_path(p, WINDOWS_ROOT) for p in found] == ["src/app.py", "src/db.py", None]


def test_a_product_name_is_no_file_unless_a_tool_of_the_turn_names_it() -> None:
    # b1-golfgod-v1 shape: a 2.1.x report naming the stack (`Next.js 15`, `Node.js`) beside a
    # component the turn wrote (`App.js`), one it only ran (`Server.js`), and product names in
    # what its commands wrote.
    records: list[dict[str, object]] = [prompt_record("set up the landing page")]
    records += edit("t0", f"{POSIX_ROOT}/src/App.js", POSIX_ROOT)
    records += [bash_use_record("t1", "node scripts/Server.js --check"), bash_result_record("t1", "ok")]
    # Text a command writes (a here-document, a commit message) names no file it runs.
    note = "cat >> docs/notes.md << 'EOF'\n## Next.js 15 needs async headers\nEOF"
    records += [bash_use_record("t2", note), bash_result_record("t2", "")]
    records += [bash_use_record("t3", 'git commit -m "Pin Three.js"'), bash_result_record("t3", "")]
    text = (
        "Decision: we use Next.js 15 on Node.js 20 with Three.js for the course map; "
        "the page lives in App.js and Server.js serves it, as config.js says."
    )
    records.append(text_record("msg_r", text, "a-r"))
    chunk = parse_chunk(jsonl(records), 0)
    found = extract_candidates(chunk.messages, project_root=POSIX_ROOT, git=None)
    decision = next(c for c in found if "Next.js 15" in c.content)
    assert decision.files == ("src/App.js", "Server.js", "config.js")
