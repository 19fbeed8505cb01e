"""Guards (issue 32): one fast unit test per behaviour that no other test pinned down,
each written against the realistic bug it guards (named in its docstring) and seen to
fail on it. Pure Python: no Snakemake, no binaries, no /proc sampling.

Records are the real ones of tests/fixtures/ (read through numaplace.record.store, written
through write_record as the runner does), with only the fields a test needs replaced."""
from __future__ import annotations

import copy
import io
import json
import os
import stat
import time
from pathlib import Path

import pytest

from numaplace.machine import idle
from numaplace.cluster import pbs
from numaplace.tables.aggregate import build_tables
from numaplace.cli import main as numaplace_main
from numaplace.plan.launch import LAUNCHERS, command
from numaplace.run.numa_maps import parse, parse_line, summarize
from numaplace.plan.placement import Placement
from numaplace.plan.expand import expand_experiment
from numaplace.record.store import KEPT, iter_records, read_record, set_aside_failed, write_record
from numaplace.report.summary import answer_rows
from numaplace.plan.study import Study
from numaplace.machine.topology import load_platform

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "records" / "results" / "fixture"
REAL = REPO / "tests" / "fixtures" / "real"


def fixture_record(name, attempt=None):
    """A record of the fixture study (as read_record gives it: no private keys)."""
    d = FIXTURE / "runs" / name
    return read_record((d / "attempts" / str(attempt) if attempt else d) / "record.json")


