"""The code and rule tables are no longer kept in the README: the docs site's reference
pages are written from the registries when the site is built (``scripts/docs_reference.py``,
a MkDocs hook), so a new code or rule needs no step of its own.

    python scripts/readme_tables.py          # write the reference pages once, to check them
    python scripts/readme_tables.py --check  # the same; exit 1 when one cannot be written

Kept so that the step "after adding codes or rules, run scripts/readme_tables.py" still
does something useful: it fails, naming the problem, when a page cannot be generated (a code
of a family ``llmfix.codes.FAMILIES`` does not list, say).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_reference


def main(argv: list[str]) -> int:
    for path, write in docs_reference.PAGES.items():
        try:
            write()
        except Exception as error:
            sys.stderr.write(f"docs/{path}: cannot be generated: {error}\n")
            return 1
    if "--check" not in argv:
        print(
            f"{len(docs_reference.PAGES)} reference pages written from the code; nothing to update"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
