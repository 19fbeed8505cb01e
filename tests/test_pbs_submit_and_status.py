"""PBS glue (numaplace.cluster.pbs) in this process: the qsub line of a job and the
verdict on a job id, with the reason `numaplace pbs-status` prints for a failed job
(tests/test_pbs.py checks the profiles through the `numaplace` command, in a process
mutmut cannot follow). Several tests pin what the mutation run left alive
(tests/benchmarks/mutation-survivors.md names the test that kills each).

Fakes answer one exact argv each (job id included), as qstat, scontrol and sacct would."""
from __future__ import annotations

import json
import subprocess

import pytest

from numaplace.cluster import pbs

pytestmark = pytest.mark.unit


def fake(answers, tools=("qstat",)):
    """`run` answering {argv tuple: (rc, stdout, stderr)} for exactly that argv (anything
    else: not installed), the argvs asked, and a `which` knowing `tools`."""
    asked = []

    def run(argv):
        asked.append(list(argv))
        rc, out, err = answers.get(tuple(argv), (127, "", f"{argv[0]}: not expected here"))
        return subprocess.CompletedProcess(argv, rc, out, err)
    return run, (lambda name: f"/usr/bin/{name}" if name in tools else None), asked


def torque_text(state, exit_status=None):
    return (f"Job Id: 41.ctl\n    Job_Name = np-measure\n    job_state = {state}\n    queue = batch\n"
            + ("" if exit_status is None else f"    exit_status = {exit_status}\n"))


def pbspro_json(jobs):
    return json.dumps({"pbs_version": "2022.1.3", "Jobs": {
        jid: {"job_state": st, **({} if ex is None else {"Exit_status": ex})} for jid, (st, ex) in jobs.items()}})


JSON = ("qstat", "-fx", "-F", "json")
FULL = ("qstat", "-f")
NO_JSON = (2, "", "qstat: invalid option -- 'F'\n")


# -- the qsub line --------------------------------------------------------------------

MEASURE = {"rule": "measure", "threads": 24, "jobid": 17,
           "resources": {"cpus_per_task": 24, "mem_mb": 2399, "runtime": 25, "exclusive": 1}}


def test_pbspro_is_the_default_dialect_of_the_submit_line():
    assert pbs.qsub_argv(MEASURE) == ["qsub", "-V", "-N", "np-measure", "-j", "oe",
                                      "-l", "select=1:ncpus=24:mem=2399mb", "-l", "walltime=00:25:00",
                                      "-l", "place=excl"]


@pytest.mark.parametrize("dialect, resources, expected", [
    ("pbspro", {"cpus_per_task": 4}, ["-l", "select=1:ncpus=4"]),
    ("pbspro", {"cpus_per_task": 4, "mem_mb": 100}, ["-l", "select=1:ncpus=4:mem=100mb"]),
    ("pbspro", {"cpus_per_task": 4, "runtime": 61}, ["-l", "select=1:ncpus=4", "-l", "walltime=01:01:00"]),
    ("torque", {"cpus_per_task": 4}, ["-l", "nodes=1:ppn=4"]),
    ("torque", {"cpus_per_task": 4, "mem_mb": "<TBD>"}, ["-l", "nodes=1:ppn=4"]),
    ("torque", {"cpus_per_task": 4, "runtime": 2.5}, ["-l", "nodes=1:ppn=4,walltime=00:03:00"]),
    ("torque", {"cpus_per_task": 4, "mem_mb": 100}, ["-l", "nodes=1:ppn=4,mem=100mb"]),
])
def test_resources_left_unknown_are_not_asked_for(dialect, resources, expected):
    """A job without a memory size ("<TBD>" or none) or a runtime asks the batch system
    for neither (no `mem=`, no `walltime=`); a fractional runtime is rounded up."""
    argv = pbs.qsub_argv({"rule": "measure", "resources": resources}, dialect)
    assert argv == ["qsub", "-V", "-N", "np-measure", "-j", "oe"] + expected


@pytest.mark.parametrize("props, ppn", [
    ({"threads": 8, "resources": {"cpus_per_task": 24}}, 24),   # the job's CPUs, not its threads
    ({"threads": 8, "resources": {}}, 8),
    ({"threads": "<TBD>", "resources": {"cpus_per_task": None}}, 1),
    ({}, 1),
])
def test_cpus_asked_for(props, ppn):
    assert pbs.qsub_argv({"rule": "x", **props}, "torque")[-1] == f"nodes=1:ppn={ppn}"


