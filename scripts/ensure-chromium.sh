#!/usr/bin/env bash
# ensure-chromium.sh: make sure a headless-capable chromium is available for the dashboard's
# browser tests (e2e TestDashboard_*). If none is on PATH, install Debian's chromium package.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		exit 0
	fi
done

NAME=ensure-chromium HINT=chromium
. "$(dirname "$0")/apt-lib.sh"
apt_prepare chromium
echo "$NAME: chromium not found; installing Debian's chromium" >&2
apt_install chromium || die "apt-get install chromium failed"
command -v chromium >/dev/null 2>&1 || die "chromium still not on PATH after installing the package"
echo "$NAME: installed $(chromium --version 2>/dev/null || echo chromium)" >&2
