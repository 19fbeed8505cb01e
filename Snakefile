# numaplace: NUMA placement studies with the NPB CG and MG kernels.
#   snakemake --cores 1                                   embedded default study (config/config.yaml)
#   snakemake --cores 1 --configfile config/studies/quick.yaml
#   snakemake --cores 1 plan --configfile <study>         plan.tsv only, no hardware needed
# Logic lives in workflow/numaplace; the rules only wire files to it.

include: "workflow/rules/common.smk"
include: "workflow/rules/build.smk"
include: "workflow/rules/run.smk"


rule all:
    default_target: True
    input:
        PLAN,
        RECORDS,


rule plan:
    input:
        PLAN,


rule build:
    input:
        BINARIES,


rule runs:
    input:
        RECORDS,
