"""Inside a numa-vm guest: install numaplace's wheel into a fresh venv, record the guest's
NUMA facts, then run numaplace measured runs through the package's command, exactly as the
Snakemake `measure` rule does.

    python3 guest_runs.py JOBS.json OUT.json

JOBS.json: {"wheel": "<numaplace-*.whl built on the host>", "thp": "never" (optional: set
            transparent huge pages), "jobs": [{"name": ..., "spec": {...}, "binary": ...,
            "record": ..., "alongside": [argv] (optional: started next to the run)}, ...]}
OUT.json:  {"facts": {...}, "jobs": {name: {"rc", "seconds", "stdout", "stderr"}}}
Standard library only: the guest has python3 without pip, and no network. A pure-Python
wheel is installed by unpacking it into the venv's site-packages (what pip does for it).
"""
import json
import os
import subprocess
import sys
import sysconfig
import time
import zipfile

VENV = "/tmp/numaplace-venv"         # guest tmpfs


def install_wheel(wheel):
    """numaplace's wheel and the wheels beside it (its runner's dependencies)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", VENV], check=True)
    site = sysconfig.get_path("purelib", vars={"base": VENV, "platbase": VENV})
    folder = os.path.dirname(os.path.abspath(wheel))
    for name in sorted(os.listdir(folder)):
        if name.endswith(".whl"):
            with zipfile.ZipFile(os.path.join(folder, name)) as z:
                z.extractall(site)
    return os.path.join(VENV, "bin", "python")


def sh(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"error: {e}"


def balancing():
    path = "/proc/sys/kernel/numa_balancing"
    return open(path).read().strip() if os.path.exists(path) else None


def main(jobs_path, out_path):
    open(out_path + ".started", "w").close()      # the guest booted and ran this
    cfg = json.load(open(jobs_path))
    thp = "/sys/kernel/mm/transparent_hugepage/enabled"
    if cfg.get("thp") and os.path.exists(thp):
        with open(thp, "w") as f:                # e.g. never: placement page by page
            f.write(cfg["thp"])
    facts = {"numactl_hardware": sh("numactl", "--hardware"),
             "numa_balancing": open("/proc/sys/kernel/numa_balancing").read().strip()
             if os.path.exists("/proc/sys/kernel/numa_balancing") else None,
             "kernel": os.uname().release, "python": sys.version.split()[0],
             "cpus": len(os.sched_getaffinity(0)),
             "thp": open(thp).read().strip() if os.path.exists(thp) else None}
    python = install_wheel(cfg["wheel"])
    out = {"facts": facts, "jobs": {}}
    for job in cfg["jobs"]:
        t0 = time.monotonic()
        argv = [python, "-m", "numaplace", "run", "--spec", json.dumps(job["spec"], sort_keys=True),
                "--binary", job["binary"], "--record", job["record"]]
        # "alongside": a command started next to the run (e.g. one that moves its pages)
        side = subprocess.Popen(job["alongside"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True) if job.get("alongside") else None
        p = subprocess.run(argv, capture_output=True, text=True)
        out["jobs"][job["name"]] = {"rc": p.returncode, "seconds": round(time.monotonic() - t0, 2),
                                    "stdout": p.stdout[-4000:], "stderr": p.stderr[-4000:]}
        if side:
            try:
                side_out = side.communicate(timeout=10)[0]
            except subprocess.TimeoutExpired:
                side.kill()
                side_out = side.communicate()[0]
            out["jobs"][job["name"]]["alongside"] = {"rc": side.returncode, "output": side_out[-4000:]}
        out["jobs"][job["name"]]["numa_balancing_after"] = balancing()
        print(f"{job['name']}: rc {p.returncode} in {out['jobs'][job['name']]['seconds']} s: "
              f"{p.stdout.strip()[-300:]}", flush=True)
    # after every job: a run that changed a kernel setting (study `system:`) put it back
    out["facts_after"] = {"numa_balancing": balancing()}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
