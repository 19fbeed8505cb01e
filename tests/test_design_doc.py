"""docs/design.md's stage table is the code's (issue 43.4): every module of every stage
folder is named in its row, and every folder of the package has a row; a module added
without a word in the design, or a row naming a module that is gone, fails here."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow" / "numaplace"


def design_rows():
    """{folder: the set of backticked names in its row} of design.md's Layout table."""
    rows = {}
    for line in (REPO / "docs" / "design.md").read_text().splitlines():
        m = re.match(r"\| `([a-z_]+)/` \| (.*?) \| ", line)
        if m:
            rows[m.group(1)] = set(re.findall(r"`([A-Za-z_]+)`", m.group(2)))
    return rows


def test_every_stage_folder_has_a_row_and_every_module_is_named():
    rows = design_rows()
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(rows) == folders, f"rows for {sorted(set(rows) - folders)}, none for {sorted(folders - set(rows))}"
    for folder in folders:
        modules = {p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"}
        missing = modules - rows[folder]
        assert not missing, f"docs/design.md's {folder}/ row does not name {sorted(missing)}"
        gone = rows[folder] - modules - {"__init__"}
        assert not gone, f"docs/design.md's {folder}/ row names modules that are gone: {sorted(gone)}"
