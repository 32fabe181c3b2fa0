#!/usr/bin/env bash
# install-deps.sh installs the servers that the tests start (internal/redistest):
# redis-server and redis-cli (Debian: redis-server redis-tools) and valkey-server
# and valkey-cli (Debian bookworm-backports: valkey-server valkey-tools), then
# runs install-sid-servers.sh, which fetches Redis 8.0 and Valkey 9.1 from
# Debian sid into a private folder (no root needed; see that script).
#
# Idempotent: it installs nothing when all four binaries are already in PATH,
# and the sid servers are fetched once and cached.
# Needs root to install; run as another user, it prints what to install and
# exits 1. After installing it makes sure no packaged redis/valkey service is
# left running or enabled (the tests never use port 6379; a stray service
# would only be surprising on a developer machine).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

have() { command -v "$1" >/dev/null 2>&1; }

need_redis=0
need_valkey=0
have redis-server && have redis-cli || need_redis=1
have valkey-server && have valkey-cli || need_valkey=1

if [ "$need_redis" = 0 ] && [ "$need_valkey" = 0 ]; then
	exec bash "$here/install-sid-servers.sh"
fi

backports=/etc/apt/sources.list.d/bookworm-backports.sources

if [ "${EUID:-$(id -u)}" != 0 ]; then
	echo "install-deps.sh: missing Redis/Valkey binaries and not root; install them with:" >&2
	if [ "$need_redis" = 1 ]; then
		echo "  sudo apt-get install -y redis-server redis-tools" >&2
	fi
	if [ "$need_valkey" = 1 ]; then
		echo "  # Valkey is only in bookworm-backports; if $backports is absent, create it with:" >&2
		echo "  #   Types: deb" >&2
		echo "  #   URIs: http://deb.debian.org/debian" >&2
		echo "  #   Suites: bookworm-backports" >&2
		echo "  #   Components: main" >&2
		echo "  #   Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >&2
		echo "  sudo apt-get update" >&2
		echo "  sudo apt-get install -y -t bookworm-backports valkey-server valkey-tools" >&2
	fi
	bash "$here/install-sid-servers.sh" || true
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive

if [ "$need_valkey" = 1 ] && [ ! -e "$backports" ]; then
	cat >"$backports" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi

apt-get update -q

installed=()
if [ "$need_redis" = 1 ]; then
	apt-get install -y -q redis-server redis-tools
	installed+=(redis-server)
fi
if [ "$need_valkey" = 1 ]; then
	apt-get install -y -q -t bookworm-backports valkey-server valkey-tools
	installed+=(valkey-server)
fi

# Where an init system runs, the packages start a service on 6379 and enable
# it at boot. The tests never use it: stop it if it is running, and disable
# it (only for the packages installed just now).
for svc in "${installed[@]}"; do
	if [ -d /run/systemd/system ] && have systemctl; then
		if systemctl is-active --quiet "$svc" 2>/dev/null; then
			systemctl stop "$svc" || true
		fi
	elif have service && service "$svc" status >/dev/null 2>&1; then
		service "$svc" stop || true
	fi
	if have systemctl; then
		systemctl disable --quiet "$svc" 2>/dev/null || true
	fi
done

for bin in redis-server redis-cli valkey-server valkey-cli; do
	if ! have "$bin"; then
		echo "install-deps.sh: $bin still missing after install" >&2
		exit 1
	fi
done

exec bash "$here/install-sid-servers.sh"
