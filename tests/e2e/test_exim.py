"""Exim in the guest: Debian's exim4-daemon-light from the image's `exim` bundle, driven by the
smtpload workload over the loopback, on the real stock kernel under QEMU."""

import json

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of, study_spec, table

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

SPEC = """
[machine]
arch = "{arch}"
vcpus = 2
memory = "512M"
[workload]
name = "smtpload"
args = {{ connections = 2, messages = 20 }}
"""


def run_exim(tmp_path, arch: str):
    spec = tmp_path / "exim.toml"
    spec.write_text(study_spec("exim", SPEC.format(arch=arch)))
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root))
    dirs = point_dirs(root / "exim")
    assert len(dirs) == 1
    return root / "exim", dirs[0]


LOADERS = {"x86_64": "/lib64/ld-linux-x86-64.so.2", "arm64": "/lib/ld-linux-aarch64.so.1"}


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_exim_delivers_every_message_to_the_mailboxes(tmp_path, arch):
    study_dir, point_dir = run_exim(tmp_path, arch)
    result = result_of(point_dir)
    assert result["status"] == "ok", result
    outputs = json.loads((point_dir / "workload.json").read_text())
    assert len(outputs) == 1
    out = outputs[0]
    assert out["workload"] == "smtpload" and out["ok"] is True
    assert out["exim_version"].startswith("4.")
    assert out["connections"] == 2 and out["messages_per_connection"] == 20
    # every message sent was delivered once, counted in the mailbox files after the run
    assert out["sent"] == out["delivered"] == out["mbox_messages"] == 40
    assert out["duplicates"] == 0 and out["failed_clients"] == 0
    assert out["sessions"] == 4  # 20 messages per client, 10 per SMTP session
    assert out["messages_per_s"] > 0 and out["roi_s"] >= out["send_s"] > 0
    # the image carries the bundle, and inputs.json says which Debian packages made it
    inputs = json.loads((point_dir / "inputs.json").read_text())
    packages = {p["name"]: p for p in inputs["image"]["bundles"]["exim"]["packages"]}
    assert packages["exim4-daemon-light"]["files"] == ["/usr/sbin/exim4"]
    assert packages["exim4-daemon-light"]["version"].startswith(out["exim_version"])
    assert LOADERS[arch] in packages["libc6"]["files"]
    assert len(packages["libc6"]["sha256"]) == 64
    rows = table(study_dir)
    assert rows[0]["status"] == "ok" and rows[0]["result.delivered"] == "40"
    assert float(rows[0]["result.messages_per_s"]) > 0
