#!/usr/bin/env bash
# ensure-systemd-analyze.sh: make sure systemd-analyze is available for the systemd unit's
# tests (deploy TestSystemd_*: systemd-analyze verify and security --offline on
# deploy/systemd/redstate.service). If it is not on PATH, install Debian's systemd package,
# which ships it; the tests only run the analyzer, they need no running systemd.
set -euo pipefail

if command -v systemd-analyze >/dev/null 2>&1; then
	exit 0
fi

NAME=ensure-systemd-analyze HINT=systemd
. "$(dirname "$0")/apt-lib.sh"
apt_prepare systemd-analyze
echo "$NAME: systemd-analyze not found; installing Debian's systemd package" >&2
apt_no_autostart
apt_install systemd || die "apt-get install systemd failed"
command -v systemd-analyze >/dev/null 2>&1 || die "systemd-analyze still not on PATH after installing the package"
echo "$NAME: installed $(systemd-analyze --version | head -n 1)" >&2
