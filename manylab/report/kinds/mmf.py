"""MMF (digest section 3): throughput vs size per path, mmf gain over normal, n_open cost."""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes

from manylab.report import plots
from manylab.report.axes import series_label
from manylab.report.kinds import PlotSet, register
from manylab.report.model import Context, Section, Table, cell
from manylab.report.published import MMF_GAIN, MMF_NOPEN_SLOWDOWN
from manylab.report.records import Record, ok_records
from manylab.report.stats import Summary, aggregate, gains, group, sorted_values, summarize

PATH, METHOD, OPEN, SIZE = "result.path", "result.method", "result.open", "result.size"
THROUGHPUT, LATENCY = "result.throughput_mib_s", "result.latency_us.mean"
SETUP, FAULTS = "result.server.setup_us_mean", "result.server.minflt_per_transfer"
STEPS = ("open", "mmap", "munmap", "close")  # result.server.<step>_us_mean (n_open)
CASE_ARGS = ("workload.args.path", "workload.args.method", "workload.args.open",
             "workload.args.sizes")
LARGE = 1 << 20      # "large transfers": the paper reports 1, 3 and 5 MB
SMALL = 64 << 10     # "small": where per-request setup dominates


def mmf_gains(records: list[Record]) -> list[Record]:
    """Per point (one boot) and case: throughput gain of mmf over normal, in percent."""
    return gains(records, METHOD, "normal", "mmf", THROUGHPUT, ["point", PATH, OPEN, SIZE])


def median_gains(records: list[Record]) -> list[Record]:
    """Like mmf_gains, from the median transfer latency (robust to a few stalled transfers)."""
    return gains(records, METHOD, "normal", "mmf", "result.latency_us.p50",
                 ["point", PATH, OPEN, SIZE], higher_is_better=False)


def nopen_slowdowns(records: list[Record]) -> list[Record]:
    """Per point and case: how much slower n_open is than l_open (mean latency), percent."""
    return gains(records, OPEN, "n_open", "l_open", LATENCY, ["point", PATH, METHOD, SIZE],
                 higher_is_better=False)


def _suffix(tag: str) -> str:
    """' (vcpus=2)' for the file tag '-vcpus=2', '' for none."""
    return f" ({tag[1:]})" if tag else ""


def _size_axis(ax: Axes, sizes: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [plots.human_size(s) for s in sizes], fontsize=7)
    ax.minorticks_off()


def throughput_figure(records: list[Record], out_dir: Path, tag: str) -> plots.Figure:
    paths = sorted_values(records, PATH)
    fig, axes = plots.subplots(len(paths))
    for ax, path in zip(axes, paths, strict=True):
        mine = [r for r in records if r.get(PATH) == path]
        for (method, open_mode), members in sorted(group(mine, [METHOD, OPEN]).items()):
            summaries = aggregate(members, [SIZE], THROUGHPUT)
            sizes = sorted(k[0] for k in summaries)
            plots.errorbar_line(ax, sizes, [summaries[(s,)] for s in sizes],
                                f"{method} {open_mode}",
                                marker="o" if method == "mmf" else "s")
        _size_axis(ax, sorted_values(mine, SIZE))
        ax.set_title(f"{path}", fontsize=10)
        plots.finish(ax, "file size (bytes)", "throughput (MiB/s, guest time)")
    return plots.save(fig, out_dir, f"mmf-throughput{tag}",
                      f"Transfer throughput vs file size per path{_suffix(tag)}",
                      "Bytes / sum of per-transfer latencies (request sent -> last byte "
                      "received); mean ± sample std over repeats (boots).")


