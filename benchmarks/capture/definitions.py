"""The "how it is measured" section of the report."""

DEFINITIONS = """
## How it is measured

**Replay.** Per session: a throwaway git repository (one commit, on the session's branch when
meta.json names one other than `HEAD`), a fresh CORTEX_HOME (sharing only the exported
embedding model), `CORTEX_PYTHON` = the benchmark's interpreter. The transcript's original
directory is rewritten to the throwaway project in every string (a Windows root also has the
backslashes of its paths turned into `/`). The transcript file then grows prefix by prefix, and
the checkout's hooks run exactly as its hooks/hooks.json says (`python3 -S <repo>/hooks/launch.py
<Event>`, the hook JSON on stdin; `python3` is the benchmark's interpreter): SessionStart
(source startup) first; Stop before every real user prompt that follows an answered turn (with
`stop_hook_active` false, `permission_mode` and `last_assistant_message`); PreCompact before
each compaction; Stop and SessionEnd after the last record. A real prompt is a main-thread user
record of text, not a tool result, interruption marker, local command (`/clear`, `/compact`,
`/model`), command output or task notification: the count meta.json gives. The project's files
follow the session: a file its tools read, write or edit appears as the replay reaches the call
(a Write with its content, an Edit applied when its old text is there, else an empty
placeholder; nothing is committed or deleted), so notes about files do not point at missing
ones. The project's branch follows the session too: before each hook it is switched (at the
same commit) to the `gitBranch` of the last main-thread record so far, unless `HEAD`, as the
real repository was when Claude Code ran that hook. After every hook the harness waits until no
queue file is left and no process holds the worker lock. The next session starts on the branch
the session ended on.
UserPromptSubmit is not replayed (off by default; it only reads). No API key reaches cortex:
the local extraction layers and the local embedding model only.

**Reading the result** goes through cortex's outside surfaces only: read-only SQL over the
`memories` table of the project store and the session's global store (status `active`), the
rules file's cortex block, a new session's SessionStart output, and `cortex recall --json`
(CLI defaults) run with the checkout first on PYTHONPATH.

**Matching** follows the dataset's README: text lower-cased, backticks removed, whitespace runs
collapsed; a text answers a fact when it holds one alternative of every `answer_terms` group,
each as a whole word (no letter or digit touching it on a side where it begins or ends with one).

- **captured**: share of facts that some active memory's content answers.
- **recalled@3**: share of facts whose `question`, through `cortex recall --json`, returns an
  answering memory among the first 3 hits.
- **briefed**: share of decision, convention, gotcha and architecture facts answered by a single
  line of the next session's context: the rules file's cortex block plus the SessionStart hook's
  output for a new session.
- **wrong**: active memories that assert a stale claim (hold ≥ 80% of its content tokens:
  lower-cased words without stop words; negations are kept) or whose test/build verdict
  contradicts the transcript's final state (below).
- **precision proxy**: share of active memories that answer at least one of the session's facts.
- **memories per session**: active memories, project and global store.
- **file-list share**: characters of the briefing's progress entries (the `- id · progress · …`
  line, or a `- id · …` line under the `Progress:` title, and its text) whose text mostly lists
  file paths (at least half of its words are paths such as `src/main.rs` or `Cargo.toml`, once
  quoted text such as an echoed request is left out), over all characters of the next session's
  context.

The README's rule makes every line of the briefing count, its attribution lines (`- id · type
· date · branch … · session … · files …`) included, so a branch name or a listed file there can
answer a fact; the raw results (`.jsonl`) hold each briefing for a look.

Overall numbers pool the facts of all sessions (a session with more facts weighs more).

**Verdicts.** A check is a Bash command of a known test/build family (cargo test, build, check,
clippy; pytest; npm, bun, pnpm, yarn test, build, lint; go test, build; nix flake check, nix
build; make test; tsc; eslint; jest; vitest; next build), run on the main thread or by a
subagent. A run failed when its tool result is an error, says `exit code N` (N > 0) or shows a
failure marker (`test result: FAILED`, `3 failed`, a line starting `error:`, a line starting
`FAIL`, `FAILED` or `ERROR` in capitals, `npm ERR!`, `build failed`, `could not compile`);
timed-out, interrupted or refused runs have no outcome. A check's final state is its last
run's, whatever its arguments (a passing run of one test file after a failing suite counts as
passed). A memory is wrong when it names the check and says only that it passed (pass,
succeeded, works, green, `0 failed`, `no errors`, ...) or only that it failed (fail, error,
broken, `does not build`, ...), and that is the opposite of the final state. A fix, workaround
or solution counts on the passing side, so a gotcha giving a failure and its fix is no verdict.

**Baseline.** The same harness run with `--repo` on a git worktree of the older commit: the
launcher puts the checkout's own `cortex` first on the path, and the report names where the CLI
imported `cortex` from and the worker's logger names (`cortex.worker` in the old layout,
`cortex.plugin.worker` in the new one).
"""
