#!/usr/bin/env bash
# Restart and sync time: how fast sieved loads a snapshot at start-up (a replica's full sync
# loads its payload the same way), cold (the page cache dropped first) and warm, and how fast
# SAVE writes one, against what the disk does with the same bytes: `dd` reading the file cold
# (`bs=4M`), and `dd` writing as many bytes with one fsync (`bs=1M conv=fsync`). Then how fast
# the append-only file replays.
#
# Three data sets, each built by the server itself through redis-cli:
# - big:   one NONSCALING filter, BIG_CAPACITY items at 0.1% (10^9: a 1.8 GB snapshot), with
#          BIG_ITEMS added so that every page of it is written;
# - small: SMALL_KEYS strings of 100 bytes (10^6: a 146 MB snapshot);
# - aof:   AOF_REQUESTS BF.ADD commands in the log alone (one record each), 50 clients.
#
# Every figure is taken ROUNDS times and given as a range (min-max) and the median. A load is
# read from the server's log ("loaded N keys from the snapshot in S s"), a replay is the time
# between the log's "listening" and "ready to accept connections" lines; SAVE is the wall time of `redis-cli SAVE`, which returns once
# the file is synced and renamed into place. Cold figures need root (to write
# /proc/sys/vm/drop_caches); without it they are left out.
#
# Usage: benches/restart.sh             (release build, then the run)
# Environment: ROUNDS (default 3), BIG_CAPACITY (default 1000000000), BIG_ITEMS (default
# 10000000), SMALL_KEYS (default 1000000), AOF_REQUESTS (default 2000000), SETS (default
# "big small aof"), SKIP_BUILD=1 to use the existing release binary, SIEVED_BIN to run another
# binary (implies SKIP_BUILD), BASELINE_BIN to measure an older build first in the same run, on
# the same data (each round of a build SAVEs the data set, so that it then loads a file of its
# own format), IDLE_BEFORE_COLD (seconds to wait idle before each cold load and each cold `dd`,
# default 0: on a virtual machine whose host takes back free memory, a few idle seconds are
# enough for the memory freed by the last load to go back, and first touching it again, for
# the page cache or a filter, costs far more). Needs about 2.5 times the big snapshot in free disk
# space under TMPDIR, and its size twice over in memory.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
BIG_CAPACITY=${BIG_CAPACITY:-1000000000}
BIG_ITEMS=${BIG_ITEMS:-10000000}
SMALL_KEYS=${SMALL_KEYS:-1000000}
AOF_REQUESTS=${AOF_REQUESTS:-2000000}
SETS=${SETS:-big small aof}
IDLE_BEFORE_COLD=${IDLE_BEFORE_COLD:-0}
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-tools coreutils" redis-cli redis-benchmark dd
build_sieved release
# The baseline first: it builds the data sets, so that a file it can read (an older format)
# is there for it, and the newer build reads it after.
builds=("$sieved_bin")
if [[ -n ${BASELINE_BIN:-} ]]; then
    builds=("$BASELINE_BIN" "$sieved_bin")
fi

can_drop=no
if [[ -w /proc/sys/vm/drop_caches ]]; then
    can_drop=yes
fi
drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}

# "min-max (median)" of the numbers on stdin, to `digits` decimals; the median as `median`
# takes it.
summary() {
    local digits=${1:-2} numbers
    numbers=$(sort -g)
    printf "%.*f-%.*f (%.*f)" "$digits" "$(head -1 <<<"$numbers")" "$digits" \
        "$(tail -1 <<<"$numbers")" "$digits" "$(median <<<"$numbers")"
}

# Starts `bin` on `dir` (extra arguments passed on) and waits until it serves or fails; sets
# `server_pid`, `server_port` and `server_log`.
start() {
    local bin=$1 dir=$2
    shift 2
    server_port=$(free_port)
    server_log="$work/server-$server_port.log"
    : >"$server_log"
    "$bin" --port "$server_port" --bind "$HOST" --dir "$dir" --save "" \
        --max-filter-memory 1000000000000 --bf-max-capacity 100000000000 "$@" \
        >"$server_log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    until grep -q "ready to accept connections" "$server_log"; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "restart.sh: the server stopped:" >&2
            cat "$server_log" >&2
            exit 1
        fi
        sleep 0.02
    done
}

