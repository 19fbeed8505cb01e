"""Report: the answer, summary.md and the HTML report."""
