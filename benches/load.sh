#!/usr/bin/env bash
# Load benchmark: sieved against Debian's redis-server, side by side, with redis-benchmark and the
# same parameters for both (50 connections, random items from a range of 1e8, pipelines of 1 and
# 32). BF.ADD / BF.EXISTS on sieved run against SET / GET on redis-server; BF.MADD with 100 items
# per call against MSET of 100 keys. Each pair is run ROUNDS times, alternating which server goes
# first so that noise from the rest of the machine falls on both; the table gives medians.
#
# Besides throughput and latency, which on a small machine mostly measure the load generator
# sharing its cores, each row gives what the server itself spent: its CPU time (utime + stime
# from /proc/PID/stat, every thread and reaped child included) over the run, per request and per item. That
# figure does not depend on the client's speed, and is what the comparison rests on. The part of
# it spent in the kernel (stime) is given too, and the "kernel floor": sieved's kernel time over
# redis-server's whole CPU time, the ratio sieved would reach if its own code cost nothing. It
# sends and receives with the same system calls as redis-server (one read and one write a round
# trip), so the kernel's loopback TCP is a cost neither server's code can cut.
#
# Usage: benches/load.sh                 (release build, then the full run)
# Environment: REQUESTS (default 1000000), BATCH_REQUESTS (BF.MADD / MSET calls, default
# REQUESTS / 10), ROUNDS (default 3), WARMUP (unmeasured writes after each reset, default 200000;
# see reset_servers), PIPELINES (default "1 32"), CLIENTS (default 50),
# THREADS: sieved's --threads values to sweep, one set of rows each (default: the number of
# cores; e.g. THREADS="1 2"), SKIP_BUILD=1 to use the existing release binary, SIEVED_BIN to run
# another sieved binary (implies SKIP_BUILD), APPENDFSYNC=always|everysec|no to run both servers
# with an append-only file synced that way (default: none), LAYOUTS (default "classic blocked").
#
# sieved's filter is reserved for the whole range first (BF.RESERVE bench 0.01 100000000), as a
# de-duplicating client would size it; a filter created by the first BF.ADD would start at 100
# items and grow a link each time it doubles.
#
# The "(blocked)" rows run the same commands on a sieved started with --bf-layout blocked, whose
# filter keeps each item's bits in one cache line. They run only with pipelines of more than one
# request: one request per round trip measures the network, not the filter.
set -euo pipefail

REQUESTS=${REQUESTS:-1000000}
BATCH_REQUESTS=${BATCH_REQUESTS:-$((REQUESTS / 10))}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-200000}
PIPELINES=${PIPELINES:-"1 32"}
CLIENTS=${CLIENTS:-50}
THREADS=${THREADS:-$(nproc)}
LAYOUTS=${LAYOUTS:-"classic blocked"}
RANGE=100000000
BATCH=100
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools" redis-server redis-benchmark redis-cli
build_sieved release

redis_port=$(free_port)
mkdir -p "$work/redis"
durability=(--appendonly no)
if [[ -n ${APPENDFSYNC:-} ]]; then durability=(--appendonly yes --appendfsync "$APPENDFSYNC"); fi
redis-server --bind "$HOST" --port "$redis_port" --dir "$work/redis" --save '' \
    "${durability[@]}" --daemonize no --logfile "$work/redis.log" &
pids+=($!)
redis_pid=$!
wait_ready "$redis_port"

# One sieved per thread count and layout, started as its rows come; "threads layout" -> port, pid.
declare -A sieved_ports sieved_pids
start_sieved() {
    local threads=$1 layout=$2 port
    port=$(free_port)
    while [[ $port == "$redis_port" ]]; do port=$(free_port); done
    mkdir -p "$work/sieved-$threads-$layout"
    "$sieved_bin" --bind "$HOST" --port "$port" --dir "$work/sieved-$threads-$layout" --save "" \
        --log-level warn --threads "$threads" --bf-layout "$layout" "${durability[@]}" \
        2>"$work/sieved-$threads-$layout.log" &
    pids+=($!)
    sieved_pids["$threads $layout"]=$!
    sieved_ports["$threads $layout"]=$port
    wait_ready "$port"
}

