"""The names of what the report stage writes, in one place (light: the Snakefile
imports it at every start): the tables (results/<study>/tables/<name>.csv) and the
kinds of figure with their titles (report/<study>/figures/<kind>/)."""

# the answer in a few lines (numaplace.report.answer), beside summary.md: the report's landing and
# the workflow's last lines read it
ANSWER_FILE = "answer.txt"

TABLES = ("runs", "summary", "best_worst", "numa_pages", "numastat", "memory", "memory_matrix")

FIGURES = {"duration": "Duration per placement", "best_worst": "Best vs worst placement",
           "pages": "Pages per NUMA node", "serial_init": "Serial initialisation vs default",
           "variability": "Run-to-run variability",
           "memory_bandwidth": "Memory: read bandwidth per CPU", "memory_latency": "Memory: latency vs size",
           "memory_heatmap": "Memory: reader node × memory node", "memory_contention": "Memory: contention"}
