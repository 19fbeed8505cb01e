# Tables, figures, summary.md and the HTML report, made from the run records on disk.
# Making them never runs or rebuilds a benchmark (see records_for_tables). Fidelity
# thresholds and plot settings live here only, never in the run rules: changing them
# re-judges and re-draws, and re-runs nothing.


report: "../report/workflow.rst"


localrules:
    aggregate_tables,
    plot_figures,
    write_summary,
    report_html,


rule aggregate_tables:
    input:
        plan=PLAN,
        records=records_for_tables,
    output:
        **{name: table_file(name) for name in TABLES},
    params:
        results=lambda wc, input: os.path.dirname(input.plan),
        tables=parent_of("output", "runs"),
        # the study's fidelity thresholds: every run is judged here, from its captures
        fidelity=lambda wc: json.dumps(STUDY.fidelity_thresholds, sort_keys=True),
    log:
        f"{REPORT_LOGS}/tables.log",
    conda:
        ENV
    shell:
        "numaplace tables --results {params.results:q} --plan {input.plan:q} --out {params.tables:q}"
        " --fidelity {params.fidelity:q} > {log:q} 2>&1"


rule plot_figures:
    input:
        tables=list(TABLES.values()),
        runs=TABLES["runs"],
    output:
        index=FIGURE_INDEX,
        **{name: figure_dir(name) for name in FIGURE_TITLES},
    params:
        tables=parent_of("input", "runs"),
        figures=parent_of("output", "index"),
        # plot settings from the study's `figures:` section (defaults in the study schema)
        settings=lambda wc: json.dumps(config.get("figures", {}), sort_keys=True),
    log:
        f"{REPORT_LOGS}/figures.log",
    conda:
        ENV
    shell:
        "numaplace figures --tables {params.tables:q} --out {params.figures:q} --settings {params.settings:q}"
        " > {log:q} 2>&1"


rule write_summary:
    input:
        tables=list(TABLES.values()),
        runs=TABLES["runs"],
        index=FIGURE_INDEX,
        plan=PLAN,
    output:
        report(SUMMARY_MD, caption="../report/summary_md.rst", category="Summary"),
    params:
        tables=parent_of("input", "runs"),
        figures=parent_of("input", "index"),
        study=STUDY.name,
        description=STUDY.config.get("description", ""),
    log:
        f"{REPORT_LOGS}/summary.log",
    conda:
        ENV
    shell:
        "numaplace summary --tables {params.tables:q} --figures {params.figures:q} --plan {input.plan:q}"
        " --study {params.study:q} --description={params.description:q} --out {output:q} > {log:q} 2>&1"


rule report_html:
    input:
        tables=list(TABLES.values()),
        runs=TABLES["runs"],
        index=FIGURE_INDEX,
        summary=SUMMARY_MD,
        plan=PLAN,
    output:
        REPORT_HTML,
    params:
        tables=parent_of("input", "runs"),
        study=STUDY.name,
        description=STUDY.config.get("description", ""),
    log:
        f"{REPORT_LOGS}/html.log",
    conda:
        ENV
    shell:
        "numaplace html --out {output:q} --tables {params.tables:q} --summary {input.summary:q}"
        " --plan {input.plan:q} --study {params.study:q} --description={params.description:q} > {log:q} 2>&1"
