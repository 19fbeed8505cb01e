#!/usr/bin/env python3
"""--cluster-generic-status-cmd for PBS Pro/OpenPBS and Torque: prints exactly one of
running|success|failed for a job id (the reason goes to stderr). The state mapping is
numaplace.cluster.job_status.

  status.py [--dialect auto|pbspro|torque] [--vanished success|failed] JOBID
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))
from numaplace import cluster  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(prog="status.py")
    ap.add_argument("--dialect", choices=("auto",) + cluster.DIALECTS, default="auto")
    ap.add_argument("--vanished", choices=(cluster.SUCCESS, cluster.FAILED), default=cluster.SUCCESS,
                    help="verdict for a job qstat no longer knows (default success: "
                         "Snakemake still checks that its outputs exist)")
    ap.add_argument("--verbose", action="store_true", help="print the reason to stderr")
    ap.add_argument("jobid")
    a = ap.parse_args(argv)
    st = cluster.job_status(a.jobid, a.dialect, a.vanished)
    if a.verbose or st.status == cluster.FAILED:
        sys.stderr.write(f"pbs job {a.jobid}: {st.status}: {st.reason}\n")
    print(st.status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