def test_exclusive_jobs_and_queue_and_account():
    """An exclusive job gets the dialect's exclusive arguments unless the profile gives its
    own; the queue and account are the PBS ones where set, else the Slurm ones of the
    platform's cluster section; no log → no -o."""
    res = {"cpus_per_task": 2, "exclusive": 1, "slurm_partition": "batch", "slurm_account": "p1"}
    assert pbs.qsub_argv({"rule": "r", "resources": res}, "pbspro")[6:] == \
        ["-l", "select=1:ncpus=2", "-l", "place=excl", "-q", "batch", "-A", "p1"]
    res.update(pbs_queue="workq", pbs_account="p2")
    assert pbs.qsub_argv({"rule": "r", "resources": res}, "pbspro", exclusive_args=["-n"])[6:] == \
        ["-l", "select=1:ncpus=2", "-n", "-q", "workq", "-A", "p2"]
    assert pbs.qsub_argv({"rule": "r", "resources": {"cpus_per_task": 2, "exclusive": 1}}, "torque")[6:] == \
        ["-l", "nodes=1:ppn=2"]


@pytest.mark.parametrize("props, name", [
    ({"rule": "measure"}, "np-measure"),
    ({"rule": "npb_build_serial_init"}, "np-npb_build_se"),     # PBS job names: 15 characters
    ({"rule": "Make Tables"}, "np-Make_Tables"),
    ({"type": "group", "groupid": "runs"}, "np-g-runs"),
    ({"type": "group"}, "np-g-job"),
])
def test_job_names(props, name):
    assert pbs.job_name(props) == name


def test_the_jobscript_properties_are_read(tmp_path):
    script = tmp_path / "snakejob.measure.17.sh"
    script.write_text('#!/bin/sh\n# properties = {"rule": "measure", "jobid": 17}\nexec true\n')
    assert pbs.read_job_properties(script) == {"rule": "measure", "jobid": 17}
    script.write_text("#!/bin/sh\n#  properties = {}\nexec true\n")
    with pytest.raises(ValueError, match=r"snakejob\.measure\.17\.sh: no '# properties = ' line"):
        pbs.read_job_properties(script)


def test_extra_arguments_split_as_a_shell_would():
    assert pbs.split_args("-W group_list=g1 -l 'software=a b'") == ["-W", "group_list=g1", "-l", "software=a b"]
    assert pbs.split_args("") == [] and pbs.split_args(None) == []


def test_an_unknown_dialect_names_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown PBS dialect 'lsf' \(known: pbspro, torque\)$"):
        pbs.dialect("lsf")


# -- exit statuses ------------------------------------------------------------------------

@pytest.mark.parametrize("code, status, why", [
    (0, "success", ", exit status 0"),
    (1, "failed", ", exit status 1"),
    (128, "failed", ", exit status 128"),
    (129, "failed", ", exit status 129 (killed by signal 1)"),
    (137, "failed", ", exit status 137 (killed by signal 9)"),
    (256, "failed", ", exit status 256"),     # no signal 0, and no shell exits with 256
    (257, "failed", ", exit status 257 (killed by signal 1)"),
    (-1, "failed", ", exit status -1 (the batch system could not run the job, or killed it at a limit)"),
])
def test_exit_status_explained(code, status, why):
    st = pbs.DIALECTS["torque"].verdict("C", code)
    assert (st.status, st.reason) == (status, "job_state C (completed)" + why)


# -- job_status -----------------------------------------------------------------------

def test_auto_is_the_default_dialect_and_asks_pbspro_first():
    run, which, asked = fake({JSON + ("7.s",): NO_JSON, FULL + ("7.s",): (0, torque_text("R"), "")})
    assert pbs.job_status("7.s", run=run, which=which).status == "running"
    assert asked == [list(JSON + ("7.s",)), list(FULL + ("7.s",))]


