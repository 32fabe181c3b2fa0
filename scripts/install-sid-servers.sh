#!/usr/bin/env bash
# install-sid-servers.sh fetches Redis 8.0 and Valkey 9.1 from Debian sid into
# a private folder, for the redis8 and valkey9 flavours of internal/redistest.
# Nothing is installed system-wide: sid's binaries need a newer glibc than
# Debian 12's, so they run with sid's own libraries through sid's dynamic
# loader (ld-linux-x86-64.so.2 --library-path).
#
# For each flavour it
#   1. writes a private apt configuration (a sources file with Suites: sid and
#      the mirror URI of /etc/apt/sources.list.d/debian.sources, its own
#      lists and cache folders) and runs `apt-get update` with it;
#   2. runs `apt-get download` of the tools package (the server is the binary
#      named *-check-aof: it looks at its own name) and the sid libraries it
#      needs;
#   3. unpacks each package with `dpkg-deb -x` into a new root, links
#      usr/bin/NAME-server to usr/bin/NAME-check-aof, checks that the server
#      runs through the loader and reports the expected major version, and
#      only then moves the root into place.
#
# Where: $REDISLOCK_SERVERS, or $XDG_CACHE_HOME/redislock/servers, or
# ~/.cache/redislock/servers. The harness looks in the same place. Each
# flavour is a folder (redis8, valkey9) holding usr/ and a file VERSION;
# the apt state lives in .apt/. Needs no root.
#
# Idempotent: a flavour whose folder holds VERSION and whose server still
# runs is left alone. Pass --force to fetch again (newer sid versions).
# It prints what it did, one line per flavour.
set -euo pipefail

force=0
for arg in "$@"; do
	case "$arg" in
	--force) force=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "install-sid-servers.sh: unknown argument $arg" >&2
		exit 2
		;;
	esac
done

say() { echo "install-sid-servers.sh: $*"; }
die() {
	echo "install-sid-servers.sh: $*" >&2
	exit 1
}

for tool in apt-get dpkg-deb; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found: this script needs Debian's apt-get and dpkg-deb"
done
[ "$(uname -m)" = x86_64 ] || die "only x86_64 is supported (found $(uname -m))"

cache="${REDISLOCK_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/redislock/servers}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

libdir=usr/lib/x86_64-linux-gnu
loader=$libdir/ld-linux-x86-64.so.2

# The libraries both servers load, from sid (the versions of Debian 12 are
# too old for binaries built against sid's glibc).
common_libs=(libc6/sid libjemalloc2/sid liblzf1/sid libssl3t64/sid libsystemd0/sid libatomic1/sid libcap2/sid libgcc-s1/sid)

# flavour NAME PROGRAM MAJOR PACKAGES...: PROGRAM is redis or valkey, MAJOR
# the major version the server must report.
flavours=(
	"redis8 redis 8 redis-tools ${common_libs[*]} liblua5.1-0/sid libhiredis1.1.0/sid libstdc++6/sid"
	"valkey9 valkey 9 valkey-tools ${common_libs[*]}"
)

# run_server ROOT PROGRAM ARGS...: the server of ROOT, through its loader.
run_server() {
	local root=$1 prog=$2
	shift 2
	"$root/$loader" --library-path "$root/$libdir" "$root/usr/bin/$prog-server" "$@"
}

# server_version ROOT PROGRAM: the version the server reports, as in 8.0.6.
server_version() {
	run_server "$1" "$2" --version 2>/dev/null | sed -n 's/.* v=\([0-9.]*\) .*/\1/p'
}

apt_ready=0
apt_opts=()
# prepare_apt writes the private apt configuration and updates its lists.
prepare_apt() {
	[ "$apt_ready" = 1 ] && return
	local state="$cache/.apt"
	mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
	local uri
	uri="$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
	uri="${uri:-http://deb.debian.org/debian}"
	cat >"$state/sid.sources" <<EOF
Types: deb
URIs: $uri
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt_opts=(
		-o "Dir::Etc::sourcelist=$state/sid.sources"
		-o Dir::Etc::sourceparts=/dev/null
		-o "Dir::State::Lists=$state/lists"
		-o "Dir::Cache=$state/cache"
		-o Debug::NoLocking=1
		-o APT::Sandbox::User="$(id -un)"
	)
	say "apt-get update of sid ($uri) into $state"
	apt-get "${apt_opts[@]}" -q update >"$state/update.log" 2>&1 ||
		die "apt-get update of sid failed; see $state/update.log"
	apt_ready=1
}

for spec in "${flavours[@]}"; do
	read -r name prog major packages <<<"$spec"
	# shellcheck disable=SC2206 # the package list is split on purpose
	packages=($packages)
	dest="$cache/$name"
	if [ "$force" = 0 ] && [ -f "$dest/VERSION" ] && v="$(server_version "$dest" "$prog")" && [ "${v%%.*}" = "$major" ]; then
		say "$name: $prog-server $v already in $dest"
		continue
	fi
	prepare_apt
	work="$(mktemp -d "$cache/.$name.XXXXXX")"
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/debs" "$work/root"
	(cd "$work/debs" && apt-get "${apt_opts[@]}" -q download "${packages[@]}") >"$work/download.log" 2>&1 ||
		die "$name: apt-get download ${packages[*]} failed:
$(tail -n 20 "$work/download.log")"
	for deb in "$work"/debs/*.deb; do
		dpkg-deb -x "$deb" "$work/root"
	done
	[ -x "$work/root/usr/bin/$prog-check-aof" ] || die "$name: $prog-check-aof not found in ${packages[0]}"
	ln -sf "$prog-check-aof" "$work/root/usr/bin/$prog-server"
	v="$(server_version "$work/root" "$prog")" || true
	[ "${v%%.*}" = "$major" ] ||
		die "$name: the server from sid reports version '${v:-?}', want $major.x:
$(run_server "$work/root" "$prog" --version 2>&1 | tail -n 5)"
	echo "$v" >"$work/root/VERSION"
	ls "$work/debs" >"$work/root/PACKAGES"
	rm -rf "$dest"
	mv "$work/root" "$dest"
	rm -rf "$work"
	trap - EXIT
	say "$name: fetched $prog-server $v from sid ($(wc -l <"$dest/PACKAGES") packages) into $dest"
done
