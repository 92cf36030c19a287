"""A newer manifest note takes over what older notes of its manifest still say (pure)."""

from __future__ import annotations

from cortex.core.extract.manifest_merge import ManifestNote, manifest_file, merge_notes, overlaps


def note(content: str, *keys: str, file: str = "package.json") -> ManifestNote:
    return ManifestNote(content, ("manifest", *(f"entry:{file}:{k}" for k in keys), "branch:main"))


def test_statements_about_entries_changed_again_give_way_to_the_newer_note() -> None:
    older = note(
        "package.json: devDependencies: removed `npm-run-all` ^4.1.5; scripts dev: added `bun run`",
        "npm-run-all",
        "dev",
    )
    newer = note("package.json: scripts dev: removed `bun run`, added `bun --bun run`", "dev")
    merged = merge_notes(newer, [older])
    assert merged.content == (
        "package.json: scripts dev: removed `bun run`, added `bun --bun run`; "
        "devDependencies: removed `npm-run-all` ^4.1.5"
    )
    assert set(merged.tags) >= {"entry:package.json:dev", "entry:package.json:npm-run-all", "manifest"}


def test_a_dependency_added_and_later_removed_was_tried_and_dropped() -> None:
    cargo = "Cargo.toml"
    first = note("Cargo.toml: added `rustface` 0.1; removed `ort` 2.0", "rustface", "ort", file=cargo)
    second = note("Cargo.toml: added `opencv` 0.92; removed `rustface` 0.1", "opencv", "rustface", file=cargo)
    merged = merge_notes(second, [first])
    assert merged.content == (
        "Cargo.toml: added `opencv` 0.92; removed `ort` 2.0; tried and dropped `rustface` 0.1"
    )
    third = note("Cargo.toml: added `tch` 0.16; removed `opencv` 0.92", "tch", "opencv", file=cargo)
    again = merge_notes(third, [merged])
    assert again.content == (
        "Cargo.toml: added `tch` 0.16; removed `ort` 2.0; tried and dropped `rustface` 0.1, `opencv` 0.92"
    )


def test_every_reason_is_kept() -> None:
    older = note("package.json: scripts build: added `--bun`. Why: Bun is faster", "build", "lint")
    newer = note(
        "package.json: scripts build: removed `--bun`. Why: the --bun flag breaks the Convex push", "build"
    )
    merged = merge_notes(newer, [older])
    assert merged.content == (
        "package.json: scripts build: removed `--bun`. Why: the --bun flag breaks the Convex push"
        ". Why: Bun is faster"
    )


def test_an_entry_is_named_as_a_whole_word() -> None:
    text = "package.json: scripts dev:frontend: added `--turbo`; added `sort-keys` 1.0"
    older = note(text, "dev:frontend", "sort-keys")
    newer = note("package.json: scripts dev: removed `--inspect`", "dev")
    assert not overlaps(newer, older)  # `dev` is not `dev:frontend`
    sorter = note("package.json: added `sort` 2.0", "sort")
    assert not overlaps(sorter, older)


def test_only_notes_of_the_same_manifest_overlap() -> None:
    cargo = note("Cargo.toml: added `serde` 1", "serde", file="Cargo.toml")
    toml = note("pyproject.toml: added `serde` 1", "serde", file="pyproject.toml")
    assert manifest_file(cargo.tags) == "Cargo.toml"
    assert not overlaps(cargo, toml)
    assert overlaps(cargo, note("Cargo.toml: serde: 1 -> 1.0.200", "serde", file="Cargo.toml"))
