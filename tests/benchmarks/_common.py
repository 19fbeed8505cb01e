"""Shared bits of the benchmark scripts: paths and building a binary once."""
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRATCH = Path(tempfile.gettempdir()) / "numaplace-bench"


def binary(bench, cls, variant="default", settings=None):
    from numaplace.build import build
    d = SCRATCH / "build" / variant
    out = d / "bin" / f"{bench}.{cls}.x"
    if not out.exists():
        build(settings or {}, variant, bench, cls, d / "tree", out, d / "logs" / f"{bench}.{cls}.log")
    return out