def write_as_the_runner_does(rundir, rec, numa_maps_from=None):
    """record.json (+ its KEPT hard link) and the peak numa_maps, write-protected as
    Snakemake leaves a finished run's output."""
    rundir.mkdir(parents=True, exist_ok=True)
    if numa_maps_from is not None:
        (rundir / "numa_maps.peak.txt").write_text((numa_maps_from / "numa_maps.peak.txt").read_text())
    write_record(rundir / "record.json", rec)
    os.chmod(rundir / "record.json", stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


# -- 1. the idle check's threshold --------------------------------------------------------
#
# `run.idle_busy_max` is the highest busy share an idle CPU may have ("max"; the
# schema allows 0..1): a CPU is busy when its share is *above* it (idle.py: b > busy_max).

def _idle_check_on(monkeypatch, busy, cpus, busy_max):
    """idle_check (mode flag: one window, no wait) on a measured window `busy`."""
    monkeypatch.setattr(idle, "cpu_busy", lambda seconds=idle.IDLE_WINDOW_S, since=None: dict(busy))
    return idle.idle_check(cpus, busy_max, 30, "flag")


def test_idle_threshold_at_the_limit_is_idle_and_above_it_busy(monkeypatch):
    """Guards `>=` for `>`: a CPU exactly at idle_busy_max (0.15, the default) would be
    called busy, and with `idle_check: refuse` the run recorded not-idle."""
    cpus = Placement.from_dict(fixture_record("cg.A.default.c2-3_il0-1_p_nc.r1")["placement"]).cpus
    assert cpus == (2, 3)
    idle_, ev = _idle_check_on(monkeypatch, {0: 0.0, 1: 0.0, 2: 0.15, 3: 0.15}, cpus, 0.15)
    assert (idle_, ev["busy_cpus"], ev["busy_max"]) == (True, {}, 0.15)
    idle_, ev = _idle_check_on(monkeypatch, {0: 0.0, 1: 0.0, 2: 0.151, 3: 0.15}, cpus, 0.15)
    assert (idle_, ev["busy_cpus"]) == (False, {"2": 0.151})


def test_idle_threshold_of_zero_accepts_only_fully_idle_cpus(monkeypatch):
    """Guards `>=` for `>` at the schema's minimum, 0: no CPU could ever be idle."""
    idle_, ev = _idle_check_on(monkeypatch, {0: 0.0, 1: 0.0}, (0, 1), 0)
    assert (idle_, ev["busy_cpus"]) == (True, {})
    idle_, ev = _idle_check_on(monkeypatch, {0: 0.0, 1: 0.001}, (0, 1), 0)
    assert (idle_, ev["busy_cpus"]) == (False, {"1": 0.001})


# -- 2. load on CPUs outside the placement -------------------------------------------------

def test_idle_check_ignores_load_on_other_cpus(monkeypatch):
    """Guards a dropped CPU filter: a busy CPU outside the placement (here the other
    node's) would make the placement's idle CPUs count as busy. The whole window is
    still recorded as evidence."""
    busy = {0: 1.0, 1: 0.97, 2: 0.0, 3: 0.02}
    idle_, ev = _idle_check_on(monkeypatch, busy, (2, 3), 0.15)
    assert (idle_, ev["busy_cpus"]) == (True, {})
    assert ev["busy"] == {"0": 1.0, "1": 0.97, "2": 0.0, "3": 0.02}


# -- 1 and 2 from /proc/stat as the kernel writes it ---------------------------------------
#
# The two tests above give idle_check busy shares; these give it /proc/stat text (read by
# idle.cpu_jiffies, shares made by idle.cpu_busy), as on a 2-CPU machine: user nice system
# idle iowait irq softirq steal guest guest_nice, USER_HZ 100. The window is the runner's
# start-up one made up to 0.2 s: 20 jiffies per CPU.

STAT_BEFORE = {0: (1070986, 647, 153054, 931117, 2774, 0, 963, 872, 0, 0),
               1: (1192582, 634, 179102, 773333, 8192, 0, 2952, 924, 0, 0)}


def proc_stat(cpus):
    """/proc/stat with the total line, one line per CPU and the lines that follow them."""
    total = [sum(col) for col in zip(*cpus.values())]
    return ("cpu  " + " ".join(map(str, total)) + "\n"
            + "".join(f"cpu{c} " + " ".join(map(str, v)) + "\n" for c, v in sorted(cpus.items()))
            + "intr 28633616 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 12\n"
              "ctxt 75933221\nbtime 1795619613\nprocesses 352880\nprocs_running 3\nprocs_blocked 0\n"
              "softirq 10383957 1 2710584 19 117616 0 0 1 4004352 0 3551384\n")


def window(busy, iowait=0, jiffies=20):
    """One CPU's 0.2 s: `busy` jiffies of user and system time, `iowait` waiting for I/O
    (idle to the check), the rest idle."""
    return (busy - busy // 3, 0, busy // 3, jiffies - busy - iowait, iowait, 0, 0, 0, 0, 0)


def _idle_check_on_proc_stat(monkeypatch, cpus, busy_max, **busy):
    """idle_check (mode flag) over a window whose /proc/stat samples are STAT_BEFORE and
    STAT_BEFORE + busy (cpu0=window(...), cpu1=window(...)); opened long enough ago that
    nothing is waited for."""
    after = {c: tuple(a + b for a, b in zip(STAT_BEFORE[c], busy[f"cpu{c}"])) for c in STAT_BEFORE}
    samples = iter([proc_stat(STAT_BEFORE), proc_stat(after)])
    real_open = open
    monkeypatch.setattr(idle, "open", lambda path, *a, **k: io.StringIO(next(samples))
                        if path == "/proc/stat" else real_open(path, *a, **k), raising=False)
    opened = idle.IdleWindow(os.sched_getaffinity(0), idle.cpu_jiffies(), time.monotonic() - 1.0)
    return idle.idle_check(cpus, busy_max, 30, "flag", since=opened)


def test_idle_threshold_from_proc_stat_samples(monkeypatch):
    """Behaviour 1 end to end: 3 busy jiffies of 20 (iowait not counted) are 0.15, the
    default idle_busy_max: idle; 4 are busy. With a limit of 0, no busy jiffy is idle and
    one (0.05) is busy. Guards `>=` for `>` (and iowait counted as busy)."""
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0.15, cpu0=window(3, iowait=2), cpu1=window(0))
    assert (idle_, ev["busy"], ev["busy_cpus"]) == (True, {"0": 0.15, "1": 0.0}, {})
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0.15, cpu0=window(4), cpu1=window(0))
    assert (idle_, ev["busy_cpus"]) == (False, {"0": 0.2})
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0, cpu0=window(0, iowait=6), cpu1=window(0))
    assert (idle_, ev["busy_cpus"]) == (True, {})
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0, cpu0=window(1), cpu1=window(0))
    assert (idle_, ev["busy_cpus"]) == (False, {"0": 0.05})


