"""Optional image bundles: the ELF reader and dependency resolution (manylab/elf.py) on real
binaries compiled here and on the host's glibc, the apt walk on canned apt output, installing a
bundle into a root tree, the contents file's bundle lines, and the image key with and without
a bundle (manylab/image_packages.py, manylab/image.py). No network: apt is never called."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from manylab import elf, image, image_contents, image_packages
from manylab.errors import LabError
from manylab.workloads import REGISTRY

HOST_LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
HOST_LIBM = Path("/lib/x86_64-linux-gnu/libm.so.6")
HOST_LD = Path("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
PROGRAM = "#include <math.h>\n#include <stdio.h>\nint main(int c, char **v)\n" \
          "{ printf(\"%f\\n\", cos((double)c)); return v == 0; }\n"


def compile_c(tmp_path: Path, name: str, *flags: str, compiler: str = "gcc",
              source: str = PROGRAM) -> Path:
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} missing")
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / name
    subprocess.run([compiler, "-O2", str(src), "-o", str(out), *flags], check=True,
                   capture_output=True)
    return out


def readelf_needed(path: Path) -> list[str]:
    """NEEDED entries as binutils' readelf prints them (the oracle for our reader)."""
    text = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                          check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in text.splitlines() if "(NEEDED)" in line]


# ------------------------------------------------------------------ the ELF reader


def test_reader_on_a_program_linked_here_hand_checked(tmp_path):
    program = compile_c(tmp_path, "prog", "-lm")
    facts = elf.info(program.read_bytes())
    # gcc -lm on Debian bookworm x86_64: libm then libc, the PVH-style loader path of amd64
    assert facts.machine == "x86_64"
    assert facts.interp == "/lib64/ld-linux-x86-64.so.2"
    assert facts.needed == ("libm.so.6", "libc.so.6")
    assert facts.soname is None and facts.runpath == () and facts.rpath == ()


def test_reader_on_the_hosts_libc_and_a_static_busybox():
    if not HOST_LIBC.is_file():
        pytest.skip("no x86_64 glibc on this host")
    libc = elf.info(HOST_LIBC.read_bytes())
    assert libc.soname == "libc.so.6" and libc.needed == ("ld-linux-x86-64.so.2",)
    busybox = Path("/bin/busybox")
    if busybox.is_file():
        static = elf.info(busybox.read_bytes())
        assert static.interp is None and static.needed == ()


def test_reader_on_an_arm64_program(tmp_path):
    program = compile_c(tmp_path, "prog-arm", "-lm", compiler="aarch64-linux-gnu-gcc")
    facts = elf.info(program.read_bytes())
    assert facts.machine == "arm64"
    assert facts.interp == "/lib/ld-linux-aarch64.so.1"
    assert facts.needed == ("libm.so.6", "libc.so.6")


def test_runpath_and_rpath_are_told_apart(tmp_path):
    new = compile_c(tmp_path, "new", "-lm", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib:/opt/x")
    old = compile_c(tmp_path, "old", "-lm", "-Wl,--disable-new-dtags,-rpath,/opt/y")
    assert elf.info(new.read_bytes()).runpath == ("$ORIGIN/../lib", "/opt/x")
    assert elf.info(new.read_bytes()).rpath == ()
    assert elf.info(old.read_bytes()).rpath == ("/opt/y",)


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) missing")
def test_reader_agrees_with_readelf_on_host_libraries():
    checked = 0
    for path in sorted(Path("/lib/x86_64-linux-gnu").glob("lib*.so.*"))[:60]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if not elf.is_elf(data):
            continue
        assert list(elf.info(data, str(path)).needed) == readelf_needed(path), path
        checked += 1
    assert checked >= 10


def test_reader_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(LabError, match="not an ELF file"):
        elf.info(b"#!/bin/sh\necho hi\n" + bytes(64), "script")
    elf32 = b"\x7fELF" + bytes([1, 1, 1]) + bytes(57)
    with pytest.raises(LabError, match="only 64-bit little-endian"):
        elf.info(elf32, "old")
    program = compile_c(tmp_path, "prog", "-lm").read_bytes()
    with pytest.raises(LabError, match="truncated"):
        elf.info(program[:200], "cut")


# ------------------------------------------------------------------ resolution in root trees


