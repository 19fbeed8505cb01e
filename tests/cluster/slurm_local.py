#!/usr/bin/env python3
"""A real one-node Slurm on this machine, for the cluster tests (Debian's slurm-wlm +
munge, no systemd, no slurmdbd).

  python3 tests/cluster/slurm_local.py start     # prints what it started
  python3 tests/cluster/slurm_local.py stop      # stops exactly what start started
  python3 tests/cluster/slurm_local.py status

`start` needs root and the packages (slurmctld slurmd slurm-client munge, and
slurm-wlm-torque for the PBS tests); it installs nothing. It writes
/etc/slurm/slurm.conf (Slurm's clients and the jobs' inner `srun` only read that
path: the Snakemake jobstep drops SLURM_CONF from the environment), keeps its state,
logs and PID files under /run/numaplace-slurm and /var/lib/numaplace-slurm, starts
munged (unless one runs), slurmctld and slurmd, and waits for the node to be idle.
A Slurm that is already running is used as it is and never stopped by us.
`stop` cancels the jobs, then signals only the PIDs that `start` recorded.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

RUN = Path(os.environ.get("NUMAPLACE_SLURM_RUN", "/run/numaplace-slurm"))
STATE = Path(os.environ.get("NUMAPLACE_SLURM_STATE", "/var/lib/numaplace-slurm"))
CONF = Path("/etc/slurm/slurm.conf")
MARK = "# numaplace test cluster (tests/cluster/slurm_local.py)"
PARTITION = "batch"
STARTED = RUN / "started.json"
DAEMONS = ("slurmctld", "slurmd", "munged")
CLIENTS = ("sbatch", "squeue", "scontrol", "sinfo", "srun", "scancel")


def missing():
    """Why this machine cannot run the test cluster, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd must run as root)"
    gone = [b for b in DAEMONS + CLIENTS if not shutil.which(b)
            and not Path("/usr/sbin", b).exists()]
    if gone:
        return ("Slurm/munge not installed (missing " + ", ".join(gone) + "; bash .ci/setup --tests installs "
                "slurmctld slurmd slurm-client munge slurm-wlm-torque)")
    if not cgroup_mounted():
        return ("no cgroup filesystem is mounted (/proc/self/mountinfo), and slurmd will not start "
                "without one even with proctrack/linuxproc (a chroot whose /sys is bound without "
                "/sys/fs/cgroup, e.g. fresh-debian)")
    return None


def cgroup_mounted(mountinfo="/proc/self/mountinfo"):
    """Whether a cgroup (v1 or v2) filesystem is visible from this process's root."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return False
    return any(line.split(" - ", 1)[1].split()[0] in ("cgroup", "cgroup2")
               for line in lines if " - " in line)


def _sbin(name):
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, TypeError):
        return False
    except PermissionError:
        return True


def _pidfile(path):
    try:
        pid = int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _alive(pid) else None


def controller_up():
    if not shutil.which("scontrol") or not CONF.exists():
        return False
    p = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    return p.returncode == 0 and "UP" in p.stdout


def node_facts():
    """NodeName line of `slurmd -C` as a dict (CPUs, SocketsPerBoard, RealMemory, ...)."""
    out = subprocess.run([_sbin("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("NodeName="))
    return dict(kv.split("=", 1) for kv in line.split())


def slurm_conf(node):
    return f"""{MARK}
ClusterName=numaplace
SlurmctldHost={socket.gethostname().split('.')[0]}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
ReturnToService=2
SlurmctldPidFile={RUN}/slurmctld.pid
SlurmdPidFile={RUN}/slurmd.pid
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation={STATE}/ctld
SlurmdSpoolDir={STATE}/d
SlurmctldLogFile={STATE}/log/slurmctld.log
SlurmdLogFile={STATE}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
# the snakemake slurm plugin trusts squeue only when MinJobAge >= 3 x its first poll
MinJobAge=3600
InactiveLimit=0
KillWait=10
Waittime=0
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName={node['NodeName']} NodeAddr=127.0.0.1 CPUs={node['CPUs']} Boards={node.get('Boards', 1)} SocketsPerBoard={node['SocketsPerBoard']} CoresPerSocket={node['CoresPerSocket']} ThreadsPerCore={node['ThreadsPerCore']} RealMemory={node['RealMemory']} State=UNKNOWN
PartitionName={PARTITION} Nodes={node['NodeName']} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


def _record(started):
    RUN.mkdir(parents=True, exist_ok=True)
    STARTED.write_text(json.dumps(started, indent=1))


def _wait(cond, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.3)
    raise RuntimeError(f"timed out after {seconds} s waiting for {what}")


