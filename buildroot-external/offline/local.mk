# EXPERIMENTAL offline route (x86_64-debian-toolchain.fragment): packages built from sources
# unpacked under /opt/manylab-offline/src/<package> (the upstream tarballs of Debian's source
# packages, README.md "Buildroot") instead of Buildroot's downloads, whose versions differ.
# Buildroot applies none of its patches to an overridden source.
MANYLAB_OFFLINE_SRC = /opt/manylab-offline/src
BUSYBOX_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/busybox
HOST_E2FSPROGS_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/e2fsprogs
HOST_FAKEROOT_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/fakeroot
HOST_LIBTOOL_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/libtool
HOST_LIBZLIB_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/libzlib
HOST_M4_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/m4
HOST_PATCHELF_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/patchelf
HOST_PKGCONF_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/pkgconf
HOST_TAR_OVERRIDE_SRCDIR = $(MANYLAB_OFFLINE_SRC)/tar
# Debian's patchelf tarball is a git snapshot without ./configure
HOST_PATCHELF_AUTORECONF = YES
