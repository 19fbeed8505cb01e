"""Command-line entry points that the Snakemake rules call (python -m numaplace.cli)."""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="numaplace")
    sub = ap.add_subparsers(dest="cmd", required=True)

    b = sub.add_parser("build", help="build one NPB binary")
    b.add_argument("--settings", required=True, help="JSON: the study's npb section")
    b.add_argument("--variant", required=True)
    b.add_argument("--bench", required=True)
    b.add_argument("--cls", required=True)
    b.add_argument("--tree", required=True)
    b.add_argument("--binary", required=True)
    b.add_argument("--log", required=True)

    r = sub.add_parser("run", help="one measured run → record.json")
    r.add_argument("--spec", required=True, help="JSON: the run's params from the plan")
    r.add_argument("--binary", required=True)
    r.add_argument("--record", required=True)

    p = sub.add_parser("plan", help="expand a study file and write its plan.tsv")
    p.add_argument("study")
    p.add_argument("--out")

    rf = sub.add_parser("retry-failed", help="set aside records that are not ok so they run again")
    rf.add_argument("results", help="results/<study>")
    rf.add_argument("--status", nargs="*", default=None,
                    help="statuses to retry (default: every status but ok)")

    a = ap.parse_args(argv)
    if a.cmd == "build":
        from .build import build
        build(json.loads(a.settings), a.variant, a.bench, a.cls, a.tree, a.binary, a.log)
    elif a.cmd == "run":
        from .runner import execute
        rec = execute(json.loads(a.spec), a.binary, a.record)
        print(f"{rec['run_id']}: {rec['status']}" + (f" ({rec['reason']})" if rec["reason"] else ""))
    elif a.cmd == "plan":
        from . import ConfigError
        from .study import load_study_file
        try:
            st = load_study_file(a.study)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        st.write_plan(a.out or f"results/{st.name}/plan.tsv")
    elif a.cmd == "retry-failed":
        from .records import set_aside_failed
        for rid, status in set_aside_failed(a.results, a.status):
            print(f"set aside {rid} ({status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
