"""What one point asks of a batch system (CPUs, memory, time), derived from the point unless
the spec's [slurm] section says."""

from __future__ import annotations

from manylab import backends, runner, units
from manylab import spec as specs
from manylab.params import PointParams
from manylab.schedulers.base import Resources


def resources(spec: specs.Spec, point: PointParams) -> Resources:
    """What one point asks of a batch system, derived from the point unless the spec says."""
    machine = point.machine
    cpus = spec.slurm["cpus"] or (machine.vcpus if machine.tcg == "multi" else 1)
    guest_mb = units.parse_size(machine.memory) >> 20
    model_mb = backends.of(point).model_mb(point)
    mem_mb = spec.slurm["mem_mb"] or guest_mb + 1024 + model_mb
    limit = spec.timeout_s or runner.default_timeout(point)
    time_min = spec.slurm["time_min"] or int(limit // 60) + 5
    return Resources(cpus, mem_mb, time_min)
