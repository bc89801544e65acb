#!/usr/bin/env bash
# Memory of lists on sieved and Debian's redis-server, measured as benches/dedup_memory.sh
# measures: each case is loaded into a fresh server with `redis-cli --pipe`, and the figure is
# used_memory after minus before. Two shapes: one long list (a crawl queue: bytes per
# element), and many short lists (bytes per key, the key's own cost included).
#
# Usage: benches/list_memory.sh      (debug build of sieved unless SIEVED_BIN is given)
# Environment: N elements of the long list (default 1000000), KEYS short lists (default
# 100000) of 10 elements each, SIEVED_BIN.
set -euo pipefail

N=${N:-1000000}
KEYS=${KEYS:-100000}
HOST=127.0.0.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-server redis-tools python3" redis-server redis-cli python3
build_sieved debug

# Writes RESP commands for one shape to the file named: `long SIZE` pushes N elements of SIZE
# bytes onto one list, 100 per RPUSH; `short SIZE` makes KEYS lists of 10 such elements.
write_commands() {
    python3 - "$N" "$KEYS" "$1" "$2" >"$3" <<'PY'
import sys
n, keys, shape, size = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
out = sys.stdout.buffer
def resp(words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)
def element(i):
    return (b"e%d-" % i).ljust(size, b"x")[:size]
if shape == "long":
    for start in range(0, n, 100):
        out.write(resp([b"RPUSH", b"queue"] + [element(i) for i in range(start, min(n, start + 100))]))
else:
    for key in range(keys):
        out.write(resp([b"RPUSH", b"list:%d" % key] + [element(i) for i in range(10)]))
PY
}

# Prints the bytes per unit (element or key) that loading FILE into a fresh KIND server takes.
measure() {
    local kind=$1 file=$2 units=$3
    awk -v units="$units" -v bytes="$(memory_of_load "$kind" "$file" "")" \
        'BEGIN { printf "%.1f", bytes / units }'
}

echo "| list | element | redis-server $(redis-server --version | grep -o 'v=[0-9.]*') | sieved |"
echo "|---|---|---|---|"
for size in 8 40 100; do
    write_commands long "$size" "$work/long.resp"
    printf '| one list of %d elements, bytes per element | %d bytes | %s | %s |\n' "$N" "$size" \
        "$(measure redis "$work/long.resp" "$N")" "$(measure sieved "$work/long.resp" "$N")"
done
for size in 8 40; do
    write_commands short "$size" "$work/short.resp"
    printf '| %d lists of 10 elements, bytes per key | %d bytes | %s | %s |\n' "$KEYS" "$size" \
        "$(measure redis "$work/short.resp" "$KEYS")" "$(measure sieved "$work/short.resp" "$KEYS")"
done
