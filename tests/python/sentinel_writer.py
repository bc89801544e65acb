"""A client that writes through a Sentinel failover, for tests/it/sentinel.rs.

Finds the primary with redis-py's Sentinel support, as an application would, and writes one new
item at a time, each followed by WAIT 1 on the same connection. Prints "confirmed <item>" for
each write that WAIT says reached a replica; a write that fails or is not confirmed is simply
not reported, and the next item is a new one. Stops when its stdin is closed, then prints
"done <confirmed> <attempted>".

Usage: sentinel_writer.py <sentinel-port>[,<sentinel-port>...] <service> bf|string <key>
  bf:     BF.ADD <key> <item>   (sieved)
  string: SET <key>:<item> 1    (redis-server, to check the test's harness against Redis itself)
"""

import sys
import threading
import time

import redis
from redis.sentinel import Sentinel


def main():
    ports, service, mode, key = sys.argv[1:5]
    sentinel = Sentinel(
        [("127.0.0.1", int(port)) for port in ports.split(",")], socket_timeout=0.5
    )
    # No retries of its own: a failed write is counted as unconfirmed and the loop goes on.
    primary = sentinel.master_for(
        service, socket_timeout=0.5, socket_connect_timeout=0.5, retry=None
    )

    stop = threading.Event()

    def wait_for_eof():
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()

    confirmed = attempted = 0
    while not stop.is_set():
        item = f"item-{attempted}"
        attempted += 1
        # WAIT counts replicas that have this connection's writes, so the write and its WAIT
        # must share a connection: one pipeline holds both.
        pipe = primary.pipeline(transaction=False)
        if mode == "bf":
            pipe.execute_command("BF.ADD", key, item)
        else:
            pipe.execute_command("SET", f"{key}:{item}", "1")
        pipe.execute_command("WAIT", 1, 100)
        try:
            _, replicas = pipe.execute()
        except (redis.exceptions.RedisError, OSError) as error:
            print(f"error {type(error).__name__}", flush=True)
            # During a failover the sentinels still name the dead primary for a few seconds.
            time.sleep(0.05)
            continue
        if replicas >= 1:
            confirmed += 1
            print(f"confirmed {item}", flush=True)
    print(f"done {confirmed} {attempted}", flush=True)


if __name__ == "__main__":
    main()
