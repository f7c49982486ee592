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

die() {
	echo "ensure-postgres: $*" >&2
	echo "ensure-postgres: install postgresql-15 (Debian: apt-get install postgresql-15) and retry." >&2
	exit 1
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	elif [ -x "$PGBIN/postgres" ]; then
		echo "ensure-postgres: warning: wal2json missing and cannot install it (not root, no sudo)" >&2
		exit 0
	else
		die "postgresql-15 is not installed, not running as root and sudo is unavailable"
	fi
fi
command -v apt-get >/dev/null 2>&1 || die "postgresql-15 is not installed and apt-get is unavailable"

# Keep post-install scripts from starting the service where policy-rc.d is honoured.
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

install() {
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
install_or_update() {
	install "$@" && return 0
	echo "ensure-postgres: install failed; running apt-get update and retrying" >&2
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null || return 1
	install "$@"
}

if [ ! -x "$PGBIN/postgres" ]; then
	echo "ensure-postgres: $PGBIN/postgres not found; installing Debian's postgresql-15" >&2
	install_or_update postgresql-15 || die "apt-get install postgresql-15 failed"
	"${SUDO[@]}" service postgresql stop >/dev/null 2>&1 || true
	if command -v systemctl >/dev/null 2>&1; then
		"${SUDO[@]}" systemctl disable --now postgresql >/dev/null 2>&1 || true
	fi
	[ -x "$PGBIN/postgres" ] || die "$PGBIN/postgres still missing after installing the package"
fi
if [ ! -e "$WAL2JSON" ]; then
	install_or_update postgresql-15-wal2json ||
		echo "ensure-postgres: warning: could not install postgresql-15-wal2json (CDC PostgreSQL tests will skip or fail)" >&2
fi
echo "ensure-postgres: $("$PGBIN/postgres" --version)" >&2
