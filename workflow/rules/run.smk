# Measured runs: one job per chunk of a measurement round (numaplace.plan.rounds): round r
# holds repetition r of every run, the chunks of round r+1 come after round r's (priority),
# so that every placement's repetitions are spread over the study's time; inside a chunk
# the order is shuffled with a seed each record keeps. The job writes one record per run
# (results/<study>/runs/<id>/record.json, no rule's output: Snakemake never deletes one)
# and, last, the chunk's ledger; started again it measures only the runs without a record
# of their definition (numaplace.run.chunk). The machine=1 resource (profiles/default)
# keeps chunks from overlapping each other or a build. On a cluster a chunk takes a whole
# exclusive node; walltime and memory come from numaplace.cluster.resources.
# params: exactly the runs' definitions (Study.run_params) and their binaries: judging
# thresholds and plot settings are not part of them. They reach the job as a file
# (--runs @results/<study>/chunks/<chunk>.<digest>.json: common.smk, chunk_runs), never as
# JSON on the command line, which Snakemake prints whole when a job fails; the digest in
# the name keeps Snakemake's params trigger. What stops a chunk is numaplace's one line
# on stderr (the console); each run's outcome, and a traceback if any, go to the log.
# Adaptive repetitions (repetitions: {min, max}): a chunk of a round past min also waits
# for the ledgers of the rounds before it, whose records decide which of its runs are
# still needed (numaplace.judge.separation); other studies' chunks wait for nothing.


rule measure:
    input:
        builds=chunk_builds,
        earlier=chunk_waits,     # adaptive repetitions only: the earlier rounds' ledgers
    output:
        f"{RESULTS}/rounds/{{chunk}}.json",
    params:
        runs=chunk_runs,
        chunk=chunk_facts,
        results=lambda wc, output: os.path.dirname(os.path.dirname(output[0])),   # results/<study>
    log:
        f"{LOGS}/measure/{{chunk}}.log",
    priority: chunk_priority
    threads: NODE_CPUS
    resources:
        machine=1,
        exclusive=1,
        slurm_extra="--exclusive",
        cpus_per_task=NODE_CPUS,
        runtime=lambda wc: cluster.measure_runtime(STUDY, chunk_of(wc), wc.chunk),
        mem_mb=lambda wc: cluster.measure_mem_mb(STUDY, chunk_of(wc)),
        **cluster.queue_resources(STUDY),
    conda:
        ENV
    shell:
        # the job's walltime lets the runner time out (and record it) before the scheduler kills
        # it; stderr stays on the console: progress, and why a run wrote no record (a full disk)
        "NUMAPLACE_WALLTIME_MIN={resources.runtime} numaplace measure --runs {params.runs:q}"
        " --chunk {params.chunk:q} --results {params.results:q} --ledger {output:q} > {log:q}"
