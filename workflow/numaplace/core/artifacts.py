"""Names of what the report stage writes beside its tables and figures (whose names
come from the kinds' registry: numaplace.kinds.table_captions, figure_titles)."""

# the answer in a few lines (numaplace.report.answer), beside summary.md: the report's landing and
# the workflow's last lines read it
ANSWER_FILE = "answer.txt"
