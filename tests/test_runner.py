"""Runner details that need no benchmark run."""
from numaplace.runner import effective_timeout


def test_timeout_is_cut_to_the_batch_walltime():
    assert effective_timeout({"timeout": 3600}, {}) == 3600
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10"}) == 3600   # not in a job
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10", "SLURM_JOB_ID": "7"}) == 450
    assert effective_timeout({"timeout": 100}, {"NUMAPLACE_WALLTIME_MIN": "60", "PBS_JOBID": "7.srv"}) == 100
    assert effective_timeout({}, {"NUMAPLACE_WALLTIME_MIN": "1", "SLURM_JOB_ID": "7"}) == 30
