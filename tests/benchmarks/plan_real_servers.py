"""Plan the default study (config/config.yaml) on real servers' topologies taken from
hwloc's public XML dumps (tests/fixtures/hwloc/, README.md there), with no access to
those machines (issue 40 item 8, "Planning a machine you are not on").

    .venv/bin/python tests/benchmarks/plan_real_servers.py [NAME ...]

Prints one line per machine. The line gives its nodes (CPU nodes / memory-only),
cores/threads, the runs planned, the estimate at the reference machine's speed and how
many not-applicable lines the plan has. If the planner refuses the study, it prints the
refusal instead. Each machine is planned from the platform file that
`numaplace platform from-hwloc` writes from its XML now, in a temporary config directory.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "hwloc"


def machines():
    """[(name, xml file name, words)] from tests/fixtures/hwloc/machines.tsv."""
    rows = []
    for line in (FIXTURES / "machines.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, xml, words = line.split("\t")
            rows.append((name, xml, words))
    return rows


def plan(name, xml, tmp):
    """(Topology, Study or None, refusal line or None) for the default study on this machine."""
    from numaplace import ConfigError
    from numaplace.machine.hwloc_xml import convert
    from numaplace.machine.topology import load_platform
    from numaplace.plan.study import Study
    config_dir = Path(tmp) / "config"
    (config_dir / "platforms").mkdir(parents=True, exist_ok=True)
    platform = config_dir / "platforms" / f"{name}.yaml"
    platform.write_text(convert(FIXTURES / xml, name))
    topo = load_platform(platform)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["platform"] = name
    study_file = config_dir / "config.yaml"
    try:
        return topo, Study(config, study_file, config_dir=config_dir), None
    except ConfigError as e:
        return topo, None, str(e).replace(str(study_file), "config.yaml")


def describe(name, xml):
    from numaplace.plan import budget
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)              # builds_to_do() looks for results/ under the working directory
        try:
            t0 = time.monotonic()
            topo, st, refusal = plan(name, xml, tmp)
            took = time.monotonic() - t0
        finally:
            os.chdir(cwd)
    cpu_nodes = [n for n in topo.node_ids if topo.nodes[n]]
    mem_only = [n for n in topo.node_ids if not topo.nodes[n]]
    head = (f"{name:18s} {len(topo.nodes):2d} nodes ({len(cpu_nodes)} CPU / {len(mem_only)} memory-only), "
            f"{len(topo.cores()):3d} cores / {len(topo.cpus):3d} threads: ")
    if refusal:
        return head + f"REFUSED: {refusal}"
    est = st.estimate()
    return (head + f"{len(st.runs)} runs, estimated {budget.format_duration(est.total)}, "
            f"{len(st.not_applicable)} not applicable (planned in {took:.1f} s)"
            + "".join(f"\n    {line}" for line in st.machine_notes() + st.sizing_notes))


def main(argv):
    wanted = set(argv)
    for name, xml, _words in machines():
        if not wanted or name in wanted:
            print(describe(name, xml), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
