"""The launch lines to use (issue 41, item 7) run in a 4-node NUMA guest: the threads' CPUs
and the pages checked against the placement.

The default study (config/config.yaml) is planned on a platform that is the guest's own
topology (4 nodes x 2 CPUs, 512 MiB each, a SLIT where node 0's nearest other node is 1 and
its farthest 2 and 3). Five of its placements (one-thread-memory: membind farthest;
two-threads: spread 2; one-node-memory: interleave all; a memory-matrix cell whose thread 0
is on node 2's CPU 4 and thread 1 on CPU 0; half-the-cores-unpinned, 4 threads in a mask of
all 8 CPUs) are written out by
numaplace.plan.launch_lines with a stand-in OpenMP program (C, built here) that prints each
thread's CPU affinity, first-touches 64 MiB in parallel (static schedule) and prints that
mapping's /proc/self/numa_maps line. The numactl and taskset lines run in one guest boot
(../shared/tools/numa-vm, ~8 s); per line it prints the line, what the placement and the
line read back (resolve) expect, and what the guest saw. Exit status 0 when every line ran
and saw its CPUs and nodes.

    .venv/bin/python tests/benchmarks/launch_lines_vm.py [--numa-vm PATH] [--keep]

Not a test: it boots a VM (root, QEMU). srun and aprun lines are printed, not run (no Slurm
or ALPS in the guest).
"""
from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from numaplace.core.cpulist import format_cpulist
from numaplace.plan.launch_lines import launch_lines, resolve, resolves
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[2]

NUMA_VM = REPO.parent / "shared" / "tools" / "numa-vm" / "numa-vm"
DIST = [[10, 16, 22, 22], [16, 10, 22, 22], [22, 22, 10, 16], [22, 22, 16, 10]]
PLATFORM = {"name": "vm4", "description": "the numa-vm guest: 4 nodes x 2 CPUs",
            "launcher": "numactl",
            "nodes": [{"id": n, "cpus": f"{2 * n}-{2 * n + 1}", "memory_mb": 512} for n in range(4)],
            "distances": DIST}

WHERE_C = r"""
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BYTES (64UL << 20)

int main(void) {
    printf("env OMP_NUM_THREADS=%s OMP_PLACES=%s OMP_PROC_BIND=%s\n", getenv("OMP_NUM_THREADS"),
           getenv("OMP_PLACES") ? getenv("OMP_PLACES") : "", getenv("OMP_PROC_BIND") ? getenv("OMP_PROC_BIND") : "");
    char *buf = mmap(NULL, BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) { perror("mmap"); return 1; }
    /* its own VMA (the threads' stacks, mapped next to it, would merge into it) and base
       pages, so that interleave spreads page by page */
    madvise(buf, BYTES, MADV_NOHUGEPAGE);
    #pragma omp parallel
    {
        cpu_set_t s; CPU_ZERO(&s); sched_getaffinity(0, sizeof s, &s);
        char list[512]; int n = 0;
        for (int c = 0; c < CPU_SETSIZE && n < 480; c++)
            if (CPU_ISSET(c, &s)) n += snprintf(list + n, sizeof list - n, n ? ",%d" : "%d", c);
        #pragma omp critical
        printf("thread %d cpus %s\n", omp_get_thread_num(), list);
        #pragma omp for schedule(static)
        for (unsigned long i = 0; i < BYTES; i += 4096) buf[i] = 1;    /* first touch */
    }
    /* the mapping holding buf: the last numa_maps line that starts at or below it */
    char line[4096], best[4096] = "";
    unsigned long start, best_start = 0;
    FILE *f = fopen("/proc/self/numa_maps", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx", &start) == 1 && start <= (unsigned long)buf && start >= best_start) {
            best_start = start;
            strcpy(best, line);
        }
    if (best_start != (unsigned long)buf) printf("note: the mapping starts at %lx, below the buffer\n", best_start);
    printf("numa_maps %s", best);
    return 0;
}
"""


def pick(study):
    """The three placements: one-thread-memory membind farthest, two-threads spread 2,
    one-node-memory interleave all; and two more: a memory cell whose thread 0 is not on the
    lowest CPU (thread order), and an unpinned one (a mask shared by all threads)."""
    topo = study.topology
    others = [n for n in topo.memory_nodes if n != 0]
    far = min(n for n in others if topo.distance(0, n) == max(topo.distance(0, m) for m in others))
    want = {
        "one-thread-memory: membind farthest": lambda r, p: "one-thread-memory" in r.experiments
        and p.memory.policy == "membind" and p.memory.nodes == (far,),
        "two-threads: spread 2": lambda r, p: "two-threads" in r.experiments and p.shape == "spread 2",
        "one-node-memory: interleave all": lambda r, p: "one-node-memory" in r.experiments
        and p.memory.policy == "interleave" and p.memory.nodes == tuple(topo.memory_nodes),
        # thread order: thread 0 (the first-touching one) on node 2's CPU, thread 1 on node 0
        "memory-matrix: node 0 reads node 2": lambda r, p: "memory-matrix" in r.experiments
        and p.order and topo.node_of(p.order[0]) == far and p.nodes == (0, far),
        # a mask, not a CPU per thread: the OS places the threads
        "half-the-cores-unpinned": lambda r, p: "half-the-cores-unpinned" in r.experiments,
    }
    out = []
    for what, ok in want.items():
        (p,) = {r.placement for r in study.runs if ok(r, r.placement)}
        out.append((what, p))
    return out


