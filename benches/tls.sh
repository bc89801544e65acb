#!/usr/bin/env bash
# What TLS costs: redis-benchmark against one sieved over its TCP port and its TLS port (the
# test certificates in tests/tls/, no client certificate), 50 connections, random items from a
# range of 1e8, pipelines of 1 and 32; medians of ROUNDS rounds, alternating which port goes
# first. With BASELINE_BIN set, that binary (another build of sieved) is measured over TCP in
# the same rounds, to compare the connection loop of two builds.
#
# Usage: benches/tls.sh                  (release build, then the run)
# Environment: REQUESTS (default 1000000), ROUNDS (default 3), PIPELINES (default "1 32"),
# CLIENTS (default 50), SIEVED_BIN (default target/release/sieved, built first unless given),
# BASELINE_BIN (default: none).
set -euo pipefail

REQUESTS=${REQUESTS:-1000000}
ROUNDS=${ROUNDS:-3}
PIPELINES=${PIPELINES:-"1 32"}
CLIENTS=${CLIENTS:-50}
RANGE=100000000
HOST=127.0.0.1

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
certs="$root/tests/tls"
# shellcheck source=benches/common.sh
source "$root/benches/common.sh"
require_tools "apt-get install -y redis-tools" redis-benchmark redis-cli
redis-benchmark --help 2>&1 | grep -q -- --tls || {
    echo "tls.sh: this redis-benchmark was built without TLS" >&2
    exit 1
}
build_sieved release

port=$(free_port)
tls_port=$(free_port)
while [[ $tls_port == "$port" ]]; do tls_port=$(free_port); done
mkdir -p "$work/sieved" "$work/baseline"
"$sieved_bin" --bind "$HOST" --port "$port" --dir "$work/sieved" --save "" --log-level warn \
    --tls-port "$tls_port" --tls-cert-file "$certs/server.crt" \
    --tls-key-file "$certs/server.key" --tls-ca-cert-file "$certs/ca.crt" \
    --tls-auth-clients optional 2>"$work/sieved.log" &
pids+=($!)
wait_ready "$port"
# name|port benchmarked|port for resetting the filter
targets=("tcp|$port|$port" "tls|$tls_port|$port")
if [[ -n ${BASELINE_BIN:-} ]]; then
    baseline_port=$(free_port)
    "$BASELINE_BIN" --bind "$HOST" --port "$baseline_port" --dir "$work/baseline" --save "" \
        --log-level warn 2>"$work/baseline.log" &
    pids+=($!)
    wait_ready "$baseline_port"
    targets+=("baseline tcp|$baseline_port|$baseline_port")
fi

# Runs one redis-benchmark and prints "rps p50_ms p99_ms".
bench() {
    local port=$1 tls=$2 pipeline=$3
    shift 3
    local tls_args=()
    if [[ $tls == tls ]]; then tls_args=(--tls --cacert "$certs/ca.crt"); fi
    redis-benchmark -h "$HOST" -p "$port" "${tls_args[@]}" -c "$CLIENTS" -n "$REQUESTS" \
        -r "$RANGE" -P "$pipeline" --csv "$@" |
        awk -F, 'NR == 2 { gsub(/"/, ""); print $2, $5, $7 }'
}

echo "$sieved_bin (work tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))" >&2
echo "$(nproc) cores, $(uptime)" >&2
printf '| command | -P | port | rps | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n'
for pipeline in $PIPELINES; do
    for command in "BF.ADD bench __rand_int__" "BF.EXISTS bench __rand_int__"; do
        for target in "${targets[@]}"; do : >"$work/${target%%|*}"; done
        for round in $(seq "$ROUNDS"); do
            order=("${targets[@]}")
            if ((round % 2 == 0)); then
                order=()
                for ((i = ${#targets[@]} - 1; i >= 0; i--)); do order+=("${targets[i]}"); done
            fi
            for target in "${order[@]}"; do
                IFS='|' read -r name target_port admin_port <<<"$target"
                if [[ $command == BF.ADD* ]]; then
                    redis-cli -h "$HOST" -p "$admin_port" DEL bench >/dev/null
                    redis-cli -h "$HOST" -p "$admin_port" BF.RESERVE bench 0.01 "$RANGE" >/dev/null
                fi
                # shellcheck disable=SC2086
                bench "$target_port" "${name##* }" "$pipeline" $command >>"$work/$name"
            done
        done
        for target in "${targets[@]}"; do
            name=${target%%|*}
            printf '| %s | %s | %s | %.0f | %s | %s |\n' "${command%% *}" "$pipeline" "$name" \
                "$(cut -d' ' -f1 "$work/$name" | median)" "$(cut -d' ' -f2 "$work/$name" | median)" \
                "$(cut -d' ' -f3 "$work/$name" | median)"
        done
    done
done
echo "after: $(uptime)" >&2
