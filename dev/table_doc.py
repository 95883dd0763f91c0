"""Regenerate the column tables of docs/glidein-table.md from glidein_tracing/table/schema.py
(the one list of the table's columns), between the markers ``<!-- columns:DATASET -->`` and
``<!-- end columns -->``.

    python dev/table_doc.py           # rewrite them
    python dev/table_doc.py --check   # exit 1 when out of date (the tests check it too)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from glidein_tracing.table import schema  # noqa: E402

DOCS = REPO / "docs" / "glidein-table.md"


def column_table(columns) -> str:
    lines = ["| column | type | unit | meaning |", "|---|---|---|---|"]
    lines += [f"| `{c.name}` | {c.sql_type} | {c.unit} | {c.meaning} |" for c in columns]
    return "\n".join(lines)


def rendered(text: str) -> str:
    for dataset, columns in schema.DATASETS.items():
        pattern = re.compile(rf"(<!-- columns:{dataset} -->\n).*?(\n<!-- end columns -->)", re.DOTALL)
        text = pattern.sub(lambda m: m.group(1) + column_table(columns) + m.group(2), text)
    return re.sub(r"\*\*schema version \d+\*\*", f"**schema version {schema.SCHEMA_VERSION}**", text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    text = DOCS.read_text()
    new = rendered(text)
    if args.check:
        if new != text:
            print(f"{DOCS} is out of date: run python dev/table_doc.py", file=sys.stderr)
            return 1
        return 0
    DOCS.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
