#!/usr/bin/env bash
# Replication benchmark: sieved primary -> sieved replica against Debian's redis-server primary ->
# redis-server replica, holding the same number of bytes (a Bloom filter of FILTER_MB MiB on
# sieved; FILTER_MB strings of 1 MiB on redis-server).
#
# For each pair it measures:
# - full sync: from REPLICAOF on an empty replica until the replica reports master_link_status:up
#   with no sync in progress;
# - lag under load: redis-benchmark writes on the primary (BF.ADD on sieved, SET on redis-server,
#   50 clients, pipelines of PIPELINE) while the primary's master_repl_offset and the replica's
#   slave_repl_offset are sampled every 100 ms; the table gives the bytes the replica was behind
#   (median and largest sample), and how long it took to catch up once the load stopped.
#
# Both sides ship uncompressed bytes (redis-server runs with rdbcompression no) without writing a
# file on the primary (repl-diskless-sync yes, with no delay: Redis waits 5 s by default for more
# replicas to share a transfer).
#
# Usage: benches/replication.sh   (release build, then the run)
# Environment: FILTER_MB (default 256; 1024 for the issue's 1 GiB filter), ITEMS added to the
# filter before the sync (default 1000000), REQUESTS of the load (default 2000000), PIPELINE
# (default 16), SERVERS (default "sieved redis"; one of them to run that side only), SKIP_BUILD=1 to use the existing release binary, SIEVED_BIN to run another sieved
# binary (implies SKIP_BUILD).
set -euo pipefail

FILTER_MB=${FILTER_MB:-256}
ITEMS=${ITEMS:-1000000}
REQUESTS=${REQUESTS:-2000000}
PIPELINE=${PIPELINE:-16}
SERVERS=${SERVERS:-"sieved redis"}
CLIENTS=50
RANGE=100000000
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools" redis-server redis-benchmark redis-cli
# Measuring redis-server alone builds nothing.
if [[ $SERVERS != *sieved* ]]; then SKIP_BUILD=1; fi
build_sieved release

used_ports=()
# A free port not handed out before in this run (nothing listens on it until the server starts).
new_port() {
    local port
    while true; do
        port=$(free_port)
        if [[ " ${used_ports[*]} " != *" $port "* ]]; then
            used_ports+=("$port")
            echo "$port"
            return
        fi
    done
}

# Starts a server of `kind` (sieved or redis) on `port`, its data in $work/<name>.
start() {
    local kind=$1 name=$2 port=$3
    mkdir -p "$work/$name"
    if [[ $kind == sieved ]]; then
        "$sieved_bin" --bind "$HOST" --port "$port" --dir "$work/$name" --save "" \
            --log-level warn 2>"$work/$name.log" &
    else
        redis-server --bind "$HOST" --port "$port" --dir "$work/$name" --save '' \
            --appendonly no --rdbcompression no --repl-diskless-sync yes \
            --repl-diskless-sync-delay 0 --daemonize no --logfile "$work/$name.log" &
    fi
    pids+=($!)
    wait_ready "$port"
}

cli() {
    local port=$1
    shift
    redis-cli -h "$HOST" -p "$port" "$@"
}

field() {
    local port=$1 name=$2
    cli "$port" INFO replication 2>/dev/null | tr -d '\r' | awk -F: -v name="$name" '$1 == name { print $2 }'
}

now_ms() {
    date +%s%3N
}

# Fills the primary with FILTER_MB MiB: one filter on sieved, strings of 1 MiB on redis-server.
fill() {
    local kind=$1 port=$2
    if [[ $kind == sieved ]]; then
        # A Bloom filter at 1% takes 9.585 bits (1.198 bytes) per item of capacity.
        local capacity
        capacity=$(awk -v mb="$FILTER_MB" 'BEGIN { printf "%d", mb * 1048576 / 1.198 }')
        cli "$port" BF.RESERVE big 0.01 "$capacity" >/dev/null
        redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$ITEMS" -r "$RANGE" -P 32 -q \
            BF.ADD big __rand_int__ >/dev/null
    else
        local i
        for ((i = 0; i < FILTER_MB; i++)); do
            # SETRANGE pads with zero bytes: a string of 1 MiB.
            echo "SETRANGE chunk:$i 1048575 x"
        done | cli "$port" >/dev/null
        redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$ITEMS" -r "$RANGE" -P 32 -q \
            SET key:__rand_int__ x >/dev/null
    fi
}

# Milliseconds from REPLICAOF until the replica is linked and loaded.
full_sync() {
    local replica=$1 primary=$2 started
    started=$(now_ms)
    cli "$replica" REPLICAOF "$HOST" "$primary" >/dev/null
    local link
    while true; do
        link=$(field "$replica" master_link_status)
        if [[ -z $link ]]; then
            echo "replication.sh: the replica on port $replica stopped answering" >&2
            exit 1
        fi
        if [[ $link == up && $(field "$replica" master_sync_in_progress) == 0 ]]; then break; fi
        sleep 0.02
    done
    echo $(($(now_ms) - started))
}

# Runs the load on the primary while sampling the replica's lag in bytes; prints
# "rps median_lag max_lag catch_up_ms".
load_and_lag() {
    local kind=$1 primary=$2 replica=$3 samples=$work/lag.$1
    : >"$samples"
    (
        while true; do
            local behind
            behind=$(($(field "$primary" master_repl_offset) - $(field "$replica" slave_repl_offset)))
            echo $((behind < 0 ? 0 : behind)) >>"$samples"
            sleep 0.1
        done
    ) &
    local sampler=$!
    local command=(SET key:__rand_int__ x)
    if [[ $kind == sieved ]]; then command=(BF.ADD big __rand_int__); fi
    local rps
    rps=$(redis-benchmark -h "$HOST" -p "$primary" -c "$CLIENTS" -n "$REQUESTS" -r "$RANGE" \
        -P "$PIPELINE" --csv "${command[@]}" | awk -F, 'NR == 2 { gsub(/"/, ""); print $2 }')
    local stopped target
    stopped=$(now_ms)
    target=$(field "$primary" master_repl_offset)
    while (($(field "$replica" slave_repl_offset) < target)); do sleep 0.01; done
    local catch_up=$(($(now_ms) - stopped))
    kill "$sampler"
    wait "$sampler" 2>/dev/null || true
    local median max
    median=$(sort -n "$samples" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    max=$(sort -n "$samples" | tail -1)
    echo "$rps $median $max $catch_up"
}

echo "$sieved_bin (work tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')) vs $(redis-server --version | cut -d' ' -f1-3)" >&2
echo "$(nproc) cores, $(uptime)" >&2
printf '| server | data MiB | full sync s | MiB/s | load rps | lag median bytes | lag max bytes | catch-up ms |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for kind in $SERVERS; do
    primary=$(new_port)
    replica=$(new_port)
    start "$kind" "$kind-primary" "$primary"
    start "$kind" "$kind-replica" "$replica"
    fill "$kind" "$primary"
    sync_ms=$(full_sync "$replica" "$primary")
    read -r rps median max catch_up <<<"$(load_and_lag "$kind" "$primary" "$replica")"
    printf '| %s | %s | %.2f | %.0f | %.0f | %s | %s | %s |\n' "$kind" "$FILTER_MB" \
        "$(awk -v ms="$sync_ms" 'BEGIN { print ms / 1000 }')" \
        "$(awk -v ms="$sync_ms" -v mb="$FILTER_MB" 'BEGIN { print mb * 1000 / ms }')" \
        "$rps" "$median" "$max" "$catch_up"
    cli "$primary" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    cli "$replica" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
done
echo "after: $(uptime)" >&2
