"""Figures, summary.md and the HTML report: from the fixture records (fast) and from a
real class S study that the workflow runs in a temporary copy of the repository;
regenerating the report runs no benchmark; the report renders in headless Chromium."""
import os
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import copy_workflow, job_stats, need_rig, run_snakemake
from numaplace.kinds import table_captions
from numaplace.tables import aggregate
from numaplace.figures import plots
from numaplace.report import summary as report

FIXTURE = Path(__file__).parent / "fixtures" / "records" / "results" / "fixture"
QUICK = "config/studies/quick.yaml"
REPORT_JOBS = {"make_report", "report"}
PNG = b"\x89PNG\r\n\x1a\n"


# -- helpers -----------------------------------------------------------------------

def snakemake(wf, *args, cores=2, check=True):
    return run_snakemake(wf, "--cores", str(cores), *args, check=check)


def check_figures(figures_dir, manifest):
    """Every figure as SVG (the default format) and, where the study asked for it, as PNG;
    nothing else on disk."""
    assert len(manifest), "no figure written"
    formats = [f for f in ("svg", "png") if f in manifest]
    for _, row in manifest.iterrows():
        svg = Path(figures_dir, row["svg"])
        assert svg.stat().st_size > 1000 and b"<svg" in svg.read_bytes()[:2000], svg
        if "png" in formats:
            png = Path(figures_dir, row["png"])
            assert png.stat().st_size > 1000 and png.read_bytes()[:8] == PNG, png
    on_disk = {p.relative_to(figures_dir).as_posix() for p in Path(figures_dir).glob("*/*.*")
               if not p.name.startswith(".")}      # Snakemake marks directory outputs
    assert on_disk == set().union(*(set(manifest[f]) for f in formats))


def record_mtimes(wf, study):
    return {p: p.stat().st_mtime_ns for p in (wf / "results" / study / "runs").glob("**/record.json")}


# -- from the fixture records --------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("fixture-report")
    tables_dir, figures_dir = out / "results" / "tables", out / "report" / "figures"
    aggregate.write_tables(FIXTURE, tables_dir, FIXTURE / "plan.tsv")
    manifest = plots.make_figures(aggregate.read_tables(tables_dir), figures_dir)
    summary = out / "report" / "summary.md"
    report.write_summary(tables_dir, figures_dir, summary, "fixture", "copies of real records",
                         FIXTURE / "plan.tsv")
    return out, manifest, summary


def test_every_figure_from_fixture(fixture_report):
    out, manifest, _ = fixture_report
    check_figures(out / "report" / "figures", manifest)
    counts = manifest["kind"].value_counts().to_dict()
    # duration and pages: one per (bench, class, variant, threads) with data; best vs
    # worst: per (bench, class, variant) with an ok run; serial-init: CG.A only
    assert counts == {"duration": 5, "pages": 4, "best_worst": 2, "serial_init": 1, "variability": 3}
    assert (out / "report" / "figures" / plots.MANIFEST).exists()
    titles = " ".join(manifest["title"])
    assert "CG class A · default · 2 threads" in titles


def test_figures_survive_long_labels(tmp_path):
    # 30 placements with long labels, in the style of a full X4600 study
    labels = [f"2/2/2/2 on {i % 8},{(i + 1) % 8},{(i + 2) % 8},{(i + 3) % 8} · interleave 0-7 · pinned threads"
              for i in range(30)]
    rows = [{"bench": "cg", "class": "B", "variant": "default", "threads": 8, "placement_id": f"p{i}",
             "placement": lab, "n": 5, "n_failed": i % 2, "n_missing": 0, "n_drift": 0,
             "time_min_s": 60 + i, "time_median_s": 62 + i, "time_mean_s": 62 + i, "time_max_s": 65 + i,
             "time_cv": 0.02} for i, lab in enumerate(labels)]
    summary = pd.DataFrame(rows)
    w = plots._Writer(tmp_path, plots.Section("figures", {"formats": ["png"]}).whole())
    plots._rc()
    plots.duration_figures(summary, w)
    plots.variability_figures(summary, w)
    assert len(w.rows) == 2
    for row in w.rows:
        assert (tmp_path / row["png"]).stat().st_size > 10_000


