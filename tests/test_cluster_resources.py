"""What a cluster job asks for (numaplace.cluster.resources) and the exact numbers of the
lines that say why one failed (numaplace.cluster.why): walltimes, memory units, the
boundaries of the pre-submission checks."""
from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest

from cluster.common import fake
from numaplace.cluster import resources, why
from numaplace.cluster.resources import ClusterSettings


def study(cluster=None, cpus=4):
    return SimpleNamespace(name="quick", topology=SimpleNamespace(cpus=list(range(cpus)), cluster=cluster or {}),
                           chunks=[])


def run_of(bench, cls, threads, rid="r"):
    return SimpleNamespace(run_id=rid, bench=bench, cls=cls, placement=SimpleNamespace(threads=threads))


# -- resources ---------------------------------------------------------------------------

def test_chunk_walltime_adds_overheads_and_rounds_up_to_whole_minutes():
    """cg.B (600 s serial) on 2 threads and cg.A (15 s) on 1: 120 + (30 + 3·600/2) + (30 + 3·15)
    = 1125 s = 18.75 min → 19; scaled by 1.5: 28.125 → 29; 8 threads count as 4."""
    s = ClusterSettings(cpus_per_node=8)
    assert resources.chunk_runtime_minutes([("cg", "B", 2), ("cg", "A", 1)], s) == 19
    assert resources.chunk_runtime_minutes([("cg", "B", 2), ("cg", "A", 1)],
                                           ClusterSettings(cpus_per_node=8, runtime_scale=1.5)) == 29
    assert resources.chunk_runtime_minutes([("cg", "B", 8)], s) == 10          # 120 + 30 + 1800/4 = 600 s
    assert resources.chunk_runtime_minutes([], s) == 2                        # the job's own 120 s
    assert resources.run_runtime_minutes("cg", "B", 2, s) == 18               # 1050 s = 17.5 min
    with pytest.raises(ValueError, match="no runtime/memory estimate for cg.Z"):
        resources.chunk_runtime_minutes([("cg", "Z", 1)], s)


def test_run_memory_is_a_quarter_over_the_resident_size_plus_the_runner_capped_by_the_node():
    """cg.B resides in 420 MiB: ⌈525⌉ + 1024 = 1549 MiB; a 1000 MiB node caps it."""
    assert resources.run_mem_mb("cg", "B", ClusterSettings(cpus_per_node=4)) == 1549
    assert resources.run_mem_mb("mg", "A", ClusterSettings(cpus_per_node=4)) == 1599
    assert resources.run_mem_mb("cg", "B", ClusterSettings(cpus_per_node=4, mem_mb_per_node=1000)) == 1000


def test_a_measure_job_asks_for_its_largest_runs_memory_and_the_whole_node():
    """Runs of a chunk run one at a time: the job's memory is its largest run's, not their sum."""
    st = study({"cpus_per_node": 64})
    runs = [run_of("cg", "B", 2, "a"), run_of("mg", "A", 2, "b"), run_of("cg", "S", 1, "c")]
    assert resources.measure_mem_mb(st, runs) == 1599
    assert resources.node_cpus(st) == 64 and resources.node_cpus(study(cpus=6)) == 6
    assert resources.measure_runtime(st, runs[:1]) == 18


def test_cluster_settings_of_a_platform_and_the_queue_it_names():
    """The platform's cluster section over the topology's CPUs; partition and account only where set."""
    s = ClusterSettings.of(SimpleNamespace(cpus=[0, 1, 2, 3], cluster={"cpus_per_node": 48, "mem_mb_per_node": 192000,
                                                                         "partition": "numa", "account": "proj7"}))
    assert s == ClusterSettings(48, 192000, "numa", "proj7", 1.0)
    assert ClusterSettings.of(SimpleNamespace(cpus=[0, 1], cluster=None)) == ClusterSettings(2, None, "", "", 1.0)
    assert resources.queue_resources(study({"partition": "numa", "account": "proj7"})) == \
        {"slurm_partition": "numa", "slurm_account": "proj7"}
    assert resources.queue_resources(study({"account": "proj7"})) == {"slurm_account": "proj7"}
    assert resources.queue_resources(study()) == {}


# -- why: durations, memory, Slurm's words ----------------------------------------------------

