"""The report's inputs section: spec text, kernels (source version, patch hashes), tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manylab.hashing import sha256_file
from manylab.report.model import Section, Table
from manylab.report.records import Study


def _distinct(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def spec_listing(study: Study) -> list[tuple[str, str]]:
    specs = _distinct([i["spec"] for i in study.inputs if isinstance(i.get("spec"), dict)])
    listings = []
    for spec in specs:
        path = Path(str(spec.get("path", "")))
        recorded = str(spec.get("sha256", ""))
        if not path.is_file():
            listings.append((f"spec {path} (sha256 {recorded[:16]})", "(the file is gone)"))
            continue
        now = sha256_file(path)
        state = "as run" if now == recorded else f"CHANGED since the run (ran {recorded[:16]})"
        listings.append((f"spec {path} (sha256 {now[:16]}, {state})", path.read_text()))
    return listings


def kernel_table(study: Study) -> Table:
    kernels = _distinct([i["kernel"] for i in study.inputs if isinstance(i.get("kernel"), dict)])
    rows = []
    for kernel in kernels:
        source = kernel.get("source", {})
        base = [str(kernel.get("variant", "")), str(kernel.get("arch", "")),
                f"{source.get('package', '')} {source.get('version', '')}",
                str(source.get("tarball_sha256", ""))[:16]]
        files = list(kernel.get("patches", [])) + list(kernel.get("config_fragments", []))
        if not files:
            rows.append(base + ["(no patches: the source as shipped)", ""])
        for item in files:
            rows.append(base + [str(item.get("file", "")), str(item.get("sha256", ""))[:16]])
    return Table("Kernels", ["variant", "arch", "source", "tarball sha256", "patch / config",
                             "sha256"], rows)


def tools_table(study: Study) -> Table:
    rows: list[list[str]] = []
    for label, pick in (
        ("QEMU", lambda i: i.get("qemu", {}).get("version")),
        ("gem5", lambda i: "{version}, binary sha256 {sha}".format(
            version=i["gem5"].get("version"), sha=str(i["gem5"].get("binary_sha256"))[:16])
         if isinstance(i.get("gem5"), dict) else None),
        ("kernel config sha256", lambda i: i.get("kernel", {}).get("config_sha256")),
        ("kernel toolchain", lambda i: i.get("kernel", {}).get("toolchain")),
        ("root image", lambda i: i.get("image", {}).get("key")),
        ("plugin", lambda i: (i.get("plugin") or {}).get("sha256")),
        ("lab commit", lambda i: "{commit} (dirty: {dirty})".format(**i["lab"])
         if isinstance(i.get("lab"), dict) else None),
        ("host", lambda i: "{machine} {node}, {cpus} CPUs".format(**i["host"])
         if isinstance(i.get("host"), dict) else None),
    ):
        for value in _distinct([pick(i) for i in study.inputs]):
            if value:
                rows.append([label, str(value)])
    return Table("Tools and provenance", ["what", "value"], rows)


def section(study: Study) -> Section:
    listings = spec_listing(study)
    paragraphs = [f"{len(study.inputs)} point folders under {study.directory}."]
    if not study.inputs:
        paragraphs.append("No point has an inputs.json yet.")
    return Section("Inputs", paragraphs, [], [kernel_table(study), tools_table(study)],
                   listings)
