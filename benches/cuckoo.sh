#!/usr/bin/env bash
# Filter families side by side on one sieved: cuckoo (CF.ADD / CF.EXISTS / CF.DEL), counting Bloom
# (CBF.ADD / CBF.EXISTS / CBF.DEL) and Bloom (BF.ADD / BF.EXISTS), with redis-benchmark and the
# same parameters for each (50 connections, random items from a range of 1e7, pipelines of 1 and
# 32). Each filter is reserved for the whole range first, at a 1% error rate for the Bloom
# families (a cuckoo filter's rate follows from its 8-bit fingerprints and 2-slot buckets: about
# 3%). Each row is run ROUNDS times on fresh filters (the reads and deletes after the adds of the
# same family); the table gives medians.
#
# Usage: benches/cuckoo.sh               (release build, then the full run)
# Environment: REQUESTS (default 1000000), ROUNDS (default 3), PIPELINES (default "1 32"),
# CLIENTS (default 50), SIEVED_THREADS (default: number of cores), SKIP_BUILD=1 to use the
# existing release binary, SIEVED_BIN to run another sieved binary (implies SKIP_BUILD).
set -euo pipefail

REQUESTS=${REQUESTS:-1000000}
ROUNDS=${ROUNDS:-3}
PIPELINES=${PIPELINES:-"1 32"}
CLIENTS=${CLIENTS:-50}
RANGE=10000000
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-tools" redis-benchmark redis-cli
build_sieved release

port=$(free_port)
mkdir -p "$work/sieved"
threads_flag=()
if [[ -n ${SIEVED_THREADS:-} ]]; then threads_flag=(--threads "$SIEVED_THREADS"); fi
"$sieved_bin" --bind "$HOST" --port "$port" --dir "$work/sieved" --save "" \
    --log-level warn "${threads_flag[@]}" 2>"$work/sieved.log" &
pids+=($!)
wait_ready "$port"

cli() { redis-cli -h "$HOST" -p "$port" "$@" >/dev/null; }

reserve() {
    cli FLUSHALL
    case $1 in
    CF) cli CF.RESERVE bench "$RANGE" ;;
    CBF) cli CBF.RESERVE bench 0.01 "$RANGE" ;;
    BF) cli BF.RESERVE bench 0.01 "$RANGE" ;;
    esac
}

# Runs one redis-benchmark and prints "rps p50_ms p99_ms".
bench() {
    local requests=$1 pipeline=$2
    shift 2
    redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$requests" -r "$RANGE" \
        -P "$pipeline" --csv "$@" |
        awk -F, 'NR == 2 { gsub(/"/, ""); print $2, $5, $7 }'
}

echo "$sieved_bin (work tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))" >&2
echo "$(nproc) cores, $(uptime)" >&2
printf '| command | -P | rps | p50 ms | p99 ms | filter bytes (after the adds) |\n'
printf '|---|---|---|---|---|---|\n'
for pipeline in $PIPELINES; do
    for family in CF CBF BF; do
        verbs=(ADD EXISTS DEL)
        if [[ $family == BF ]]; then verbs=(ADD EXISTS); fi
        for verb in "${verbs[@]}"; do : >"$work/$verb"; done
        : >"$work/size"
        for _ in $(seq "$ROUNDS"); do
            reserve "$family"
            for verb in "${verbs[@]}"; do
                bench "$REQUESTS" "$pipeline" "$family.$verb" bench __rand_int__ >>"$work/$verb"
                if [[ $verb == ADD ]]; then
                    redis-cli -h "$HOST" -p "$port" "$family.INFO" bench |
                        awk 'prev == "Size" { print } { prev = $0 }' >>"$work/size"
                fi
            done
        done
        for verb in "${verbs[@]}"; do
            printf '| %s.%s | %s | %.0f | %s | %s | %s |\n' "$family" "$verb" "$pipeline" \
                "$(cut -d' ' -f1 "$work/$verb" | median)" "$(cut -d' ' -f2 "$work/$verb" | median)" \
                "$(cut -d' ' -f3 "$work/$verb" | median)" "$(median <"$work/size")"
        done
    done
done
echo "after: $(uptime)" >&2