def test_scheduler_memory_sizes_read_as_mib_rounded_up():
    """Slurm's ReqMem/MinMemoryNode: K/M/G/T in binary units (1 G = 1024 MiB), n/c per node/CPU."""
    cases = {"1034M": 1034, "4G": 4096, "1.5G": 1536, "1T": 1024 ** 2, "2000Mn": 2000, "100": 100,
             "512K": 1, "1010K": 1, "2048Kc": 2, "8gb": 8192, "": None, "UNLIMITED": None}
    assert {t: why._mem_mb(t) for t in cases} == cases


def test_durations_read_as_minutes_rounded_up():
    """Days, hours, minutes, seconds: a started minute counts."""
    assert [why.minutes(t) for t in ("2-01:00:00", "01:30:01", "10:00", "0:59", "00:00:00", "45")] == \
        [2 * 1440 + 60, 91, 10, 1, 0, 45]


def test_slurm_failure_keeps_only_words_that_say_something():
    """Reason None and exit code 0:0 say nothing; the job id's step (.batch) is not asked."""
    out = "JobId=77 JobState=CANCELLED Reason=None ExitCode=0:0 TimeLimit=01:00:00 NodeList=(null) MinMemoryNode=2G"
    run, which = fake({("scontrol", "show", "job", "-o", "77"): (0, out, "")})
    f = why.slurm_failure("77.batch", None, run, which)
    assert f == why.Failure("cancelled", "Slurm", "77.batch", "CANCELLED", 60, 2048, "")
    assert run.asked == [["scontrol", "show", "job", "-o", "77"]]
    out = "JobId=78 JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 TimeLimit=5 NodeList=n3 MinMemoryNode=100M"
    run, which = fake({("scontrol", "show", "job", "-o", "78"): (0, out, "")})
    assert why.slurm_failure("78", None, run, which) == \
        why.Failure("failed", "Slurm", "78", "FAILED, reason NonZeroExitCode, exit code 1:0", 5, 100, "n3")


def pbs_job(**attrs):
    return json.dumps({"Jobs": {"12.srv": {"job_state": "F", **attrs}}})


def test_pbs_causes_at_their_boundaries():
    """Used exactly the limit with a non-zero exit is a walltime kill; a clean exit is not;
    exit -10 (the job's files could not be staged) is a refusal."""
    def cause(**a):
        f = why.pbs_failure("12.srv", why.pbs_facts(pbs_job(**a)))
        return f.cause, f.limit_min, f.words
    lim = {"Resource_List": {"walltime": "00:05:00"}, "resources_used": {"walltime": "00:05:00"}}
    assert cause(Exit_status=271, **lim) == ("timeout", 5, "job_state F, Exit_status 271")
    assert cause(Exit_status=0, **lim)[0] == "failed"
    assert cause(Exit_status=-10)[0] == "rejected" and cause(Exit_status=-3)[0] == "failed"
    assert cause(Exit_status=-29, Resource_List={"walltime": "01:00:00"}) == \
        ("timeout", 60, "job_state F, Exit_status -29, killed at its walltime limit")
    assert cause(Exit_status=1, comment="job killed: mem 9gb exceeded limit 8gb")[0] == "out-of-memory"


def test_pbs_status_line_for_memory_and_a_job_that_is_no_chunk():
    """Out of memory: the line says the limit and suggests twice it; a build job is named by its output."""
    f = why.Failure("out-of-memory", "Slurm", "6", "OUT_OF_MEMORY", 4, 2000, "vm")
    text = why.line(f, "job npb_build (cg.S.x)")
    assert text == ("numaplace: job npb_build (cg.S.x) (Slurm job 6 on vm) was killed for using more than its memory "
                    "of 2000 MiB: OUT_OF_MEMORY; give it more memory (--set-resources RULE:mem_mb=4000, or "
                    "cluster.mem_mb_per_node in the platform file)")
    assert why.what_of("npb_build", ["results/quick/builds/cg.S.json"]) == ("job npb_build (cg.S.json)", None, None)
    assert why.what_of("measure", ["results/quick/rounds/r2.c1.json"]) == \
        ("chunk r2.c1 of study quick", "r2.c1", "results/quick")


def test_the_latest_submission_noted_for_a_job_id_names_it(tmp_path):
    """Job ids come round again: the last line noted for an id is the job it now is."""
    why.note_submission(tmp_path, "12.srv", {"rule": "measure", "output": ["results/a/rounds/r1.c1.json"]})
    why.note_submission(tmp_path, "13.srv", {"groupid": "g7"})
    why.note_submission(tmp_path, "12.srv", {"rule": "measure", "output": ["results/a/rounds/r2.c1.json"]})
    assert why.submitted_as(tmp_path, "12.srv") == ("measure", ["results/a/rounds/r2.c1.json"])
    assert why.submitted_as(tmp_path, "13.srv") == ("group g7", [])
    assert why.submitted_as(tmp_path, "14.srv") == ("job", [])


