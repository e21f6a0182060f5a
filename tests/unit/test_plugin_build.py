"""The lab refuses a plugin build older than the crate's sources, naming the fix."""

import os

import pytest

from manylab.backends import qemu as qemu_backend
from manylab.backends.qemu import plugin
from manylab.crate_build import StaleBuild, built
from manylab.errors import LabError


def test_a_library_older_than_a_source_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("MANYLAB_PLUGIN", raising=False)
    (tmp_path / "src").mkdir()
    (tmp_path / "target/release").mkdir(parents=True)
    source = tmp_path / "src/lib.rs"
    library = tmp_path / "target/release/libx.so"
    source.write_text("")
    library.write_text("")
    os.utime(source, (1000, 1000))
    os.utime(library, (2000, 2000))
    assert built("MANYLAB_PLUGIN", "libx.so", "QEMU plugin", tmp_path) == library
    os.utime(source, (3000, 3000))
    with pytest.raises(LabError, match="older than .*lib.rs: run cargo build --release"):
        built("MANYLAB_PLUGIN", "libx.so", "QEMU plugin", tmp_path)
    monkeypatch.setenv("MANYLAB_PLUGIN", str(library))  # an explicit build is taken as is
    assert built("MANYLAB_PLUGIN", "libx.so", "QEMU plugin", tmp_path) == library


def test_a_missing_library_names_the_setup_script(tmp_path, monkeypatch):
    monkeypatch.delenv("MANYLAB_PLUGIN", raising=False)
    with pytest.raises(LabError, match="is not built: run scripts/setup.sh"):
        built("MANYLAB_PLUGIN", "libx.so", "QEMU plugin", tmp_path)


def test_a_stale_library_stops_the_staleness_check_of_stored_points(monkeypatch):
    # A missing build is built before the points run; a stale one would make stored points
    # look current (their plugin digest could not be compared), so the check says why.
    def stale():
        raise StaleBuild("QEMU plugin x.so is older than lib.rs: run cargo build --release")

    qemu_backend.plugin_sha_now.cache_clear()
    monkeypatch.setattr(plugin, "library", stale)
    with pytest.raises(StaleBuild, match="cargo build --release"):
        qemu_backend.plugin_sha_now()

    def missing():
        raise LabError("QEMU plugin x.so is not built: run scripts/setup.sh")

    qemu_backend.plugin_sha_now.cache_clear()
    monkeypatch.setattr(plugin, "library", missing)
    assert qemu_backend.plugin_sha_now() is None
    qemu_backend.plugin_sha_now.cache_clear()
