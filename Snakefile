# numaplace: NUMA placement studies with the NPB CG and MG kernels.
#   snakemake --cores 1                                   embedded default study (config/config.yaml)
#   snakemake --cores 1 --config study=config/studies/quick.yaml
#   snakemake --cores 1 plan --config study=<study>         plan.tsv only, no hardware needed
#   snakemake --cores 1 report --config study=<study>       tables, figures, summary.md and report.html
#                                                         from the records on disk (runs nothing)
# Logic lives in workflow/numaplace; the rules only wire files to it.

envvars:
    "PATH",


include: "workflow/rules/common.smk"


wildcard_constraints:
    run=r"[A-Za-z0-9_.-]+",
    **KIND_WILDCARDS,  # bench, cls, variant: from numaplace.kinds' registry



include: "workflow/rules/build.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/report.smk"


# RECORDS are named here although the tables need them too: Snakemake plans a missing
# record only when it is requested itself or its consumer must run anyway, and the
# tables of an up-to-date study need not (tests/test_slurm.py removes records so)
rule all:
    default_target: True
    input:
        PLAN,
        RECORDS,
        SUMMARY_MD,
        REPORT_HTML,


rule plan:
    input:
        PLAN,


rule build:
    input:
        BUILDS,


rule runs:
    input:
        RECORDS,


# tables, figures and report from the records on disk: never runs or builds anything
rule tables:
    input:
        TABLES,


rule figures:
    input:
        FIGURE_INDEX,


rule report:
    input:
        SUMMARY_MD,
        REPORT_HTML,