def gain_figure(gain_rows: list[Record], out_dir: Path, tag: str) -> plots.Figure:
    opens = sorted_values(gain_rows, OPEN)
    paths = sorted_values(gain_rows, PATH)
    sizes = sorted_values(gain_rows, SIZE)
    fig, axes = plots.subplots(len(opens), width=6.2, height=4.2)
    width = 0.8 / max(len(paths), 1)
    for ax, open_mode in zip(axes, opens, strict=True):
        summaries = aggregate([g for g in gain_rows if g[OPEN] == open_mode], [PATH, SIZE],
                              "gain_pct")
        for index, path in enumerate(paths):
            xs = [i + (index - (len(paths) - 1) / 2) * width for i in range(len(sizes))]
            found = [summaries.get((path, s)) for s in sizes]
            ax.bar([x for x, f in zip(xs, found, strict=True) if f],
                   [f.mean for f in found if f], width,
                   yerr=[f.std for f in found if f], capsize=2, label=f"measured: {path}")
        plots.published_lines(ax, MMF_GAIN)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(sizes)), [plots.human_size(s) for s in sizes])
        ax.set_title(f"{open_mode}", fontsize=10)
        ax.set_xlabel("file size")
        ax.set_ylabel("mmf gain over normal (% throughput)")
        ax.grid(alpha=0.3, axis="y")
        plots.legend(ax, 6.5)
    return plots.save(fig, out_dir, f"mmf-gain{tag}",
                      f"mmf gain over normal per size and path{_suffix(tag)}",
                      "100 x (throughput mmf / throughput normal - 1), paired within each boot, "
                      "mean ± std over repeats. Dashed lines: the paper's mean gain per system "
                      "(all sizes and paths).")


def setup_figure(records: list[Record], slow_rows: list[Record], out_dir: Path,
                 tag: str) -> plots.Figure:
    fig, axes = plots.subplots(4)
    sizes = sorted_values(records, SIZE)
    combos = sorted(group(slow_rows, [PATH, METHOD]))
    for combo in combos:
        label = series_label([PATH, METHOD], combo)
        marker = "o" if combo[1] == "mmf" else "s"
        rows = [g for g in slow_rows if (g[PATH], g[METHOD]) == combo]
        summaries = aggregate(rows, [SIZE], "gain_pct")
        xs = sorted(k[0] for k in summaries)
        plots.errorbar_line(axes[0], xs, [summaries[(s,)] for s in xs], label, marker)
        nopen = [r for r in records if (r.get(PATH), r.get(METHOD)) == combo
                 and r.get(OPEN) == "n_open"]
        for ax, column in ((axes[1], SETUP), (axes[2], FAULTS)):
            per_size = aggregate(nopen, [SIZE], column)
            xs = sorted(k[0] for k in per_size)
            plots.errorbar_line(ax, xs, [per_size[(s,)] for s in xs], label, marker)
    nopen_mmf = [r for r in records if r.get(OPEN) == "n_open" and r.get(METHOD) == "mmf"]
    for step in STEPS:
        per_size = aggregate(nopen_mmf, [SIZE], f"result.server.{step}_us_mean")
        xs = sorted(k[0] for k in per_size)
        if xs:
            plots.errorbar_line(axes[3], xs, [per_size[(s,)] for s in xs], step)
    plots.published_lines(axes[0], MMF_NOPEN_SLOWDOWN)
    axes[0].axhline(0, color="black", linewidth=0.8)
    titles = ("n_open slower than l_open (% mean latency)",
              "n_open server setup per request (µs)", "n_open minor faults per request",
              "n_open mmf setup by call (µs, all paths)")
    for ax, title in zip(axes, titles, strict=True):
        _size_axis(ax, sizes)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("file size (bytes)")
        ax.grid(alpha=0.3)
        plots.legend(ax, 6.5)
    axes[0].set_yscale("symlog", linthresh=10)
    axes[1].set_yscale("log")
    axes[3].set_yscale("log")
    return plots.save(fig, out_dir, f"mmf-setup{tag}",
                      f"n_open versus l_open: the per-request setup cost{_suffix(tag)}",
                      "First: 100 x (n_open latency / l_open latency - 1), paired within each "
                      "boot. Second: the server's open+mmap+munmap+close (mmf) or open+close "
                      "(normal) time per request. Third: its minor page faults per request. "
                      "Fourth: the mmf setup split by system call.")


