"""`manylab report`: one study folder -> report/index.html, report/report.md and the plots."""

from __future__ import annotations

from pathlib import Path

from manylab.errors import LabError
from manylab.report import inputs, page, records
from manylab.report.kinds import PlotSet, plot_set
from manylab.report.model import Context, Section, Table, cell
from manylab.report.records import Record, Study
from manylab.report.sections import (
    headline,
    kernel_counters,
    kernel_paths,
    lock_sites,
    plugin_stats,
)
from manylab.report.stats import group
from manylab.results import write_table

REPORT_DIR = "report"
FIRST_COLUMNS = ["point", "status", "reason", "line"]


def overview(study: Study) -> Section:
    points = group(study.records, ["point"])
    statuses = [members[0]["status"] for members in points.values()]
    failed = [(point[0], members[0]["reason"]) for point, members in points.items()
              if members[0]["status"] != "ok"]
    bad_lines = [r for r in study.records
                 if r.get("status") == "ok" and r.get("result.ok") is False]
    paragraphs = [
        f"{len(points)} points: {statuses.count('ok')} ok, {len(failed)} failed; "
        f"{len(study.records)} result records (one per MANYLAB-RESULT line). Swept: "
        f"{', '.join(records.swept_params(study.records)) or 'nothing'}. All points: "
        f"../results.csv."]
    if bad_lines:
        paragraphs.append(f"{len(bad_lines)} result lines say ok=false (left out of the plots, "
                          "kept in the tables).")
    tables = []
    if failed:
        tables.append(Table("Failed points", ["point", "reason"],
                            [[p, r or "(no reason)"] for p, r in failed]))
    return Section(f"Study {study.name}", paragraphs, [], tables)


def records_table(workload: str, members: list[Record], swept: list[str],
                  chosen: PlotSet) -> Table:
    wanted = FIRST_COLUMNS + [c for c in chosen.columns(members, swept) if c not in FIRST_COLUMNS]
    present = [c for c in wanted if any(c in r for r in members)]
    return Table(f"{workload}: every record", present,
                 [[cell(r.get(c)) for c in present] for r in members])


def workload_sections(study: Study, out_dir: Path) -> list[Section]:
    sections: list[Section] = []
    for (workload,), members in group(study.records, ["workload.name"]).items():
        name = str(workload)
        swept = records.swept_params(members)
        context = Context(name, members, swept, out_dir, study.settings, study.directory)
        chosen = plot_set(name)
        sections += chosen.sections(context)
        sections += kernel_paths.sections(context)
        sections += plugin_stats.sections(context)
        sections += kernel_counters.sections(context)
        sections.append(Section(f"{name}: all points", [
            "Every record: one per result line of every point, failed points included "
            "(red rows), with the failure reason."],
            tables=[records_table(name, members, swept, chosen)]))
    return sections


def make_report(study_dir: Path, out_dir: Path | None = None) -> Path:
    if not study_dir.is_dir():
        raise LabError(f"{study_dir}: no such study folder (run it first: manylab run "
                       f"runs/{study_dir.name}.toml)")
    study = records.load(study_dir)
    if not study.records:
        raise LabError(f"{study_dir}: no complete point yet (manylab status {study_dir})")
    write_table(study_dir)
    out = out_dir or study_dir / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.png"), *out.glob("*.svg")]:
        old.unlink()
    for old in out.glob(f"{headline.TIMELINE_PREFIX}*.json"):
        old.unlink()
    sections = [*headline.sections(study, out), *lock_sites.sections(study), overview(study),
                inputs.section(study), *workload_sections(study, out)]
    title = f"manylab report: {study.name}"
    page.write_html(out / "index.html", title, sections)
    page.write_markdown(out / "report.md", title, sections)
    return out / "index.html"
