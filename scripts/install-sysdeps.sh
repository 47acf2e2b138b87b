#!/usr/bin/env bash
# Installs the system packages the test suite drives for real (Chromium, QEMU, the
# Arm cross compiler) when any of them is missing. Does nothing when all are present.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v qemu-system-arm >/dev/null 2>&1 || need+=(qemu-system-arm)
command -v arm-none-eabi-gcc >/dev/null 2>&1 || need+=(gcc-arm-none-eabi binutils-arm-none-eabi)
[ -e /usr/lib/arm-none-eabi/newlib/libc.a ] || need+=(libnewlib-arm-none-eabi)
[ -d /usr/lib/arm-none-eabi/newlib/thumb ] && ls /usr/lib/arm-none-eabi/newlib/thumb/*/libstdc++.a >/dev/null 2>&1 \
    || need+=(libstdc++-arm-none-eabi-newlib)
command -v gcc >/dev/null 2>&1 || need+=(gcc)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-sysdeps: need root or sudo to install: ${need[*]}" >&2; exit 1; }
    sudo="sudo"
fi
echo "install-sysdeps: installing ${need[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
