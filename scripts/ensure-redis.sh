#!/usr/bin/env bash
# ensure-redis.sh: make sure a redis-server binary is available for the
# integration tests. If none is on PATH, install Debian's redis-server package.
# The system service is never left running: the tests start their own servers
# on free loopback ports (see redistest/).
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
	exit 0
fi

NAME=ensure-redis HINT=redis-server
. "$(dirname "$0")/apt-lib.sh"
apt_prepare redis-server
apt_no_autostart
echo "$NAME: redis-server not found; installing Debian's redis-server" >&2
apt_install redis-server || die "apt-get install redis-server failed"
# Tests start their own servers: stop and disable the system service in case the package
# started it.
stop_service redis-server
command -v redis-server >/dev/null 2>&1 ||
	die "redis-server still not on PATH after installing the package"
echo "$NAME: installed $(redis-server --version)" >&2
