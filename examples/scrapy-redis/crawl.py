"""Runs a Scrapy-Redis crawl of the generated site with worker processes sharing one
Redis-protocol server, then checks what a crawl must give: every page fetched, the request queue
drained, and, with --exactly-once, no page fetched twice.

    python3 crawl.py --port 6390 [--workers 2] [--pages 2000] [--dupefilter bitmap|bloom]
                     [--exactly-once]

--dupefilter bitmap is scrapy-redis-bloomfilter's (a 2^30-bit string, GETBIT/SETBIT hashed by the
client); bloom is bloom_dupefilter.py (one BF.INSERT per request, on sieved only).

Prints one JSON line: pages, duplicate fetches, seconds, pages per second, commands the server
ran per page, the server's CPU time (when it runs on this machine), the dupefilter's memory, and
the server's command counts (INFO commandstats), with those that failed."""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
DUPEFILTERS = {
    "bitmap": ("scrapy_redis_bloomfilter.dupefilter.RFPDupeFilter", "site:bloomfilter"),
    "bloom": ("bloom_dupefilter.BloomDupeFilter", "site:dupefilter"),
}
KEYS = ["site:start_urls", "site:requests", "site:items", "site:stats"] + [
    key for _, key in DUPEFILTERS.values()
]


def cpu_seconds(server):
    """utime + stime of the server's process, if it runs here."""
    pid = server.info("server").get("process_id")
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command_counts(server):
    # Redis 7 names subcommands `container|sub`; the command is what tells what the crawl needs.
    commands, failed = Counter(), Counter()
    for name, value in server.info("commandstats").items():
        command = name[len("cmdstat_"):].split("|")[0]
        commands[command] += value["calls"]
        failed[command] += value.get("failed_calls", 0)
    return commands, {name: count for name, count in failed.items() if count}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6390)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--dupefilter", choices=sorted(DUPEFILTERS), default="bitmap")
    parser.add_argument("--exactly-once", action="store_true")
    args = parser.parse_args()
    dupefilter_class, dupefilter_key = DUPEFILTERS[args.dupefilter]

    server = redis.Redis(host=args.host, port=args.port)
    server.delete(*KEYS)
    server.config_resetstat()
    cpu_before = cpu_seconds(server)

    site = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "site.py"), "0", str(args.pages)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        site_port = int(site.stdout.readline())
        server.lpush("site:start_urls", json.dumps({"url": f"http://127.0.0.1:{site_port}/p0"}))
        started = time.monotonic()
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "scrapy", "runspider", "site_spider.py",
                 "-s", f"REDIS_URL=redis://{args.host}:{args.port}",
                 "-s", f"DUPEFILTER_CLASS={dupefilter_class}"],
                cwd=HERE,
            )
            for _ in range(args.workers)
        ]
        failed_workers = [w.args for w in workers if w.wait() != 0]
        seconds = time.monotonic() - started
    finally:
        site.kill()
    if failed_workers:
        sys.exit(f"a worker failed: {failed_workers}")

    cpu_after = cpu_seconds(server)
    fetched = Counter(json.loads(item)["url"] for item in server.lrange("site:items", 0, -1))
    expected = {f"http://127.0.0.1:{site_port}/p{n}" for n in range(args.pages)}
    duplicates = sum(fetched.values()) - len(fetched)
    problems = []
    if set(fetched) != expected:
        problems.append(f"{len(expected - set(fetched))} pages never fetched")
    if args.exactly_once and duplicates:
        problems.append(f"{duplicates} pages fetched twice")
    if server.exists("site:requests"):
        problems.append(f"{server.zcard('site:requests')} requests left in the queue")
    if not server.exists(dupefilter_key):
        problems.append("the dupefilter is empty")
    commands, failed = command_counts(server)
    for bookkeeping in ("info", "config"):
        commands.pop(bookkeeping, None)
    print(json.dumps({
        "workers": args.workers,
        "dupefilter": args.dupefilter,
        "pages": len(fetched),
        "duplicates": duplicates,
        "seconds": round(seconds, 2),
        "pages_per_second": round(len(fetched) / seconds, 1),
        "commands_per_page": round(sum(commands.values()) / max(1, len(fetched)), 1),
        "server_cpu_ms_per_page": None if cpu_before is None or cpu_after is None
        else round((cpu_after - cpu_before) * 1000 / max(1, len(fetched)), 3),
        "dupefilter_bytes": server.memory_usage(dupefilter_key),
        "commands": dict(commands),
        "failed": failed,
    }))
    if problems:
        sys.exit("; ".join(problems))


if __name__ == "__main__":
    main()
