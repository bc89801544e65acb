#!/usr/bin/env bash
# Server CPU per request: what one BF.ADD or BF.EXISTS (or the CBF or CF ones) costs the server,
# whatever else runs on the machine. The server's CPU time (`cpu_ticks` in common.sh) is read
# before and after a redis-benchmark run of REQUESTS requests (50 clients, pipelines of
# PIPELINE, random items from a range of 1e8 into a filter reserved for it); the difference over
# REQUESTS is the cost. Wall time is noisy on a shared machine; CPU time per request is much
# less so.
#
# Usage: benches/cpu_per_request.sh [SIEVED_BIN ...]   (default: target/release/sieved)
# Several binaries (a build before and after a change) run in turns, ROUNDS times each, so that
# noise falls on all of them; the table gives each one's median.
# Environment: REQUESTS (default 2000000), ROUNDS (default 5), PIPELINE (requests per round trip,
# default 32), FAMILY (bf, cbf or cf: which filter type's ADD and EXISTS, default bf),
# SIEVED_ARGS (extra flags for every server, e.g. "--maxmemory-policy allkeys-lfu").
set -euo pipefail

REQUESTS=${REQUESTS:-2000000}
ROUNDS=${ROUNDS:-5}
PIPELINE=${PIPELINE:-32}
FAMILY=${FAMILY:-bf}
case $FAMILY in
bf) reserve=(BF.RESERVE bench 0.01 100000000) ;;
cbf) reserve=(CBF.RESERVE bench 0.01 100000000) ;;
cf) reserve=(CF.RESERVE bench 100000000) ;;
*)
    echo "FAMILY must be bf, cbf or cf" >&2
    exit 2
    ;;
esac
add=${FAMILY^^}.ADD
exists=${FAMILY^^}.EXISTS
HOST=127.0.0.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binaries=("$@")
if [[ ${#binaries[@]} -eq 0 ]]; then binaries=("$root/target/release/sieved"); fi

# shellcheck source=benches/common.sh
source "$root/benches/common.sh"

ports=()
server_pids=()
for i in "${!binaries[@]}"; do
    port=$(free_port)
    mkdir -p "$work/$i"
    # shellcheck disable=SC2086
    "${binaries[$i]}" --bind "$HOST" --port "$port" --dir "$work/$i" --save "" --log-level warn \
        ${SIEVED_ARGS:-} 2>"$work/$i.log" &
    pids+=($!)
    server_pids+=($!)
    ports+=("$port")
    wait_ready "$port"
done

declare -A samples
for round in $(seq "$ROUNDS"); do
    for command in "$add" "$exists"; do
        for i in "${!binaries[@]}"; do
            port=${ports[$i]}
            if [[ $command == "$add" ]]; then
                redis-cli -h "$HOST" -p "$port" FLUSHALL >/dev/null
                redis-cli -h "$HOST" -p "$port" "${reserve[@]}" >/dev/null
                # Unmeasured: the filter's pages are zeroed by the kernel as its bits are first
                # set, a one-time cost a filter in service has long paid (benches/load.sh).
                redis-benchmark -h "$HOST" -p "$port" -c 50 -P 32 -n 200000 -r 100000000 -q \
                    "$add" bench __rand_int__ >/dev/null
            fi
            before=$(cpu_ticks "${server_pids[$i]}")
            redis-benchmark -h "$HOST" -p "$port" -c 50 -P "$PIPELINE" -n "$REQUESTS" -r 100000000 -q \
                "$command" bench __rand_int__ >/dev/null
            after=$(cpu_ticks "${server_pids[$i]}")
            ns=$(((after - before) * 1000000000 / ticks_per_second / REQUESTS))
            samples["$i $command"]+="$ns "
            echo "round $round: ${binaries[$i]} $command: $ns ns CPU per request" >&2
        done
    done
done

printf '%-60s %-10s %s\n' binary command "median ns CPU per request (${ROUNDS} rounds)"
for i in "${!binaries[@]}"; do
    for command in "$add" "$exists"; do
        printf '%-60s %-10s %s\n' "${binaries[$i]}" "$command" "$(tr ' ' '\n' <<<"${samples["$i $command"]}" | sed '/^$/d' | median)"
    done
done
