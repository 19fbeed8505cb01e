#!/usr/bin/env python3
"""--cluster-generic-submit-cmd for PBS Pro/OpenPBS and Torque: reads the job's
properties from the Snakemake jobscript (its last argument), runs qsub with the options
numaplace.cluster.qsub_argv renders, prints the job id.

  submit.py [--dialect pbspro|torque] [--log-dir logs/pbs] [--extra "qsub args"]
            [--exclusive "qsub args"] [--print] JOBSCRIPT
--print shows the qsub command line instead of running it.
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workflow"))
from numaplace import cluster  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(prog="submit.py")
    ap.add_argument("--dialect", choices=cluster.DIALECTS, default="pbspro")
    ap.add_argument("--log-dir", default="logs/pbs")
    ap.add_argument("--extra", default="", help="more qsub arguments, for every job")
    ap.add_argument("--exclusive", default=None,
                    help="qsub arguments that make a whole-node job exclusive "
                         "(default: '-l place=excl' for pbspro, none for torque)")
    ap.add_argument("--print", action="store_true")
    ap.add_argument("jobscript")
    a = ap.parse_args(argv)
    props = cluster.read_job_properties(a.jobscript)
    logdir = Path(a.log_dir).resolve()
    log = logdir / f"{cluster.job_name(props)}.{props.get('jobid', 'x')}.{int(time.time())}.log"
    argv = cluster.qsub_argv(props, a.dialect, log, cluster.split_args(a.extra),
                             None if a.exclusive is None else cluster.split_args(a.exclusive))
    argv.append(a.jobscript)
    if a.print:
        print(" ".join(argv))
        return 0
    logdir.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(argv, capture_output=True, text=True)
    out = p.stdout.strip()
    if p.returncode != 0 or not out:
        sys.stderr.write(f"qsub failed (exit {p.returncode}): {' '.join(argv)}\n{p.stdout}{p.stderr}")
        return p.returncode or 1
    print(out.splitlines()[-1].strip())        # the job id, e.g. 1234.pbs-server
    return 0


if __name__ == "__main__":
    sys.exit(main())
