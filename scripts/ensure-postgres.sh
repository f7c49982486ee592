#!/usr/bin/env bash
# ensure-postgres.sh: make sure PostgreSQL 15's server binaries are available for the
# integration tests (sqldb/sqltest starts its own server on a free loopback port, as user
# postgres when run as root). If /usr/lib/postgresql/15/bin/postgres is missing, install
# Debian's postgresql-15. Also installs postgresql-15-wal2json (logical decoding output for
# the CDC block's PostgreSQL source) when missing; that one only warns on failure.
# The system service is never left running.
set -euo pipefail

PGBIN=/usr/lib/postgresql/15/bin
WAL2JSON=/usr/lib/postgresql/15/lib/wal2json.so

if [ -x "$PGBIN/postgres" ] && [ -e "$WAL2JSON" ]; then
	exit 0
fi

NAME=ensure-postgres HINT=postgresql-15
. "$(dirname "$0")/apt-lib.sh"
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1 && [ -x "$PGBIN/postgres" ]; then
	echo "$NAME: warning: wal2json missing and cannot install it (not root, no sudo)" >&2
	exit 0
fi
apt_prepare postgresql-15
apt_no_autostart

if [ ! -x "$PGBIN/postgres" ]; then
	echo "$NAME: $PGBIN/postgres not found; installing Debian's postgresql-15" >&2
	apt_install postgresql-15 || die "apt-get install postgresql-15 failed"
	stop_service postgresql
	[ -x "$PGBIN/postgres" ] || die "$PGBIN/postgres still missing after installing the package"
fi
if [ ! -e "$WAL2JSON" ]; then
	apt_install postgresql-15-wal2json ||
		echo "$NAME: warning: could not install postgresql-15-wal2json (CDC PostgreSQL tests will skip or fail)" >&2
fi
echo "$NAME: $("$PGBIN/postgres" --version)" >&2
