"""Regenerate what the knob table (glidein_tracing/core/knobs.py) defines: the shell knob reader the
glidein hooks source, and the knobs reference table in docs/knobs.md.

    python dev/knobs.py           # rewrite both
    python dev/knobs.py --check   # exit 1 when either is out of date (the tests check it too)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from glidein_tracing.core import knobs  # noqa: E402

SHELL_READER = REPO / "glidein_tracing" / "node" / "hooks" / "gconditional_TRACING_knobs.sh"
DOCS = REPO / "docs" / "knobs.md"


def docs_with_table(text: str) -> str:
    """docs/knobs.md with its knob table (the lines from `| knob |` to the first non-table line)
    replaced by the generated one."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| knob |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines[start:end] = knobs.render_markdown().rstrip("\n").split("\n")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only say whether the files are up to date")
    args = parser.parse_args()
    wanted = {SHELL_READER: knobs.render_shell(), DOCS: docs_with_table(DOCS.read_text())}
    stale = [path for path, text in wanted.items() if path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(REPO)} is out of date: run python dev/knobs.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"rewrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
