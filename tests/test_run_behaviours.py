"""The environment a benchmark runs in is the plan's: the user's own OpenMP and affinity
settings (GOMP_CPU_AFFINITY, KMP_AFFINITY, OMP_*) and numaplace's own variables never
reach it (numaplace.plan.launch.SCRUBBED_ENV, numaplace.run.runner.clean_env). Issue 42,
behaviour 6 (tests/benchmarks/behaviour_bugs.py shows the test failing on the mistake)."""
from __future__ import annotations

import pytest
from conftest import single_run_spec

from numaplace.run.runner import execute

pytestmark = pytest.mark.unit

USERS = {"GOMP_CPU_AFFINITY": "0-63", "KMP_AFFINITY": "compact", "OMP_PROC_BIND": "spread",
         "OMP_PLACES": "cores", "OMP_NUM_THREADS": "64", "NUMAPLACE_FROZEN_STUDY": "{}"}


def test_the_users_openmp_and_affinity_settings_never_reach_the_benchmark(tmp_path, monkeypatch):
    """A stand-in benchmark writes the environment it was started with. The user's
    GOMP_CPU_AFFINITY, KMP_AFFINITY and OMP_* are not in it (either would move the threads
    off the plan's CPUs); the plan's OMP_NUM_THREADS is, and an unrelated variable passes.
    (Fails when GOMP_ or KMP_ are left out of the scrubbed prefixes.)"""
    from numaplace.machine import guard
    # a lock of its own: the machine's may be held by a measured run (or another test) for long
    monkeypatch.setattr(guard, "lock_path", lambda: tmp_path / guard.LOCK_NAME)
    for k, v in USERS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NUMAPLACE_TEST_UNRELATED", "x")
    monkeypatch.setenv("HOME_FOR_TEST", "kept")
    seen = tmp_path / "env.txt"
    exe = tmp_path / "bench.x"
    exe.write_text(f"#!/bin/sh\nenv > {seen}\n")
    exe.chmod(0o755)
    execute(single_run_spec(), exe, tmp_path / "r" / "record.json")       # failed: no NPB report; env is what counts
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    leaked = {k: v for k, v in env.items() if k.startswith(("GOMP_", "KMP_", "NUMAPLACE_"))}
    assert leaked == {}, f"reached the benchmark: {leaked}"
    assert {k: env[k] for k in env if k.startswith("OMP_")} == {"OMP_NUM_THREADS": "1"}      # the plan's, 1 thread
    assert env["HOME_FOR_TEST"] == "kept"
