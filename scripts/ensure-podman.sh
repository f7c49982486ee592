#!/usr/bin/env bash
# ensure-podman.sh: make sure podman and runc are available for the container image's build and
# test (make image, e2e TestImage_*). If podman is not on PATH, install Debian's podman and runc
# packages; nothing is left running (podman has no daemon). The image is built FROM scratch
# from the release binary plus the host's CA certificates (ca-certificates) and time zone data
# (tzdata), so those packages are installed too when their files are missing.
set -euo pipefail

NAME=ensure-podman HINT="podman runc ca-certificates tzdata"
. "$(dirname "$0")/apt-lib.sh"

need=()
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -s /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
[ -d /usr/share/zoneinfo/Europe ] || need+=(tzdata)
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
apt_prepare "${need[*]}"
apt_no_autostart
echo "$NAME: installing Debian's ${need[*]}" >&2
apt_install "${need[@]}" || die "apt-get install ${need[*]} failed"
command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 ||
	die "podman or runc still not on PATH after installing the packages"
echo "$NAME: $(podman --version), $(runc --version | head -n 1)" >&2
