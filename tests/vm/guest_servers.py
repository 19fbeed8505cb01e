"""Inside a numa-vm guest (issue 40, today's servers): detect the whole machine, copy its
sysfs, then (optionally) move this process into a cgroup v2 cpuset, detect again from
inside it, and run the measured jobs the host planned for that allocation.

    python3 guest_servers.py WHEEL OUTDIR WHOLE_NAME [JOB_NAME CPUS MEMS JOBS.json OUT.json]

OUTDIR/<WHOLE_NAME>.yaml  `numaplace platform detect` of the whole machine
OUTDIR/<JOB_NAME>.yaml    the same from inside the cpuset (CPUS, MEMS), its allowed: line
OUTDIR/sysfs/devices/system/node/node<N>/{cpulist,distance,meminfo}
OUTDIR/sysfs/devices/system/cpu/cpu<C>/{cache/index<I>/{level,type,size,shared_cpu_list},
                                        topology/thread_siblings_list}
OUTDIR/detect.json        {"whole": {rc, stderr}, "job": {rc, stderr, status, cgroup, numactl_show},
                           "numactl_hardware", "numa_balancing"}
then guest_runs.main(JOBS.json, OUT.json) inside the cpuset (started: OUT.json.started).
Standard library only (the guest has python3, no pip, no network).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import guest_runs  # the script's folder is on sys.path
from guest_runs import balancing, install_wheel, sh

SYS = "/sys/devices/system"
CGROUP = "/sys/fs/cgroup"


def detect(python, name, outdir):
    p = subprocess.run([python, "-m", "numaplace", "platform", "detect", "--name", name],
                       capture_output=True, text=True)
    with open(os.path.join(outdir, f"{name}.yaml"), "w") as f:
        f.write(p.stdout)
    return {"rc": p.returncode, "stderr": p.stderr[-4000:]}


def _copy(src, dst):
    if os.path.exists(src):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)


def copy_sysfs(outdir):
    """What topology.from_sysfs(path) reads: nodes, and the CPUs' caches and SMT siblings."""
    dst = os.path.join(outdir, "sysfs", "devices", "system")
    for d in sorted(os.listdir(f"{SYS}/node")):
        if re.fullmatch(r"node\d+", d):
            for f in ("cpulist", "distance", "meminfo"):
                _copy(f"{SYS}/node/{d}/{f}", f"{dst}/node/{d}/{f}")
    for d in sorted(os.listdir(f"{SYS}/cpu")):
        if not re.fullmatch(r"cpu\d+", d):
            continue
        _copy(f"{SYS}/cpu/{d}/topology/thread_siblings_list", f"{dst}/cpu/{d}/topology/thread_siblings_list")
        cache = f"{SYS}/cpu/{d}/cache"
        for idx in sorted(os.listdir(cache)) if os.path.isdir(cache) else []:
            if re.fullmatch(r"index\d+", idx):
                for f in ("level", "type", "size", "shared_cpu_list"):
                    _copy(f"{cache}/{idx}/{f}", f"{dst}/cpu/{d}/cache/{idx}/{f}")


def enter_cpuset(cpus, mems, group="job"):
    """A cgroup v2 cpuset of CPUS and memory nodes MEMS, with this process in it (its
    children, the measured runs, inherit it)."""
    if not os.path.exists(f"{CGROUP}/cgroup.controllers"):
        subprocess.run(["mount", "-t", "cgroup2", "none", CGROUP], check=True)
    with open(f"{CGROUP}/cgroup.subtree_control", "w") as f:
        f.write("+cpuset")
    path = f"{CGROUP}/{group}"
    os.makedirs(path, exist_ok=True)
    for name, value in (("cpuset.cpus", cpus), ("cpuset.mems", mems), ("cgroup.procs", str(os.getpid()))):
        with open(f"{path}/{name}", "w") as f:
            f.write(value)


def status_lines():
    text = open("/proc/self/status").read()
    return {k: (re.search(rf"^{k}:\s*(\S+)", text, re.M) or [None, None])[1]
            for k in ("Cpus_allowed_list", "Mems_allowed_list")}


def main(wheel, outdir, whole_name, job_name=None, cpus=None, mems=None, jobs=None, out=None):
    open(os.path.join(outdir, "started"), "w").close()      # the guest booted and ran this
    python = install_wheel(wheel)
    facts = {"numactl_hardware": sh("numactl", "--hardware"), "numa_balancing": balancing(),
             "whole": detect(python, whole_name, outdir)}
    copy_sysfs(outdir)
    if job_name:
        enter_cpuset(cpus, mems)
        facts["job"] = {**detect(python, job_name, outdir), "status": status_lines(),
                        "cgroup": open("/proc/self/cgroup").read().strip(),
                        "numactl_show": sh("numactl", "--show")}
    with open(os.path.join(outdir, "detect.json"), "w") as f:
        json.dump(facts, f, indent=1)
    if jobs:
        guest_runs.install_wheel = lambda _wheel: python      # installed above, once
        guest_runs.main(jobs, out)


if __name__ == "__main__":
    main(*sys.argv[1:])
