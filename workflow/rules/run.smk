# Measured runs: one job per (binary, placement, repetition). The machine=1 resource
# (profiles/default) keeps runs from overlapping each other or a build.


def run_binary(wc):
    r = _RUNS[wc.run]
    return binary_path(r.bench, r.cls, r.variant)


rule measure:
    input:
        binary=run_binary,
    output:
        protected(f"{RESULTS}/runs/{{run}}/record.json"),
    params:
        spec=lambda wc: json.dumps(STUDY.run_params(wc.run), sort_keys=True),
    resources:
        machine=1,
    shell:
        "{NUMAPLACE} run --spec {params.spec:q} --binary {input.binary:q} --record {output:q}"
