#!/usr/bin/env bash
# ensure-promtool.sh: make sure promtool is available for the monitoring kit's tests
# (deploy TestRules_*: `promtool check rules` and `promtool test rules` on deploy/monitoring).
# If it is not on PATH, install Debian's prometheus package (which ships promtool) without
# letting it start the Prometheus server, and stop and disable the server if it was started
# anyway: the tests need only the promtool binary.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
	exit 0
fi

NAME=ensure-promtool HINT=prometheus
. "$(dirname "$0")/apt-lib.sh"
apt_prepare promtool
echo "$NAME: promtool not found; installing Debian's prometheus package (it ships promtool)" >&2
apt_no_autostart
apt_install prometheus || die "apt-get install prometheus failed"
stop_service prometheus
command -v promtool >/dev/null 2>&1 || die "promtool still not on PATH after installing the package"
echo "$NAME: installed $(promtool --version 2>&1 | head -n 1)" >&2