def shown(per_thread):
    """Threads' CPUs in short: [4] [0], or 4 x 0-7 for a shared mask."""
    if len(per_thread) > 1 and all(cs == per_thread[0] for cs in per_thread):
        return f"{len(per_thread)} x {format_cpulist(per_thread[0])}"
    return " ".join(f"[{format_cpulist(cs)}]" for cs in per_thread)


def observed(text):
    """Per thread its affinity, and the pages per node, from the stand-in's output."""
    threads = {}
    pages = {}
    policy = ""
    for ln in text.splitlines():
        m = re.match(r"thread (\d+) cpus ([\d,]+)$", ln)
        if m:
            threads[int(m.group(1))] = [int(c) for c in m.group(2).split(",")]
        if ln.startswith("numa_maps "):
            policy = ln.split()[2]
            pages = {int(k): int(v) for k, v in re.findall(r"\bN(\d+)=(\d+)", ln)}
    return [threads[i] for i in sorted(threads)], pages, policy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--numa-vm", default=str(NUMA_VM))
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder under /tmp")
    opts = ap.parse_args()
    if not shutil.which("gcc"):
        sys.exit("launch_lines_vm: gcc is needed to build the stand-in program")

    work = Path(tempfile.mkdtemp(prefix="numaplace-launch-lines-", dir="/tmp"))
    (work / "platforms").mkdir()
    (work / "platforms" / "vm4.yaml").write_text(yaml.safe_dump(PLATFORM, sort_keys=False))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    study = Study({**config, "platform": "vm4"}, "config.yaml", work)
    topo = study.topology
    (work / "where.c").write_text(WHERE_C)
    subprocess.run(["gcc", "-fopenmp", "-O1", "-o", str(work / "where"), str(work / "where.c")], check=True)
    program = str(work / "where")

    cases = []           # (what, placement, kind, entry)
    script = ["#!/bin/bash", "numactl --hardware | sed -n '1p;/distances/,$p'"]
    for what, p in pick(study):
        for kind, entry in launch_lines(p, program=program).items():
            cases.append((what, p, kind, entry))
            if kind in ("numactl", "taskset") and entry["line"]:
                i = len(cases) - 1
                script += [f"echo '@@@ begin {i}'", entry["line"], f"echo \"@@@ end {i} rc $?\""]
    (work / "guest.sh").write_text("\n".join(script) + "\n")

    cmd = [opts.numa_vm, "run", "--nodes", "4", "--cpus-per-node", "2", "--mem-per-node", "512M",
           "--dist", ";".join(",".join(map(str, row)) for row in DIST),
           "--share", str(REPO), "--share", "/tmp", "--", "bash", str(work / "guest.sh")]
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    vm = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = vm.stdout
    print(out.split("@@@ begin")[0].rstrip())
    if vm.returncode:
        print(f"numa-vm exit status {vm.returncode}\n{vm.stderr[-3000:]}")

    failures = 0
    for i, (what, p, kind, entry) in enumerate(cases):
        print(f"\n== {what} · {p.id} ({p.label}) · {kind}")
        if entry["line"] is None:
            print(f"   no line: {entry['why']}")
            continue
        print(f"   line:     {entry['line']}")
        if entry["note"]:
            print(f"   note:     {entry['note']}")
        got = resolve(entry["line"], topo)
        ok_line = resolves(entry, p, topo, program=program)
        print(f"   expected: threads' CPUs {entry['cpus']} ({p.binding}), memory {p.memory.label} → nodes {entry['nodes']}")
        print(f"   line read back: threads' CPUs {shown(got['thread_cpus'])}, {got['policy']} on nodes {got['nodes']}"
              f" ({'same' if ok_line else 'DIFFERENT'})")
        if kind not in ("numactl", "taskset"):
            print("   (not run: no Slurm/ALPS in the guest)")
            continue
        m = re.search(rf"@@@ begin {i}\n(.*?)@@@ end {i} rc (\d+)", out, re.S)
        if not m:
            print("   guest: NO OUTPUT")
            failures += 1
            continue
        body, rc = m.group(1), int(m.group(2))
        threads, pages, policy = observed(body)
        total = sum(pages.values()) or 1
        with_pages = sorted(n for n, k in pages.items() if k >= 0.01 * total)
        want_threads = ([[c] for c in entry["cpus"]] if p.binding == "threads"
                        else [sorted(entry["cpus"])] * p.threads)
        # pinned threads: their pages on exactly the expected nodes; a mask: the OS places the
        # threads, so the pages are on some of the mask's nodes
        ok = rc == 0 and threads == want_threads and (
            with_pages == entry["nodes"] if p.binding == "threads" else set(with_pages) <= set(entry["nodes"]))
        if p.memory.policy == "interleave":       # and evenly: each node within 20 % of its share
            share = total / len(entry["nodes"])
            ok = ok and all(abs(pages.get(n, 0) - share) <= 0.2 * share for n in entry["nodes"])
        env_line = next((ln for ln in body.splitlines() if ln.startswith("env ")), "env ?")
        print(f"   guest:    {env_line[4:]}")
        print(f"             threads' CPUs {shown(threads)}; numa_maps policy {policy}, pages per node "
              f"{ {n: pages[n] for n in sorted(pages)} } → nodes {with_pages}; rc {rc}")
        print(f"   {'OK' if ok else 'MISMATCH'}")
        failures += not ok
    ran = sum(1 for c in cases if c[2] in ("numactl", "taskset") and c[3]["line"])
    print(f"\n{ran - failures} of {ran} lines run in the guest saw their placement's CPUs and nodes")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures or vm.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