# Empties both servers and reserves sieved's filter, then warms both with WARMUP writes that are
# not measured: the filter's pages are taken (and zeroed by the kernel) as its bits are first
# set, a one-time cost per filter that a filter in service has long paid, but that a short run
# on a fresh filter sized for 10^8 counts whole (8% of sieved's CPU in 300,000 adds at -P 1 on
# this VM); redis-server gets the same writes, so that its allocator has its memory in hand too.
reset_servers() {
    local sieved=$1
    redis-cli -h "$HOST" -p "$redis_port" FLUSHALL >/dev/null
    redis-cli -h "$HOST" -p "$sieved" FLUSHALL >/dev/null
    redis-cli -h "$HOST" -p "$sieved" BF.RESERVE bench 0.01 "$RANGE" >/dev/null
    redis-benchmark -h "$HOST" -p "$sieved" -c "$CLIENTS" -n "$WARMUP" -r "$RANGE" -P 32 -q \
        BF.ADD bench __rand_int__ >/dev/null
    redis-benchmark -h "$HOST" -p "$redis_port" -c "$CLIENTS" -n "$WARMUP" -r "$RANGE" -P 32 -q \
        SET key:__rand_int__ x >/dev/null
}

# Runs one redis-benchmark against the server on `port`, process `pid`, and prints
# "rps p50_ms p99_ms cpu_us_per_request kernel_us_per_request".
bench() {
    local port=$1 pid=$2 requests=$3 pipeline=$4 before after kernel_before kernel_after
    shift 4
    before=$(cpu_ticks "$pid")
    kernel_before=$(system_ticks "$pid")
    redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$requests" -r "$RANGE" \
        -P "$pipeline" --csv "$@" |
        awk -F, 'NR == 2 { gsub(/"/, ""); printf "%s %s %s ", $2, $5, $7 }'
    after=$(cpu_ticks "$pid")
    kernel_after=$(system_ticks "$pid")
    awk -v t=$((after - before)) -v k=$((kernel_after - kernel_before)) \
        -v hz="$ticks_per_second" -v n="$requests" \
        'BEGIN { printf "%.3f %.3f\n", t * 1e6 / hz / n, k * 1e6 / hz / n }'
}

madd_args=(BF.MADD bench)
mset_args=(MSET)
for _ in $(seq $BATCH); do
    madd_args+=(__rand_int__)
    mset_args+=(key:__rand_int__ x)
done

# name | requests | items per request | sieved command | redis command | sieved layout
tests=()
for layout in $LAYOUTS; do
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
printf '| command | -P | threads | sieved rps | redis rps | sieved CPU us/req | redis CPU us/req | CPU ratio | sieved kernel us/req | redis kernel us/req | kernel floor | sieved CPU us/item | sieved p50 / p99 ms | redis p50 / p99 ms |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for threads in $THREADS; do
    for pipeline in $PIPELINES; do
        for test in "${tests[@]}"; do
            IFS='|' read -r name requests items sieved_cmd redis_cmd layout <<<"$test"
            if [[ $layout == blocked && $pipeline == 1 ]]; then continue; fi
            if [[ -z ${sieved_ports["$threads $layout"]:-} ]]; then start_sieved "$threads" "$layout"; fi
            port=${sieved_ports["$threads $layout"]}
            pid=${sieved_pids["$threads $layout"]}
            : >"$work/s" && : >"$work/r"
            for round in $(seq "$ROUNDS"); do
                # Reads need something to find: the writes of the row before are left in place.
                if [[ $name != BF.EXISTS* ]]; then reset_servers "$port"; fi
                if ((round % 2)); then order="s r"; else order="r s"; fi
                for server in $order; do
                    if [[ $server == s ]]; then
                        # shellcheck disable=SC2086
                        bench "$port" "$pid" "$requests" "$pipeline" $sieved_cmd >>"$work/s"
                    else
                        # shellcheck disable=SC2086
                        bench "$redis_port" "$redis_pid" "$requests" "$pipeline" $redis_cmd >>"$work/r"
                    fi
                done
            done
            s_rps=$(column 1 "$work/s")
            r_rps=$(column 1 "$work/r")
            s_cpu=$(column 4 "$work/s")
            r_cpu=$(column 4 "$work/r")
            s_kernel=$(column 5 "$work/s")
            r_kernel=$(column 5 "$work/r")
            printf '| %s | %s | %s | %.0f | %.0f | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %.4f | %s / %s | %s / %s |\n' \
                "$name" "$pipeline" "$threads" "$s_rps" "$r_rps" "$s_cpu" "$r_cpu" \
                "$(awk -v a="$s_cpu" -v b="$r_cpu" 'BEGIN { print a / b }')" \
                "$s_kernel" "$r_kernel" \
                "$(awk -v a="$s_kernel" -v b="$r_cpu" 'BEGIN { print a / b }')" \
                "$(awk -v a="$s_cpu" -v n="$items" 'BEGIN { print a / n }')" \
                "$(column 2 "$work/s")" "$(column 3 "$work/s")" \
                "$(column 2 "$work/r")" "$(column 3 "$work/r")"
        done
    done
done
echo "after: $(uptime)" >&2