def test_qsub_in_the_submit_command_is_pbs():
    assert why.scheduler_of("cluster-generic", "qsub -V -l nodes=1") == "PBS"
    assert why.scheduler_of("cluster-generic", "myqsubber") is None


# -- why: the pre-submission checks ---------------------------------------------------------

def test_preflight_walltime_boundaries_and_numbers():
    """A walltime equal to the estimate is enough; 301 s need 6 min; three short chunks name
    the first and count the others; a chunk killed at 3 min is told to ask for 6."""
    run, which = fake({})
    assert why.preflight([why.Submission("measure", "r1.c1", 5, "", 300, 5)], "Slurm", run, which) == []
    (short,) = why.preflight([why.Submission("measure", f"r1.c{i}", 5, "", 301, 4) for i in (1, 2, 3)],
                             "Slurm", run, which)
    assert short == ("numaplace: chunk r1.c1 (and 2 more chunks) would get 5 min of walltime, and the plan estimates "
                     "6 min for its 4 runs: Slurm would kill it at its limit; nothing was submitted; give it at least "
                     "6 min (--set-resources measure:runtime=6, or cluster.runtime_scale in the platform file) or cut "
                     "chunks smaller (rounds: {chunk_runs: N} in the study)")
    (again,) = why.preflight([why.Submission("measure", "r1.c2", 2.5, "", 10, 5, killed_at_min=3)], "Slurm", run, which)
    assert again == ("numaplace: chunk r1.c2 was killed at its 3 min limit last time, and would get 2.5 min again; "
                     "nothing was submitted; give it more (--set-resources measure:runtime=6) or cut chunks smaller "
                     "(rounds: {chunk_runs: N})")


def test_a_queue_at_a_server_is_known_by_its_name():
    """PBS queues may be written queue@server: the queue's name is what qstat -Q lists."""
    run, which = fake({("qstat", "-Q"): (0, "Queue Max\n----- ---\nworkq 0\n", "")})
    assert why.preflight([why.Submission("measure", None, 5, "workq@pbs01")], "PBS", run, which) == []
    (bad,) = why.preflight([why.Submission("measure", None, 5, "long@pbs01")], "PBS", run, which)
    assert bad.startswith("numaplace: PBS has no queue 'long@pbs01' (known: workq), which measure would be")


# -- why: the line's words per cause ---------------------------------------------------------

def test_the_line_for_each_cause_says_what_to_do():
    """A chunk's line says its records are kept; a timeout without a known limit gives no number;
    a PBS refusal names the queue, a Slurm one the partition."""
    chunk = "chunk r1.c2 of study quick"
    t = why.line(why.Failure("timeout", "PBS", "12.srv", "job_state F"), chunk, "r1.c2")
    assert t == ("numaplace: chunk r1.c2 of study quick (PBS job 12.srv) was killed at its time limit: job_state F; "
                 "any records it wrote are kept; give it more time (--set-resources measure:runtime=<min>) or cut "
                 "chunks smaller (rounds: {chunk_runs: N} in the study)")
    c = why.line(why.Failure("cancelled", "Slurm", "5"), chunk, "r1.c2")
    assert c == ("numaplace: chunk r1.c2 of study quick (Slurm job 5) was cancelled; any records it wrote are kept; "
                 "run the same snakemake command again to measure what is left")
    r = why.line(why.pbs_rejection(170, ""), chunk, "r1.c2", partitions=["workq"])
    assert r == ("numaplace: chunk r1.c2 of study quick (PBS) was refused at submission: exit 170, nothing said; "
                 "nothing was measured by it; check the queue (known here: workq) and account: cluster.partition "
                 "and cluster.account in the platform file, or --default-resources slurm_partition=<queue>")
    s = why.line(why.Failure("rejected", "Slurm", words="bad"), "job measure")
    assert "check the partition and account" in s and "slurm_partition=<partition>" in s
    f = why.line(why.Failure("failed", "Slurm", "9", "FAILED"), "job npb_build", log="logs/x.log")
    assert f == "numaplace: job npb_build (Slurm job 9) failed: FAILED; read logs/x.log, then run the same snakemake command again"


