import io
import subprocess

from manylab import cpio, image


def test_cpio_newc_round_trips_through_gnu_cpio(tmp_path):
    buffer = io.BytesIO()
    cpio.write(buffer, [cpio.Entry("etc", 0o040755),
                        cpio.Entry("etc/hello", 0o100644, b"hi there\n"),
                        cpio.Entry("link", 0o120777, b"etc/hello"),
                        cpio.console_node()])
    archive = tmp_path / "a.cpio"
    archive.write_bytes(buffer.getvalue())
    listing = subprocess.run(["cpio", "-itv"], input=archive.read_bytes(), capture_output=True,
                             check=True).stdout.decode()
    assert "etc/hello" in listing and "link -> etc/hello" in listing
    assert "dev/console" in listing and "5,   1" in listing
    assert len(buffer.getvalue()) % 4 == 0


def test_run_config_archive_holds_the_script(tmp_path):
    data = image.run_config_cpio("echo hi\n")
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], input=data, cwd=out, check=True)
    assert (out / "etc/manylab/run.sh").read_text() == "echo hi\n"
