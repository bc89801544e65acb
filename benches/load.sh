#!/usr/bin/env bash
# Load benchmark: sieved against Debian's redis-server, side by side, with redis-benchmark and the
# same parameters for both (50 connections, random items from a range of 1e8, pipelines of 1 and
# 32). BF.ADD / BF.EXISTS on sieved run against SET / GET on redis-server; BF.MADD with 100 items
# per call against MSET of 100 keys. Each pair is run ROUNDS times, alternating which server goes
# first so that noise from the rest of the machine falls on both; the table gives medians.
#
# Usage: benches/load.sh                 (release build, then the full run)
# Environment: REQUESTS (default 1000000), BATCH_REQUESTS (BF.MADD / MSET calls, default
# REQUESTS / 10), ROUNDS (default 3), PIPELINES (default "1 32"), CLIENTS (default 50),
# SIEVED_THREADS (default: number of cores), SKIP_BUILD=1 to use the existing release binary,
# SIEVED_BIN to run another sieved binary (implies SKIP_BUILD), APPENDFSYNC=always|everysec|no
# to run both servers with an append-only file synced that way (default: none).
#
# sieved's filter is reserved for the whole range first (BF.RESERVE bench 0.01 100000000), as a
# de-duplicating client would size it; a filter created by the first BF.ADD would start at 100
# items and grow a link each time it doubles.
#
# The "(blocked)" rows run the same commands on a second sieved started with --bf-layout blocked,
# whose filter keeps each item's bits in one cache line. They run only with pipelines of more than
# one request: one request per round trip measures the network, not the filter.
set -euo pipefail

REQUESTS=${REQUESTS:-1000000}
BATCH_REQUESTS=${BATCH_REQUESTS:-$((REQUESTS / 10))}
ROUNDS=${ROUNDS:-3}
PIPELINES=${PIPELINES:-"1 32"}
CLIENTS=${CLIENTS:-50}
RANGE=100000000
BATCH=100
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for tool in redis-server redis-benchmark redis-cli; do
    command -v "$tool" >/dev/null || {
        echo "load.sh: $tool not found (apt-get install -y redis-server redis-tools)" >&2
        exit 1
    }
done
if [[ ${SKIP_BUILD:-0} != 1 && -z ${SIEVED_BIN:-} ]]; then
    cargo build --release --manifest-path "$root/Cargo.toml" >&2
fi
sieved_bin=${SIEVED_BIN:-"$root/target/release/sieved"}

# shellcheck source=benches/common.sh
source "$root/benches/common.sh"

redis_port=$(free_port)
mkdir -p "$work/redis" "$work/sieved"
durability=(--appendonly no)
if [[ -n ${APPENDFSYNC:-} ]]; then durability=(--appendonly yes --appendfsync "$APPENDFSYNC"); fi
redis-server --bind "$HOST" --port "$redis_port" --dir "$work/redis" --save '' \
    "${durability[@]}" --daemonize no --logfile "$work/redis.log" &
pids+=($!)
sieved_port=$(free_port)
while [[ $sieved_port == "$redis_port" ]]; do sieved_port=$(free_port); done
threads_flag=()
if [[ -n ${SIEVED_THREADS:-} ]]; then threads_flag=(--threads "$SIEVED_THREADS"); fi
"$sieved_bin" --bind "$HOST" --port "$sieved_port" --dir "$work/sieved" --save "" \
    --log-level warn "${threads_flag[@]}" "${durability[@]}" 2>"$work/sieved.log" &
pids+=($!)
blocked_port=$(free_port)
while [[ $blocked_port == "$redis_port" || $blocked_port == "$sieved_port" ]]; do
    blocked_port=$(free_port)
done
mkdir -p "$work/blocked"
"$sieved_bin" --bind "$HOST" --port "$blocked_port" --dir "$work/blocked" --save "" \
    --log-level warn --bf-layout blocked "${threads_flag[@]}" 2>"$work/blocked.log" &
