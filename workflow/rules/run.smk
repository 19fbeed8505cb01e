# Measured runs: one job per (binary, placement, repetition). The machine=1 resource
# (profiles/default) keeps runs from overlapping each other or a build. On a cluster a
# run takes a whole exclusive node; walltime and memory come from numaplace.cluster.resources.
# params: exactly the run's definition (Study.run_params); judging thresholds and plot
# settings are not part of it.


rule measure:
    input:
        build=run_build,
    output:
        protected(f"{RESULTS}/runs/{{run}}/record.json"),
    params:
        spec=run_spec,
    log:
        f"{LOGS}/measure/{{run}}.log",
    threads: NODE_CPUS
    resources:
        machine=1,
        exclusive=1,
        slurm_extra="--exclusive",
        cpus_per_task=NODE_CPUS,
        runtime=lambda wc: cluster.measure_runtime(STUDY, _RUNS[wc.run]),
        mem_mb=lambda wc: cluster.measure_mem_mb(STUDY, _RUNS[wc.run]),
        **cluster.queue_resources(STUDY),
    conda:
        ENV
    shell:
        # the job's walltime lets the runner time out (and record it) before the scheduler kills
        # it; stderr stays on the console: why no record was written (a full disk) reaches the user
        "NUMAPLACE_WALLTIME_MIN={resources.runtime} numaplace run --spec {params.spec:q}"
        " --build {input.build:q} --record {output:q} > {log:q}"
