#!/bin/sh
# Installs the package on a throw-away copy of this machine and checks it as an operator would:
# dpkg -i, the sieved user and /var/lib/sieved owned by it, the installed binary serving with
# the installed configuration, a second install refusing to start a server on a port in use,
# dpkg -r keeping data and configuration, a reinstall finding the data, dpkg -P keeping data.
#
#   sudo deploy/debian/test-install.sh target/debian/sieved_*.deb
#
# It needs root, unshare and overlayfs: the machine's root is mounted read-only under an
# overlay in a private mount and network namespace, so nothing outside changes (no user, no
# file, no port). There is no systemd running there: postinst's start and restart go through
# stand-ins for systemctl and deb-systemd-invoke that record what they were asked.
set -eu

deb=$(realpath "$1")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if [ "${SIEVED_IN_SANDBOX:-}" != 1 ]; then
    export SIEVED_IN_SANDBOX=1
    exec unshare --mount --net --fork sh -c '
        set -eu
        mkdir -p "$1/upper" "$1/work" "$1/root"
        mount -t overlay overlay -o "lowerdir=/,upperdir=$1/upper,workdir=$1/work" "$1/root"
        mount --bind /proc "$1/root/proc"
        mount --bind /dev "$1/root/dev"
        mount -t tmpfs tmpfs "$1/root/run"
        mount -t tmpfs tmpfs "$1/root/tmp"
        cp "$2" "$1/root/tmp/sieved.deb"
        cp "$3" "$1/root/tmp/test-install.sh"
        ip link set lo up
        exec chroot "$1/root" sh /tmp/test-install.sh /tmp/sieved.deb
    ' sandbox "$scratch" "$deb" "$(realpath "$0")"
fi

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# Stand-ins: a "running" systemd whose requests are recorded in /tmp/systemd.log, and under
# which sieved.service is not active (the servers here are started by hand).
mkdir -p /run/systemd/system /usr/local/sbin
for tool in systemctl deb-systemd-invoke; do
    cat >"/usr/local/sbin/$tool" <<STANDIN
#!/bin/sh
echo "$tool \$*" >>/tmp/systemd.log
case " \$* " in *" is-active "*) exit 3 ;; esac
STANDIN
    chmod 755 "/usr/local/sbin/$tool"
done
export PATH="/usr/local/sbin:$PATH"
: >/tmp/systemd.log

wait_for_port() {
    i=0
    until redis-cli -p "$1" PING 2>/dev/null | grep -q PONG; do
        i=$((i + 1))
        [ $i -lt 300 ] || fail "nothing answers on port $1: $(cat /tmp/sieved.log)"
        sleep 0.1
    done
}

# Stops the server on port 6390 with SIGTERM (sent to it, not to runuser) and waits for the
# runuser that started it as $server.
stop_server() {
    pid=$(redis-cli -p 6390 INFO server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
    kill -TERM "$pid"
    wait "$server" || fail "sieved did not stop cleanly: $(cat /tmp/sieved.log)"
}

echo "== dpkg -i"
dpkg -i /tmp/sieved.deb
getent passwd sieved >/dev/null || fail "no sieved user"
[ "$(stat -c %U:%a /var/lib/sieved)" = sieved:750 ] || fail "/var/lib/sieved: $(stat -c %U:%a /var/lib/sieved)"
[ "$(stat -c %U:%a /etc/sieved/sieved.conf)" = sieved:640 ] || fail "sieved.conf: $(stat -c %U:%a /etc/sieved/sieved.conf)"
grep -q "deb-systemd-invoke start sieved.service" /tmp/systemd.log || fail "postinst did not start the unit"
man -l /usr/share/man/man1/sieved.1.gz >/dev/null 2>&1 || fail "the man page does not render"
man -l /usr/share/man/man5/sieved.conf.5.gz >/dev/null 2>&1 || fail "sieved.conf(5) does not render"

echo "== the installed binary with the installed configuration, as the sieved user"
runuser -u sieved -- /usr/bin/sieved /etc/sieved/sieved.conf >/tmp/sieved.log 2>&1 &
server=$!
wait_for_port 6390
[ "$(redis-cli -p 6390 BF.ADD seen https://example.com/)" = 1 ] || fail "BF.ADD"
[ "$(redis-cli -p 6390 CONFIG GET dir | tail -1)" = /var/lib/sieved ] || fail "dir"
redis-cli -p 6390 SAVE >/dev/null
[ -n "$(ls /var/lib/sieved)" ] || fail "no snapshot in /var/lib/sieved"

echo "== reinstall while the port is in use: no second server"
: >/tmp/systemd.log
dpkg -i /tmp/sieved.deb 2>/tmp/postinst.err
grep -q "port 6390 is in use" /tmp/postinst.err || fail "postinst said: $(cat /tmp/postinst.err)"
! grep -q "start sieved.service" /tmp/systemd.log || fail "postinst started a second server"
stop_server

echo "== dpkg -r keeps data, configuration and user"
dpkg -r sieved
[ ! -e /usr/bin/sieved ] || fail "the binary is still there"
[ -n "$(ls /var/lib/sieved)" ] || fail "dpkg -r lost the data"
[ -f /etc/sieved/sieved.conf ] || fail "dpkg -r removed the configuration"
getent passwd sieved >/dev/null || fail "dpkg -r removed the user"

echo "== reinstall finds the data"
dpkg -i /tmp/sieved.deb
runuser -u sieved -- /usr/bin/sieved /etc/sieved/sieved.conf >/tmp/sieved.log 2>&1 &
server=$!
wait_for_port 6390
[ "$(redis-cli -p 6390 BF.EXISTS seen https://example.com/)" = 1 ] || fail "the filter was lost"
stop_server

echo "== dpkg -P keeps the data directory that holds data"
dpkg -P sieved 2>/tmp/postrm.err
[ -n "$(ls /var/lib/sieved)" ] || fail "dpkg -P lost the data"
grep -q "/var/lib/sieved holds data and is kept" /tmp/postrm.err || fail "postrm said: $(cat /tmp/postrm.err)"
[ ! -e /etc/sieved/sieved.conf ] || fail "dpkg -P left the configuration"

echo "PASS"