def test_the_asked_job_is_read_from_an_answer_about_several():
    text = pbspro_json({"8.s": ("R", None), "9.s": ("F", 3)})
    run, which, _ = fake({JSON + ("9.s",): (0, text, "")})
    st = pbs.job_status("9.s", "pbspro", run=run, which=which)
    assert (st.status, st.reason) == ("failed", "job_state F (finished), exit status 3")
    assert pbs.DIALECTS["pbspro"].parse_qstat(text, "8.s") == ("R", None)
    assert pbs.DIALECTS["pbspro"].parse_qstat(text, "10.s") == ("R", None)       # an array's parent: its first
    assert pbs.DIALECTS["pbspro"].parse_qstat('{"Jobs": {}}', "10.s") == (None, None)


def test_answers_without_a_state_or_exit_status_read_as_none():
    """Broken JSON (some PBS Pro versions) and qstat -f text read field by field."""
    pro = pbs.DIALECTS["pbspro"]
    assert pro.parse_qstat('{"Jobs": {"1.s": {"job_state": "F", "Exit_status": -2, "V": "a\tb"', "1.s") == ("F", -2)
    assert pro.parse_qstat('{"Jobs": {"1.s": {"job_state": "R", "V": "a\tb"', "1.s") == ("R", None)
    assert pro.parse_qstat('{"Jobs": {"1.s": {"V": "a\tb"', "1.s") == (None, None)
    torque = pbs.DIALECTS["torque"]
    assert torque.parse_qstat("Job Id: 1.s\n    queue = batch\n    exit_status = 0\n") == (None, 0)
    assert torque.parse_qstat(torque_text("C", -11)) == ("C", -11)


