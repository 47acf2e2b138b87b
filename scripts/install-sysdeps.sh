#!/usr/bin/env bash
# Installs missing Debian packages, and nothing when all are present.
#   install-sysdeps.sh          what the test suite drives for real: Chromium, QEMU, the Arm
#                               cross compiler and newlib, a host C compiler (make test)
#   install-sysdeps.sh python   only what `python3 -m venv` needs (make run)
set -euo pipefail

mode=${1:-all}
need=()
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ "$mode" = all ]; then
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v qemu-system-arm >/dev/null 2>&1 || need+=(qemu-system-arm)
    command -v arm-none-eabi-gcc >/dev/null 2>&1 || need+=(gcc-arm-none-eabi binutils-arm-none-eabi)
    [ -e /usr/lib/arm-none-eabi/newlib/libc.a ] || need+=(libnewlib-arm-none-eabi)
    ls /usr/lib/arm-none-eabi/newlib/thumb/*/libstdc++.a >/dev/null 2>&1 \
        || need+=(libstdc++-arm-none-eabi-newlib)
    command -v gcc >/dev/null 2>&1 || need+=(gcc)
fi

[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-sysdeps: need root or sudo to install: ${need[*]}" >&2; exit 1; }
    sudo="sudo"
fi
echo "install-sysdeps: installing ${need[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${need[@]}"