def test_sacct_answers_are_read_from_the_jobs_own_first_line():
    """sacct -X lists the allocation first: its state, limit and memory are the job's."""
    out = "TIMEOUT|0:0|00:10:00|4000M|n1\nCOMPLETED|0:0|00:01:00|10M|n2\n"
    run, which = fake({("sacct",): (0, out, "")}, tools=("sacct",))
    assert why.slurm_failure("31", None, run, which) == why.Failure("timeout", "Slurm", "31", "TIMEOUT", 10, 4000, "n1")


def test_a_pbs_job_without_exit_status_is_asked_of_slurm():
    """Slurm's Torque wrappers show an ended job as C without exit status: Slurm says why."""
    run, which = fake({("qstat", "-f"): (0, "Job Id: 41\n    job_state = C\n", ""),
                       ("scontrol", "show", "job", "-o", "41"):
                           (0, "JobId=41 JobState=OUT_OF_MEMORY Reason=None ExitCode=0:125 TimeLimit=5 MinMemoryNode=1G", "")},
                      tools=("qstat", "scontrol"))
    f = why.pbs_job_failure("41", "torque", run, which)
    assert f == why.Failure("out-of-memory", "PBS", "41", "Slurm OUT_OF_MEMORY, exit code 0:125", 5, 1024, "")


def test_a_chunks_walltime_remembers_only_its_own_kill(tmp_path, monkeypatch):
    """Twice the killed limit applies to the chunk of exactly these runs, not to a chunk that
    merely starts with the same run."""
    monkeypatch.chdir(tmp_path)
    st = study()
    st.chunks = [SimpleNamespace(id="r1.c1", run_ids=("a", "b", "c")), SimpleNamespace(id="r1.c2", run_ids=("a", "b"))]
    runs = [run_of("cg", "B", 2, "a"), run_of("cg", "B", 2, "b")]
    why.remember_timeout("results/quick", "r1.c1", why.Failure("timeout", "Slurm", "5", limit_min=100))
    assert resources.measure_runtime(st, runs) == 33                  # 120 + 2·(30 + 900) = 1980 s
    why.remember_timeout("results/quick", "r1.c2", why.Failure("timeout", "Slurm", "6", limit_min=40))
    assert resources.measure_runtime(st, runs) == 80


def test_a_failed_group_job_is_asked_of_slurm_by_the_id_in_its_log_name(tmp_path, monkeypatch):
    """Snakemake drops the plugin's words for a group: the Slurm log's name (<jobid>.log) names the job."""
    import logging
    monkeypatch.chdir(tmp_path)
    run, which = fake({("scontrol", "show", "job", "-o", "48213"):
                       (0, "JobId=48213 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 TimeLimit=00:20:00 NodeList=n4", "")})
    said = []
    handler = why._Watch(said.append, run, which)
    record = logging.LogRecord("cluster-log", logging.ERROR, __file__, 0, "group failed", None, None)
    record.event = "group_error"
    record.aux_logs = ["/w/.snakemake/slurm_logs/group_g1/48213.log"]
    record.job_error_info = [{"rule_name": "measure", "output": ["results/quick/rounds/r1.c3.json"]}]
    handler.emit(record)
    assert run.asked == [["scontrol", "show", "job", "-o", "48213"]]
    assert said == ["numaplace: chunk r1.c3 of study quick (Slurm job 48213 on n4) was killed at its time limit of "
                    "20 min: TIMEOUT, reason TimeLimit, exit code 0:15; any records it wrote are kept; run the same "
                    "snakemake command again: the chunk is submitted again with 40 min (twice its limit; a "
                    "--set-resources measure:runtime=<min> of yours goes first: raise it)"]
    assert why.killed_at("results/quick", "r1.c3") == 20


def test_pbs_comments_tell_the_cause_in_their_servers_words():
    """PBS Pro and Torque word a walltime kill and a deletion differently; each reads as its cause."""
    def cause(comment, code=271):
        return why.pbs_failure("12.srv", why.pbs_facts(pbs_job(Exit_status=code, comment=comment))).cause
    assert cause("Job exceeded resource walltime") == "timeout"
    assert cause("PBS: job killed: walltime 365 exceeded limit 360") == "timeout"
    assert cause("Job deleted by operator request") == "cancelled"
    assert cause("Job deleted as result of qdel by alice@login01") == "cancelled"
    assert cause("Job run at Mon Jun 3 at 10:01 on (n1:ncpus=4)", 2) == "failed"