def _mean(rows: list[Record]) -> Summary:
    return summarize(r["gain_pct"] for r in rows)


def _slower(percent: float) -> str:
    return f"{percent:.1f}% slower" if percent >= 0 else f"{-percent:.1f}% faster"


def setup_split(records: list[Record]) -> str:
    """Where the n_open mmf setup time goes at the smallest size, by system call."""
    nopen_mmf = [r for r in records if r.get(OPEN) == "n_open" and r.get(METHOD) == "mmf"]
    if not nopen_mmf:
        return ""
    smallest = min(r[SIZE] for r in nopen_mmf)
    at = [r for r in nopen_mmf if r[SIZE] == smallest]
    parts = []
    for step in STEPS:
        found = aggregate(at, [], f"result.server.{step}_us_mean").get(())
        if found is not None:
            parts.append(f"{step} {found.mean:.0f} µs")
    setup = aggregate(at, [], SETUP).get(())
    if not parts or setup is None:
        return ""
    normal = aggregate([r for r in records if r.get(OPEN) == "n_open" and
                        r.get(METHOD) == "normal" and r.get(SIZE) == smallest], [], SETUP).get(())
    return (f"At {plots.human_size(smallest)}, n_open mmf spends {setup.mean:.0f} µs per request "
            f"on setup ({', '.join(parts)}; mean over paths and repeats)"
            + (f", against {normal.mean:.0f} µs (open + close) for n_open normal"
               if normal else "") + ".")


def findings(gain_rows: list[Record], slow_rows: list[Record], records: list[Record]) -> list[str]:
    text = []
    large = [g for g in gain_rows if g[SIZE] >= LARGE]
    if large:
        cases = aggregate(large, [PATH, OPEN, SIZE], "gain_pct")
        positive = sum(1 for s in cases.values() if s.mean > 0)
        overall = _mean(large)
        verdict = ("reproduces" if overall.mean > 0 and positive * 3 >= 2 * len(cases) else
                   "partly reproduces" if overall.mean > 0 else "does not reproduce")
        per_path = "; ".join(
            f"{path} {s.mean:+.1f}%" for (path,), s in aggregate(large, [PATH], "gain_pct").items())
        text.append(
            f"Direction 'mmf beats normal for large transfers' {verdict}: at sizes of 1 MiB and "
            f"more, mmf is faster in {positive} of {len(cases)} cases (path x open mode x size, "
            f"means over repeats); the mean gain is {overall.mean:+.1f}% (std {overall.std:.1f}, "
            f"n={overall.n} paired measurements); by path: {per_path}.")
    if gain_rows:
        every = _mean(gain_rows)
        by_open = "; ".join(f"{o} {s.mean:+.1f}%"
                            for (o,), s in aggregate(gain_rows, [OPEN], "gain_pct").items())
        published = ", ".join(p.text().split(" (")[0] + " " + p.machine for p in MMF_GAIN)
        text.append(
            f"Mean mmf gain over all sizes and paths (the paper's summary figure): "
            f"{every.mean:+.1f}% ({by_open}); published means: {published}.")
    small = [g for g in slow_rows if g[SIZE] <= SMALL]
    if small:
        by_method = aggregate(small, [METHOD], "gain_pct")
        mmf_cost = by_method.get(("mmf",))
        normal_cost = by_method.get(("normal",))
        if mmf_cost is not None:
            verdict = "reproduces" if mmf_cost.mean > 0 else "does not reproduce"
            if normal_cost is not None and mmf_cost.mean > 0 and mmf_cost.mean <= normal_cost.mean:
                verdict = "partly reproduces (n_open costs, but no more for mmf than for normal)"
            text.append(
                f"Direction 'n_open has a setup cost at small sizes' {verdict}: at 64 KiB and "
                f"less, n_open mmf is {_slower(mmf_cost.mean)} than l_open mmf (std "
                f"{mmf_cost.std:.1f}, n={mmf_cost.n})"
                + (f", n_open normal {_slower(normal_cost.mean)} than l_open normal"
                   if normal_cost else "")
                + f"; published: {MMF_NOPEN_SLOWDOWN[0].text()}.")
    split = setup_split(records)
    if split:
        text.append(split)
    if any(r.get("machine.reproducible") is True for r in records):
        text.append("These points ran under QEMU icount: guest time counts instructions (1 ns "
                    "each), so repeats agree exactly and host load cannot move the numbers, but "
                    "memory-system costs (cache misses, memory bandwidth) are not in the times.")
    text.append("A disagreement with the paper is a finding about Linux 6.1 under emulation "
                "(TCG: every copy and page fault runs emulated; guest time, not host time), "
                "not a failure of the run.")
    return text