pids+=($!)
wait_ready "$redis_port"
wait_ready "$sieved_port"
wait_ready "$blocked_port"

reset_servers() {
    redis-cli -h "$HOST" -p "$redis_port" FLUSHALL >/dev/null
    local sieved
    for sieved in "$sieved_port" "$blocked_port"; do
        redis-cli -h "$HOST" -p "$sieved" FLUSHALL >/dev/null
        redis-cli -h "$HOST" -p "$sieved" BF.RESERVE bench 0.01 "$RANGE" >/dev/null
    done
}

# Runs one redis-benchmark and prints "rps p50_ms p99_ms".
bench() {
    local port=$1 requests=$2 pipeline=$3
    shift 3
    redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$requests" -r "$RANGE" \
        -P "$pipeline" --csv "$@" |
        awk -F, 'NR == 2 { gsub(/"/, ""); print $2, $5, $7 }'
}

median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

madd_args=(BF.MADD bench)
mset_args=(MSET)
for _ in $(seq $BATCH); do
    madd_args+=(__rand_int__)
    mset_args+=(key:__rand_int__ x)
done

# name | requests | items per request | sieved command | redis command | sieved layout
tests=()
for layout in classic blocked; do
    suffix=""
    if [[ $layout == blocked ]]; then suffix=" (blocked)"; fi
    tests+=(
        "BF.ADD vs SET$suffix|$REQUESTS|1|BF.ADD bench __rand_int__|SET key:__rand_int__ x|$layout"
        "BF.EXISTS vs GET$suffix|$REQUESTS|1|BF.EXISTS bench __rand_int__|GET key:__rand_int__|$layout"
        "BF.MADD vs MSET ($BATCH items)$suffix|$BATCH_REQUESTS|$BATCH|${madd_args[*]}|${mset_args[*]}|$layout"
    )
done

echo "$sieved_bin (work tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')) vs $(redis-server --version | cut -d' ' -f1-3)" >&2
echo "$(nproc) cores, $(uptime)" >&2
printf '| command | -P | sieved rps | redis rps | ratio | sieved p50 ms | redis p50 ms | sieved p99 ms | redis p99 ms | sieved items/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for pipeline in $PIPELINES; do
    for test in "${tests[@]}"; do
        IFS='|' read -r name requests items sieved_cmd redis_cmd layout <<<"$test"
        if [[ $layout == blocked && $pipeline == 1 ]]; then continue; fi
        port=$sieved_port
        if [[ $layout == blocked ]]; then port=$blocked_port; fi
        : >"$work/s" && : >"$work/r"
        for round in $(seq "$ROUNDS"); do
            # Reads need something to find: the writes of the row before are left in place.
            if [[ $name != BF.EXISTS* ]]; then reset_servers; fi
            if ((round % 2)); then order="s r"; else order="r s"; fi
            for server in $order; do
                if [[ $server == s ]]; then
                    # shellcheck disable=SC2086
                    bench "$port" "$requests" "$pipeline" $sieved_cmd >>"$work/s"
                else
                    # shellcheck disable=SC2086
                    bench "$redis_port" "$requests" "$pipeline" $redis_cmd >>"$work/r"
                fi
            done
        done
        s_rps=$(cut -d' ' -f1 "$work/s" | median)
        r_rps=$(cut -d' ' -f1 "$work/r" | median)
        printf '| %s | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s | %.0f |\n' \
            "$name" "$pipeline" "$s_rps" "$r_rps" "$(awk -v a="$s_rps" -v b="$r_rps" 'BEGIN { print a / b }')" \
            "$(cut -d' ' -f2 "$work/s" | median)" "$(cut -d' ' -f2 "$work/r" | median)" \
            "$(cut -d' ' -f3 "$work/s" | median)" "$(cut -d' ' -f3 "$work/r" | median)" \
            "$(awk -v a="$s_rps" -v n="$items" 'BEGIN { print a * n }')"
    done
done
echo "after: $(uptime)" >&2