def debian_root(tmp_path: Path, name: str = "root") -> Path:
    """A root tree laid out as Debian's libc6 package: the libraries in /lib/<triplet>, the
    loader's PT_INTERP path an absolute symlink into it (read inside the tree, not the host)."""
    if not (HOST_LIBC.is_file() and HOST_LIBM.is_file() and HOST_LD.is_file()):
        pytest.skip("no x86_64 glibc on this host")
    root = tmp_path / name
    lib = root / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    for source in (HOST_LIBC, HOST_LIBM, HOST_LD):
        shutil.copyfile(source, lib / source.name)
    (root / "lib64").mkdir()
    (root / "lib64" / "ld-linux-x86-64.so.2").symlink_to(
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    return root


def test_resolve_finds_every_library_in_the_trees_only(tmp_path):
    root = debian_root(tmp_path)
    program = compile_c(tmp_path, "prog", "-lm")
    (root / "usr" / "bin").mkdir(parents=True)
    shutil.copyfile(program, root / "usr" / "bin" / "prog")
    found = elf.locate([root], "/usr/bin/prog")
    assert found is not None
    closure = elf.resolve([found], [root], "x86_64")
    assert closure.loader.guest == "/lib64/ld-linux-x86-64.so.2"
    assert closure.loader.host == root / "lib" / "x86_64-linux-gnu" / "ld-linux-x86-64.so.2"
    assert [lib.guest for lib in closure.libraries] == [
        "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",  # libc's own NEEDED
        "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6"]
    assert all(root in lib.host.parents for lib in closure.libraries)
    assert closure.needed_by["/usr/bin/prog"] == ("libm.so.6", "libc.so.6")


def test_resolve_follows_runpath_with_origin_and_names_a_missing_library(tmp_path):
    root = debian_root(tmp_path)
    lib_src = "int foo(void) { return 42; }\n"
    libfoo = compile_c(tmp_path, "libfoo.so", "-shared", "-fPIC", "-Wl,-soname,libfoo.so.1",
                       source=lib_src)
    app = compile_c(tmp_path, "app", f"-L{tmp_path}", "-l:libfoo.so",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib",
                    source="int foo(void);\nint main(void) { return foo() != 42; }\n")
    (root / "opt" / "app" / "bin").mkdir(parents=True)
    (root / "opt" / "app" / "lib").mkdir(parents=True)
    shutil.copyfile(app, root / "opt" / "app" / "bin" / "app")
    found = elf.locate([root], "/opt/app/bin/app")
    assert found is not None
    with pytest.raises(LabError, match="/opt/app/bin/app needs libfoo.so.1"):
        elf.resolve([found], [root], "x86_64")
    shutil.copyfile(libfoo, root / "opt" / "app" / "lib" / "libfoo.so.1")
    closure = elf.resolve([found], [root], "x86_64")
    assert "/opt/app/bin/../lib/libfoo.so.1" in [lib.guest for lib in closure.libraries]


def test_resolve_refuses_another_arch_and_a_static_program(tmp_path):
    root = debian_root(tmp_path)
    arm = compile_c(tmp_path, "arm", "-lm", compiler="aarch64-linux-gnu-gcc")
    shutil.copyfile(arm, root / "arm")
    with pytest.raises(LabError, match="is for arm64, not x86_64"):
        elf.resolve([elf.Found("/arm", root / "arm", root)], [root], "x86_64")
    static = compile_c(tmp_path, "static", "-static", "-lm")
    shutil.copyfile(static, root / "static")
    with pytest.raises(LabError, match="no program interpreter"):
        elf.resolve([elf.Found("/static", root / "static", root)], [root], "x86_64")


def test_locate_keeps_symlinks_inside_the_tree(tmp_path):
    root = tmp_path / "r"
    (root / "a").mkdir(parents=True)
    (root / "a" / "file").write_text("x")
    (root / "abs").symlink_to("/a/file")
    (root / "rel").symlink_to("a/file")
    (root / "loop").symlink_to("/loop")
    (root / "out").symlink_to("/etc/hostname")  # exists on the host, not in the tree
    assert elf.locate([root], "/abs").host == root / "a" / "file"
    assert elf.locate([root], "/rel").host == root / "a" / "file"
    assert elf.locate([root], "/loop") is None
    assert elf.locate([root], "/out") is None


# ------------------------------------------------------------------ apt's output, the walk


APT = {
    "exim4-daemon-light": "Section: mail\nDepends: exim4-base (>= 4.96), debconf (>= 0.5) | "
                          "debconf-2.0, libc6 (>= 2.34), libgnutls30 (>= 3.7.5)",
    "exim4-base": "Section: mail\nDepends: adduser, cron | cron-daemon, libc6",
    "libc6": "Section: libs\nDepends: libgcc-s1",
    "libgcc-s1": "Section: libs\nDepends: gcc-12-base (= 12.2.0-14), libc6 (>= 2.35)",
    "gcc-12-base": "Section: libs",
    "libgnutls30": "Section: libs\nPre-Depends: libc6\nDepends: libp11-kit0 (>= 0.23.18.1),\n"
                   " libnettle8:any (>= 3.7~)",
    "libp11-kit0": "Section: libs\nDepends: libffi8",
    "libffi8": "Section: libs",
    "libnettle8": "Section: libs",
    "debconf": "Section: admin",
    "adduser": "Section: admin",
    "cron": "Section: admin",
}


def fake_show(names, deb_arch):
    found = {}
    for name in names:
        if name in APT:
            text = f"Package: {name}\nVersion: 1.{len(name)}\nArchitecture: {deb_arch}\n" \
                   f"SHA256: {name:0<64}\nSize: 10\n{APT[name]}\n"
            found[name] = image_packages.parse_paragraphs(text)[0]
    return found


def test_dependency_names_take_each_relations_first_choice():
    assert image_packages.dependency_names(
        "a (>= 1), b | c, d:any (<< 2), e [amd64], , f") == ["a", "b", "d", "e", "f"]


def test_parse_paragraphs_joins_continuation_lines():
    text = "Package: x\nDepends: a,\n b\n\nPackage: y\nVersion: 2\n"
    assert image_packages.parse_paragraphs(text) == [
        {"Package": "x", "Depends": "a, b"}, {"Package": "y", "Version": "2"}]


def test_walk_follows_library_dependencies_only(monkeypatch):
    monkeypatch.setattr(image_packages, "_show", fake_show)
    names = [p["Package"] for p in image_packages.walk(["exim4-daemon-light"], "arm64")]
    assert names == ["exim4-daemon-light", "gcc-12-base", "libc6", "libffi8", "libgcc-s1",
                     "libgnutls30", "libnettle8", "libp11-kit0"]
    with pytest.raises(LabError, match="apt knows no package nosuch:arm64"):
        image_packages.walk(["nosuch"], "arm64")


def test_deb_filename_is_apts():
    paragraph = {"Package": "zlib1g", "Version": "1:1.2.13.dfsg-1", "Architecture": "arm64"}
    assert image_packages.deb_filename(paragraph) == "zlib1g_1%3a1.2.13.dfsg-1_arm64.deb"


# ------------------------------------------------------------------ the contents file


def test_contents_bundle_lines_parse_and_errors_name_the_line():
    listed = image_contents.parse("workloads a\ndebs web nginx libfoo\n"
                                  "programs web /usr/sbin/nginx\noverlay web guest/web\n"
                                  "debs web libbar\n", "x.txt")
    assert listed.workloads == ("a",)
    web = listed.bundles["web"]
    assert web.debs == ("nginx", "libfoo", "libbar") and web.programs == ("/usr/sbin/nginx",)
    assert web.overlay == ("guest/web",)
    with pytest.raises(LabError, match=r"x.txt:1: program 'sbin/x' of bundle b is not an abs"):
        image_contents.parse("programs b sbin/x\n", "x.txt")
    with pytest.raises(LabError, match="bundle 'b' has no `programs` line"):
        image_contents.parse("debs b pkg\n", "x.txt")
    with pytest.raises(LabError, match=r"x.txt:1: overlay '../etc'"):
        image_contents.parse("overlay b ../etc\n", "x.txt")
    with pytest.raises(LabError, match=r"x.txt:1: `debs` takes a bundle name and at least one"):
        image_contents.parse("debs b\n", "x.txt")


def test_the_exim_bundle_and_the_workloads_that_ask_for_bundles():
    exim = image_contents.bundle("exim")
    assert exim.debs == ("exim4-daemon-light",) and exim.programs == ("/usr/sbin/exim4",)
    assert (image_contents.REPO_ROOT / "guest" / "exim" / "etc" / "exim4" / "exim4.conf").is_file()
    for workload in REGISTRY.values():
        for name in workload.bundles:
            image_contents.bundle(name)  # each one is defined
    assert REGISTRY["smtpload"].bundles == ("exim",)
    assert REGISTRY["pwriter"].bundles == ()
    with pytest.raises(LabError, match="no bundle 'nosuch'"):
        image_contents.bundle("nosuch")


# ------------------------------------------------------------------ install and the image key


def fake_bundle_cache(tmp_path: Path, monkeypatch, version: str = "4.96-15") -> None:
    """MANYLAB_CACHE in tmp_path with a fetched record of the exim bundle for x86_64 whose
    packages are unpacked trees built from a program compiled here and the host's glibc."""
    monkeypatch.setenv("MANYLAB_CACHE", str(tmp_path / "cache"))
    libc_root = debian_root(tmp_path, "libc6")
    exim_root = tmp_path / "exim4-daemon-light"
    (exim_root / "usr" / "sbin").mkdir(parents=True)
    program = compile_c(tmp_path, "exim4", "-lm")
    shutil.copyfile(program, exim_root / "usr" / "sbin" / "exim4")
    os.chmod(exim_root / "usr" / "sbin" / "exim4", 0o4755)
    (exim_root / "usr" / "sbin" / "exim").symlink_to("exim4")
    roots = {"exim4-daemon-light": exim_root, "libc6": libc_root}
    record = {"bundle": "exim", "arch": "x86_64", "roots": ["exim4-daemon-light"],
              "packages": [{"name": name, "version": version if name != "libc6" else "2.36",
                            "architecture": "amd64", "section": "libs", "sha256": f"{name:0<64}",
                            "size": 1, "filename": f"{name}.deb"} for name in sorted(roots)]}
    path = image_packages.record_path("x86_64", "exim")
    path.write_text(json.dumps(record))
    monkeypatch.setattr(image_packages, "unpacked", lambda arch, package: roots[package["name"]])


def test_install_puts_programs_libraries_loader_and_overlay_in_the_tree(tmp_path, monkeypatch):
    fake_bundle_cache(tmp_path, monkeypatch)
    tree = tmp_path / "tree"
    tree.mkdir()
    record = image_packages.install(tree, "x86_64", ["exim"])["exim"]
    exim = tree / "usr" / "sbin" / "exim4"
    assert exim.is_file() and exim.stat().st_mode & 0o7777 == 0o4755  # setuid kept
    for lib in ("libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"):
        assert (tree / "lib" / "x86_64-linux-gnu" / lib).is_file()
    loader = tree / "lib64" / "ld-linux-x86-64.so.2"
    assert loader.is_symlink()
    assert os.readlink(loader) == "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    assert (tree / "etc" / "exim4" / "exim4.conf").is_file()
    assert "Debian-exim:" in (tree / "etc" / "passwd").read_text()
    files = {p["name"]: p["files"] for p in record["packages"]}
    assert files["exim4-daemon-light"] == ["/usr/sbin/exim4"]
    assert "/lib64/ld-linux-x86-64.so.2" in files["libc6"]
    assert record["loader"] == "/lib64/ld-linux-x86-64.so.2"
    assert "etc/exim4/exim4.conf" in record["overlay"]


def test_image_key_changes_with_the_bundle_and_its_package_versions(tmp_path, monkeypatch):
    if not Path("/bin/busybox").exists() or shutil.which("gcc") is None:
        pytest.skip("busybox-static or gcc missing")
    fake_bundle_cache(tmp_path, monkeypatch)
    plain = image.image_key("x86_64")
    with_exim = image.image_key("x86_64", ("exim",))
    assert plain != with_exim
    # an image without bundles never looks at them: its key is the one it always had
    monkeypatch.setattr(image_packages, "key_inputs", lambda *a: pytest.fail("asked"))
    assert image.image_key("x86_64", ()) == plain
    monkeypatch.undo()
    fake_bundle_cache(tmp_path / "again", monkeypatch, version="4.96-16")
    assert image.image_key("x86_64", ("exim",)) not in (plain, with_exim)


def test_a_points_bundles_come_from_its_workload():
    class Point:
        class workload:
            name = "smtpload"

    assert image.bundles_for(Point()) == ("exim",)  # type: ignore[arg-type]
    Point.workload.name = "pwriter"
    assert image.bundles_for(Point()) == ()  # type: ignore[arg-type]


def test_a_buildroot_image_refuses_a_bundle(tmp_path):
    art = image.ImageArtifacts("external-x", tmp_path, tmp_path / "rootfs.cpio",
                               tmp_path / "rootfs.ext2", ())
    with pytest.raises(LabError, match="carries no optional bundle"):
        image._refuse_bundles(art, ("exim",))


def test_manifest_record_reaches_inputs(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"bundles": {"exim": {"programs": []}}}))
    art = image.ImageArtifacts("k", tmp_path, tmp_path / "i", tmp_path / "e", (), ("exim",))
    assert image.inputs_extras(art) == {"bundles": {"exim": {"programs": []}}}
    assert image.inputs_extras(image.ImageArtifacts("k", tmp_path, tmp_path, tmp_path, ())) == {}


def test_elf_machine_names_match_the_images_arch_table():
    assert elf.EM_NAMES == image.ELF_MACHINES