stop() {
    redis-cli -h "$HOST" -p "$server_port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    wait "$server_pid" 2>/dev/null || true
}

cli() { redis-cli -h "$HOST" -p "$server_port" "$@"; }

# Seconds `dd` takes for its job (its own figure), from dd's last line.
dd_seconds() { dd "$@" 2>&1 | awk '/copied/ { print $(NF - 3) }'; }

# Seconds the snapshot load took, from the log of a server started on `dir`.
load_seconds() {
    local bin=$1 dir=$2 mode=$3
    if [[ $mode == cold ]]; then
        drop_caches
        sleep "$IDLE_BEFORE_COLD"
    fi
    start "$bin" "$dir"
    sed -n 's/.*from the snapshot in \([0-9.]*\)s.*/\1/p' "$server_log"
    stop
}

# Seconds from "listening" to "ready to accept connections" in the log of a server that
# replays the append-only file in `dir`: the replay, which any build logs this way.
replay_seconds() {
    local bin=$1 dir=$2 mode=$3 listening ready
    if [[ $mode == cold ]]; then drop_caches; fi
    start "$bin" "$dir" --appendonly yes --auto-aof-rewrite-percentage 0
    listening=$(grep -m1 ' listening ' "$server_log" | cut -d' ' -f1)
    ready=$(grep -m1 'ready to accept connections' "$server_log" | cut -d' ' -f1)
    echo "$(date -d "$ready" +%s.%N) - $(date -d "$listening" +%s.%N)" | bc -l
    stop
}

build_big() {
    local dir=$1 need free
    # The snapshot (14.4 bits an item at 0.1%), SAVE's new one beside it, and dd's file.
    need=$((BIG_CAPACITY * 18 / 10 * 2 + (1 << 30)))
    free=$(df --output=avail -B1 "$dir" | tail -1)
    if ((free < need)); then
        echo "restart.sh: $free bytes free under $work, the big set needs $need" >&2
        exit 1
    fi
    start "${builds[0]}" "$dir"
    cli BF.RESERVE big 0.001 "$BIG_CAPACITY" NONSCALING >/dev/null
    redis-benchmark -h "$HOST" -p "$server_port" -n "$BIG_ITEMS" -P 64 -r 1000000000000 -q \
        BF.ADD big __rand_int__ >/dev/null
    cli SAVE >/dev/null
    stop
}

build_small() {
    local dir=$1
    start "${builds[0]}" "$dir"
    awk -v n="$SMALL_KEYS" 'BEGIN {
        v = sprintf("%0100d", 0)
        for (i = 0; i < n; i++) {
            k = "key:" i
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$100\r\n%s\r\n", length(k), k, v
        }
    }' | cli --pipe >/dev/null
    cli SAVE >/dev/null
    stop
}

build_aof() {
    local dir=$1
    start "${builds[0]}" "$dir" --appendonly yes --appendfsync no --auto-aof-rewrite-percentage 0
    cli BF.RESERVE urls 0.01 100000000 >/dev/null
    redis-benchmark -h "$HOST" -p "$server_port" -n "$AOF_REQUESTS" -c 50 -P 16 -r 100000000 -q \
        BF.ADD urls __rand_int__ >/dev/null
    stop
    # What the log holds, as a replay counts it.
    start "${builds[0]}" "$dir" --appendonly yes --auto-aof-rewrite-percentage 0
    records=$(sed -n 's/.* records=\([0-9]*\).*/\1/p' "$server_log")
    stop
}

