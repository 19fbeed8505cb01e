"""The report after the last run in one process: tables → figures → summary.md → report.html.
Each stage is also a command of its own (numaplace tables|figures|summary|html); one
process pays pandas', matplotlib's and scipy's imports once, and reads the tables it just
wrote from memory (issue 29: the quick study's report in under 5 s, not 9-18)."""
from __future__ import annotations


def stages():
    """The stages' modules (pandas, matplotlib, jinja2, ...), imported: (plots, write_html,
    write_summary, aggregate)."""
    from numaplace.figures import plots
    from numaplace.report.html import write_html
    from numaplace.report.summary import write_summary
    from numaplace.tables import aggregate
    return plots, write_html, write_summary, aggregate


def collect_less():
    """For the `numaplace report` process alone, which ends when the report is written:
    its imports collected by no garbage collection (they make no cyclic garbage worth one;
    0.05-0.06 s of collections for the quick study), then frozen (gc.freeze: the objects
    imported are never scanned again by the collections that drawing 26 figures' cyclic
    garbage triggers, 0.06-0.13 s down to 0.03 s; and a forked drawer touches less
    shared memory). Not for a process that goes on (tests, an API user): a frozen
    object's cycles are never collected."""
    import gc
    import os
    import sys
    # one BLAS thread: the report does no linear algebra worth a pool, and its drawers are
    # forked (figures.plots), which a process with threads must not do (Python 3.13 warns)
    if "numpy" not in sys.modules:
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ[var] = "1"
    gc.disable()
    try:
        stages()
    finally:
        gc.freeze()
        gc.enable()


def make_report(results, plan, tables, figures, summary, html, fidelity=None, settings=None,
                study=None, description=None):
    plots, write_html, write_summary, aggregate = stages()
    aggregate.write_tables(results, tables, plan, fidelity)
    # the figures from the tables as written (CSV types: what `numaplace figures` reads)
    plots.make_figures(aggregate.read_tables(tables), figures, settings)
    write_summary(tables, figures, summary, study, description, plan)
    rows = aggregate.read_plan(plan)
    write_html(html, tables, summary, study, description, None if rows is None else len(rows))
