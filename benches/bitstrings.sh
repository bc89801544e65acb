#!/usr/bin/env bash
# The Scrapy-Redis seed pattern: sieved against Debian's redis-server, side by side. Each URL is
# hashed as scrapy-redis-bloomfilter 0.8.1 hashes it (its HashMap with seeds 5, 7, 11, 13, 31
# and 37 over a 2^30-bit string, k=6), giving six SETBITs to insert it and six GETBITs to look
# it up. The commands are written once to files, then sent by CLIENTS `redis-cli --pipe`
# processes at once, each on its own connection and its own URLs, fully pipelined. Both
# servers get the same files; each phase runs ROUNDS times, alternating which server goes
# first so that noise from the rest of the machine falls on both; the table gives medians.
#
# Beside throughput, each server's CPU time per request (user + system, from /proc/PID/stat
# before and after each phase): what a request costs the server, whatever the load generator
# and the rest of the machine take.
#
# The 2^30-bit (128 MB) string is made first on both servers by one SETBIT at its last bit, as
# a crawler's first insert would.
#
# Usage: benches/bitstrings.sh           (release build, then the run)
# Environment: URLS per client (default 100000), CLIENTS (default 4), ROUNDS (default 3),
# SKIP_BUILD=1 to use the existing release binary, SIEVED_BIN to run another sieved binary
# (implies SKIP_BUILD), SIEVED_THREADS (default: number of cores).
set -euo pipefail

URLS=${URLS:-100000}
CLIENTS=${CLIENTS:-4}
ROUNDS=${ROUNDS:-3}
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools python3" redis-server redis-cli python3
build_sieved release

# The command files: client c's URLs, as SETBIT (insert) and GETBIT (look-up) requests.
python3 - "$work" "$URLS" "$CLIENTS" <<'EOF'
import sys

work, urls, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
BITS = 1 << 30
SEEDS = [5, 7, 11, 13, 31, 37]


def offset(seed, value):
    # scrapy-redis-bloomfilter's HashMap.hash, masked as it masks it.
    ret = 0
    for ch in value:
        ret += seed * ret + ord(ch)
    return (BITS - 1) & ret


def request(*words):
    out = [b"*%d\r\n" % len(words)]
    for word in words:
        word = word.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(word), word))
    return b"".join(out)


for client in range(clients):
    with open(f"{work}/set-{client}", "wb") as sets, open(f"{work}/get-{client}", "wb") as gets:
        for i in range(urls):
            url = f"https://example.com/c{client}/page/{i}?ref={i * 7919 % 100003}"
            for seed in SEEDS:
                bit = str(offset(seed, url))
                sets.write(request("SETBIT", "bloomfilter0", bit, "1"))
                gets.write(request("GETBIT", "bloomfilter0", bit))
EOF

redis_port=$(free_port)
mkdir -p "$work/redis" "$work/sieved"
redis-server --bind "$HOST" --port "$redis_port" --dir "$work/redis" --save '' \
    --appendonly no --daemonize no --logfile "$work/redis.log" &
pids+=($!)
redis_pid=$!
sieved_port=$(free_port)
while [[ $sieved_port == "$redis_port" ]]; do sieved_port=$(free_port); done
threads_flag=()
if [[ -n ${SIEVED_THREADS:-} ]]; then threads_flag=(--threads "$SIEVED_THREADS"); fi
"$sieved_bin" --bind "$HOST" --port "$sieved_port" --dir "$work/sieved" --save "" \
    --log-level warn "${threads_flag[@]}" 2>"$work/sieved.log" &
pids+=($!)
sieved_pid=$!
wait_ready "$redis_port"
wait_ready "$sieved_port"

reset() {
    local port=$1
    redis-cli -h "$HOST" -p "$port" FLUSHALL >/dev/null
    redis-cli -h "$HOST" -p "$port" SETBIT bloomfilter0 $(((1 << 30) - 1)) 0 >/dev/null
}

# Sends every client's file of `kind` at once to the server `pid` on `port`; prints the
# requests per second and the server's CPU microseconds per request.
run() {
    local port=$1 pid=$2 kind=$3 start end c pipes=() cpu_before cpu_after
    rm -f "$work"/out-*
    cpu_before=$(cpu_ticks "$pid")
    start=$(date +%s.%N)
    for c in $(seq 0 $((CLIENTS - 1))); do
        redis-cli -h "$HOST" -p "$port" --pipe <"$work/$kind-$c" >"$work/out-$c" 2>&1 &
        pipes+=($!)
    done
    wait "${pipes[@]}"
    end=$(date +%s.%N)
    cpu_after=$(cpu_ticks "$pid")
    if grep -L 'errors: 0,' "$work"/out-* | grep -q .; then
        echo "bitstrings.sh: errors from port $port:" >&2
        cat "$work"/out-* >&2
        exit 1
    fi
    awk -v n=$((URLS * CLIENTS * 6)) -v s="$start" -v e="$end" -v c=$((cpu_after - cpu_before)) \
        -v hz="$ticks_per_second" 'BEGIN { print n / (e - s), c / hz * 1e6 / n }'
}

# The median of column `col` (1: requests per second, 2: CPU microseconds per request) of `file`.
echo "$sieved_bin (work tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')) vs $(redis-server --version | cut -d' ' -f1-3)" >&2
echo "$(nproc) cores, $CLIENTS clients x $URLS URLs x 6 bits, $(uptime)" >&2
: >"$work/s-set" && : >"$work/r-set" && : >"$work/s-get" && : >"$work/r-get"
for round in $(seq "$ROUNDS"); do
    if ((round % 2)); then order="s r"; else order="r s"; fi
    for server in $order; do
        port=$sieved_port pid=$sieved_pid
        if [[ $server == r ]]; then port=$redis_port pid=$redis_pid; fi
        reset "$port"
        run "$port" "$pid" set >>"$work/$server-set"
        run "$port" "$pid" get >>"$work/$server-get"
    done
done
# Both servers hold the same bits: the same count of set bits.
s_count=$(redis-cli -h "$HOST" -p "$sieved_port" BITCOUNT bloomfilter0)
r_count=$(redis-cli -h "$HOST" -p "$redis_port" BITCOUNT bloomfilter0)
if [[ $s_count != "$r_count" ]]; then
    echo "bitstrings.sh: BITCOUNT differs: sieved $s_count, redis-server $r_count" >&2
    exit 1
fi
printf '| command (k=6 per URL, pipelined) | sieved ops/s | redis ops/s | ratio | sieved URLs/s | redis URLs/s | sieved CPU µs/op | redis CPU µs/op |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for kind in set get; do
    s=$(column 1 "$work/s-$kind")
    r=$(column 1 "$work/r-$kind")
    s_cpu=$(column 2 "$work/s-$kind")
    r_cpu=$(column 2 "$work/r-$kind")
    printf '| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.3f | %.3f |\n' "${kind^^}BIT" "$s" "$r" \
        "$(awk -v a="$s" -v b="$r" 'BEGIN { print a / b }')" \
        "$(awk -v a="$s" 'BEGIN { print a / 6 }')" "$(awk -v a="$r" 'BEGIN { print a / 6 }')" \
        "$s_cpu" "$r_cpu"
done
echo "set bits after the last round: $s_count on both; after: $(uptime)" >&2
