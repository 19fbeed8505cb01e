"""The answer's lines (numaplace.report.answer) on real records of the 4-node NUMA VM: serial
initialisation against first touch on the same placement, said with its interval and
noise verdict; on one node, never shown as an effect; the machine line from a matrix."""
from pathlib import Path

import numpy as np
import pandas as pd

from numaplace.tables.aggregate import build_tables
from numaplace.report.answer import machine_line, serial_init_lines

VM = Path(__file__).parent / "fixtures" / "real" / "vm"


def test_serial_init_cost_on_the_same_placement_with_its_interval():
    t = build_tables(VM)
    cg, mg = serial_init_lines(t["summary"], t["runs"])
    # 2.19 s vs 2.34 s: serial-init is the faster, by 1 - 2.19 / 2.34 = 6.4 % of the other's time
    assert cg.startswith("CG class W: serial initialisation (every page on the master's node) saves 6 % [95 % CI ")
    assert cg.endswith("against parallel first touch on 1/1 on 0,3 · pinned threads (2.19 s vs 2.34 s), within noise")
    # 2.79 s vs 2.61 s: 1 - 2.61 / 2.79 = 6.5 %, from the times printed beside it
    assert mg.startswith("MG class W: serial initialisation (every page on the master's node) costs 6 % [95 % CI ")
    assert mg.endswith("(2.79 s vs 2.61 s), within noise")


def test_serial_init_on_one_node_is_no_effect():
    t = build_tables(VM)
    one = t["summary"].assign(layout="2 on 0")           # as if both variants ran on one node
    lines = serial_init_lines(one, t["runs"])
    assert lines == [f"{k} class W: serial initialisation vs parallel first touch: no effect to show: every "
                     "placement measured with both runs on one NUMA node, or under a memory policy that places "
                     "the pages itself, where both put the pages alike" for k in ("CG", "MG")]


def test_serial_init_under_interleave_is_no_first_touch_effect():
    """Under interleave the policy places the pages whichever thread writes them first: such
    a pair never stands for serial initialisation's cost (it did in the VM's default study)."""
    t = build_tables(VM)
    policy = t["summary"].assign(memory="interleave 0-3")
    lines = serial_init_lines(policy, t["runs"])
    assert all("no effect to show" in line for line in lines) and len(lines) == 2


def test_machine_line_from_the_matrix_beside_slit():
    matrix = pd.DataFrame([
        {"bench": "memlat", "mode": "", "via": "first-touch", "size_bytes": 1 << 28, "reader_node": r, "memory_node": m,
         "median": 100.0 if r == m else 150.0} for r in (0, 1) for m in (0, 1)] + [
        {"bench": "membw", "mode": "serial", "via": "first-touch", "size_bytes": 1 << 28, "reader_node": r,
         "memory_node": m, "median": 10000.0 if r == m else 6000.0} for r in (0, 1) for m in (0, 1)])
    topo = {"nodes": {"0": "0-7", "1": "8-15"}, "distances": [[10, 21], [21, 10]]}
    assert machine_line(matrix, topo) == (
        "machine: 2 NUMA nodes · latency local 100 ns (1 thread, mean of 2 nodes' own cells), remote 150 ns "
        "(remote/local 1.50x, mean of 2 cells) · read bandwidth local 10.0 GB/s (1 thread, mean of 2 nodes' own cells), "
        "remote 6.0 GB/s (remote/local 0.60x, mean of 2 cells) · SLIT remote/local 2.1x")
    ring = {"nodes": {str(n): str(n) for n in range(4)},
            "distances": [[10, 16, 22, 16], [16, 10, 16, 22], [22, 16, 10, 16], [16, 22, 16, 10]]}
    assert machine_line(matrix, ring).endswith("SLIT remote/local 1.6x, 2.2x (2 distance classes)")
    # a contention run (2 threads) is no cell of the matrix: never averaged into the headline
    busy = pd.concat([matrix, pd.DataFrame([{"bench": "membw", "mode": "parallel", "via": "first-touch",
                                             "size_bytes": 1 << 28, "reader_node": 0, "memory_node": 0,
                                             "median": 40000.0}])])
    assert machine_line(busy, topo) == machine_line(matrix, topo)
    runs = pd.DataFrame([{"bench": "membw", "current": True, "shared_cpus": s} for s in (True, False, False)])
    assert machine_line(matrix, topo, runs).endswith("1 of these 3 memory runs shared their CPUs with other load")
    assert machine_line(None, {"nodes": {"0": "0-1"}}).startswith("machine: 1 NUMA node; no memory matrix measured")