def _start_munged(started):
    pid = _pidfile("/run/munge/munged.pid")
    if pid:
        return
    key = Path("/etc/munge/munge.key")
    if not key.exists() or key.stat().st_size == 0:
        subprocess.run([_sbin("mungekey"), "--create", "--force"], check=True)
        shutil.chown(key, "munge", "munge")
        key.chmod(0o400)
    Path("/run/munge").mkdir(exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    for stale in Path("/run/munge").glob("munge.socket.2*"):
        stale.unlink()
    subprocess.run(["runuser", "-u", "munge", "--", _sbin("munged")], check=True)
    _wait(lambda: _pidfile("/run/munge/munged.pid"), 15, "munged")
    started["munged"] = _pidfile("/run/munge/munged.pid")
    _record(started)
    subprocess.run("munge -n | unmunge >/dev/null", shell=True, check=True)


def start(log=print):
    """Bring the cluster up (or find it up). Returns {'reused': bool, 'started':
    {daemon: pid}, 'node': name, 'cpus': n}. What it started is stopped again when it
    cannot finish."""
    try:
        return _start(log)
    except BaseException:
        stop(log)
        raise


def _start(log):
    why = missing()
    if why:
        raise RuntimeError(why)
    started = json.loads(STARTED.read_text()) if STARTED.exists() else {}
    started = {k: v for k, v in started.items() if _alive(v)}
    if controller_up() and not started:
        log("a Slurm controller is already running: using it as it is")
        return {"reused": True, "started": {}, **_node_summary()}
    for d in ("ctld", "d", "log"):
        (STATE / d).mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    _start_munged(started)
    node = node_facts()
    conf = slurm_conf(node)
    if not CONF.exists() or CONF.read_text() != conf:
        if "slurmctld" in started:
            raise RuntimeError(f"{CONF} changed under a running slurmctld; stop first")
        CONF.parent.mkdir(parents=True, exist_ok=True)
        if CONF.exists() and MARK not in CONF.read_text():
            backup = CONF.with_name("slurm.conf.before-numaplace")
            shutil.copy2(CONF, backup)
            log(f"kept the previous {CONF} as {backup}")
        CONF.write_text(conf)
    if "slurmctld" not in started:
        for old in (STATE / "ctld").iterdir():     # a fresh cluster: no old jobs
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        subprocess.run([_sbin("slurmctld")], check=True)
        _wait(lambda: _pidfile(RUN / "slurmctld.pid"), 20, "slurmctld")
        started["slurmctld"] = _pidfile(RUN / "slurmctld.pid")
        _record(started)
        _wait(controller_up, 30, "slurmctld to answer")
    if "slurmd" not in started:
        if subprocess.run([_sbin("slurmd")]).returncode != 0:
            log_file = STATE / "log" / "slurmd.log"
            tail = log_file.read_text(errors="replace").strip().splitlines()[-5:] if log_file.exists() else []
            raise RuntimeError("slurmd did not start: " + (" | ".join(tail) or f"no {log_file}"))
        _wait(lambda: _pidfile(RUN / "slurmd.pid"), 20, "slurmd")
        started["slurmd"] = _pidfile(RUN / "slurmd.pid")
        _record(started)

    def node_idle():
        st = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True).stdout.strip()
        if st.startswith(("down", "drain")) or st.endswith("drain"):
            subprocess.run(["scontrol", "update", f"NodeName={node['NodeName']}", "State=RESUME"],
                           capture_output=True)
        return st in ("idle", "mixed", "allocated")
    _wait(node_idle, 60, "the node to become idle")
    log(f"Slurm up: {', '.join(f'{k} pid {v}' for k, v in started.items())}")
    return {"reused": False, "started": dict(started), **_node_summary()}


def _node_summary():
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %c %m %P"], capture_output=True, text=True).stdout.split()
    return {"node": out[0], "cpus": int(out[1]), "mem_mb": int(out[2]), "partition": out[3].rstrip("*")} \
        if len(out) >= 4 else {}


def stop(log=print):
    """Cancel every job, then stop exactly the daemons `start` recorded (TERM, KILL
    after 15 s)."""
    if not STARTED.exists():
        log("nothing recorded as started")
        return {}
    started = json.loads(STARTED.read_text())
    if started.get("slurmctld") and _alive(started["slurmctld"]) and shutil.which("squeue"):
        ids = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
        if ids:
            subprocess.run(["scancel"] + ids, capture_output=True)
            time.sleep(1)
    stopped = {}
    for name in ("slurmd", "slurmctld", "munged"):
        pid = started.get(name)
        if not pid or not _alive(pid):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped[name] = pid
    STARTED.unlink()
    restore_conf(log)
    log("stopped " + (", ".join(f"{k} pid {v}" for k, v in stopped.items()) or "nothing"))
    return stopped


def restore_conf(log=print):
    """Leave /etc/slurm as found: with our slurm.conf left behind and no controller,
    every Slurm client (and the Slurm executor plugin, which runs `scontrol show config`
    whenever Snakemake starts) waits ~9 s for the controller; without it, it fails at once."""
    if not CONF.exists() or MARK not in CONF.read_text():
        return
    backup = CONF.with_name("slurm.conf.before-numaplace")
    if backup.exists():
        shutil.move(backup, CONF)
        log(f"restored the previous {CONF}")
    else:
        CONF.unlink()
        log(f"removed the test cluster's {CONF}")


def main(argv):
    cmd = argv[1] if len(argv) > 1 else "status"
    if cmd == "start":
        print(json.dumps(start(), indent=1))
    elif cmd == "stop":
        stop()
    elif cmd == "status":
        print(missing() or ("up" if controller_up() else "down"))
        if STARTED.exists():
            print(STARTED.read_text())
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
