"""Names of the files the stages write beside their own (the tables' and figures' names
come from the kinds' registry: numaplace.kinds.table_captions, figure_titles)."""

# beside plan.tsv (numaplace.plan.study.Study.write_plan): what the study asks for that this
# machine cannot have, one line each; the machine time the plan estimated, per run
NOT_APPLICABLE = "not_applicable.txt"
PLAN_ESTIMATE = "estimate.json"

# the answer in a few lines (numaplace.report.answer), beside summary.md: the report's landing and
# the workflow's last lines read it
ANSWER_FILE = "answer.txt"
# the same answer as data for programs (docs/answer.schema.json)
ANSWER_JSON = "answer.json"
