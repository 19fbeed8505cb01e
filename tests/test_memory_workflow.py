"""memory-quick end to end on this machine at small sizes: membw/memlat built by the
workflow, run under real numactl with per-thread binding, parsed into records, tables
(memory.csv, memory_matrix.csv), figures and the summary's memory section."""
import csv

import pytest
import yaml
from conftest import copy_workflow, read_records, run_snakemake

ISSUE_COLUMNS = ["bench", "mode", "size_bytes", "threads", "reader_cpu", "reader_node", "memory_node", "rep",
                 "value", "unit", "pages_on_memory_node", "status"]


@pytest.fixture(scope="module")
def small(repo, tmp_path_factory):
    wf = copy_workflow(repo, tmp_path_factory.mktemp("memq"))
    study = yaml.safe_load((wf / "config/studies/memory-quick.yaml").read_text())
    for exp in study["experiments"]:        # class-S-like: cache-sized buffers, short regions
        args = exp["args"]
        if "--sizes" in args:
            args[args.index("--sizes") + 1] = "16K,1M"
        else:
            args += ["--sizes", "8K,64K,1M"]
        memlat = exp.get("benchmarks", study["benchmarks"]) == ["memlat"]
        args += ["--min-time", "0.02"] + (["--min-loads", "20000"] if memlat else [])
    (wf / "config/studies/memory-small.yaml").write_text(yaml.safe_dump({**study, "study": "memory-small"}))
    run_snakemake(wf, "--cores", "2", "--configfile", "config/studies/memory-small.yaml")
    return wf


def test_every_run_ok_and_parsed(small):
    recs = read_records(small, "memory-small")
    plan = (small / "results/memory-small/plan.tsv").read_text().splitlines()
    assert len(recs) == len(plan) - 1 >= 6
    for rid, r in recs.items():
        assert r["status"] == "ok", (rid, r["reason"])
        assert r["kind"]["family"] == "memory" and r["output"]["verified"] and r["output"]["results"]
        assert "--min-time" in r["argv"]


def test_sweep_cell_runs_thread0_on_the_memory_cpu(small):
    recs = read_records(small, "memory-small")
    remote = [r for rid, r in recs.items() if ".sw-m0-r1." in rid]
    assert remote, sorted(recs)
    for r in remote:
        assert r["env"]["OMP_PLACES"] == "{0},{1}"
        by_thread = {x["thread"]: x for x in r["output"]["results"]}
        assert by_thread[0]["alloc_cpu"] == 0 and by_thread[0]["reader_cpu"] == 0
        assert by_thread[1]["reader_cpu"] == 1 and by_thread[1]["alloc_cpu"] == 0


def test_memory_tables_have_the_issue_columns_and_pages_on_the_node(small):
    with open(small / "results/memory-small/tables/memory.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:len(ISSUE_COLUMNS)] == ISSUE_COLUMNS
    assert {r["bench"] for r in rows} == {"membw", "memlat"}
    assert {r["mode"] for r in rows} == {"serial", "parallel", "chase"}
    for r in rows:
        assert float(r["pages_on_memory_node"]) >= 0.99 and r["status"] == "ok", r
    with open(small / "results/memory-small/tables/memory_matrix.csv") as f:
        matrix = list(csv.DictReader(f))
    vias = {(m["bench"], m["via"]) for m in matrix}
    assert ("membw", "membind") in vias and ("memlat", "first-touch") in vias
    lat = {int(m["size_bytes"]): float(m["median"]) for m in matrix if m["bench"] == "memlat"}
    assert lat[1 << 20] > lat[8192]              # past L1 the chase is slower


def test_memory_figures_and_summary(small):
    figs = small / "report/memory-small/figures"
    for kind in ("memory_bandwidth", "memory_latency", "memory_heatmap", "memory_contention"):
        assert list((figs / kind).glob("*.svg")), kind
    summary = (small / "report/memory-small/summary.md").read_text()
    assert "## Memory micro-benchmarks" in summary and "memory.csv" in summary
