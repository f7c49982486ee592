#!/usr/bin/env bash
# ensure-chromium.sh: make sure a headless-capable chromium is available for the dashboard's
# browser tests (e2e TestDashboard_*). If none is on PATH, install Debian's chromium package.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		exit 0
	fi
done

die() {
	echo "ensure-chromium: $*" >&2
	echo "ensure-chromium: install chromium (Debian: apt-get install chromium) and retry." >&2
	exit 1
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		die "chromium is not installed, not running as root and sudo is unavailable"
	fi
fi
command -v apt-get >/dev/null 2>&1 || die "chromium is not installed and apt-get is unavailable"

install() {
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends chromium
}

echo "ensure-chromium: chromium not found; installing Debian's chromium" >&2
if ! install; then
	echo "ensure-chromium: install failed; running apt-get update and retrying" >&2
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update ||
		die "apt-get update failed"
	install || die "apt-get install chromium failed"
fi
command -v chromium >/dev/null 2>&1 || die "chromium still not on PATH after installing the package"
echo "ensure-chromium: installed $(chromium --version 2>/dev/null || echo chromium)" >&2