# The seconds of one SAVE by a server started on `dir`: afterwards the file is in that build's
# format, which its loads then read.
save_seconds() {
    local bin=$1 dir=$2 start_ns
    start "$bin" "$dir"
    start_ns=$(date +%s%N)
    cli SAVE >/dev/null
    echo "($(date +%s%N) - $start_ns) / 1000000000" | bc -l
    stop
}

# "<what>: <range> s, <range> MB/s, <ratio> times <reference>" for the seconds in `file`.
report() {
    local what=$1 file=$2 reference=$3 against=$4
    printf '  %s: %s s, %s MB/s' "$what" "$(summary 3 <"$file")" \
        "$(awk -v m="$mb" '{ print m / $1 }' "$file" | summary 0)"
    if [[ -n $reference ]]; then
        printf ', %.2f times %s' "$(echo "$(median <"$file") / $reference" | bc -l)" "$against"
    fi
    if [[ -n ${records:-} && $what == *replay* ]]; then
        printf ', %s records/s' "$(awk -v r="$records" '{ print r / $1 }' "$file" | summary 0)"
    fi
    printf '\n'
}

echo "restart.sh: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), cold figures: $can_drop"
modes=(warm)
if [[ $can_drop == yes ]]; then modes=(cold warm); fi
for set in $SETS; do
    dir="$work/$set"
    mkdir -p "$dir"
    records=
    "build_$set" "$dir"
    if [[ $set == aof ]]; then
        file=$(ls "$dir"/*.aof | tail -1)
    else
        file="$dir/sieved.snap"
    fi
    bytes=$(du -cb "$dir"/* | tail -1 | cut -f1)
    mb=$(echo "$bytes / 1000000" | bc -l)
    printf '\n%s: %.0f MB%s\n' "$set" "$mb" "${records:+, $records records}"
    for mode in "${modes[@]}"; do
        for _ in $(seq "$ROUNDS"); do
            if [[ $mode == cold ]]; then
                drop_caches
                sleep "$IDLE_BEFORE_COLD"
            fi
            dd_seconds if="$file" of=/dev/null bs=4M >>"$work/dd-$mode"
        done
    done
    if [[ $set != aof ]]; then
        # In 1 MiB blocks, which write faster than 4 MiB ones where the host takes back free
        # memory (see WRITE in src/persist/snapshot/write.rs): the stricter reference.
        blocks=$(((bytes + (1 << 20) - 1) / (1 << 20)))
        for _ in $(seq "$ROUNDS"); do
            dd_seconds if=/dev/zero of="$work/dd-file" bs=1M count="$blocks" conv=fsync \
                >>"$work/dd-write"
            rm -f "$work/dd-file"
        done
    fi
    for i in "${!builds[@]}"; do
        for _ in $(seq "$ROUNDS"); do
            if [[ $set == aof ]]; then
                for mode in "${modes[@]}"; do
                    replay_seconds "${builds[$i]}" "$dir" "$mode" >>"$work/replay-$mode-$i"
                done
            else
                save_seconds "${builds[$i]}" "$dir" >>"$work/save-$i"
                for mode in "${modes[@]}"; do
                    load_seconds "${builds[$i]}" "$dir" "$mode" >>"$work/load-$mode-$i"
                done
            fi
        done
    done
    for mode in "${modes[@]}"; do
        report "dd read, $mode" "$work/dd-$mode" "" ""
        reference=$(median <"$work/dd-$mode")
        for i in "${!builds[@]}"; do
            if [[ $set == aof ]]; then
                report "${builds[$i]} replay, $mode" "$work/replay-$mode-$i" "$reference" dd
            else
                report "${builds[$i]} load, $mode" "$work/load-$mode-$i" "$reference" dd
            fi
        done
    done
    if [[ $set != aof ]]; then
        report "dd write + fsync" "$work/dd-write" "" ""
        reference=$(median <"$work/dd-write")
        for i in "${!builds[@]}"; do
            report "${builds[$i]} SAVE" "$work/save-$i" "$reference" dd
        done
    fi
    rm -rf "$dir" "$work"/dd-* "$work"/save-* "$work"/load-* "$work"/replay-*
done
