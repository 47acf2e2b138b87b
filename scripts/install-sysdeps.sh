#!/usr/bin/env bash
# Installs missing Debian packages, and nothing when all are present.
#   install-sysdeps.sh          what the test suite drives for real: Chromium, QEMU, the Arm
#                               cross compiler and newlib, a host C compiler, Xvfb and Tk for
#                               the real QView, and PostgreSQL for the team store (make test;
#                               the tests start their own server, never the system one)
#   install-sysdeps.sh python   only what `python3 -m venv` needs (make run)
#   install-sysdeps.sh wait     only wait until no other package manager holds its lock
# Another apt or dpkg (unattended-upgrades on a fresh machine) may hold the package
# manager's locks: we wait for them, up to SYSDEPS_LOCK_WAIT seconds (600), saying so.
# SYSDEPS_LOCKS overrides the lock files watched (the tests use a temporary one).
set -euo pipefail

mode=${1:-all}
lock_wait=${SYSDEPS_LOCK_WAIT:-600}
locks=${SYSDEPS_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}

# Prints the first lock file another process holds (dpkg and apt take fcntl locks), or
# nothing. Lock files we cannot open are not ours to judge; apt itself reports those.
held_lock() {
    $sudo python3 - $locks <<'PY'
import fcntl, os, sys
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        continue
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print(path)
        break
    finally:
        os.close(fd)
PY
}

wait_for_package_manager() {
    local waited=0 held
    held=$(held_lock)
    [ -z "$held" ] && return 0
    echo "install-sysdeps: another package manager holds $held; waiting up to ${lock_wait} s for it to finish" >&2
    while [ -n "$held" ]; do
        if [ "$waited" -ge "$lock_wait" ]; then
            echo "install-sysdeps: gave up after ${lock_wait} s: $held is still held by another apt or dpkg; let it finish (or set SYSDEPS_LOCK_WAIT) and run this again" >&2
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
        held=$(held_lock)
    done
    echo "install-sysdeps: the package manager is free after ${waited} s" >&2
}

sudo=""
if [ "$mode" = wait ]; then
    wait_for_package_manager
    exit 0
fi

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
    command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
    python3 -c 'import tkinter' >/dev/null 2>&1 || need+=(python3-tk)
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
fi

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-sysdeps: need root or sudo to install: ${need[*]}" >&2; exit 1; }
    sudo="sudo"
fi
echo "install-sysdeps: installing ${need[*]}" >&2
wait_for_package_manager
# apt waits too, for a lock taken between our look and its start.
apt_wait=(-o "DPkg::Lock::Timeout=${lock_wait}")
$sudo apt-get "${apt_wait[@]}" update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get "${apt_wait[@]}" install -y -q --no-install-recommends "${need[@]}"