def test_summary_md_from_fixture(fixture_report):
    out, manifest, summary = fixture_report
    text = summary.read_text()
    for heading in ("## Best and worst placement", "## Failed and unverified runs",
                    "## Placement fidelity drift", "## Planned runs without a record", "## Figures"):
        assert heading in text
    best = text.split("## Best and worst placement")[1].split("##")[0]
    assert "| CG | A | default | 2 | 1/1 on 0,1 | 8.50 | 3 | 2 on 1 · interleave 0-1 | 14.00 | 1 | 39.3% | unknown |  | yes |" in best
    assert "| CG | A | default | 4 | 2/2 on 0,1 | 5.10 | 3 | 2/2 on 0,1 · membind 0 | 6.50 | 3 | 21.5% | yes | 0.1 |  |" in best
    failed = text.split("## Failed and unverified runs")[1].split("##")[0]
    for rid, status in (("cg.A.default.c0.2_loc_p_nc.r4", "failed"), ("cg.A.default.c2-3_il0-1_p_nc.r2", "unverified"),
                        ("cg.A.default.c0-3_loc_p_nc.r2", "timeout"), ("mg.A.default.c0-1_loc_p_nc.r1", "placement-failed")):
        assert rid in failed and f"| {status} |" in failed
    assert "set aside" in failed
    drift = text.split("## Placement fidelity drift")[1].split("##")[0]
    # judged where the records are read, from the run's captures (records store no verdict)
    assert "cg.A.default.c2-3_il0-1_p_nc.r1" in drift and "threads ran outside CPUs 2-3" in drift
    assert "cg.A.default.c0.2_loc_p_nc.r5" in text.split("## Planned runs without a record")[1]
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert len(set(links)) == len(manifest)        # the best-vs-worst ones twice: in the answer too
    # the first screen answers: right after the intro, per case, best, worst and the cost
    assert text.index("## The answer") < text.index("## Runs by status")
    answer = text.split("## The answer")[1].split("##")[0]
    assert ("| CG class A · default · 4 threads | 2/2 on 0,1 | 2/2 on 0,1 · membind 0 | 21.5% | beyond noise |  |"
            in answer), answer
    assert "| CG class A · default · 2 threads | 1/1 on 0,1 | 2 on 1 · interleave 0-1 | 39.3% | too few runs to tell | rests on drifted runs |" in answer
    assert "![" in answer and "best_worst/cg.A.default" in answer
    for link in links:
        assert (summary.parent / link).stat().st_size > 0, link


# -- a real study, run by the workflow ----------------------------------------------

@pytest.fixture(scope="module")
def study(repo, tmp_path_factory):
    wf = copy_workflow(repo, tmp_path_factory.mktemp("report-study"))
    t0 = time.monotonic()
    r = snakemake(wf, "--configfile", QUICK)
    seconds = time.monotonic() - t0
    print(f"quick study with report: {seconds:.1f} s")
    return wf, r.stderr          # snakemake's log, in order


def copy_of(study, tmp_path):
    """A private copy of the finished study (metadata included) to change freely."""
    wf, _ = study
    dest = tmp_path / "wf"
    shutil.copytree(wf, dest, symlinks=True)
    return dest


def test_all_builds_report_after_the_runs(study):
    wf, log = study
    plan = pd.read_csv(wf / "results/quick/plan.tsv", sep="\t")
    runs = pd.read_csv(wf / "results/quick/tables/runs.csv")
    assert len(runs) == len(plan) and set(runs["run_id"]) == set(plan["run_id"])
    assert (runs["status"] == "ok").all()
    assert set(runs["placement"]) == set(plan["placement"])          # human labels
    # the tables were made after the last measured run, in the same invocation
    measured = [m.start() for m in re.finditer(r"\(Rule: measure\)", log)]     # "Finished jobid: n (Rule: measure)"
    assert len(measured) == len(list((wf / "results/quick/rounds").glob("*.json"))) >= 1   # one per chunk
    last_measure = max(measured)
    assert log.index("(Rule: make_report)") > last_measure
    for name in table_captions():
        assert (wf / "results/quick/tables" / f"{name}.csv").stat().st_size > 0
    figures = wf / "report/quick/figures"
    manifest = pd.read_csv(figures / plots.MANIFEST)
    check_figures(figures, manifest)
    summary = pd.read_csv(wf / "results/quick/tables/summary.csv")
    cases = summary.groupby(["bench", "class", "variant", "threads"]).ngroups
    kinds = manifest["kind"].value_counts()
    assert kinds["duration"] == cases and kinds["variability"] == 4 and kinds["best_worst"] == 4
    assert kinds["serial_init"] == 2 and kinds["pages"] >= 1
    assert (wf / "report/quick/report.html").stat().st_size > 100_000
    text = (wf / "report/quick/summary.md").read_text()
    assert "## Best and worst placement" in text and "None: every record is ok." in text
    # nothing left to do
    assert job_stats(snakemake(wf, "-n", "--configfile", QUICK).out) == {}


