#!/usr/bin/env bash
# One idempotent setup: Debian packages, Python virtual environment, Rust builds.
# Usage: scripts/setup.sh [--no-rust] [--quickstart]
#   --no-rust     skip the cargo builds (plugin, pcmsim)
#   --quickstart  only what an x86_64 QEMU study with the model and its report needs (the quick
#                 start): no arm64 tools, image bundles, Slurm, Chromium or pcmsim; running
#                 setup.sh again without it adds them
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

rust=1
full=1
for arg in "$@"; do
  case "$arg" in
    --no-rust) rust=0 ;;
    --quickstart) full=0 ;;
    *) echo "setup.sh: unknown option $arg (known: --no-rust, --quickstart)" >&2; exit 2 ;;
  esac
done

# QEMU 10.0 (plugin API v4, qboot, >255 x86 vCPUs) comes from Debian's bookworm-backports.
QEMU_PACKAGES=(qemu-system-x86 qemu-system-common qemu-system-data qemu-utils)
QEMU_MIN_VERSION=10.0
APT_PACKAGES=(
  linux-source-6.1 busybox-static musl-tools
  build-essential ccache flex bison bc libelf-dev libssl-dev dwarves kmod cpio xz-utils
  e2fsprogs patch rsync file
)
if [ "$full" -eq 1 ]; then
  QEMU_PACKAGES+=(qemu-system-arm)
  APT_PACKAGES+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross chromium slurm-wlm munge)
fi

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive

installed_version() {
  { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true; } | sed -n 's/^install ok installed //p'
}

backports=/etc/apt/sources.list.d/manylab-bookworm-backports.sources
apt_updated=0
qemu_missing=()
for p in "${QEMU_PACKAGES[@]}"; do
  v=$(installed_version "$p")
  if [ -z "$v" ] || dpkg --compare-versions "${v#*:}" lt "$QEMU_MIN_VERSION"; then
    qemu_missing+=("$p")
  fi
done
if [ ${#qemu_missing[@]} -gt 0 ]; then
  if ! grep -qs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/*; then
    echo "setup: enabling Debian bookworm-backports in $backports" >&2
    printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" \
      "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
      $sudo_cmd tee "$backports" >/dev/null
  fi
  echo "setup: installing QEMU >= $QEMU_MIN_VERSION from bookworm-backports: ${qemu_missing[*]}" >&2
  $sudo_cmd apt-get update -q
  apt_updated=1
  $sudo_cmd apt-get install -y -q --no-install-recommends -t bookworm-backports "${QEMU_PACKAGES[@]}"
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  [ -n "$(installed_version "$p")" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  [ "$apt_updated" -eq 1 ] || $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
  # Debian enables these daemons on install; the lab starts its own when it needs them.
  for svc in slurmctld slurmd munge; do
    $sudo_cmd systemctl disable --now "$svc" >/dev/null 2>&1 || true
  done
fi

# arm64 guests take Debian's arm64 packages (busybox-static, the image bundles' below): apt
# needs the foreign architecture and its package lists, downloads only (nothing is installed).
if [ "$full" -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "setup: adding the arm64 architecture to apt (downloads of arm64 packages)" >&2
  $sudo_cmd dpkg --add-architecture arm64
  $sudo_cmd apt-get update -q
fi

# The arm64 guest's busybox: Debian's busybox-static for arm64, unpacked by the image builder.
cache="${MANYLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manylab}"
if [ "$full" -eq 1 ] && ! ls "$cache"/busybox/busybox-static_*_arm64.deb >/dev/null 2>&1; then
  echo "setup: downloading busybox-static:arm64" >&2
  mkdir -p "$cache/busybox"
  (cd "$cache/busybox" && apt-get download -q busybox-static:arm64)
fi

venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating Python virtual environment in $venv" >&2
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --upgrade pip >/dev/null
"$venv/bin/pip" install -q -e "$here[dev]"

# The image's optional bundles (buildroot-external/image-contents.txt: Debian's exim4-daemon-light
# and its libraries, for the smtpload workload): their .debs for both arches into the cache, once;
# the record written beside them keys the images (README "Optional bundles"). Not fatal: an image
# that needs a bundle fetches it again when it is built.
if [ "$full" -eq 1 ]; then
  "$venv/bin/python" -m manylab.image_packages fetch >&2 ||
    echo "setup: could not fetch the image bundles' Debian packages (smtpload images will retry)" >&2
fi

crates=(plugin)
[ "$full" -eq 0 ] || crates+=(pcmsim)
if [ "$rust" -eq 1 ]; then
  for crate in "${crates[@]}"; do
    if [ -f "$here/$crate/Cargo.toml" ]; then
      echo "setup: building $crate (cargo build --release)" >&2
      (cd "$here/$crate" && cargo build --release -q)
    fi
  done
fi
echo "setup: done" >&2
