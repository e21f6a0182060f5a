"""What one point asks of a batch system (CPUs, memory, time), derived from the point unless
the spec's [slurm] section says."""

from __future__ import annotations

from typing import Any

from manylab import backends, runner, units
from manylab import spec as specs
from manylab.schedulers.base import Resources


def resources(spec: specs.Spec, params: dict[str, Any]) -> Resources:
    """What one point asks of a batch system, derived from the point unless the spec says."""
    machine = params["machine"]
    cpus = spec.slurm["cpus"] or (machine["vcpus"] if machine["tcg"] == "multi" else 1)
    guest_mb = units.parse_size(machine["memory"]) >> 20
    model_mb = backends.of(params).model_mb(params)
    mem_mb = spec.slurm["mem_mb"] or guest_mb + 1024 + model_mb
    limit = spec.timeout_s or runner.default_timeout(params)
    time_min = spec.slurm["time_min"] or int(limit // 60) + 5
    return Resources(cpus, mem_mb, time_min)