def test_a_memory_only_node_is_said_apart_never_averaged_into_remote():
    """2 CPU nodes and a CXL node 2: remote is the socket-remote cells alone (150 ns), and
    node 2 gets its own words with its ratio over each reader's local cell. (Fails when the
    memory-only cells are averaged into one "remote" mean: 175 ns.)"""
    lat = {(0, 0): 100.0, (1, 1): 100.0, (0, 1): 150.0, (1, 0): 150.0, (0, 2): 200.0, (1, 2): 200.0}
    bw = {(0, 0): 10000.0, (1, 1): 10000.0, (0, 1): 6000.0, (1, 0): 6000.0, (0, 2): 5000.0, (1, 2): 5000.0}
    matrix = pd.DataFrame(
        [{"bench": "memlat", "mode": "", "via": "first-touch" if m != 2 else "membind", "size_bytes": 1 << 28,
          "reader_node": r, "memory_node": m, "median": v} for (r, m), v in lat.items()]
        + [{"bench": "membw", "mode": "serial", "via": "first-touch" if m != 2 else "membind", "size_bytes": 1 << 28,
            "reader_node": r, "memory_node": m, "median": v} for (r, m), v in bw.items()])
    topo = {"nodes": {"0": "0-1", "1": "2-3", "2": ""}, "distances": [[10, 20, 24], [20, 10, 24], [24, 24, 10]]}
    line = machine_line(matrix, topo)
    assert line.startswith("machine: 3 NUMA nodes (2 with CPUs, 1 memory only) · latency local 100 ns (1 thread, mean "
                           "of 2 nodes' own cells), remote 150 ns (remote/local 1.50x, mean of 2 cells)")
    assert "node 2: memory only: latency 2x local from nodes 0,1, bandwidth 0.5x local from nodes 0,1" in line


def test_a_pair_on_the_same_cpus_names_what_differs():
    """Best and worst on the same CPUs with the same memory: the answer says which of the
    binding and the launcher differs, since neither is in the placement label."""
    from numaplace.report.answer import _what_differs
    assert _what_differs({"binding": "threads", "launcher": "numactl"}, {"binding": "threads", "launcher": "taskset"}) \
        == "only the launcher differs (numactl best, taskset worst)"
    assert _what_differs({"binding": "threads", "launcher": "omp"}, {"binding": "process", "launcher": "omp"}) \
        == "only the binding differs (one CPU per thread best, one mask for all threads worst)"
    assert "binding and the launcher differ" in _what_differs({"binding": "threads", "launcher": "omp"},
                                                               {"binding": "process", "launcher": "numactl"})


def _printed_pct_follows(line):
    """The percentage of an answer line against the two numbers printed beside it: None
    when the line prints none, else (printed, from the numbers)."""
    import re
    m = re.search(r"\((?P<b>[\d.]+) Mop/s, [\d.]+ s\), worst .*?\((?P<w>[\d.]+) Mop/s, [\d.]+ s\): "
                  r"the wrong choice costs (?P<p>-?\d+) %", line)
    if m:
        return int(m["p"]), 100 * (1 - float(m["w"]) / float(m["b"]))
    m = re.search(r"\((?P<b>[\d.]+) s\), worst .*?\((?P<w>[\d.]+) s\): the wrong choice costs (?P<p>-?\d+) %", line)
    if m:
        return int(m["p"]), 100 * (1 - float(m["b"]) / float(m["w"]))
    m = re.search(r"(?P<verb>costs|saves) (?P<p>\d+) %.*\((?P<s>[\d.]+) s vs (?P<q>[\d.]+) s\)", line)
    if m and "Mop/s" not in line:
        ser, par = float(m["s"]), float(m["q"])
        return int(m["p"]), 100 * (1 - min(ser, par) / max(ser, par))
    return None


def test_every_printed_percentage_follows_from_the_printed_values():
    """Over real records (tests/fixtures/real): each cost in the answer is 1 - fast/slow of
    the two medians printed beside it, to the printed precision. (Fails with the cost taken
    from median Mop/s beside median seconds: 45 % printed beside 19.1 s and 23.6 s.)"""
    checked = 0
    for name in ("vm", "local"):
        t = build_tables(Path(__file__).parent / "fixtures" / "real" / name)
        from numaplace.report.answer import answer_lines
        for line in answer_lines(t):
            got = _printed_pct_follows(line)
            if got is None:
                continue
            printed, computed = got
            assert abs(printed - computed) <= 1.0, (line, computed)
            checked += 1
    assert checked >= 3


