#!/bin/sh
# sidebyside-micro.sh: make bench's workloads 1–3 (Obtain+Release at 1 and
# 32 goroutines, failed Obtain, Refresh; every library and floor) of an old
# commit of the library beside the working tree, in one sitting (issue
# 33's side-by-side check).
#
#   scripts/sidebyside-micro.sh OLD_COMMIT [ROUNDS]
#
# Builds bench twice, against OLD_COMMIT and against this checkout, starts
# one redis-server of its own pinned to CPU 1 (the programs run pinned to
# CPU 0), and runs ROUNDS rounds (default 3): each round runs the old
# build once and the new build twice (new and new²: an A/A pair, the noise
# of the sitting), in an order that rotates from round to round, each
# with -micro-only. Prints, for every row, the median ns/op of each build,
# new ÷ old, the A/A ratio new² ÷ new, and the allocations of each build.
set -eu
old=${1:?usage: scripts/sidebyside-micro.sh OLD_COMMIT [ROUNDS]}
rounds=${2:-3}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
port=${SIDEBYSIDE_PORT:-17392}
. "$root/scripts/sidebyside-lib.sh"
trap cleanup EXIT INT TERM
build_old_new .
start_redis

run() { # label binary
	echo "  $1" >&2
	taskset -c 0 "$work/$2" -addr "127.0.0.1:$port" -micro-only 2>>"$work/log" |
		sed "s/^/$1	/" >>"$work/rows.tsv"
}
r=0
while [ $r -lt "$rounds" ]; do
	echo "round $((r + 1)) of $rounds" >&2
	case $((r % 3)) in
	0) run old old.bin; run new new.bin; run new2 new.bin ;;
	1) run new new.bin; run new2 new.bin; run old old.bin ;;
	2) run new2 new.bin; run old old.bin; run new new.bin ;;
	esac
	r=$((r + 1))
done

# rows.tsv: build, workload, row, ns/op, allocs/op, B/op.
echo "| workload | row | old ns/op | new ns/op | new² ns/op | new ÷ old | A/A (new² ÷ new) | allocs old → new | B old → new |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|"
sort -t'	' -k2,3 -k1,1 "$work/rows.tsv" | awk -F'\t' '
function median(list,   n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function flush() {
	if (key == "") return
	o = median(ns["old"]); n = median(ns["new"]); m = median(ns["new2"])
	printf "| %s | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %s → %s | %s → %s |\n", w, row, o, n, m, n / o, m / n, al["old"], al["new"], by["old"], by["new"]
	delete ns
}
{
	k = $2 "\t" $3
	if (k != key) { flush(); key = k; w = $2; row = $3 }
	ns[$1] = ns[$1] " " $4; al[$1] = $5; by[$1] = $6
}
END { flush() }'
