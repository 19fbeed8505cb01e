"""report.html: one self-contained page made from what the report stage already wrote
(answer.txt, summary.md, the figures and the tables): the answer on the first screen,
then the summary with its figures, every table, and what the workflow ran. Nothing is
planned, run or read from the study again; images are embedded, so the page can be
mailed or copied on its own."""
from __future__ import annotations

import base64
import datetime as dt
import html
import re
from pathlib import Path

import jinja2
import markdown
import pandas as pd

from numaplace import __version__
from numaplace.core.artifacts import ANSWER_FILE
from numaplace.report.machine import MACHINE_FILE, matrix_html
from numaplace.kinds import table_captions

TEMPLATE = "report.html.j2"
TABLE_ROWS_SHOWN = 50          # rows of a table shown in the page (the CSV next to it holds all)
MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}


def embed_images(body, base):
    """<img src="figures/..."> of the rendered summary → data: URIs (files under base)."""
    def inline(m):
        src = html.unescape(m.group(2))
        path = (base / src).resolve()
        if path.suffix not in MIME or not path.is_file():
            return m.group(0)
        data = base64.b64encode(path.read_bytes()).decode()
        return f'{m.group(1)}data:{MIME[path.suffix]};base64,{data}" data-file="{html.escape(src)}"'
    return re.sub(r'(<img[^>]*?src=")([^"]+)"', inline, body)


def _table(path, caption, link):
    import pandas as pd
    if not path.exists():
        return {"name": path.stem, "caption": caption, "link": link, "rows": 0, "html": "<p>(not written)</p>"}
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    shown = df.head(TABLE_ROWS_SHOWN)
    return {"name": path.stem, "caption": caption, "link": link, "rows": len(df),
            "html": shown.to_html(index=False, border=0, classes="data", escape=True)}


def write_html(out, tables_dir, summary_md, study, description=None, plan_rows=None):
    out, tables_dir, summary_md = Path(out), Path(tables_dir), Path(summary_md)
    answer_path = summary_md.parent / ANSWER_FILE
    answer = answer_path.read_text().splitlines() if answer_path.exists() else []
    machine_path = summary_md.parent / MACHINE_FILE
    machine = machine_path.read_text().splitlines()[:1] if machine_path.exists() else []
    matrix = tables_dir / "memory_matrix.csv"
    matrices = matrix_html(pd.read_csv(matrix)) if matrix.exists() and matrix.stat().st_size else ""
    text = summary_md.read_text() if summary_md.exists() else ""
    # the summary's own title and answer lead the page already: the summary from its next section
    first = text.find("\n## ", text.find("## The answer") + 1) if "## The answer" in text else -1
    body = markdown.markdown(text if first < 0 else text[first:], extensions=["tables"])
    body = embed_images(body, summary_md.parent)
    tables = [_table(tables_dir / f"{name}.csv", caption,
                     Path(_relpath(tables_dir / f"{name}.csv", out.parent)).as_posix())
              for name, caption in table_captions().items()]
    env = jinja2.Environment(loader=jinja2.PackageLoader("numaplace", "report"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    page = env.get_template(TEMPLATE).render(
        study=study, description=description or "", answer=answer, summary=jinja2.filters.Markup(body),
        machine=machine, matrices=jinja2.filters.Markup(matrices),
        tables=tables, tables_dir=tables_dir.as_posix(), plan_rows=plan_rows, version=__version__,
        made=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), shown=TABLE_ROWS_SHOWN)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(page)
    tmp.replace(out)
    return out


def _relpath(path, start):
    import os
    return os.path.relpath(path, start)
