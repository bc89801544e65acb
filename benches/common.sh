# Shared by the benchmark scripts: a scratch directory and the servers started in it, removed on
# exit; the tools and the sieved binary a script needs; a free loopback port; waiting until a
# server answers; a fresh server and its used_memory; a process's CPU time; the median of a
# column. Needs HOST and root (the checkout) set.

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

# require_tools HINT TOOL...: stops the script unless every TOOL is on PATH; HINT says how to get
# them.
require_tools() {
    local hint=$1 tool
    shift
    for tool in "$@"; do
        command -v "$tool" >/dev/null || {
            echo "$(basename "$0"): $tool not found ($hint)" >&2
            exit 1
        }
    done
}

# build_sieved PROFILE: sets sieved_bin to the binary to measure: SIEVED_BIN when given, else
# target/PROFILE/sieved (PROFILE is release or debug), built first unless SKIP_BUILD=1.
build_sieved() {
    local profile=$1
    if [[ -n ${SIEVED_BIN:-} ]]; then
        sieved_bin=$SIEVED_BIN
        return
    fi
    if [[ ${SKIP_BUILD:-0} != 1 ]]; then
        local flags=()
        if [[ $profile == release ]]; then flags=(--release); fi
        cargo build "${flags[@]}" --manifest-path "$root/Cargo.toml" >&2
    fi
    sieved_bin="$root/target/$profile/sieved"
}

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

# start_server KIND: a fresh server of KIND (redis or sieved, $sieved_bin) on a free port, with
# no persistence, which it leaves in $port.
start_server() {
    port=$(free_port)
    mkdir -p "$work/$port"
    if [[ $1 == redis ]]; then
        redis-server --port "$port" --bind "$HOST" --save '' --appendonly no \
            --dir "$work/$port" >/dev/null 2>&1 &
    else
        "$sieved_bin" --port "$port" --bind "$HOST" --save '' --dir "$work/$port" \
            --log-level warn >/dev/null 2>&1 &
    fi
    pids+=($!)
    wait_ready "$port"
}

# The used_memory field of INFO memory of the server on port $1.
used_memory() {
    redis-cli -h "$HOST" -p "$1" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

# memory_of_load KIND FILE SETUP: the bytes of used_memory that a fresh server of KIND takes to
# run SETUP (one command, split into words; none if empty) and then FILE (RESP commands sent with
# `redis-cli --pipe`; none if empty). The server is shut down after.
memory_of_load() {
    local kind=$1 file=$2 setup=$3 before after
    start_server "$kind"
    before=$(used_memory "$port")
    if [[ -n $setup ]]; then
        # shellcheck disable=SC2086
        redis-cli -h "$HOST" -p "$port" $setup >/dev/null
    fi
    if [[ -n $file ]]; then
        redis-cli -h "$HOST" -p "$port" --pipe <"$file" >/dev/null
    fi
    after=$(used_memory "$port")
    redis-cli -h "$HOST" -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    echo $((after - before))
}

# The fields of /proc/$1/stat from the third (the state) on: what follows the command name,
# which may hold spaces, so that field N of the file is element N - 3.
stat_fields() {
    local stat
    stat=$(<"/proc/$1/stat")
    echo "${stat##*) }"
}

# The CPU time process $1 has used so far, in clock ticks: utime + stime, every thread included,
# and cutime + cstime, its children's once it has reaped them (redis-server rewrites its
# append-only file and saves in forked children; sieved does both on threads, which utime
# already counts): fields 14 to 17 of /proc/PID/stat.
cpu_ticks() {
    local fields
    read -r -a fields <<<"$(stat_fields "$1")"
    echo $((fields[11] + fields[12] + fields[13] + fields[14]))
}

# The part of that spent in the kernel: stime + cstime, fields 15 and 17. Linux splits a process's
# time between user and kernel by sampling which one each timer tick lands in, so over a short
# run the split is only as good as its number of ticks; the sum is exact.
system_ticks() {
    local fields
    read -r -a fields <<<"$(stat_fields "$1")"
    echo $((fields[12] + fields[14]))
}
ticks_per_second=$(getconf CLK_TCK)

# The median of the numbers on stdin, one a line (the mean of the middle two for an even count).
median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The median of space-separated column $1 of file $2.
column() {
    cut -d' ' -f"$1" "$2" | median
}
