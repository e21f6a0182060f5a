"""The lab refuses a plugin build older than the crate's sources, naming the fix."""

import os

import pytest

from manylab.errors import LabError
from manylab.plugin import built


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