def test_a_case_whose_runs_shared_their_cpus_leads_with_no_conclusion():
    """The verdict first: runs with other load on their CPUs are unreliable, and with fewer
    than two clean runs a side the case says so before its numbers; the first screen says
    how much of the study ran beside other load."""
    from numaplace.report.answer import answer_lines, kernel_lines
    t = build_tables(VM)
    runs = t["runs"].copy()
    runs["shared_cpus"] = runs["bench"] == "mg"
    runs["foreign_load_share"] = np.where(runs["shared_cpus"], 0.6, 0.0)
    runs.loc[runs["bench"] == "mg", "foreign_load_share"] = np.linspace(0.6, 0.96, int((runs["bench"] == "mg").sum()))
    mg = [line for line in kernel_lines(t["best_worst"], t["summary"], runs) if line.startswith("MG")][0]
    assert mg.startswith("MG class W (default, 2 threads): no conclusion: 3 and 1 runs, both shared their CPUs (")
    assert mg.index("no conclusion") < mg.index("the wrong choice costs")
    lines = answer_lines({**t, "runs": runs})
    busy = [line for line in lines if line.startswith("busy machine: ")]
    assert busy and lines.index(busy[0]) == 1 and "runs shared their CPUs with other load (60-96 % of their time)" in busy[0]


def test_not_applicable_says_every_reason_and_no_study_paths():
    """Nine items: every distinct reason, counted, none cut to three, no experiments[5]
    (...) leaking from the study file; what was sized or sampled said after."""
    from numaplace.report.answer import decision_lines
    na = ([f"experiments[{i}] (e{i}).placements[1]: not applicable here: 1 NUMA node: spread 2 would be compact 2"
           for i in range(6)] + ["experiments[5] (remote).memory[0] for compact node (2): not applicable here: "
                                 "1 NUMA node with memory, none of them away from the threads' node 0",
                                 "experiments[5] (remote): left out: none of its placements exists on this machine (auto)",
                                 "experiments[7] (x).placements[0]: not applicable here: compact 2: this allocation "
                                 "has 1 core (CPUs 3, affinity mask)"])
    lines = decision_lines(na)
    assert lines == ["not applicable here (9 items; not_applicable.txt): 1 NUMA node: spread 2 would be compact 2 (x6); "
                     "1 NUMA node with memory, none of them away from the threads' node 0; an experiment with none of "
                     "its placements here; compact 2: this allocation has 1 core (CPUs 3, affinity mask)"]
    sized = decision_lines({"not_applicable": [], "sizing": [
        "experiments[4] (memory-loaded-latency): --sizes DRAM stepped down to 292 MiB a buffer: ..."]})
    assert sized == ["decided for this machine: memory-loaded-latency: --sizes DRAM stepped down to 292 MiB a buffer: ..."]


def test_answer_json_follows_its_schema_and_carries_launch_lines(tmp_path):
    """answer.json (issue 41.8) validates against docs/answer.schema.json; a case with a
    conclusion carries its best placement's launch lines, each resolving to its CPUs."""
    import json
    import jsonschema
    from numaplace.report.summary import write_summary
    from numaplace.tables.aggregate import write_tables
    results = Path(__file__).parent / "fixtures" / "real" / "vm"
    write_tables(results, tmp_path / "tables")
    (tmp_path / "figures").mkdir()
    plan = tmp_path / "results" / "plan.tsv"
    plan.parent.mkdir()
    import shutil
    shutil.copytree(results, tmp_path / "results", dirs_exist_ok=True)
    write_summary(tmp_path / "tables", tmp_path / "figures", tmp_path / "report" / "summary.md", "vm",
                  plan_path=tmp_path / "results" / "plan.tsv")
    data = json.loads((tmp_path / "report" / "answer.json").read_text())
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "answer.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert data["lines"] == (tmp_path / "report" / "answer.txt").read_text().splitlines()
    assert data["cases"] and all(c["line"] in data["lines"] for c in data["cases"])


def test_a_case_with_a_conclusion_says_how_to_run_its_best_placement():
    """The answer's launch line for the best placement, from the placement its runs
    recorded; it resolves to the same CPUs and nodes (numaplace.plan.launch_lines)."""
    import json
    from numaplace.machine.topology import Topology
    from numaplace.plan.launch_lines import resolves
    from numaplace.report.answer import answer_cases, case_launch_lines, launch_words
    t = build_tables(VM)
    placements = {}
    for f in sorted(VM.glob("runs/*/record.json")):
        p = json.loads(f.read_text())["placement"]
        placements.setdefault(p["id"], p)
    case = answer_cases(t["best_worst"], t["summary"], t["runs"])[-1]
    assert case["verdict"].startswith("no conclusion") and case_launch_lines(case, placements) is None
    case = {**case, "verdict": "beyond noise"}
    lines = case_launch_lines(case, placements)
    words = launch_words(case, placements)
    assert words.startswith("MG class W (2 threads), to run it best: OMP_NUM_THREADS=2 OMP_PLACES=") and \
        words.endswith(" ./mg.W.x")
    vm4 = Topology("vm4", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 1024 for n in range(4)})
    best = placements[case["row"]["best_placement_id"]]
    for kind in ("numactl", "slurm", "aprun"):
        resolves(lines[kind], best, vm4)