def test_idle_check_from_proc_stat_counts_only_the_placements_cpus(monkeypatch):
    """Behaviour 2 end to end: CPU 1 at 100 % does not make a placement on CPU 0 busy
    (also not at a limit of 0); CPU 0 at 100 % does. Guards a dropped or inverted CPU
    filter, or a share taken over the machine's total line."""
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0.15, cpu0=window(0), cpu1=window(20))
    assert (idle_, ev["busy"], ev["busy_cpus"]) == (True, {"0": 0.0, "1": 1.0}, {})
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0, cpu0=window(0), cpu1=window(20))
    assert (idle_, ev["busy_cpus"]) == (True, {})
    idle_, ev = _idle_check_on_proc_stat(monkeypatch, (0,), 0.15, cpu0=window(20), cpu1=window(0))
    assert (idle_, ev["busy"], ev["busy_cpus"]) == (False, {"0": 1.0, "1": 0.0}, {"0": 1.0})


def test_foreign_load_counts_only_the_runs_cpus():
    """Guards summing every CPU's jiffies: others' work on CPUs 0-1 would be charged to
    a run on CPUs 2-3 (foreign_load share > 5 % → flagged shared_cpus in the tables)."""
    hz = idle.CLK_TCK
    before = {c: (1000, 100000) for c in range(4)}
    # 10 s: the run keeps CPUs 2-3 busy (20 CPU s), something else CPUs 0-1 (20 CPU s)
    after = {c: (1000 + 10 * hz, 100000 + 10 * hz) for c in range(4)}
    fl = idle.foreign_load(before, after, (2, 3), 10.0, 20.0)
    assert (fl["cpu_s"], fl["share"], fl["busy_cpu_s"]) == (0.0, 0.0, 20.0)


# -- 3. retry-failed applied twice ---------------------------------------------------------

def test_retry_failed_twice_keeps_attempts_flat_and_the_run_listed_once(tmp_path):
    """Guards attempts nesting (attempts/2/attempts/1) and set-aside records read back as
    runs: a second retry that sees attempts/1/record.json as a run moves it again, the
    tables count it twice. The run's attempts: the fixture's real timeout, a failed one,
    the fixture's ok record."""
    rid = "cg.A.default.c0-3_loc_p_nc.r2"
    src = FIXTURE / "runs" / rid
    rundir = tmp_path / "runs" / rid
    timeout = fixture_record(rid, attempt=1)
    failed = {**copy.deepcopy(timeout), "status": "failed", "reason": "exit status -9", "wall_s": 12.5}
    ok = fixture_record(rid)
    assert (timeout["status"], ok["status"]) == ("timeout", "ok")

    write_as_the_runner_does(rundir, timeout, src / "attempts" / "1")
    assert set_aside_failed(tmp_path) == [(rid, "timeout")]
    write_as_the_runner_does(rundir, failed, src)
    assert set_aside_failed(tmp_path) == [(rid, "failed")]
    write_as_the_runner_does(rundir, ok, src)
    assert set_aside_failed(tmp_path) == []

    files = sorted(str(p.relative_to(rundir)) for p in rundir.rglob("*") if p.is_file())
    assert files == sorted(["attempts/1/numa_maps.peak.txt", "attempts/1/record.json",
                            "attempts/2/numa_maps.peak.txt", "attempts/2/record.json",
                            "numa_maps.peak.txt", "record.json", KEPT])
    assert [read_record(rundir / "attempts" / n / "record.json")["status"] for n in ("1", "2")] == \
        ["timeout", "failed"]

    # the records reader lists the run once; only with attempts=True the set-aside ones
    assert [(r["run_id"], r["status"]) for r in iter_records(tmp_path)] == [(rid, "ok")]
    assert [(r["status"], r["_attempt"]) for r in iter_records(tmp_path, attempts=True)] == \
        [("timeout", True), ("failed", True), ("ok", False)]

    t = build_tables(tmp_path)
    runs = t["runs"]
    assert list(zip(runs["attempt"], runs["current"], runs["status"])) == \
        [(1, False, "timeout"), (2, False, "failed"), (3, True, "ok")]
    (s,) = t["summary"].to_dict("records")
    assert (s["n"], s["n_records"], s["n_failed"], s["n_set_aside"]) == (1, 3, 2, 2)


