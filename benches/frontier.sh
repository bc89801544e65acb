#!/usr/bin/env bash
# The crawl frontier against what a Scrapy-Redis fleet does today on Debian's redis-server, for
# the same work, both pipelined with `redis-cli --pipe`, in one run:
#
#   push  N unique URLs, each offered twice (half the links a crawler finds were seen before),
#         100 per batch. sieved: FQ.PUSH of 100 URLs. Scrapy-Redis: its dupefilter's SADD of
#         each request's 40-hex fingerprint, then its priority queue's ZADD of each new request
#         (the URL alone as the member: real Scrapy-Redis stores a pickled request, ~300 bytes
#         more, so this is generous to it).
#   pop   every URL. sieved: FQ.POP COUNT 100 and FQ.ACK of the 100 ids (leased, then done).
#         Scrapy-Redis: its PriorityQueue.pop, MULTI / ZRANGE 0 0 / ZREMRANGEBYRANK 0 0 / EXEC
#         per request; and, as a best case it does not use, ZPOPMIN of 100.
#
# Figures: URLs per second of each phase, and used_memory per seen URL once the queue is empty
# (what remembering the seen URLs costs: the dupefilter's set, the frontier's seen-set).
#
# Usage: benches/frontier.sh      (release build of sieved unless SIEVED_BIN is given)
# Environment: N unique URLs (default 1000000), SIEVED_BIN.
set -euo pipefail

N=${N:-1000000}
HOST=127.0.0.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools python3" redis-server redis-cli python3
build_sieved release

echo "generating the command files for $N URLs..." >&2
python3 - "$N" "$work" <<'PY'
import hashlib, sys
n, work = int(sys.argv[1]), sys.argv[2]
def resp(*words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
def url(i):
    return b"https://host%d.example.com/articles/%d/page-%d.html" % (i % 1000, i // 1000, i)
# Batches of 100 links: 50 new, and 50 seen in the batch before.
batches = []
for start in range(0, n, 50):
    new = list(range(start, min(n, start + 50)))
    old = list(range(max(0, start - 50), start))
    batches.append((new, old))
with open(f"{work}/fq_push", "wb") as fq, open(f"{work}/redis_push", "wb") as rd:
    fq.write(resp(b"FQ.RESERVE", b"f", b"0.001", b"%d" % n, b"LEASE", b"600000"))
    for new, old in batches:
        links = [url(i) for i in old + new]
        fq.write(resp(b"FQ.PUSH", b"f", *links))
        for link in links:
            rd.write(resp(b"SADD", b"dupefilter", hashlib.sha1(link).hexdigest().encode()))
        for i in new:
            rd.write(resp(b"ZADD", b"requests", b"0", url(i)))
with open(f"{work}/fq_pop", "wb") as fq, open(f"{work}/redis_pop", "wb") as rd, \
        open(f"{work}/redis_zpopmin", "wb") as zp:
    for start in range(0, n, 100):
        ids = [b"%d" % (i + 1) for i in range(start, min(n, start + 100))]
        fq.write(resp(b"FQ.POP", b"f", b"COUNT", b"100"))
        fq.write(resp(b"FQ.ACK", b"f", *ids))
        zp.write(resp(b"ZPOPMIN", b"requests", b"100"))
    for _ in range(n):
        rd.write(resp(b"MULTI") + resp(b"ZRANGE", b"requests", b"0", b"0")
                 + resp(b"ZREMRANGEBYRANK", b"requests", b"0", b"0") + resp(b"EXEC"))
PY

# Sends a command file; prints the seconds it took. Fails on any error reply.
pipe() {
    local port=$1 file=$2 started out
    started=$(date +%s.%N)
    out=$(redis-cli -h "$HOST" -p "$port" --pipe <"$file")
    echo "$out" | grep -q "errors: 0," || { echo "frontier.sh: errors in $file: $out" >&2; exit 1; }
    echo "$(date +%s.%N) - $started" | bc -l
}

rate() {
    printf "%.0f" "$(echo "$N / $1" | bc -l)"
}

printf "%-44s %14s %14s %16s\n" "server" "push URLs/s" "pop URLs/s" "bytes/seen URL"

start_server sieved
before=$(used_memory "$port")
push=$(pipe "$port" "$work/fq_push")
pop=$(pipe "$port" "$work/fq_pop")
info=$(redis-cli -h "$HOST" -p "$port" FQ.INFO f | tr '\n' ' ')
[[ $info == *"Queued 0 "*"Leased 0 "* ]] || { echo "frontier.sh: not drained: $info" >&2; exit 1; }
# URLs the seen-set took for seen (false positives) were dropped, as the error rate allows.
dropped=$((N - $(echo "$info" | sed 's/.*Done \([0-9]*\).*/\1/')))
after=$(used_memory "$port")
printf "%-44s %14s %14s %16.2f\n" "sieved FQ.PUSH / FQ.POP+FQ.ACK" "$(rate "$push")" \
    "$(rate "$pop")" "$(echo "($after - $before) / $N" | bc -l)"

start_server redis
before=$(used_memory "$port")
push=$(pipe "$port" "$work/redis_push")
pop=$(pipe "$port" "$work/redis_pop")
[[ $(redis-cli -h "$HOST" -p "$port" EXISTS requests) == 0 ]] || { echo "not drained" >&2; exit 1; }
after=$(used_memory "$port")
printf "%-44s %14s %14s %16.2f\n" "redis-server SADD+ZADD / MULTI ZRANGE ZREM" "$(rate "$push")" \
    "$(rate "$pop")" "$(echo "($after - $before) / $N" | bc -l)"

start_server redis
push=$(pipe "$port" "$work/redis_push")
pop=$(pipe "$port" "$work/redis_zpopmin")
printf "%-44s %14s %14s %16s\n" "redis-server SADD+ZADD / ZPOPMIN 100" "$(rate "$push")" \
    "$(rate "$pop")" "-"
echo "redis-server: $(redis-server --version | awk '{print $3}'); sieved dropped $dropped of $N new URLs as seen (error rate 0.001)"
