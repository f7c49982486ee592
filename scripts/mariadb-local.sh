#!/usr/bin/env bash
# mariadb-local.sh: a private MariaDB server for benchmarks and trials outside the tests, with
# the settings of the test harness (sqldb/sqltest): binary log in ROW format with FULL row
# images, server id 1, no fsync (a commit survives a crash of mariadbd, not of the machine),
# listening on loopback only. It never touches a system instance.
#
#   scripts/mariadb-local.sh start DIR [PORT]   initialise DIR (first time), start the server
#                                               on 127.0.0.1:PORT (default 3307) and print its
#                                               URL, for `redstate-bench index --source mysql`
#   scripts/mariadb-local.sh stop DIR           stop it (DIR is kept; start again reuses it)
#
# Run as root, the server runs as user mysql (mariadbd refuses root), which must own DIR.
# The account redstate/redstate-bench-pw may do anything, replication included
# (REPLICATION SLAVE, REPLICATION CLIENT). MariaDB comes from scripts/ensure-mariadb.sh.
set -euo pipefail

die() { echo "mariadb-local: $*" >&2; exit 1; }
usage() { die "usage: $0 start DIR [PORT] | stop DIR"; }

[ $# -ge 2 ] || usage
cmd=$1 dir=$2 port=${3:-3307}
USER_NAME=redstate
USER_PW=redstate-bench-pw

find_bin() {
	for d in ${REDSTATE_MARIADB_BIN:-} /usr/sbin /usr/bin; do
		[ -x "$d/$1" ] && { echo "$d/$1"; return; }
	done
	command -v "$1" || die "$1 not found (scripts/ensure-mariadb.sh installs Debian's mariadb-server)"
}

# as runs a command as the server's user: mysql when root, else the current user.
as() {
	if [ "$(id -u)" = 0 ]; then
		id mysql >/dev/null 2>&1 || die "running as root and there is no user mysql to run MariaDB as"
		setpriv --reuid=mysql --regid=mysql --init-groups -- "$@"
	else
		"$@"
	fi
}

case "$cmd" in
start)
	[[ "$port" =~ ^[0-9]+$ ]] || usage
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	[ "$(id -u)" = 0 ] && chown mysql:mysql "$dir"
	if [ -s "$dir/mariadbd.pid" ] && kill -0 "$(cat "$dir/mariadbd.pid")" 2>/dev/null; then
		die "a server already runs on $dir (pid $(cat "$dir/mariadbd.pid")); stop it first"
	fi
	fresh=0
	if [ ! -d "$dir/data/mysql" ]; then
		as "$(find_bin mariadb-install-db)" --no-defaults --datadir="$dir/data" \
			--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve >"$dir/install.log" 2>&1 ||
			die "mariadb-install-db failed: see $dir/install.log"
		fresh=1
	fi
	as "$(find_bin mariadbd)" --no-defaults --datadir="$dir/data" --port="$port" --bind-address=127.0.0.1 \
		--socket="$dir/sock" --pid-file="$dir/mariadbd.pid" --log-error="$dir/mariadb.log" \
		--skip-name-resolve --log-bin=binlog --binlog-format=ROW --binlog-row-image=FULL --server-id=1 \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
		--innodb-buffer-pool-size=256M --innodb-log-file-size=128M --innodb-flush-log-at-trx-commit=2 \
		--sync-binlog=0 --innodb-doublewrite=0 --max-connections=500 >/dev/null 2>&1 &
	client=$(find_bin mariadb)
	for _ in $(seq 1 120); do
		"$client" --no-defaults -uroot --socket="$dir/sock" -e 'SELECT 1' >/dev/null 2>&1 && break
		sleep 0.5
	done
	"$client" --no-defaults -uroot --socket="$dir/sock" -e 'SELECT 1' >/dev/null 2>&1 ||
		die "mariadbd did not start: $(tail -n 20 "$dir/mariadb.log" 2>/dev/null)"
	if [ "$fresh" = 1 ]; then
		"$client" --no-defaults -uroot --socket="$dir/sock" -e "
			CREATE USER '$USER_NAME'@'%' IDENTIFIED BY '$USER_PW';
			GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'%';
			GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '$USER_NAME'@'%';"
	fi
	echo "mysql://$USER_NAME:$USER_PW@127.0.0.1:$port/"
	;;
stop)
	pidfile="$dir/mariadbd.pid"
	[ -s "$pidfile" ] || die "no server runs on $dir (no $pidfile)"
	pid=$(cat "$pidfile")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 120); do
		kill -0 "$pid" 2>/dev/null || exit 0
		sleep 0.5
	done
	die "mariadbd (pid $pid) did not stop within 60 s"
	;;
*)
	usage
	;;
esac