def test_results_under_a_folder_named_attempts_are_still_current(tmp_path):
    """Guards attempt-ness read from the whole absolute path ("attempts" in path.parts,
    numbered from the first such folder): a study under e.g. ~/attempts/results/<study>
    would have no current run at all. Only runs/<id>/attempts/<n>/ is an attempt."""
    rid = "cg.A.default.c0-3_loc_p_nc.r2"
    root = tmp_path / "attempts" / "results" / "s"
    write_as_the_runner_does(root / "runs" / rid, fixture_record(rid), FIXTURE / "runs" / rid)
    assert [(r["run_id"], r["_attempt"]) for r in iter_records(root, attempts=True)] == [(rid, False)]
    # one set-aside attempt beside it: numbered 1 (not by the folder above the study)
    src = FIXTURE / "runs" / rid
    assert set_aside_failed(root, ["ok"]) == [(rid, "ok")]
    write_as_the_runner_does(root / "runs" / rid, fixture_record(rid), src)
    assert [r["_attempt"] for r in iter_records(root, attempts=True)] == [True, False]
    runs = build_tables(root)["runs"]
    assert list(zip(runs["attempt"], runs["current"])) == [(1, False), (2, True)]


# -- 3b. the statuses retry-failed retries by default --------------------------------------

ALL_STATUSES = ["ok", "unverified", "failed", "timeout", "placement-failed", "not-idle", "build-failed"]


def _study_of_every_status(root):
    template = fixture_record("cg.A.default.c0-1_loc_p_nc.r1")
    for i, status in enumerate(ALL_STATUSES, 1):
        rec = {**copy.deepcopy(template), "status": status, "rep": i,
               "run_id": f"cg.A.default.c0-1_loc_p_nc.r{i}",
               "reason": None if status == "ok" else f"a {status} run"}
        rec["binary"] = str(root / "bin" / "cg.A.x")      # no build record: nothing to rename
        write_as_the_runner_does(root / "runs" / rec["run_id"], rec)
    broken = root / "runs" / "cg.A.default.c0-1_loc_p_nc.r8"
    broken.mkdir()
    (broken / "record.json").write_text('{"run_id": "cg.A.default.c0-1_loc_p_nc.r8", "stat')
    return {f"cg.A.default.c0-1_loc_p_nc.r{i}": s for i, s in enumerate(ALL_STATUSES + ["unreadable"], 1)}


def test_retry_failed_default_is_every_status_but_ok(tmp_path):
    """Guards a narrowed default (e.g. only failed/timeout): not-idle, placement-failed,
    unverified, build-failed and unreadable runs would never be measured again."""
    status_of = _study_of_every_status(tmp_path)
    moved = set_aside_failed(tmp_path)
    assert sorted(moved) == sorted((rid, s) for rid, s in status_of.items() if s != "ok")
    assert {s for _, s in moved} == set(ALL_STATUSES[1:]) | {"unreadable"}
    assert [r["status"] for r in iter_records(tmp_path)] == ["ok"]


def test_retry_failed_command_default_is_every_status_but_ok(tmp_path, capsys):
    """The same default through `numaplace retry-failed results/<study>` (its argparse
    default must stay None, i.e. set_aside_failed's "all but ok")."""
    status_of = _study_of_every_status(tmp_path)
    assert numaplace_main(["retry-failed", str(tmp_path)]) == 0
    printed = sorted(capsys.readouterr().out.splitlines())
    assert printed == sorted(f"set aside {rid} ({s})" for rid, s in status_of.items() if s != "ok")


