#!/usr/bin/env bash
# Import speed of `sieved import-rdb`, in MB of RDB file per second, beside redis-server loading
# the same file at start-up. Two inputs: RedisBloom's fixture dump.rdb (Bloom and cuckoo filters
# and a 128 MiB bitmap, 2.1 MB compressed), and an RDB that redis-server writes here with
# DEBUG POPULATE (KEYS string keys of SIZE bytes) plus lists, sets and hashes of 1000 elements.
# Each import is timed ROUNDS times, reading only (no destination) and into a snapshot (--dir);
# the table gives medians of wall time.
#
# Usage: benches/import_rdb.sh          (release build, then the run)
# Environment: KEYS (default 1000000), SIZE (default 100), ROUNDS (default 3), SKIP_BUILD=1 to
# use the existing release binary, SIEVED_BIN to run another binary (implies SKIP_BUILD),
# SIEVED_REDISBLOOM_FIXTURES for the fixtures' directory.
set -euo pipefail

KEYS=${KEYS:-1000000}
SIZE=${SIZE:-100}
ROUNDS=${ROUNDS:-3}
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server" redis-server redis-cli
build_sieved release

now() { date +%s.%N; }

# Seconds redis-server takes from start until it answers PING (past LOADING) with `dir`'s dump.rdb.
redis_load() {
    local dir=$1 port start
    port=$(free_port)
    start=$(now)
    redis-server --port "$port" --bind "$HOST" --dir "$dir" --save "" --appendonly no \
        --daemonize no >/dev/null 2>&1 &
    local pid=$!
    pids+=("$pid")
    until redis-cli -h "$HOST" -p "$port" PING 2>/dev/null | grep -q PONG; do sleep 0.01; done
    echo "$(now) - $start" | bc
    kill "$pid"
    wait "$pid" 2>/dev/null || true
}

# Seconds one import takes; extra arguments are passed on.
sieved_import() {
    local file=$1 start
    shift
    start=$(now)
    "$sieved_bin" import-rdb "$file" "$@" >/dev/null
    echo "$(now) - $start" | bc
}

row() {
    local name=$1 file=$2 redis_module=${3:-yes} bytes read snap load
    bytes=$(stat -c %s "$file")
    read=$(for _ in $(seq "$ROUNDS"); do sieved_import "$file"; done | median)
    snap=$(for i in $(seq "$ROUNDS"); do
        sieved_import "$file" --dir "$work/snap-$name-$i"
        rm -rf "$work/snap-$name-$i"
    done | median)
    if [[ $redis_module == yes ]]; then
        mkdir -p "$work/load-$name"
        cp "$file" "$work/load-$name/dump.rdb"
        load=$(for _ in $(seq "$ROUNDS"); do redis_load "$work/load-$name"; done | median)
        load=$(printf '%.3f s (%.0f MB/s)' "$load" "$(echo "$bytes / $load / 1000000" | bc -l)")
    else
        load="n/a (needs RedisBloom)"
    fi
    printf '| %s | %.1f MB | %.3f s (%.0f MB/s) | %.3f s (%.0f MB/s) | %s |\n' "$name" \
        "$(echo "$bytes / 1000000" | bc -l)" \
        "$read" "$(echo "$bytes / $read / 1000000" | bc -l)" \
        "$snap" "$(echo "$bytes / $snap / 1000000" | bc -l)" "$load"
}

# The generated file.
port=$(free_port)
mkdir -p "$work/redis"
redis-server --port "$port" --bind "$HOST" --dir "$work/redis" --save "" --appendonly no \
    --enable-debug-command yes >/dev/null 2>&1 &
pids+=("$!")
wait_ready "$port"
redis-cli -h "$HOST" -p "$port" DEBUG POPULATE "$KEYS" key "$SIZE" >/dev/null
for i in $(seq 100); do
    redis-cli -h "$HOST" -p "$port" RPUSH "list:$i" $(seq 1000) >/dev/null
    redis-cli -h "$HOST" -p "$port" SADD "set:$i" $(seq 1000 | sed 's/^/m/') >/dev/null
    redis-cli -h "$HOST" -p "$port" HSET "hash:$i" $(seq 2000 | sed 's/^/f/') >/dev/null
done
redis-cli -h "$HOST" -p "$port" SAVE >/dev/null
generated="$work/redis/dump.rdb"

fixtures=${SIEVED_REDISBLOOM_FIXTURES:-"$root/../shared/fixtures/redisbloom"}
[[ -f $fixtures/dump.rdb ]] || fixtures="$root/../../shared/fixtures/redisbloom"

echo "sieved import-rdb, medians of $ROUNDS runs on $(nproc) cores ($(redis-server --version | cut -d' ' -f3))"
echo
echo "| input | RDB size | import-rdb, reading only | import-rdb --dir (snapshot written) | redis-server start-up load |"
echo "|---|---|---|---|---|"
row "$KEYS strings of $SIZE B + 300 collections" "$generated"
if [[ -f $fixtures/dump.rdb ]]; then
    row "RedisBloom fixture dump.rdb" "$fixtures/dump.rdb" no
fi