def test_a_qstat_that_fails_is_no_answer_even_with_output():
    """A non-zero qstat is never read as the job's state (transient trouble: running)."""
    run, which, _ = fake({FULL + ("41",): (1, torque_text("C", 0), "qstat: communication failure\n")})
    st = pbs.job_status("41", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("running", "qstat failed, assuming still running: qstat -f: exit 1 "
                                                 "qstat: communication failure")


def test_every_failed_qstat_is_in_the_reason_cut_to_200_characters():
    run, which, _ = fake({JSON + ("41",): (1, "", "x" * 300), FULL + ("41",): (1, "", "Connection refused\n")})
    st = pbs.job_status("41", run=run, which=which)
    assert (st.status, st.reason) == ("running", "qstat failed, assuming still running: qstat -fx -F json: "
                                                 f"exit 1 {'x' * 200}; qstat -f: exit 1 Connection refused")


def test_text_from_a_pbspro_qstat_is_no_answer_in_the_pbspro_dialect():
    """PBS Pro's dialect reads JSON only: a qstat printing text (exit 0) is not taken for a
    job that has gone; the job is still running."""
    run, which, _ = fake({JSON + ("5.s",): (0, "qstat: Warning: something odd\n", "")})
    assert pbs.job_status("5.s", "pbspro", run=run, which=which).status == "running"


def test_a_silent_torque_wrapper_means_the_job_has_gone():
    """Slurm's qstat wrapper exits 0 and prints nothing for a job it forgot: vanished
    (success by default); exit 1 with nothing printed is a failed qstat (running)."""
    run, which, _ = fake({FULL + ("41",): (0, "", "")})
    st = pbs.job_status("41", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("success", "unknown to qstat (); reported as success")
    run, which, _ = fake({FULL + ("41",): (1, "", "")})
    assert pbs.job_status("41", "torque", run=run, which=which).status == "running"


@pytest.mark.parametrize("rc, err", [(153, ""), (1, "qstat: Unknown Job Id 9.s\n"), (2, "qstat: UNKNOWN JOB 9.s")])
def test_a_job_qstat_does_not_know_has_vanished(rc, err):
    run, which, _ = fake({FULL + ("9.s",): (rc, "", err)})
    st = pbs.job_status("9.s", "torque", "failed", run=run, which=which)
    assert (st.status, st.reason) == ("failed", f"unknown to qstat ({err.strip()}); reported as failed")


def test_a_vanished_job_is_asked_of_slurm_where_slurm_runs():
    scontrol = "JobId=41 JobName=np-measure JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:01"
    run, which, asked = fake({FULL + ("41.ctl",): (153, "", ""),
                              ("scontrol", "show", "job", "-o", "41"): (0, scontrol, "")},
                             tools=("qstat", "scontrol"))
    st = pbs.job_status("41.ctl", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("failed", "unknown to qstat; Slurm FAILED, exit code 3:0")


@pytest.mark.parametrize("rc, err", [(35, ""), (1, "qstat: 1.s JOB HAS FINISHED, use -x or -H\n")])
def test_a_finished_pbspro_job_is_asked_again_with_its_history(rc, err):
    """PBS Pro read through the text path: exit 35 or its message, whichever is there."""
    finished = "Job Id: 1.s\n    job_state = F\n    Exit_status = 0\n"
    run, which, asked = fake({FULL + ("1.s",): (rc, "", err), ("qstat", "-x", "-f", "1.s"): (0, finished, "")})
    st = pbs.job_status("1.s", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("success", "job_state F (finished), exit status 0")
    assert asked[-1] == ["qstat", "-x", "-f", "1.s"]


def test_a_finished_job_whose_history_fails_is_failed_with_both_messages_cut():
    run, which, _ = fake({FULL + ("1.s",): (35, "", "Job has finished"),
                          ("qstat", "-x", "-f", "1.s"): (1, "", "y" * 300)})
    st = pbs.job_status("1.s", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("failed", f"qstat: job has finished; qstat -x -f: exit 1 {'y' * 200}: "
                                                "exit status unknown, reported as failed")


def test_an_ended_job_without_exit_status():
    """Torque's C without exit_status: Slurm settles it where it runs (the job's own id
    asked), else failed; a state no dialect knows is failed and said so."""
    sc = ("scontrol", "show", "job", "-o", "41")
    answers = {FULL + ("41.ctl",): (0, torque_text("C"), ""), sc: (0, "JobId=41 JobState=COMPLETED ExitCode=0:0", "")}
    run, which, _ = fake(answers, tools=("qstat", "scontrol"))
    st = pbs.job_status("41.ctl", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("success", "job_state C without exit status; Slurm COMPLETED, exit code 0:0")
    run, which, _ = fake(answers)
    st = pbs.job_status("41.ctl", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("failed", "job_state C: no exit status")
    run, which, _ = fake({FULL + ("41.ctl",): (0, torque_text("Z", 0), "")})
    st = pbs.job_status("41.ctl", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("failed", "job_state Z: unknown job_state")


# -- Slurm, for Slurm's Torque wrappers ----------------------------------------------------

SACCT = ("sacct", "-X", "-n", "-P", "-j", "41", "-o", "State,ExitCode")


@pytest.mark.parametrize("line, status, reason", [
    ("COMPLETED|0:0\n", "success", "Slurm COMPLETED, exit code 0:0"),
    ("FAILED|2:0\n", "failed", "Slurm FAILED, exit code 2:0"),
    ("CANCELLED by 1000|0:15\n", "failed", "Slurm CANCELLED, exit code 0:15"),
    ("TIMEOUT|0:1\nTIMEOUT|0:1\n", "failed", "Slurm TIMEOUT, exit code 0:1"),
    ("PENDING|0:0\n", "running", "Slurm PENDING"),
    ("OUT_OF_MEMORY|\n", "failed", "Slurm OUT_OF_MEMORY"),
    ("NODE_FAIL\n", "failed", "Slurm NODE_FAIL"),
])
def test_sacct_when_scontrol_no_longer_knows_the_job(line, status, reason):
    """scontrol forgets a job minutes after it ends (MinJobAge); sacct's accounting
    still knows it. `41.ctl`: the Torque wrapper's id of Slurm job 41."""
    run, which, asked = fake({("scontrol", "show", "job", "-o", "41"): (1, "", "slurm_load_jobs error: Invalid job id"),
                              SACCT: (0, line, "")}, tools=("scontrol", "sacct"))
    st = pbs.slurm_verdict("41.ctl", run, which)
    assert (st.status, st.reason) == (status, reason)
    assert asked[-1] == list(SACCT)


@pytest.mark.parametrize("answer", [(0, "", ""), (0, "\n", ""), (1, "COMPLETED|0:0\n", "sacct: error"),
                                    (0, "|0:0\n", "")])       # a record without a State
def test_sacct_without_an_answer_leaves_the_job_undecided(answer):
    run, which, _ = fake({SACCT: answer}, tools=("sacct",))
    assert pbs.slurm_verdict("41", run, which) is None


def test_without_slurm_nothing_is_asked():
    run, which, asked = fake({})
    assert pbs.slurm_verdict("41", run, which) is None and asked == []


def test_scontrol_states():
    def verdict(text):
        run, which, _ = fake({("scontrol", "show", "job", "-o", "41"): (0, text, "")}, tools=("scontrol",))
        return pbs.slurm_verdict("41", run, which)
    assert verdict("JobId=41 JobState=RUNNING Reason=None ExitCode=0:0") == pbs.JobStatus("running", "Slurm RUNNING")
    assert verdict("JobId=41 JobState=PREEMPTED ExitCode=0:0").status == "running"
    assert verdict("JobId=41 JobState=BOOT_FAIL Reason=x") == pbs.JobStatus("failed", "Slurm BOOT_FAIL")
    assert verdict("JobId=41 OldJobState=FAILED") is None       # a whole word only


# -- running qstat ----------------------------------------------------------------------

def test_a_command_is_run_and_a_missing_or_hanging_one_is_a_failed_call(monkeypatch, tmp_path):
    p = pbs._run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (p.returncode, p.stdout, p.stderr) == (3, "out\n", "err\n")
    p = pbs._run([str(tmp_path / "qstat"), "-f", "1"])
    assert p.returncode == 127 and "qstat" in p.stderr and p.stdout == ""

    def hang(argv, **kw):
        raise subprocess.TimeoutExpired(argv, kw.get("timeout"))
    monkeypatch.setattr(subprocess, "run", hang)
    p = pbs._run(["qstat", "-f", "1"])
    assert (p.returncode, p.stdout, p.stderr) == (124, "", "qstat timed out")


def test_without_qstat_installed_a_job_reads_as_running(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    st = pbs.job_status("1.s", "torque")
    assert st.status == "running" and st.reason.startswith("qstat failed, assuming still running: qstat -f: exit 127 ")


def test_a_failed_call_names_its_command_and_a_hang_is_cut_after_a_minute(monkeypatch, tmp_path):
    """The stand-in result of a missing or hanging command still names the command (as
    subprocess.run's would); qstat & co. are given 60 s, never left to hang pbs-status."""
    argv = [str(tmp_path / "qstat"), "-f", "1"]
    assert pbs._run(argv).args == argv
    timeouts = []

    def hang(argv, **kw):
        timeouts.append(kw.get("timeout"))
        raise subprocess.TimeoutExpired(argv, kw.get("timeout"))
    monkeypatch.setattr(subprocess, "run", hang)
    assert pbs._run(["qstat", "-f", "1"]).args == ["qstat", "-f", "1"]
    assert timeouts == [60]


def test_failed_qstats_without_a_message_add_none_to_the_reason():
    """An empty stderr is reported as nothing at all, for a failed qstat (running) and for
    a finished job whose history (-x) failed (failed)."""
    run, which, _ = fake({FULL + ("41",): (1, "", "")})
    st = pbs.job_status("41", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("running", "qstat failed, assuming still running: qstat -f: exit 1 ")
    run, which, _ = fake({FULL + ("1.s",): (35, "", ""), ("qstat", "-x", "-f", "1.s"): (1, "", "")})
    st = pbs.job_status("1.s", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("failed", "qstat: job has finished; qstat -x -f: exit 1 : "
                                                "exit status unknown, reported as failed")


def test_a_vanished_jobs_qstat_message_is_cut_to_120_characters():
    run, which, _ = fake({FULL + ("9.s",): (153, "", "z" * 300)})
    st = pbs.job_status("9.s", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("success", f"unknown to qstat ({'z' * 120}); reported as success")


def test_a_vanished_job_asks_slurm_only_where_the_given_which_finds_it(monkeypatch, tmp_path):
    """`which` decides whether Slurm is there, for a vanished job too: an scontrol on PATH
    that `which` does not know is not asked."""
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\nexit 0\n")
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    run, which, asked = fake({FULL + ("41",): (153, "", ""),
                              ("scontrol", "show", "job", "-o", "41"): (0, "JobId=41 JobState=FAILED", "")})
    st = pbs.job_status("41", "torque", run=run, which=which)
    assert (st.status, st.reason) == ("success", "unknown to qstat (); reported as success")
    assert asked == [list(FULL + ("41",))]
