# Measured runs: one job per (binary, placement, repetition). The machine=1 resource
# (profiles/default) keeps runs from overlapping each other or a build. On a cluster a
# run takes a whole exclusive node; walltime and memory come from numaplace.cluster.
from numaplace import cluster


def run_build(wc):
    r = _RUNS[wc.run]
    return build_record_path(r.bench, r.cls, r.variant)


rule measure:
    input:
        build=run_build,
    output:
        protected(f"{RESULTS}/runs/{{run}}/record.json"),
    params:
        spec=lambda wc: json.dumps(STUDY.run_params(wc.run), sort_keys=True),
    threads: lambda wc: cluster.node_cpus(STUDY)
    resources:
        machine=1,
        exclusive=1,
        slurm_extra="--exclusive",
        cpus_per_task=lambda wc: cluster.node_cpus(STUDY),
        runtime=lambda wc: cluster.measure_runtime(STUDY, _RUNS[wc.run]),
        mem_mb=lambda wc: cluster.measure_mem_mb(STUDY, _RUNS[wc.run]),
        **cluster.queue_resources(STUDY),
    shell:
        # the job's walltime lets the runner time out (and record it) before the scheduler kills it
        "NUMAPLACE_WALLTIME_MIN={resources.runtime} {NUMAPLACE} run --spec {params.spec:q} --build {input.build:q} --record {output:q}"
