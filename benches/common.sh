# Shared by the benchmark scripts: a scratch directory and the servers started in it, removed on
# exit; a free loopback port; waiting until a server answers. Needs HOST set.

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# A loopback port nothing listens on.
free_port() {
    local port
    while true; do
        port=$((20000 + RANDOM % 20000))
        if ! (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
}

wait_ready() {
    local port=$1
    for _ in $(seq 100); do
        if redis-cli -h "$HOST" -p "$port" PING 2>/dev/null | grep -q PONG; then
            return
        fi
        sleep 0.1
    done
    echo "$(basename "$0"): nothing answers on port $port" >&2
    exit 1
}