def test_report_regenerates_without_running_or_building(study, tmp_path):
    wf = copy_of(study, tmp_path)
    before = record_mtimes(wf, "quick")
    shutil.rmtree(wf / "report")
    shutil.rmtree(wf / "results" / "build")          # not even the binaries are needed
    dry = snakemake(wf, "-n", "report", "--configfile", QUICK)
    jobs = job_stats(dry.out)
    assert "measure" not in jobs and "npb_build" not in jobs, jobs
    assert set(jobs) == REPORT_JOBS, jobs
    t0 = time.monotonic()
    r = snakemake(wf, "report", "--configfile", QUICK, cores=1)
    seconds = time.monotonic() - t0
    out = r.out
    assert "(Rule: measure)" not in out and "(Rule: npb_build)" not in out and "(Rule: make_report)" in out
    assert set(job_stats(out)) == REPORT_JOBS
    assert record_mtimes(wf, "quick") == before
    assert (wf / "report/quick/report.html").stat().st_size > 100_000
    check_figures(wf / "report/quick/figures", pd.read_csv(wf / "report/quick/figures" / plots.MANIFEST))
    assert job_stats(snakemake(wf, "-n", "report", "--configfile", QUICK).out) == {}
    print(f"report regenerated from existing records in {seconds:.1f} s")


def test_report_never_reruns_runs_of_a_changed_study(study, tmp_path):
    # the study's run settings changed since the records were made: `snakemake` would
    # re-run them, the report target must not
    wf = copy_of(study, tmp_path)
    cfg = wf / QUICK
    cfg.write_text(cfg.read_text() + "capture: {interval_max: 4.0}\n")
    assert "measure" in job_stats(snakemake(wf, "-n", "--configfile", QUICK).out)
    jobs = job_stats(snakemake(wf, "-n", "report", "--configfile", QUICK).out)
    assert "measure" not in jobs and "npb_build" not in jobs, jobs


def test_report_of_a_partial_study(study, tmp_path):
    wf = copy_of(study, tmp_path)
    gone = wf / "results/quick/runs/mg.S.default.c0-1_loc_p_nc.r1"
    os.chmod(gone / "record.json", 0o644)
    shutil.rmtree(gone)
    jobs = job_stats(snakemake(wf, "-n", "report", "--configfile", QUICK).out)
    assert "measure" not in jobs and "make_report" in jobs
    snakemake(wf, "report", "--configfile", QUICK, cores=1)
    assert not gone.exists()
    summary = pd.read_csv(wf / "results/quick/tables/summary.csv")
    g = summary[(summary["bench"] == "mg") & (summary["variant"] == "default") &
                (summary["placement_id"] == "c0-1_loc_p_nc")].iloc[0]
    assert (g["n"], g["n_planned"], g["n_missing"]) == (0, 1, 1)
    text = (wf / "report/quick/summary.md").read_text()
    assert "mg.S.default.c0-1_loc_p_nc.r1" in text.split("## Planned runs without a record")[1]


# -- the HTML report in a browser ----------------------------------------------------

FIGURES_IN_REPORT = """
Promise.all(Array.from(document.images).map(im => im.decode().then(
  () => [im.dataset.file || im.getAttribute("src").slice(0, 60), im.naturalWidth, im.naturalHeight],
  () => [im.dataset.file || im.getAttribute("src").slice(0, 60), 0, 0])))
"""

IMAGES_LOADED = """
Promise.all(Array.from(document.images).map(
  im => im.decode().then(() => [im.getAttribute("src"), im.naturalWidth], () => [im.getAttribute("src"), 0])))
"""


