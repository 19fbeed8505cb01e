# Tables, figures, summary.md and the HTML report, made from the run records on disk.
# Making them never runs or rebuilds a benchmark (see records_for_tables); plot settings
# live here only, never in the run rules.
import os
from glob import glob

TABLES_DIR = f"{RESULTS}/tables"
TABLES = [f"{TABLES_DIR}/{name}.csv" for name in ("runs", "summary", "best_worst", "numa_pages", "numastat")]
REPORT_DIR = f"report/{STUDY.name}"
FIGURES_DIR = f"{REPORT_DIR}/figures"
FIGURE_INDEX = f"{FIGURES_DIR}/figures.csv"
SUMMARY_MD = f"{REPORT_DIR}/summary.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"
REPORT_LOGS = f"{RESULTS}/logs/report"

report: "../report/workflow.rst"


localrules:
    aggregate_tables,
    plot_figures,
    write_summary,
    report_html,


def runs_requested():
    """Does this invocation make runs too (default target, all, runs, a record file)?"""
    targets = workflow.dag_settings.targets
    return not targets or any(t in ("all", "runs") or t.endswith("record.json") for t in targets)


def records_for_tables(wildcards):
    # A record named as measure's output ties the tables to its run: Snakemake would
    # re-run it if the study changed its params. So the planned records are named that
    # way only when this invocation makes the runs anyway (the tables then wait for
    # them); otherwise every record on disk is named by its absolute path, which no
    # rule produces. Set-aside attempts are no rule's output either way. (Switching
    # between the two rebuilds the tables once: their input list changed.)
    current = glob(f"{RESULTS}/runs/*/record.json")
    attempts = glob(f"{RESULTS}/runs/*/attempts/*/record.json")
    if runs_requested():
        planned = set(RECORDS)
        unplanned = [os.path.abspath(r) for r in current if r not in planned]
        return sorted(planned) + sorted(unplanned) + sorted(attempts)
    return sorted(os.path.abspath(r) for r in current) + sorted(attempts)


def figure_dir(kind, caption, title):
    return report(directory(f"{FIGURES_DIR}/{kind}"), patterns=["{figure}.svg"],
                  caption=f"../report/{caption}", category="Figures", subcategory=title)


rule aggregate_tables:
    input:
        plan=PLAN,
        records=records_for_tables,
    output:
        report(TABLES[0], caption="../report/runs.rst", category="Tables"),
        report(TABLES[1], caption="../report/summary.rst", category="Tables"),
        report(TABLES[2], caption="../report/best_worst_table.rst", category="Tables"),
        report(TABLES[3], caption="../report/numa_pages.rst", category="Tables"),
        report(TABLES[4], caption="../report/numastat.rst", category="Tables"),
    log:
        f"{REPORT_LOGS}/tables.log",
    shell:
        "{NUMAPLACE} tables --results {RESULTS:q} --plan {input.plan:q} --out {TABLES_DIR:q} > {log:q} 2>&1"


rule plot_figures:
    input:
        TABLES,
    output:
        index=FIGURE_INDEX,
        duration=figure_dir("duration", "duration.rst", "Duration per placement"),
        best_worst=figure_dir("best_worst", "best_worst.rst", "Best vs worst"),
        pages=figure_dir("pages", "pages.rst", "Pages per NUMA node"),
        serial_init=figure_dir("serial_init", "serial_init.rst", "Serial initialisation vs default"),
        variability=figure_dir("variability", "variability.rst", "Variability"),
    params:
        # plot settings (plots.DEFAULTS keys) from the study's `figures:` section, if any
        settings=lambda wc: json.dumps(config.get("figures", {}), sort_keys=True),
    log:
        f"{REPORT_LOGS}/figures.log",
    shell:
        "{NUMAPLACE} figures --tables {TABLES_DIR:q} --out {FIGURES_DIR:q} --settings {params.settings:q}"
        " > {log:q} 2>&1"


rule write_summary:
    input:
        TABLES,
        index=FIGURE_INDEX,
        plan=PLAN,
    output:
        report(SUMMARY_MD, caption="../report/summary_md.rst", category="Summary"),
    params:
        description=STUDY.config.get("description", ""),
    log:
        f"{REPORT_LOGS}/summary.log",
    shell:
        "{NUMAPLACE} summary --tables {TABLES_DIR:q} --figures {FIGURES_DIR:q} --plan {input.plan:q}"
        " --study {STUDY.name:q} --description={params.description:q} --out {output:q} > {log:q} 2>&1"


rule report_html:
    input:
        TABLES,
        FIGURE_INDEX,
        SUMMARY_MD,
    output:
        REPORT_HTML,
    params:
        # Snakemake's own --report on the same Snakefile and study (whole workflow DAG:
        # it only reads it and the metadata, it runs nothing)
        snakefile=workflow.main_snakefile,
        configfiles=" ".join(f"--configfile {shlex.quote(str(c))}" for c in workflow.configfiles),
    log:
        f"{REPORT_LOGS}/html.log",
    shell:
        "{NUMAPLACE} html --out {output:q} --snakefile {params.snakefile:q} {params.configfiles}"
        " > {log:q} 2>&1"
