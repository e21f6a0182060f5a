#!/usr/bin/env bash
# One idempotent setup: Debian packages, Python virtual environment, Rust plugin build.
# Usage: scripts/setup.sh [--no-rust]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

APT_PACKAGES=(
  qemu-system-x86 qemu-system-arm qemu-utils
  linux-source-6.1 busybox-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross musl-tools
  build-essential ccache flex bison bc libelf-dev libssl-dev dwarves kmod cpio xz-utils
  e2fsprogs patch rsync file chromium
  slurm-wlm munge
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -q
  $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
  # Debian enables these daemons on install; the lab starts its own when it needs them.
  for svc in slurmctld slurmd munge; do
    $sudo_cmd systemctl disable --now "$svc" >/dev/null 2>&1 || true
  done
fi

# The arm64 guest's busybox: Debian's busybox-static for arm64, unpacked by the image builder.
cache="${MANYLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/manylab}"
if ! ls "$cache"/busybox/busybox-static_*_arm64.deb >/dev/null 2>&1; then
  echo "setup: downloading busybox-static:arm64" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo_cmd dpkg --add-architecture arm64
    $sudo_cmd apt-get update -q
  fi
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

if [ "${1:-}" != "--no-rust" ]; then
  for crate in plugin pcmsim; do
    if [ -f "$here/$crate/Cargo.toml" ]; then
      echo "setup: building $crate (cargo build --release)" >&2
      (cd "$here/$crate" && cargo build --release -q)
    fi
  done
fi
echo "setup: done" >&2