def test_report_in_browser(study, tmp_path):
    from browser.cdp import Browser, find_chromium
    if not find_chromium():
        need_rig("chromium is not installed (bash .ci/setup --tests installs it): cannot open the report")
    wf, _ = study
    html = wf / "report/quick/report.html"
    manifest = pd.read_csv(wf / "report/quick/figures" / plots.MANIFEST)
    shots = Path(os.environ.get("NUMAPLACE_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    with Browser() as b:
        page = b.open(html.as_uri())
        page.wait_for("document.readyState === 'complete'")
        page.wait_for("document.body.innerText.includes('NUMA placement study')")
        main = page.screenshot(shots / "report-main.png")
        assert Path(main).stat().st_size > 10_000
        text = page.evaluate("document.body.innerText")
        # the landing page answers first: per case, best, worst and what the wrong choice costs
        assert "The answer" in text, text[:2000]
        # the machine first (its model, then its matrices where measured), then the answer
        assert text.index("The machine: ") < text.index("The answer") < \
            text.index("machine: ", text.index("The answer")) < text.index("Every run of the study's plan")
        answer = (wf / "report/quick/answer.txt").read_text().splitlines()
        assert answer[0].startswith("machine: 1 NUMA node")
        best_worst = pd.read_csv(wf / "results/quick/tables/best_worst.csv")
        cases = best_worst[best_worst["best_placement_id"] != best_worst["worst_placement_id"]]
        # one node: every best/worst pair shares its CPUs and memory, which is no placement effect
        assert any(f"({r['best_placement']} / {r['worst_placement']}: " in text for _, r in cases.iterrows()), text[:3000]
        assert not [line for line in answer if "the wrong choice costs" in line]
        assert [line for line in answer if "no placement effect to show" in line]
        assert all(line in text for line in answer)
        for word in ("Workflow", "Figures", "Tables", "Summary"):
            assert word in text
        # every figure is in the page (embedded: the page stands alone) and decodes to a real image
        shown = page.evaluate(FIGURES_IN_REPORT, timeout=120)
        assert {s[0] for s in shown} == {f"figures/{p}" for p in manifest["svg"]}, shown[:3]
        bad = [s for s in shown if s[1] <= 0 or s[2] <= 0]
        assert not bad, bad
        assert all(not im.startswith("figures/") for im in page.evaluate(
            "Array.from(document.images).map(im => im.getAttribute('src'))"))
        page.evaluate("Array.from(document.images).find(im => im.dataset.file.includes('best_worst/'))"
                      ".scrollIntoView()")
        time.sleep(0.3)
        page.screenshot(shots / "report-figure.png")
        assert not page.console_errors(), page.console_errors()

        # the summary's figures, in a plain page of our own
        summary = wf / "report/quick/summary.md"
        links = sorted(set(re.findall(r"!\[[^]]*\]\(([^)]+)\)", summary.read_text())))
        assert len(links) == len(manifest)
        own = tmp_path / "summary-figures.html"
        own.write_text("<!doctype html><html><body>" + "".join(
            f'<figure><img src="{(summary.parent / link).as_uri()}"><figcaption>{link}</figcaption></figure>'
            for link in links) + "</body></html>")
        page2 = b.open(own.as_uri())
        page2.wait_for("document.readyState === 'complete'")
        loaded = page2.evaluate(IMAGES_LOADED)
        assert len(loaded) == len(links)
        assert all(w > 0 for _, w in loaded), [src for src, w in loaded if w <= 0]


def test_duration_figure_shows_each_placement_in_order_with_best_and_worst_marked(tmp_path, monkeypatch):
    """What the figure draws, not only that a file exists: rendered with text kept as text,
    the SVG names every placement by its human form, fastest first, the best bar green and
    the worst red, and the median of each."""
    import re as _re
    rows = [{"bench": "cg", "class": "B", "variant": "default", "threads": 4, "placement_id": pid,
             "placement": label, "n": 3, "n_failed": 0, "n_missing": 0, "n_drift": 0,
             "time_min_s": t - 0.5, "time_median_s": t, "time_mean_s": t, "time_max_s": t + 0.5, "time_cv": 0.01}
            for pid, label, t in (("b", "2/2 on 0,1", 20.0), ("a", "4 on 0 · interleave 0-1", 31.0),
                                  ("c", "1/1/1/1 on 0-3", 12.5))]
    w = plots._Writer(tmp_path, plots.Section("figures", {"formats": ["svg"]}).whole())
    plots._rc()
    monkeypatch.setitem(plots.plt.rcParams, "svg.fonttype", "none")
    plots.duration_figures(pd.DataFrame(rows), w)
    (row,) = w.rows
    svg = (tmp_path / row["svg"]).read_text()
    texts = [t.strip() for t in _re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    order = [t for t in texts if t in ("2/2 on 0,1", "4 on 0 · interleave 0-1", "1/1/1/1 on 0-3")]
    # tick labels are written top row first: the fastest placement first
    assert order == ["1/1/1/1 on 0-3", "2/2 on 0,1", "4 on 0 · interleave 0-1"], texts
    assert any(t.startswith("12.50 s") for t in texts) and any(t.startswith("31.00 s") for t in texts)
    assert plots.COLORS["best"] in svg and plots.COLORS["worst"] in svg
    assert "Duration per placement" in " ".join(texts)


# -- a group of 120 placements: best and worst stay findable -------------------------

def many_placements(tables, n=120):
    """The fixture's tables with one (bench, class, variant, threads) group blown up to n
    placements (times spread; one placement with no ok run), as a generated study has."""
    s = tables["summary"]
    row = s[(s["bench"] == "cg") & (s["threads"] == 2)].iloc[0]
    rows = []
    for i in range(n):
        r = row.copy()
        r["placement_id"], r["placement"] = f"p{i:03d}", f"placement number {i:03d}"
        r["time_median_s"] = r["time_min_s"] = r["time_max_s"] = 1.0 + i / n
        r["time_cv"] = (i % 17) / 100
        rows.append(r)
    rows[57]["n"], rows[57]["n_failed"] = 0, 1
    rows[57]["time_median_s"] = rows[57]["time_min_s"] = rows[57]["time_max_s"] = float("nan")
    summary = pd.DataFrame(rows).reset_index(drop=True)
    pages = tables["numa_pages"]
    prow = pages[(pages["level"] == "group")].iloc[0]
    prow_list = []
    for i in range(n):
        p = prow.copy()
        p["bench"], p["class"], p["variant"], p["threads"] = row["bench"], row["class"], row["variant"], row["threads"]
        p["placement_id"], p["placement"] = f"p{i:03d}", f"placement number {i:03d}"
        prow_list.append(p)
    serial = summary.assign(variant="serial-init", time_median_s=summary["time_median_s"] * 0.9)
    return {**tables, "summary": pd.concat([summary, serial], ignore_index=True),
            "best_worst": tables["best_worst"].iloc[:0], "numa_pages": pd.DataFrame(prow_list)}


def test_elide_keeps_best_worst_and_unmeasured():
    s = pd.DataFrame({"n": [3] * 100, "time_median_s": range(100)})
    s.loc[50, "n"] = 0
    shown, hidden = plots.elide(s.sort_values("time_median_s"), 40)
    assert 0 in shown.index and 99 in shown.index and 50 in shown.index    # best, worst, no ok run
    assert len(shown) == 40 and len(hidden) == 60 and set(shown.index).isdisjoint(hidden.index)
    assert plots.elide(s.iloc[:40], 40)[1] is None


def test_figures_of_120_placements_stay_one_screen(fixture_report, tmp_path):
    from PIL import Image
    out, _, _ = fixture_report
    tables = many_placements(aggregate.read_tables(out / "results" / "tables"))
    manifest = plots.make_figures(tables, tmp_path, {"formats": ["png"], "dpi": 50})
    heights = {}
    for _, row in manifest.iterrows():
        with Image.open(tmp_path / row["png"]) as im:
            heights[row["png"]] = im.size[1] / 50            # inches
    tall = {k: h for k, h in heights.items() if "cg.A" in k and "t2" in k or "variability/cg.A" in k
            or "serial_init/cg.A" in k}
    assert tall and all(h < 0.42 * 45 + 4 for h in tall.values()), heights   # 40 rows + gap, not 120
    # the same figure with every row asked for is more than twice as tall
    full = plots.make_figures(tables, tmp_path / "all", {"formats": ["png"], "dpi": 50, "max_rows": 1000})
    with Image.open(tmp_path / "all" / "duration/cg.A.default.t2.png") as im:
        assert im.size[1] / 50 > 2 * heights["duration/cg.A.default.t2.png"]
    assert len(full) == len(manifest)


LANDING_GEOMETRY = """
(() => {
  const items = Array.from(document.querySelectorAll('h1, p, li'));
  const title = items.find(e => e.innerText.startsWith('NUMA placement study'));
  const answer = items.filter(e => e.innerText.startsWith('machine: ') || / class [SWABC] \\(/.test(e.innerText));
  const out = {title: title ? title.getBoundingClientRect().top + window.scrollY : null, lines: []};
  for (const e of answer) {
    e.scrollIntoView({block: 'nearest'});
    const r = e.getBoundingClientRect();
    out.lines.push([r.top, r.bottom, window.innerHeight]);
  }
  return out;
})()
"""


def test_landing_is_readable_at_1400x800(study, tmp_path):
    """The title and every line of the answer can be brought into a 1400x800 window (a
    landing taller than the window must scroll, not hide its top above it)."""
    from browser.cdp import Browser, find_chromium
    if not find_chromium():
        need_rig("chromium is not installed (bash .ci/setup --tests installs it): cannot open the report")
    wf, _ = study
    with Browser(width=1400, height=800) as b:
        page = b.open((wf / "report/quick/report.html").as_uri())
        page.wait_for("document.readyState === 'complete'")
        page.wait_for("document.body.innerText.includes('NUMA placement study')")
        page.screenshot(Path(os.environ.get("NUMAPLACE_SCREENSHOTS", tmp_path)) / "report-1400x800.png")
        geo = page.evaluate(LANDING_GEOMETRY)
    assert geo["title"] is not None and geo["title"] >= 0, geo
    assert geo["lines"], geo
    assert all(top >= 0 and bottom <= height for top, bottom, height in geo["lines"]), geo


# -- report.html from what the report stage wrote (numaplace.report.html) -----------------

def test_the_html_page_leads_with_the_machine_and_the_answer_and_shows_50_rows_a_table(tmp_path):
    """The machine's first line (the facts; the matrices are HTML tables), the answer's
    lines, the summary from the section after its own answer, each table's row count
    (all of them) with its first 50 rows, and images embedded under their MIME type."""
    import base64
    from numaplace.report.html import embed_images, write_html
    tables, rep = tmp_path / "tables", tmp_path / "report"
    tables.mkdir()
    rep.mkdir()
    pd.DataFrame({"run_id": [f"run{i:03d}" for i in range(60)], "status": "ok"}).to_csv(tables / "runs.csv", index=False)
    (rep / "answer.txt").write_text("machine: 2 NUMA nodes\nCG class A (default, 2 threads): beyond noise\n")
    (rep / "machine.txt").write_text("AMD EPYC 9654 · 2 sockets\nlatency (ns, 256 MiB buffers), reader x memory:\n")
    (rep / "figures").mkdir()
    (rep / "figures" / "a.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (rep / "figures" / "b.png").write_bytes(PNG + b"rest")
    (rep / "summary.md").write_text("# Placement study `s`: summary\n\n## The answer\n\nANSWER-IN-SUMMARY\n\n"
                                    "## Runs by status\n\nRUNS-SECTION\n\n![A](figures/a.svg)\n\n![B](figures/b.png)\n")
    page = write_html(tmp_path / "out" / "report.html", tables, rep / "summary.md", "s", plan_rows=12).read_text()
    assert "<b>The machine:</b> AMD EPYC 9654 · 2 sockets</p>" in page and "256 MiB buffers" not in page
    assert "<li>machine: 2 NUMA nodes</li><li>CG class A (default, 2 threads): beyond noise</li>" in page
    assert "RUNS-SECTION" in page and "ANSWER-IN-SUMMARY" not in page
    assert "(60 rows; <a href=\"../tables/runs.csv\">runs.csv</a>)" in page
    assert "run049" in page and "run050" not in page
    assert "the first 50 rows of each here" in page and "12 runs" in page
    assert f'src="data:image/svg+xml;base64,{base64.b64encode((rep / "figures" / "a.svg").read_bytes()).decode()}" ' \
        'data-file="figures/a.svg"' in page
    assert 'src="data:image/png;base64,' in page and 'data-file="figures/b.png"' in page
    kept = '<img alt="x" src="figures/missing.svg" />'
    assert embed_images(kept, rep) == kept
