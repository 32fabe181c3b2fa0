# sidebyside-lib.sh: what scripts/sidebyside.sh and
# scripts/sidebyside-micro.sh share; sourced, not run. The caller sets
# root, work (a temporary directory), port and old, and calls:
#
#   build_old_new PKG   builds bench's PKG (./sidebyside, or .) against
#                       the commit $old into $work/old.bin and against the
#                       working tree into $work/new.bin
#   start_redis         starts one redis-server on $port pinned to CPU 1
#                       (pid in $pid, stopped by cleanup)
#   cleanup             stops it and deletes $work (trap it on EXIT)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}

build_old_new() {
	echo "building $old and the working tree ($(git -C "$root" rev-parse --short HEAD))" >&2
	mkdir "$work/old"
	git -C "$root" archive "$old" | tar -x -C "$work/old"
	cp "$root/bench/go.mod" "$work/old.mod"
	cp "$root/bench/go.sum" "$work/old.sum"
	(cd "$root/bench" && go mod edit -modfile="$work/old.mod" -replace "github.com/redislock/redislock=$work/old")
	# The old build runs this checkout's bench program over the old library.
	(cd "$root/bench" && GOWORK=off go build -modfile="$work/old.mod" -o "$work/old.bin" "$1")
	(cd "$root/bench" && go build -o "$work/new.bin" "$1")
}

start_redis() {
	if redis-cli -p "$port" ping >/dev/null 2>&1; then
		echo "port $port is taken: set SIDEBYSIDE_PORT" >&2
		exit 1
	fi
	taskset -c 1 redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
	pid=$!
	i=0
	until redis-cli -p "$port" ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { cat "$work/redis.log" >&2; exit 1; }
		sleep 0.05
	done
	echo "$(redis-server --version | cut -d' ' -f1-3), pinned to CPU 1; programs on CPU 0" >&2
}
