#!/bin/sh
# sidebyside.sh: WaitForRelease on one hot key, an old commit of the library
# beside the working tree, in one sitting (issue 12's side-by-side check).
#
#   scripts/sidebyside.sh [OLD_COMMIT] [ROUNDS] [DURATION]
#
# Builds bench/sidebyside twice, against OLD_COMMIT (default 96ede5c) and
# against this checkout, starts one redis-server of its own pinned to CPU 1
# (the programs run pinned to CPU 0), and runs ROUNDS rounds (default 3):
# each round runs the old build, the new build twice (an A/A pair: the
# noise of the sitting) and the peers (bsm/redislock, redsync), in an order
# that rotates from round to round, each over 8 and 64 workers with a
# client each and one shared client, DURATION per configuration (default
# 3s). Prints the medians as a Markdown table; the rows stay in
# $SIDEBYSIDE_OUT (default: a temporary file, printed at the end).
set -eu
old=${1:-96ede5c}
rounds=${2:-3}
duration=${3:-3s}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
port=${SIDEBYSIDE_PORT:-17391}
out=${SIDEBYSIDE_OUT:-$work/rows.jsonl}
. "$root/scripts/sidebyside-lib.sh"
trap cleanup EXIT INT TERM
build_old_new ./sidebyside
start_redis
echo "rows in $out" >&2

run() { # label binary [flags]
	label=$1 bin=$2
	shift 2
	taskset -c 0 "$work/$bin" -addr "127.0.0.1:$port" -label "$label" -duration "$duration" -out "$out" "$@"
}
r=0
while [ $r -lt "$rounds" ]; do
	echo "round $((r + 1)) of $rounds" >&2
	case $((r % 4)) in
	0) run old old.bin; run new new.bin; run new² new.bin; run peers new.bin -peers ;;
	1) run new new.bin; run peers new.bin -peers; run old old.bin; run new² new.bin ;;
	2) run new² new.bin; run old old.bin; run peers new.bin -peers; run new new.bin ;;
	3) run peers new.bin -peers; run new² new.bin; run new new.bin; run old old.bin ;;
	esac
	r=$((r + 1))
done
"$work/new.bin" -summary "$out"
if [ -z "${SIDEBYSIDE_OUT:-}" ]; then
	cp "$out" "${TMPDIR:-/tmp}/sidebyside-rows.jsonl"
	echo "rows: ${TMPDIR:-/tmp}/sidebyside-rows.jsonl" >&2
fi
