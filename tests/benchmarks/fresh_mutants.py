"""Issue 42's target: fresh hand-made mutants caught (>= 90 %). Twenty-five small realistic
mistakes (an off-by-one, a wrong comparison, swapped operands, a wrong default, a dropped
filter, mean for median, a wrong unit), none of them in behaviour_bugs.py,
named_mutations.py or mutation-survivors.md, spread over the stages: plan (placement
expansion, portable words, budget, rounds), kinds (NPB's report, a study's own program,
NASA's EP/IS/FT), judge (fidelity, separation), tables, statistics, the answer, the machine
(topology, PMU), the cluster's why and the run's counters.

For each mistake a copy of the package (workflow/numaplace as it is in the working tree;
behaviour_bugs.shadow) gets it as one exact text replacement (the text must be there once),
and the whole unit set runs against the copy (PYTHONPATH puts it first), one process, niced:

    nice -n 19 python -m pytest -q -x -m unit -p no:cacheprovider tests

A mistake is caught when the run fails (the first failing test is named), else it
SURVIVED. The unit set must pass on the copy without a mistake (checked first). The working
tree is never edited.

    .venv/bin/python tests/benchmarks/fresh_mutants.py [names...]   (from the repository root)

Prints one row per mistake (mistake, file:line, caught by / SURVIVED) and the rate; exits
non-zero when the rate is below 90 %.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behaviour_bugs import first_failure, pytest, shadow  # noqa: E402

TARGET = 0.90
UNIT = ["-x", "-m", "unit", "tests"]

# name: (stage, package file, text as it is, the mistake, what it is)
MISTAKES = {
    # -- plan: placement expansion, portable words, budget, rounds ---------------------
    "spread-one-node-counts-memory-only": (
        "plan: expansion", "plan/expand.py",
        'if kind == "spread" and len(topo.cpu_nodes) == 1:',
        'if kind == "spread" and len(topo.node_ids) == 1:',
        "'spreading over one node' counted over every node, memory-only ones too"),
    "each-distance-last-node": (
        "plan: portable words", "plan/placement.py",
        "classes.setdefault(topo.distance(master, n), n)",
        "classes[topo.distance(master, n)] = n",
        "each-distance keeps the last node of a distance class, not the first"),
    "budget-hours-as-seconds": (
        "plan: budget", "plan/budget.py",
        'return float(m.group(1)) * (60 if m.group(2) == "h" else 1)',
        'return float(m.group(1)) * (3600 if m.group(2) == "h" else 1)',
        "a budget in hours converted with seconds per hour: '1.5 h' is 5400 min"),
    "rounds-wait-stops-at-any-deciding": (
        "plan: rounds", "plan/rounds.py",
        "if all(deciding[x.id] for x in by_round[rnd]):",
        "if any(deciding[x.id] for x in by_round[rnd]):",
        "the walk back stops at a round where any chunk decides, not every one"),
    # -- kinds ---------------------------------------------------------------------------
    "npb-verified-by-presence": (
        "kinds: NPB report", "kinds/npb_output.py",
        'out["verified"] = out["verification"] == "SUCCESSFUL"',
        'out["verified"] = out["verification"] is not None',
        "any Verification line counts as verified, UNSUCCESSFUL too"),
    "program-first-match": (
        "kinds: program patterns", "kinds/program.py",
        "    for m in (rx.finditer(text) if rx is not None else ()):\n        pass\n",
        "    m = rx.search(text) if rx is not None else None\n",
        "a pattern's first match read, not its last (the final report)"),
    "program-exit-code-ignored": (
        "kinds: program outcome", "kinds/program.py",
        "        if exit_status != 0:\n            return \"failed\", ended(exit_status)",
        "        if exit_status < 0:\n            return \"failed\", ended(exit_status)",
        "only a signal fails a run: exit status 1 with a success line is ok"),
    "program-resolution-no-exponent": (
        "kinds: program resolution", "kinds/program.py",
        "return 10.0 ** (exponent - decimals)",
        "return 10.0 ** -decimals",
        "a printed time's resolution ignores its exponent ('1.5e-3' read to 0.1)"),
    "program-digest-reads-hidden-folders": (
        "kinds: program build digest", "kinds/program.py",
        'if any(part.startswith(".") for part in rel.parts) or \\',
        'if rel.name.startswith(".") or \\',
        "only hidden files left out of the build key, not files in hidden folders (.git)"),
    "is-work-from-max-key": (
        "kinds: npb_official", "kinds/npb_official.py",
        "return 2.0 ** IS[cls][0] * IS_ITERATIONS * 1e-6",
        "return 2.0 ** IS[cls][1] * IS_ITERATIONS * 1e-6",
        "IS's operation count from its largest key, not its number of keys"),
    # -- judge ---------------------------------------------------------------------------
    "interleave-deviation-without-abs": (
        "judge: fidelity", "judge/fidelity.py",
        "dev = max(abs(by_node.get(n, 0) / total - even) for n in allowed)",
        "dev = max(by_node.get(n, 0) / total - even for n in allowed)",
        "interleave's evenness counts only nodes above their share, not the short ones"),
    "separation-no-bonferroni": (
        "judge: separation", "judge/separation.py",
        "    level = alpha / looks\n",
        "    level = alpha\n",
        "each look tests at alpha, not alpha over the looks"),
    # -- tables/aggregate.py -------------------------------------------------------------
    "summary-failed-current-only": (
        "tables: summary", "tables/aggregate.py",
        'failed = [r for r in rows if r["status"] not in NOT_FAILED]',
        'failed = [r for r in current if r["status"] not in NOT_FAILED]',
        "n_failed leaves out the set-aside attempts"),
    "summary-fom-mean": (
        "tables: fom column", "tables/aggregate.py",
        'fom_median=float(np.median([r["fom"] for r in ok if not _isnan(r.get("fom"))]))',
        'fom_median=float(np.mean([r["fom"] for r in ok if not _isnan(r.get("fom"))]))',
        "fom_median is the mean of the figures of merit"),
    "summary-finest-resolution": (
        "tables: time_resolution column", "tables/aggregate.py",
        'time_resolution_s=max((r["time_resolution_s"]',
        'time_resolution_s=min((r["time_resolution_s"]',
        "a placement's time resolution is its finest printed time, not its coarsest"),
    # -- core/stats.py -------------------------------------------------------------------
    "improvement-over-best": (
        "stats: improvement", "core/stats.py",
        '"improvement_pct": 100 * (w - b) / w if w > 0 else np.nan',
        '"improvement_pct": 100 * (w - b) / b if b > 0 else np.nan',
        "the cost of the wrong choice as a share of the best time (a speed-up), not of the worst"),
    "compared-by-longer-time": (
        "stats: compared_by", "core/stats.py",
        "min(best_time, worst_time) >= TIME_RESOLVED_S",
        "max(best_time, worst_time) >= TIME_RESOLVED_S",
        "compared by time when only the longer of the two medians is >= 1 s"),
    # -- report/answer.py ----------------------------------------------------------------
    "verdict-counts-shared-runs": (
        "answer: verdicts", "report/answer.py",
        "    if min(quiet_b, quiet_w) < 2:\n",
        "    if min(nb, nw) < 2:\n",
        "runs that shared their CPUs counted toward the 2 a side a conclusion needs"),
    "cost-interval-of-means": (
        "answer: cost words", "report/answer.py",
        "100 * (1 - np.median(w, axis=axis) / np.median(b, axis=axis))",
        "100 * (1 - np.mean(w, axis=axis) / np.mean(b, axis=axis))",
        "the cost's bootstrap interval of the means, not of the medians the cost is"),
    "control-recommended": (
        "answer: control words", "report/answer.py",
        "    if k is not None and k.control:             # EP: no best placement to recommend\n"
        "        return None\n",
        "",
        "the control kind (EP) gets a 'to run it best' line"),
    "fom-other-way-inverted": (
        "answer: figure-of-merit words", "report/answer.py",
        "if b != w and (b > w) != bool(k.fom_higher_is_better):",
        "if b != w and (b > w) == bool(k.fom_higher_is_better):",
        "'ranks them the other way' said when the figure of merit agrees with the time"),
    # -- machine ---------------------------------------------------------------------------
    "restrict-drops-memory-only-nodes": (
        "machine: topology restrict", "machine/topology.py",
        "keep = [n for n in self.node_ids if n in mems or cpus & set(self.nodes[n])]",
        "keep = [n for n in self.node_ids if cpus & set(self.nodes[n])]",
        "an allocation keeps only nodes with allowed CPUs: its memory-only nodes are gone"),
    "pmu-paranoid-2-refused": (
        "machine: pmu", "machine/pmu.py",
        "if not privileged and paranoid > 2:",
        "if not privileged and paranoid >= 2:",
        "perf_event_paranoid 2 refused (a user may count its own processes there, :u)"),
    # -- cluster/why.py, run/counters.py -----------------------------------------------
    "slurm-node-fail-misspelt": (
        "cluster: why", "cluster/why.py",
        '"NODE_FAIL": NODE_FAILURE,',
        '"NODE_FAILURE": NODE_FAILURE,',
        "Slurm's NODE_FAIL state spelt NODE_FAILURE: a lost node reads 'failed'"),
    "counters-local-less-remote-inverted": (
        "run: counters", "run/counters.py",
        '(r if events.measures == "total" else 0)',
        '(r if events.measures != "total" else 0)',
        "remote subtracted from the local event (Intel, AMD), not from Arm's total"),
}


def caught_by(out):
    """The first failing test's node id, or the suite's first error line."""
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ")[0].strip()
    return "the run (" + first_failure(out)[:120] + ")"


def main(names):
    unknown = [n for n in names if n not in MISTAKES]
    if unknown:
        sys.exit(f"no such mistake: {', '.join(unknown)}")
    chosen = {n: MISTAKES[n] for n in (names or MISTAKES)}
    try:
        os.nice(19)                         # the unit set runs beside other work
    except OSError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        path = shadow(Path(tmp))
        check = subprocess.run([sys.executable, "-c", "import numaplace; print(numaplace.__file__)"],
                               env={**os.environ, "PYTHONPATH": str(path)}, capture_output=True, text=True)
        assert check.stdout.strip().startswith(str(path)), f"the copy is not the package imported: {check.stdout}"
        # every text once, before any run
        for name, (_, rel, old, _, _) in chosen.items():
            n = (path / "numaplace" / rel).read_text().count(old)
            assert n == 1, f"{name}: {rel} holds the text {n} times"
        t = time.monotonic()
        clean = pytest(UNIT, path)
        if clean.returncode:
            sys.exit(f"the unit set fails without a mistake:\n{clean.stdout[-3000:]}")
        print(f"unmutated copy: unit set passes ({time.monotonic() - t:.0f} s)", file=sys.stderr, flush=True)
        rows, survived = [], []
        for name, (stage, rel, old, new, what) in chosen.items():
            f = path / "numaplace" / rel
            text = f.read_text()
            line = text[:text.index(old)].count("\n") + 1
            f.write_text(text.replace(old, new))
            t = time.monotonic()
            try:
                r = pytest(UNIT, path)
            finally:
                f.write_text(text)
            hit = caught_by(r.stdout + r.stderr) if r.returncode else None
            if hit is None:
                survived.append(name)
            rows.append((f"{name}: {what}", stage, f"{rel}:{line}", hit or "SURVIVED"))
            print(f"{name}: {hit or 'SURVIVED'} ({time.monotonic() - t:.0f} s)", file=sys.stderr, flush=True)
    print("| mistake | stage | file:line | caught by |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(re.sub(r"\|", r"\\|", x) for x in row) + " |")
    caught = len(rows) - len(survived)
    rate = caught / len(rows)
    print(f"\ncaught {caught} of {len(rows)} = {100 * rate:.0f} %"
          + (f"; survived: {', '.join(survived)}" if survived else ""))
    sys.exit(0 if rate >= TARGET else f"below the target of {100 * TARGET:.0f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