def gain_table(gain_rows: list[Record], median_rows: list[Record]) -> Table:
    medians = aggregate(median_rows, [PATH, OPEN, SIZE], "gain_pct")
    rows = []
    for key, s in sorted(aggregate(gain_rows, [PATH, OPEN, SIZE], "gain_pct").items()):
        path, open_mode, size = key
        median = medians.get(key)
        rows.append([path, open_mode, plots.human_size(size), f"{s.mean:+.1f}", f"{s.std:.1f}",
                     f"±{s.ci95:.1f}", str(s.n),
                     "" if median is None else f"{median.mean:+.1f} ± {median.std:.1f}"])
    return Table("mmf gain over normal (throughput, %)",
                 ["path", "open", "size", "mean gain %", "std", "95% CI", "n",
                  "gain in median latency %"], rows)


def setup_table(records: list[Record], slow_rows: list[Record]) -> Table:
    setups = aggregate([r for r in records if r.get(OPEN) == "n_open"], [PATH, METHOD, SIZE],
                       SETUP)
    rows = []
    for (path, method, size), s in sorted(aggregate(slow_rows, [PATH, METHOD, SIZE],
                                                    "gain_pct").items()):
        setup = setups.get((path, method, size))
        rows.append([path, method, plots.human_size(size), f"{s.mean:+.1f}", f"{s.std:.1f}",
                     cell(setup.mean if setup else None), str(s.n)])
    return Table("n_open slower than l_open (mean latency, %)",
                 ["path", "method", "size", "n_open slowdown %", "std", "setup µs/request",
                  "n"], rows)


def sections(ctx: Context) -> list[Section]:
    good = [r for r in ok_records(ctx.records) if r.get(SIZE) is not None]
    if not good:
        return [Section("MMF transfer", ["No successful measurement to plot."])]
    extra = [k for k in ctx.swept if k not in CASE_ARGS]
    out = []
    for values, members in group(good, extra).items():
        tag = "" if not extra else "-" + series_label(extra, values).replace(", ", "-")
        title = "MMF transfer" + (f" ({series_label(extra, values)})" if extra else "")
        gain_rows = mmf_gains(members)
        slow_rows = nopen_slowdowns(members)
        figures = [throughput_figure(members, ctx.out_dir, tag)]
        if gain_rows:
            figures.append(gain_figure(gain_rows, ctx.out_dir, tag))
        if slow_rows:
            figures.append(setup_figure(members, slow_rows, ctx.out_dir, tag))
        tables = [gain_table(gain_rows, median_gains(members))] if gain_rows else []
        if slow_rows:
            tables.append(setup_table(members, slow_rows))
        out.append(Section(title, findings(gain_rows, slow_rows, members), figures, tables))
    return out


def columns(records: list[Record], swept: list[str]) -> list[str]:
    extra = [k for k in swept if k not in CASE_ARGS]
    return extra + ["repeat", PATH, METHOD, OPEN, SIZE, THROUGHPUT, LATENCY,
                    "result.latency_us.p99", SETUP, "result.server.send_us_mean", FAULTS,
                    "result.verified"]


MMF = register(PlotSet("mmf", sections, columns, (PATH, METHOD, OPEN, SIZE)))
