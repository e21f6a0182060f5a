"""Fake study folders, shaped like the runner's, for report tests (no QEMU needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

KERNEL = {
    "key": "k1", "variant": "stock", "arch": "x86_64", "fragments": [],
    "source": {"package": "linux-source-6.1", "version": "6.1.999-1", "tarball": "/x.tar.xz",
               "tarball_sha256": "ab" * 32},
    "patches": [], "config_fragments": [{"file": "kernel-patches/lab/config/base.config",
                                         "sha256": "cd" * 32}],
    "config_sha256": "ef" * 32, "toolchain": "gcc 12",
}


def params(workload: str, args: dict[str, Any], repeat: int = 0, vcpus: int = 2,
           variant: str = "stock", cmdline: str = "") -> dict[str, Any]:
    return {"kernel": {"variant": variant, "fragments": [], "cmdline": cmdline, "sysctl": {}},
            "machine": {"arch": "x86_64", "vcpus": vcpus, "memory": "512M", "numa": [],
                        "tcg": "single", "cpu": "", "reproducible": False},
            "workload": {"name": workload, "fs": "tmpfs", "disk": "1G", "args": args},
            "plugin": {"enabled": False, "preset": "tiny-4", "mode": "full", "roi": True,
                       "checker": False, "set": {}},
            "repeat": repeat}


def write_point(study: Path, point: str, point_params: dict[str, Any],
                outputs: list[dict[str, Any]] | None, status: str = "ok",
                reason: str | None = None, stats: dict[str, Any] | None = None,
                spec: Path | None = None, regions: dict[str, Any] | None = None,
                model_params: dict[str, Any] | None = None) -> Path:
    folder = study / point
    folder.mkdir(parents=True)
    if stats is not None:  # the machine model ran
        point_params = {**point_params, "plugin": {**point_params["plugin"], "enabled": True}}
    kernel = {**KERNEL, "variant": point_params["kernel"]["variant"]}
    (folder / "inputs.json").write_text(json.dumps({
        "point": point, "study": study.name, "params": point_params, "kernel": kernel,
        "spec": {"path": str(spec or study / "missing.toml"), "sha256": "00" * 32},
        "qemu": {"version": "QEMU emulator version 7.2.0", "argv": ["qemu-system-x86_64"]},
        "image": {"key": "img1"}, "lab": {"commit": "abc", "dirty": "no"},
        "host": {"machine": "x86_64", "node": "test", "cpus": 2}}))
    if outputs is not None:
        (folder / "workload.json").write_text(json.dumps(outputs))
    if stats is not None:
        (folder / "stats.json").write_text(json.dumps({"summary": stats,
                                                       "regions": regions or {},
                                                       "params": model_params or {}}))
    (folder / "result.json").write_text(json.dumps({
        "point": point, "study": study.name, "status": status, "reason": reason,
        "exit_status": 0, "qemu_returncode": 0, "timing": {"total_s": 10.0, "boot_s": 2.0},
        "kernel_reports": []}))
    return folder


def mmf_line(path: str, method: str, open_mode: str, size: int, throughput: float,
             latency: float, setup: float = 5.0) -> dict[str, Any]:
    return {"workload": "mmf", "path": path, "method": method, "open": open_mode, "size": size,
            "transfers": 3, "throughput_mib_s": throughput,
            "latency_us": {"mean": latency, "p99": latency * 1.1},
            "server": {"setup_us_mean": setup, "send_us_mean": latency - setup,
                       "minflt_per_transfer": 1.0 if method == "mmf" else 0.0},
            "verified": True, "ok": True}


def mmf_study(root: Path, name: str = "mmf", scale: float = 1.0) -> Path:
    """2 paths x 2 repeats; sizes 1K and 1M; mmf 50%/30% faster at 1M (per repeat)."""
    study = root / name
    for path in ("pipe", "tcp"):
        for repeat, gain in ((0, 1.5), (1, 1.3)):
            lines = []
            for size in (1024, 1 << 20):
                for open_mode, slow in (("n_open", 1.25), ("l_open", 1.0)):
                    base = 100.0 * scale
                    lines.append(mmf_line(path, "normal", open_mode, size, base, 10.0 * slow))
                    other = base * (gain if size >= 1 << 20 else 0.9)
                    lines.append(mmf_line(path, "mmf", open_mode, size, other,
                                          10.0 * slow * (2.0 if open_mode == "n_open" else 1)))
            write_point(study, f"p-{path}-r{repeat}",
                        params("mmf", {"path": path, "sizes": "1K,1M"}, repeat), lines)
    return study
