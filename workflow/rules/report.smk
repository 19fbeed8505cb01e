# Tables, figures, summary.md and the HTML report, made from the run records on disk.
# Making them never runs or rebuilds a benchmark (see records_for_tables). Fidelity
# thresholds and plot settings live here only, never in the run rules: changing them
# re-judges and re-draws, and re-runs nothing.


report: "../report/workflow.rst"


localrules:
    make_report,


# One job, one process after the last run: pandas', matplotlib's and scipy's imports are
# paid once (the four stages as four jobs took 9-18 s for the quick study). Each stage is
# also a command of its own: numaplace tables | figures | summary | html.
# The figures are drawn by two processes where the job may use two CPUs (it runs alone, after
# the last run: numaplace.figures.plots.DRAWERS), the same files as one process draws.
rule make_report:
    input:
        plan=PLAN,
        records=records_for_tables,
    output:
        **{f"table_{name}": table_file(name) for name in TABLES},
        index=FIGURE_INDEX,
        **{f"figures_{name}": figure_dir(name) for name in FIGURE_TITLES},
        summary=report(SUMMARY_MD, caption="../report/summary_md.rst", category="Summary"),
        html=REPORT_HTML,
    params:
        results=lambda wc, input: os.path.dirname(input.plan),
        tables=parent_of("output", "table_runs"),
        figures=parent_of("output", "index"),
        # the study's fidelity thresholds: every run is judged here, from its captures
        fidelity=lambda wc: json.dumps(STUDY.fidelity_thresholds, sort_keys=True),
        # plot settings from the study's `figures:` section (defaults in the study schema)
        settings=lambda wc: json.dumps(config.get("figures", {}), sort_keys=True),
        study=STUDY.name,
        description=STUDY.config.get("description", ""),
    log:
        f"{REPORT_LOGS}/report.log",
    conda:
        ENV
    shell:
        "numaplace report --results {params.results:q} --plan {input.plan:q} --tables {params.tables:q}"
        " --figures {params.figures:q} --summary {output.summary:q} --html {output.html:q}"
        " --fidelity {params.fidelity:q} --settings {params.settings:q} --study {params.study:q}"
        " --description={params.description:q} > {log:q} 2>&1"
