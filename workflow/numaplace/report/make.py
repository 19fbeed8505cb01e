"""The report after the last run in one process: tables → figures → summary.md → report.html.
Each stage is also a command of its own (numaplace tables|figures|summary|html); one
process pays pandas', matplotlib's and scipy's imports once, and reads the tables it just
wrote from memory (issue 29: the quick study's report in under 5 s, not 9-18)."""
from __future__ import annotations


def make_report(results, plan, tables, figures, summary, html, fidelity=None, settings=None,
                study=None, description=None):
    from numaplace.figures import plots
    from numaplace.report.html import write_html
    from numaplace.report.summary import write_summary
    from numaplace.tables import aggregate
    aggregate.write_tables(results, tables, plan, fidelity)
    # the figures from the tables as written (CSV types: what `numaplace figures` reads)
    plots.make_figures(aggregate.read_tables(tables), figures, settings)
    write_summary(tables, figures, summary, study, description, plan)
    rows = aggregate.read_plan(plan)
    write_html(html, tables, summary, study, description, None if rows is None else len(rows))
