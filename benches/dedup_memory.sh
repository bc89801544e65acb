#!/usr/bin/env bash
# Memory to remember N seen requests, the ways a crawler can keep them: Scrapy-Redis's default
# dupefilter (a set of 40-hex request fingerprints, SADD) on Debian's redis-server and on sieved;
# scrapy-redis-bloomfilter's bitmap (a 2^30-bit string, the same size whatever N); and sieved's
# own Bloom filters (BF.RESERVE for N, then BF.MADD) at two error rates. Each structure is
# loaded into a fresh server with `redis-cli --pipe`; the figure is used_memory after minus
# before, per fingerprint.
#
# Usage: benches/dedup_memory.sh      (debug build of sieved unless SIEVED_BIN is given)
# Environment: N fingerprints (default 10000000), SIEVED_BIN.
set -euo pipefail

N=${N:-10000000}
HOST=127.0.0.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools python3" redis-server redis-cli python3
build_sieved debug

# Writes the RESP commands that add N fingerprints to KEY with COMMAND (SADD or BF.MADD), in
# batches of 1000 per command, to the file named.
write_commands() {
    python3 - "$N" "$1" "$2" >"$3" <<'PY'
import hashlib, sys
n, command, key = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3].encode()
out = sys.stdout.buffer
def resp(words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
for start in range(0, n, 1000):
    batch = [hashlib.sha1(b"https://example.com/page/%d" % i).hexdigest().encode()
             for i in range(start, min(n, start + 1000))]
    out.write(resp([command, key] + batch))
PY
}

# One row: a fresh server of KIND, the SETUP commands, then the commands file; prints the bytes.
measure() {
    local label=$1 kind=$2 file=$3 setup=$4 bytes
    bytes=$(memory_of_load "$kind" "$file" "$setup")
    awk -v label="$label" -v n="$N" -v bytes="$bytes" \
        'BEGIN { printf "| %s | %.1f MB | %.2f |\n", label, bytes / 1e6, bytes / n }'
}

write_commands SADD dupefilter "$work/sadd.resp"
write_commands BF.MADD seen "$work/bfmadd.resp"

echo "| $N request fingerprints | memory | bytes per fingerprint |"
echo "|---|---|---|"
measure "Scrapy-Redis set (SADD), redis-server $(redis-server --version | grep -o 'v=[0-9.]*')" redis "$work/sadd.resp" ""
measure "Scrapy-Redis set (SADD), sieved" sieved "$work/sadd.resp" ""
measure "scrapy-redis-bloomfilter bitmap, 2^30 bits (any N), redis-server" redis "" "SETBIT bloomfilter 1073741823 1"
measure "scrapy-redis-bloomfilter bitmap, 2^30 bits (any N), sieved" sieved "" "SETBIT bloomfilter 1073741823 1"
measure "sieved BF at 0.1% (BF.RESERVE seen 0.001 $N)" sieved "$work/bfmadd.resp" "BF.RESERVE seen 0.001 $N"
measure "sieved BF at 0.0001% (BF.RESERVE seen 0.000001 $N)" sieved "$work/bfmadd.resp" "BF.RESERVE seen 0.000001 $N"
