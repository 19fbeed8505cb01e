# numaplace: NUMA placement studies with the NPB CG and MG kernels.
#   snakemake --cores 1                                   embedded default study (config/config.yaml)
#   snakemake --cores 1 --config study=config/studies/quick.yaml
#   snakemake --cores 1 plan --config study=<study>         plan.tsv only, no hardware needed
#   snakemake --cores 1 report --config study=<study>       tables, figures, summary.md and report.html
#                                                         from the records on disk (runs nothing)
# Logic lives in workflow/numaplace; the rules only wire files to it.
from snakemake.utils import min_version


min_version("9.0")  # the executor plugins and storage API of Snakemake 9 (requirements.txt pins 9.27.1)

envvars:
    "PATH",


include: "workflow/rules/common.smk"


wildcard_constraints:
    chunk=r"r[0-9]+\.c[0-9]+",
    **KIND_WILDCARDS,  # bench, cls, variant: from numaplace.kinds' registry



include: "workflow/rules/build.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/report.smk"


# Before any job (common.smk: start_of_workflow): no other workflow on this study, from
# another checkout sharing results/; every record gets its second name (numaplace.record.store.
# keep_records), so that a record replaced by hand is still set aside as an attempt. At
# the end: how many runs failed, which builds failed (their logs); a study whose builds
# failed or with no successful run exits non-zero (common.smk: end_of_workflow).
onstart:
    start_of_workflow()


onsuccess:
    end_of_workflow()


onerror:
    end_of_workflow(completed=False)


# LEDGERS (one per measure job: a chunk of a round) are named here although the tables
# need them too: Snakemake plans a missing one only when it is requested itself or its
# consumer must run anyway, and the tables of an up-to-date study need not
rule all:
    default_target: True
    input:
        PLAN,
        LEDGERS,
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
        LEDGERS,


# tables, figures and report from the records on disk: never runs or builds anything
rule tables:
    input:
        list(TABLES.values()),


rule figures:
    input:
        FIGURE_INDEX,


rule report:
    input:
        SUMMARY_MD,
        REPORT_HTML,
