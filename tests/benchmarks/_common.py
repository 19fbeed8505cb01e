"""Shared bits of the benchmark scripts (and of the traffic test): paths, building a binary
once, and the two measurements of a kernel's memory behaviour that do not depend on how
busy the machine is: cachegrind's counts and the peak resident memory."""
import contextlib
import fcntl
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRATCH = Path(tempfile.gettempdir()) / "numaplace-bench"

# what a user checks out and Snakemake reads (the kernels' sources only where a run builds)
PLAN_PARTS = ("Snakefile", "config", "workflow", "profiles", "envs")
RUN_PARTS = PLAN_PARTS + ("npb", "microbench")


def _build_products(directory, names):
    # object folders build.<class>.<init> and binaries stay behind (not build.smk)
    return [n for n in names if n in ("__pycache__", ".snakemake") or n.endswith(".x")
            or (n.startswith("build.") and Path(directory, n).is_dir())]


def copy_workflow(dest, parts=PLAN_PARTS):
    """A private copy of the workflow in dest (build products left behind)."""
    import shutil
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in parts:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, dest / name, ignore=_build_products)
        else:
            shutil.copy(REPO / name, dest / name)
    return dest

# A 4 MiB, 16-way last-level cache: class W spills to memory from it as B and C spill from
# a real machine's L3, so its misses are the kernel's memory traffic in cache lines.
LL_4MIB = "4194304,16,64"


def binary(bench, cls, variant="default", settings=None):
    from numaplace.builds.tree import build
    d = SCRATCH / "build" / variant
    out = d / "bin" / f"{bench}.{cls}.x"
    if not out.exists():
        build(settings or {}, variant, bench, cls, d / "tree", out, d / "logs" / f"{bench}.{cls}.log")
    return out


def _one_thread(exe):
    """A clean working directory (no timer.flag, no mg.input) and one OpenMP thread."""
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(exe.parent)}
    return {"cwd": exe.parent, "env": env}


def cachegrind(exe, ll=LL_4MIB, timeout=3600):
    """Run exe on 1 thread under cachegrind with the given LL cache (size,assoc,line):
    {"ll_misses": instruction + data LL misses, "data_refs": reads + writes, ...every event}.
    The kernel's own verification must pass."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={ll}",
                            f"--cachegrind-out-file={out}", str(exe)],
                           capture_output=True, text=True, timeout=timeout, **_one_thread(exe))
        if r.returncode != 0 or "SUCCESSFUL" not in r.stdout or "UNSUCCESSFUL" in r.stdout:
            raise RuntimeError(f"{exe} under cachegrind: exit {r.returncode}\n{r.stdout[-800:]}{r.stderr[-800:]}")
        text = out.read_text()
    events = re.search(r"^events:\s*(.+)$", text, re.M).group(1).split()
    counts = dict(zip(events, map(int, re.search(r"^summary:\s*(.+)$", text, re.M).group(1).split())))
    counts["ll_misses"] = counts["ILmr"] + counts["DLmr"] + counts["DLmw"]
    counts["data_refs"] = counts["Dr"] + counts["Dw"]
    return counts


def peak_rss_mib(exe):
    """Peak resident memory of exe on 1 thread, natively (the kernel's working set), from
    GNU time: the rusage of a child that Python forks would count Python's own pages."""
    with tempfile.NamedTemporaryFile("r") as out:
        r = subprocess.run(["/usr/bin/time", "-o", out.name, "-f", "%M", str(exe)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **_one_thread(exe))
        if r.returncode != 0:
            raise RuntimeError(f"{exe}: exit {r.returncode}: {r.stderr[-300:]}")
        return int(out.read().split()[-1]) / 1024


LOCK = "/tmp/numaplace-quiet.lock"


def build_microbench(bench):
    """bin/<bench>.X.x of microbench/src as it is now, built in SCRATCH (make interface)."""
    import shutil
    tree = SCRATCH / "microbench" / "src"
    # copy2 keeps mtimes, so make rebuilds what changed
    shutil.copytree(REPO / "microbench" / "src", tree, ignore=shutil.ignore_patterns("build.*", "*.x"),
                    dirs_exist_ok=True)
    subprocess.run(["make", "-s", bench.upper(), "CLASS=X"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return tree / "bin" / f"{bench}.X.x"


def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return pids


@contextlib.contextmanager
def quiet_lock():
    """Hold /tmp/numaplace-quiet.lock (flock(2), as flock(1) takes it); when a process above
    this one (`flock /tmp/numaplace-quiet.lock python ...`) already holds it, that is ours."""
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            ino = os.fstat(fd).st_ino
            holders = set()
            for line in open("/proc/locks"):
                f = line.split()
                if f[1] == "FLOCK" and int(f[5].split(":")[-1]) == ino:
                    holders.add(int(f[4]))
            if not holders & _ancestors():
                print(f"waiting for {LOCK} (held by pid {sorted(holders)})", file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


