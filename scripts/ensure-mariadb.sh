#!/usr/bin/env bash
# ensure-mariadb.sh: make sure MariaDB's server binaries are available for the integration
# tests (sqldb/sqltest starts its own mariadbd on a free loopback port with its own data
# directory, as user mysql when run as root). If mariadbd or mariadb-install-db is missing,
# install Debian's mariadb-server. The system service is never started (policy-rc.d during
# the install); a system mariadbd the package managed to start anyway is stopped.
set -euo pipefail

have() { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; }

if have && command -v mariadb-install-db >/dev/null 2>&1; then
	exit 0
fi

NAME=ensure-mariadb HINT=mariadb-server
. "$(dirname "$0")/apt-lib.sh"
apt_prepare mariadb-server
apt_no_autostart
echo "$NAME: mariadbd not found; installing Debian's mariadb-server" >&2
apt_install mariadb-server || die "apt-get install mariadb-server failed"
# Tests start their own servers: stop a system server in case the package started one
# (its pid file is the only one we know; private test servers keep theirs elsewhere).
for pidfile in /run/mysqld/mysqld.pid /var/run/mysqld/mysqld.pid; do
	if [ -s "$pidfile" ]; then
		"${SUDO[@]}" kill "$(cat "$pidfile")" 2>/dev/null || true
	fi
done
have || die "mariadbd still missing after installing the package"
echo "$NAME: installed $(/usr/sbin/mariadbd --version)" >&2
