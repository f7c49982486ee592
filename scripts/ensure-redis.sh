#!/usr/bin/env bash
# ensure-redis.sh: make sure a redis-server binary is available for the
# integration tests. If none is on PATH, install Debian's redis-server package.
# The system service is never left running: the tests start their own servers
# on free loopback ports (see redistest/).
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi

die() {
	echo "ensure-redis: $*" >&2
	echo "ensure-redis: install redis-server (Debian: apt-get install redis-server) and retry." >&2
	exit 1
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		die "redis-server is not installed, not running as root and sudo is unavailable"
	fi
fi
command -v apt-get >/dev/null 2>&1 || die "redis-server is not installed and apt-get is unavailable"

export DEBIAN_FRONTEND=noninteractive
install() {
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends redis-server
}

# Keep the package's post-install script from starting the service where
# policy-rc.d is honoured (Debian without systemd, containers); removed again
# on exit if we created it.
POLICY=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$POLICY" ]; then
	if printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$POLICY" >/dev/null 2>&1 &&
		"${SUDO[@]}" chmod 755 "$POLICY"; then
		created_policy=1
	fi
fi
cleanup() {
	if [ "$created_policy" = 1 ]; then
		"${SUDO[@]}" rm -f "$POLICY" || true
	fi
}
trap cleanup EXIT

echo "ensure-redis: redis-server not found; installing Debian's redis-server" >&2
if ! install; then
	echo "ensure-redis: install failed; running apt-get update and retrying" >&2
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update ||
		die "apt-get update failed"
	install || die "apt-get install redis-server failed"
fi

# Tests start their own servers: stop and disable the system service in case
# the package started it.
"${SUDO[@]}" service redis-server stop >/dev/null 2>&1 || true
if command -v systemctl >/dev/null 2>&1; then
	"${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
fi
if command -v update-rc.d >/dev/null 2>&1; then
	"${SUDO[@]}" update-rc.d redis-server disable >/dev/null 2>&1 || true
fi

command -v redis-server >/dev/null 2>&1 ||
	die "redis-server still not on PATH after installing the package"
echo "ensure-redis: installed $(redis-server --version)" >&2
