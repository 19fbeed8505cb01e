# The plan and the NPB binaries: one tree per variant under results/build/<hash of source
# and flags>/. A build always writes its record; a failed one says why, and its runs
# record that. On a cluster a build is an ordinary one-CPU job (numaplace.cluster.resources).


localrules:
    plan_table,


rule plan_table:
    output:
        plan=PLAN,
        estimate=f"{RESULTS}/{PLAN_ESTIMATE}",
        not_applicable=f"{RESULTS}/{NOT_APPLICABLE}",
    params:
        digest=lambda wc: STUDY.plan_digest(),
    log:
        f"{LOGS}/plan.log",
    conda:
        ENV
    run:
        STUDY.write_plan(output.plan)


# No input: a binary is shared by every study with its build key, and a job whose input
# another job makes is run again with it (the plan written anew would rebuild every binary).
rule npb_build:
    output:
        f"{BUILD_DIR}/{{variant}}/bin/{{bench}}.{{cls}}.build.json",
    log:
        f"{BUILD_DIR}/{{variant}}/logs/{{bench}}.{{cls}}.log",
    params:
        settings=lambda wc: json.dumps(STUDY.build_settings(wc.bench)),
        tree=lambda wc: f"{BUILD_DIR}/{wc.variant}/tree",
    resources:
        machine=1,
        runtime=cluster.BUILD_RUNTIME_MIN,
        mem_mb=cluster.BUILD_MEM_MB,
        **cluster.queue_resources(STUDY),
    conda:
        ENV
    shell:
        "numaplace build --settings {params.settings:q} --variant {wildcards.variant}"
        " --bench {wildcards.bench} --cls {wildcards.cls} --tree {params.tree:q}"
        " --record {output:q} --log {log:q} > /dev/null"


# The engineer's own program (a study's `programs:`): its own build command in its own
# folder, one record per program and build key (its definition and its sources).
rule program_build:
    output:
        f"{PROGRAM_BUILDS}/{{bench}}-{{key}}/{{bench}}.{{cls}}.build.json",
    log:
        f"{PROGRAM_BUILDS}/{{bench}}-{{key}}/{{bench}}.{{cls}}.log",
    wildcard_constraints:
        key="[0-9a-f]{12}",
    params:
        settings=lambda wc: json.dumps(STUDY.build_settings(wc.bench)),
    resources:
        machine=1,
        runtime=cluster.BUILD_RUNTIME_MIN,
        mem_mb=cluster.BUILD_MEM_MB,
        **cluster.queue_resources(STUDY),
    conda:
        ENV
    shell:
        "numaplace build --settings {params.settings:q} --variant default"
        " --bench {wildcards.bench} --cls {wildcards.cls} --tree -"
        " --record {output:q} --log {log:q} > /dev/null"
