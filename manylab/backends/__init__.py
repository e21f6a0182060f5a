"""The backends a point runs on (`machine.backend`). A backend takes a planned point and an
empty staging folder, builds or finds what the point needs, runs it, leaves inputs.json,
console.log, workload.json (and stats.json) in the folder and returns result.json's content;
the runner owns the folder's life (staging, atomic rename, result.json) and what every backend
records alike (`inputs_base`: the point, its spec, the lab's commit, the host)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from manylab.errors import LabError
from manylab.params import PointParams

if TYPE_CHECKING:
    from manylab import image, kernel


class Backend(Protocol):
    name: str

    def default_timeout(self, point: PointParams) -> float:
        """The time limit of a point when the spec sets none, in seconds."""

    def model_mb(self, point: PointParams) -> int:
        """Host memory the backend's model needs beyond the guest's RAM (batch requests)."""

    def check_tools(self, point: PointParams) -> None:
        """Raise a LabError naming the fix when the backend's tools are missing or unusable."""

    def stale_tool(self, point: PointParams, inputs: dict[str, Any]) -> str | None:
        """What of the backend's own tools differs from those a stored point's inputs.json
        records (for example "QEMU version"), or None."""

    def build_ready_state(self, point: PointParams, kernel_art: kernel.KernelArtifacts,
                          image_art: image.ImageArtifacts) -> None:
        """Build (or check) the saved post-boot state the point restores, if it restores one
        (a QEMU snapshot, a gem5 checkpoint); raise ready_state.StateFailed if it cannot."""

    def run_into(self, point_id: str, study: str, point: PointParams, staging: Path,
                 inputs_base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run the point into staging; return result.json's content."""


def of(point: PointParams) -> Backend:
    from manylab.backends.gem5.backend import GEM5
    from manylab.backends.qemu import QEMU

    backends: dict[str, Backend] = {QEMU.name: QEMU, GEM5.name: GEM5}
    name = point.machine.backend
    if name not in backends:
        raise LabError(f"unknown backend '{name}': choose one of {', '.join(backends)}")
    return backends[name]