def test_retry_failed_with_an_empty_status_list_never_sets_aside_ok_runs(tmp_path, capsys):
    """Guards an empty --status list read as 'no filter' (argparse nargs='*' gives [],
    set_aside_failed tested `statuses and ...`): every record, ok ones included, would be
    set aside. The command refuses a bare --status (naming it); the library sets aside
    nothing for an empty list."""
    status_of = _study_of_every_status(tmp_path)
    with pytest.raises(SystemExit) as e:
        numaplace_main(["retry-failed", str(tmp_path), "--status"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert err.splitlines()[-1].endswith("error: argument --status: expected at least one argument")
    assert set_aside_failed(tmp_path, []) == []
    assert len(list(iter_records(tmp_path))) == len(status_of)
    assert [r["status"] for r in iter_records(tmp_path)].count("ok") == 1


# -- 4. `distinct` on a platform whose nodes differ in size --------------------------------

UNEVEN = """\
# four nodes, one of them smaller (e.g. CPUs 16-17 offline): node 2 is not like the others
name: uneven
launcher: numactl
nodes:
  - {id: 0, cpus: "0-5", memory_mb: 8192}
  - {id: 1, cpus: "6-11", memory_mb: 8192}
  - {id: 2, cpus: "12-15", memory_mb: 8192}
  - {id: 3, cpus: "18-23", memory_mb: 8192}
distances:
  - [10, 20, 20, 20]
  - [20, 10, 20, 20]
  - [20, 20, 10, 20]
  - [20, 20, 20, 10]
"""


def test_distinct_does_not_merge_nodes_of_different_size(tmp_path):
    """Guards symmetry by distances alone: with all distances equal, the 4-CPU node 2
    would be taken as interchangeable with the 6-CPU nodes, and `distinct` would keep a
    single pair where there are two kinds (with node 2, without it)."""
    f = tmp_path / "uneven.yaml"
    f.write_text(UNEVEN)
    topo = load_platform(f)
    exp = {"name": "t", "placements": [{"layout": "2/2", "nodes": "all-choices", "distinct": True}]}
    ps = expand_experiment(exp, {}, topo, "study.yaml", "experiments[0]")
    assert [(p.shape, p.cpulist, p.id) for p in ps] == [
        ("2/2 on 0,1", "0-1,6-7", "c0-1.6-7_loc_p_nc"),
        ("2/2 on 0,2", "0-1,12-13", "c0-1.12-13_loc_p_nc")]
    autos = topo.automorphisms()
    assert len(autos) == 6 and all(a[2] == 2 for a in autos)     # permutations of 0, 1, 3
    exp["placements"][0]["distinct"] = False
    assert len(expand_experiment(exp, {}, topo, "study.yaml", "experiments[0]")) == 6


# -- 5. PBS Pro's `qstat -f` text, read through the Torque-style path ------------------------

PBSPRO_QSTAT_F = """\
Job Id: 1211.pbs01
    Job_Name = np-measure
    Job_Owner = alice@login01
    resources_used.cpupercent = 2350
    resources_used.cput = 00:04:41
    resources_used.mem = 412236kb
    resources_used.ncpus = 24
    resources_used.vmem = 1268420kb
    resources_used.walltime = 00:00:12
    job_state = {state}
    queue = workq
    server = pbs01
    Checkpoint = u
    ctime = Tue Mar  4 10:12:01 2025
    Error_Path = login01:/home/alice/numaplace/logs/pbs/np-measure.7.1741083121.l
\tog
    exec_host = cn042/0*24
    exec_vnode = (cn042:ncpus=24:mem=1058816kb)
    Hold_Types = n
    Join_Path = oe
    Keep_Files = n
    Mail_Points = a
    mtime = Tue Mar  4 10:12:15 2025
    Output_Path = login01:/home/alice/numaplace/logs/pbs/np-measure.7.1741083121.
\tlog
    Priority = 0
    qtime = Tue Mar  4 10:12:01 2025
    Rerunable = True
    Resource_List.mem = 1034mb
    Resource_List.ncpus = 24
    Resource_List.nodect = 1
    Resource_List.place = excl
    Resource_List.select = 1:ncpus=24:mem=1034mb
    Resource_List.walltime = 00:03:00
    stime = Tue Mar  4 10:12:03 2025
    session_id = 48213
    jobdir = /home/alice
    substate = {substate}
    Variable_List = PBS_O_HOME=/home/alice,PBS_O_LANG=C.UTF-8,
\tPBS_O_LOGNAME=alice,PBS_O_PATH=/home/alice/numaplace/.venv/bin:/usr/bin:/bin,
\tPBS_O_MAIL=/var/mail/alice,PBS_O_SHELL=/bin/bash,
\tPBS_O_WORKDIR=/home/alice/numaplace,PBS_O_SYSTEM=Linux,PBS_O_QUEUE=workq,
\tPBS_O_HOST=login01
    comment = Job run at Tue Mar 04 at 10:12 on (cn042:ncpus=24:mem=1058816kb)
    etime = Tue Mar  4 10:12:01 2025
    run_count = 1
{exit}    Submit_arguments = -V -N np-measure -j oe -o /home/alice/numaplace/logs/pbs/np-
\tmeasure.7.1741083121.log -l select=1:ncpus=24:mem=1034mb -l walltime=00:03
\t:00 -l place=excl /home/alice/numaplace/.snakemake/tmp.k2x9/snakejob.measu
\tre.7.sh
    project = _pbs_project_default
"""


def pbspro_text(state, exit_status=None):
    """`qstat -f ID` of PBS Professional 2021-2022 (attribute layout of its Reference
    Guide; no server here): capitalised `Exit_status`, F for finished."""
    return PBSPRO_QSTAT_F.format(state=state, substate={"F": 92, "R": 42}[state],
                                 exit="" if exit_status is None else f"    Exit_status = {exit_status}\n")


def _fake_qstat(text, json_answer=(2, "", "qstat: invalid option -- 'F'\nusage:\n    qstat [-f] ...\n")):
    """`run` for pbs.job_status: plain `qstat -f` answers `text`; `-F json` is refused
    (a PBS Pro too old for it); no Slurm to ask."""
    def run(argv):
        import subprocess
        if "-F" in argv:
            return subprocess.CompletedProcess(argv, *json_answer)
        if argv[:2] == ["qstat", "-f"]:
            return subprocess.CompletedProcess(argv, 0, text, "")
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not expected here")
    return run, (lambda name: "/usr/bin/qstat" if name == "qstat" else None)


@pytest.mark.parametrize("dialect", ["torque", "auto"])
@pytest.mark.parametrize("state, exit_status, status, reason", [
    ("F", 0, "success", "job_state F (finished), exit status 0"),
    ("F", 271, "failed", "job_state F (finished), exit status 271 (killed by signal 15)"),
    ("F", 1, "failed", "job_state F (finished), exit status 1"),
    ("R", None, "running", "job_state R (running)"),
])
def test_pbspro_plain_qstat_f_text(dialect, state, exit_status, status, reason):
    """Guards the text path reading only Torque's lower-case `exit_status` (or only
    Torque's state codes): PBS Pro's `Exit_status = 0` of an F job would be missed, the
    job judged failed ("no exit status") and Snakemake would stop on a good run."""
    text = pbspro_text(state, exit_status)
    assert pbs.DIALECTS["torque"].parse_qstat(text, "1211.pbs01") == (state, exit_status)
    run, which = _fake_qstat(text)
    st = pbs.job_status("1211.pbs01", dialect, run=run, which=which)
    assert (st.status, st.reason) == (status, reason)


HISTJOB = (35, "", "qstat: 1211.pbs01 Job has finished, use -x or -H to obtain historical job information\n")


@pytest.mark.parametrize("dialect", ["torque", "auto"])
@pytest.mark.parametrize("history, status, reason", [
    ((0, pbspro_text("F", 0), ""), "success", "job_state F (finished), exit status 0"),
    ((0, pbspro_text("F", 271), ""), "failed",
     "job_state F (finished), exit status 271 (killed by signal 15)"),
    (HISTJOB, "failed", "qstat: job has finished; qstat -x -f: exit 35 " + HISTJOB[2].strip()
     + ": exit status unknown, reported as failed"),
], ids=["history-exit0", "history-exit271", "history-fails-too"])
def test_pbspro_plain_qstat_f_of_a_finished_history_job_is_not_running_forever(dialect, history, status, reason):
    """Guards reading PBS Pro's answer for a finished job (job_history_enable on) to a
    plain `qstat -f` — exit 35, "Job has finished, use -x or -H ..." — as a failed qstat
    call: 'running' forever, the workflow never ends. The job is asked again with
    PBS Pro's history flag, `qstat -x -f`; if that fails too, it is failed."""
    import subprocess
    asked = []

    def run(argv):
        asked.append(argv)
        if "-F" in argv:
            return subprocess.CompletedProcess(argv, 2, "", "qstat: invalid option -- 'F'\n")
        return subprocess.CompletedProcess(argv, *(history if "-x" in argv else HISTJOB))
    st = pbs.job_status("1211.pbs01", dialect, run=run, which=lambda name: None)
    assert (st.status, st.reason) == (status, reason)
    assert asked == ([["qstat", "-fx", "-F", "json", "1211.pbs01"]] if dialect == "auto" else []) + \
        [["qstat", "-f", "1211.pbs01"], ["qstat", "-x", "-f", "1211.pbs01"]]


# -- 6. numa_maps of nodes 10 and above ----------------------------------------------------

# a real line of the NUMA VM (mg.W interleave-all, tests/fixtures/real/vm) as a 16-node
# machine writes it, and a membind to node 12
SIXTEEN = ("7f6e10243000 interleave:0-15 anon=14159 dirty=14159 active=0 "
           + " ".join(f"N{n}={885 if n < 15 else 884}" for n in range(16)) + " kernelpagesize_kB=4\n")
BIND12 = "7f6e143c8000 bind:12 anon=3000 dirty=3000 active=0 N10=2 N12=2990 N13=8 kernelpagesize_kB=4\n"


def test_numa_maps_nodes_10_and_above():
    """Guards reading one digit of N<node> (`N(\\d)`, k[1]): N12 would be counted on
    node 1, N10-N15 merged into node 1, and a membind to node 12 judged drifted."""
    real = (REAL / "vm" / "runs" / "mg.W.default.interleave-all.r1" / "numa_maps.peak.txt").read_text()
    assert "7f6e10243000 interleave:0-3 anon=14159 dirty=14159 active=0 N0=3540" in real
    m = parse_line(SIXTEEN)
    assert m.pages == {n: 885 if n < 15 else 884 for n in range(16)} and m.policy_nodes == "0-15"
    m = parse_line(BIND12)
    assert (m.policy, m.policy_nodes, m.pages) == ("bind", "12", {10: 2, 12: 2990, 13: 8})
    s = summarize(parse(BIND12))
    assert s["data_pages"] == {10: 2, 12: 2990, 13: 8}
    assert s["data_bytes"] == {10: 2 * 4096, 12: 2990 * 4096, 13: 8 * 4096}
    assert s["policies"] == {"bind:12": 3000 * 4096}


# -- 7. best and worst ranges that touch -----------------------------------------------------

def _write_group(root, template, placement_id, shape, times):
    """One placement's runs: copies of a real record with ids, placement and NPB
    time/Mop/s replaced (as tests/test_real_records.py builds its sets)."""
    for i, t in enumerate(times, 1):
        rec = copy.deepcopy(template)
        rec["placement"] = {**rec["placement"], "id": placement_id, "shape": shape}
        rec["run_id"] = f"{rec['bench']}.{rec['class']}.{rec['variant']}.{placement_id}.r{i}"
        rec["rep"] = i
        rec["output"] = {**rec["output"], "time_s": t, "mops": round(1000.0 / t, 2)}
        d = root / "runs" / rec["run_id"]
        d.mkdir(parents=True)
        (d / "record.json").write_text(json.dumps(rec))


def test_touching_best_and_worst_ranges_are_within_noise(tmp_path):
    """Guards a strict overlap test (`>` for `>=`): NPB prints times to 0.01 s, so the
    best's slowest run and the worst's fastest one often print the same time; ranges that
    share that point overlap, and the answer must not say "beyond noise"."""
    template = read_record(REAL / "local" / "runs" / "cg.W.default.c0-1_loc_p_nc.r1" / "record.json")
    _write_group(tmp_path, template, "near", "placement near", [10.00, 10.05, 10.10])
    _write_group(tmp_path, template, "far", "placement far", [10.10, 10.20, 10.30])
    bw = build_tables(tmp_path)["best_worst"]
    (row,) = bw.to_dict("records")
    assert (row["best_placement_id"], row["worst_placement_id"]) == ("near", "far")
    assert (row["best_max_s"], row["worst_min_s"]) == (10.10, 10.10)
    assert bool(row["ranges_overlap"]) is True and row["differs"] == "no"
    assert answer_rows(bw)[0]["noise"] == "within noise"


# -- 8. a placement shared by two experiments ---------------------------------------------------

def _study(experiments, reps=2):
    cfg = {"study": "t", "platform": "nehalem", "benchmarks": ["cg"], "classes": ["B"],
           "repetitions": reps, "experiments": experiments}
    return Study(cfg, "s.yaml", REPO / "config")


SHARED = [{"name": "two-nodes", "placements": [{"layout": "2/2"}]},
          {"name": "explicit", "placements": [{"cpus": "0-1,4-5"}, {"cpus": "0-1"}]}]


def test_shared_placement_runs_once_per_repetition_naming_both_experiments():
    """Guards run ids or plan rows per experiment: the same placement (layout 2/2 on
    nehalem is CPUs 0-1,4-5, as the second experiment writes it) would be measured twice
    per repetition, or its plan row name only the last experiment."""
    st = _study(SHARED)
    rows = [r.row() for r in st.runs]
    shared = [r for r in rows if r["placement_id"] == "c0-1.4-5_loc_p_ts"]
    assert [(r["rep"], r["experiment"]) for r in shared] == [(1, "two-nodes,explicit"), (2, "two-nodes,explicit")]
    assert [(r["rep"], r["experiment"]) for r in rows if r["placement_id"] == "c0-1_loc_p_ts"] == \
        [(1, "explicit"), (2, "explicit")]
    assert len(rows) == len({r["run_id"] for r in rows}) == 4


def test_run_ids_of_a_shared_placement_are_exact_and_stable():
    """Guards run ids that depend on the experiment (its name, its position, how it wrote
    the placement): adding or reordering experiments would rename runs, and Snakemake
    would measure finished ones again."""
    want = ["cg.B.default.c0-1.4-5_loc_p_ts.r1", "cg.B.default.c0-1.4-5_loc_p_ts.r2"]
    alone = [r.run_id for r in _study(SHARED[:1]).runs]
    both = [r.run_id for r in _study(SHARED).runs]
    swapped = _study(SHARED[::-1])
    assert alone == want
    assert both[:2] == want and sorted(r.run_id for r in swapped.runs) == sorted(both)
    assert swapped.run(want[0]).experiments == ("explicit", "two-nodes")
    assert swapped.run_params(want[0])["run_id"] == want[0]


# -- a non-contiguous CPU list in the launcher's argv ----------------------------------------

@pytest.mark.parametrize("launcher, binding, argv, env", [
    ("taskset", "process", ["taskset", "-c", "0,2,5-6", "./cg.B.x"], {"OMP_NUM_THREADS": "4"}),
    ("numactl", "process", ["numactl", "--physcpubind=0,2,5-6", "--localalloc", "./cg.B.x"],
     {"OMP_NUM_THREADS": "4"}),
    ("taskset", "threads", ["taskset", "-c", "0,2,5-6", "./cg.B.x"],
     {"OMP_NUM_THREADS": "4", "OMP_PLACES": "{0},{2},{5},{6}", "OMP_PROC_BIND": "true"}),
])
def test_non_contiguous_cpu_list_reaches_the_launcher_whole(launcher, binding, argv, env):
    """Guards a CPU list written as one range (first-last: "0-6") or cut to its first
    range: the benchmark would run on CPUs outside its placement."""
    topo = load_platform(REPO / "config" / "platforms" / "x4600.yaml")
    exp = {"name": "t", "launcher": launcher, "binding": [binding], "placements": [{"cpus": "0,2,5-6"}]}
    (p,) = expand_experiment(exp, {}, topo, "s.yaml", "experiments[0]")
    assert p.cpus == (0, 2, 5, 6)
    assert command(p, "./cg.B.x") == (argv, env)
    assert LAUNCHERS[launcher].probe(p) == argv[:-1] + ["true"]
