#!/usr/bin/env bash
# apt-lib.sh: what the ensure-*.sh scripts share to install a Debian package on demand.
# Source it after setting NAME (the script's name, for messages) and HINT (the package to name
# in the advice printed with an error). Provides:
#   die MSG...             print MSG and the install advice, exit 1
#   apt_prepare WHAT       set SUDO (empty as root, sudo otherwise) or die saying WHAT is missing;
#                          die without apt-get
#   apt_no_autostart       keep post-install scripts from starting services (policy-rc.d, removed
#                          again on exit if created here)
#   apt_install PKG...     apt-get install PKG..., after an apt-get update if the first try fails
#   stop_service SVC       stop and disable a service a package may have started

die() {
	echo "$NAME: $*" >&2
	echo "$NAME: install $HINT (Debian: apt-get install $HINT) and retry." >&2
	exit 1
}

SUDO=()
apt_prepare() {
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "$1 is not installed, not running as root and sudo is unavailable"
		SUDO=(sudo)
	fi
	command -v apt-get >/dev/null 2>&1 || die "$1 is not installed and apt-get is unavailable"
}

apt_policy=/usr/sbin/policy-rc.d
apt_created_policy=0
apt_no_autostart() {
	if [ ! -e "$apt_policy" ] &&
		printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$apt_policy" >/dev/null 2>&1 &&
		"${SUDO[@]}" chmod 755 "$apt_policy"; then
		apt_created_policy=1
	fi
	trap apt_restore_policy EXIT
}

apt_restore_policy() {
	if [ "$apt_created_policy" = 1 ]; then
		"${SUDO[@]}" rm -f "$apt_policy" || true
	fi
}

apt_get() {
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@"
}

apt_install() {
	apt_get install -y --no-install-recommends "$@" && return 0
	echo "$NAME: install failed; running apt-get update and retrying" >&2
	apt_get update >/dev/null || return 1
	apt_get install -y --no-install-recommends "$@"
}

stop_service() {
	"${SUDO[@]}" service "$1" stop >/dev/null 2>&1 || true
	if command -v systemctl >/dev/null 2>&1; then
		"${SUDO[@]}" systemctl disable --now "$1" >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then
		"${SUDO[@]}" update-rc.d "$1" disable >/dev/null 2>&1 || true
	fi
}
