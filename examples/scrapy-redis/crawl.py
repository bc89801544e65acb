"""Runs a Scrapy-Redis crawl of the generated site with several worker processes sharing one
Redis-protocol server, then checks what a crawl must give: every page fetched exactly once, the
request queue drained, the dupefilter's bits set.

    python3 crawl.py --port 6390 [--workers 3] [--pages 300]

Prints one JSON line: pages, seconds, pages per second, and the server's command counts
(INFO commandstats), which list every command the crawl sent, and those that failed."""

import argparse
import json
import os
import subprocess
import sys
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6390)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()

    server = redis.Redis(host=args.host, port=args.port)
    server.delete("site:start_urls", "site:requests", "site:bloomfilter", "site:items", "site:stats")
    server.config_resetstat()

    site = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "site.py"), "0", str(args.pages)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        site_port = int(site.stdout.readline())
        server.lpush("site:start_urls", json.dumps({"url": f"http://127.0.0.1:{site_port}/p0"}))
        started = time.monotonic()
        redis_url = f"redis://{args.host}:{args.port}"
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "scrapy", "runspider", "site_spider.py",
                 "-s", f"REDIS_URL={redis_url}"],
                cwd=HERE,
            )
            for _ in range(args.workers)
        ]
        failed = [w.args for w in workers if w.wait() != 0]
        seconds = time.monotonic() - started
    finally:
        site.kill()
    if failed:
        sys.exit(f"a worker failed: {failed}")

    fetched = [json.loads(item)["url"] for item in server.lrange("site:items", 0, -1)]
    expected = {f"http://127.0.0.1:{site_port}/p{n}" for n in range(args.pages)}
    problems = []
    if set(fetched) != expected:
        problems.append(f"{len(expected - set(fetched))} pages never fetched")
    # Scrapy never filters a start request, nor records it in the dupefilter, so the start page is
    # fetched once more when a link leads back to it; every other page exactly once.
    start = f"http://127.0.0.1:{site_port}/p0"
    twice = [url for url in set(fetched) if fetched.count(url) > (2 if url == start else 1)]
    if twice:
        problems.append(f"{len(twice)} pages fetched more than once: {sorted(twice)[:5]}")
    if server.exists("site:requests"):
        problems.append(f"{server.zcard('site:requests')} requests left in the queue")
    if server.bitcount("site:bloomfilter") == 0:
        problems.append("the dupefilter has no bits set")
    stats = server.info("commandstats")
    # Redis 7 names subcommands `container|sub`; the command is what tells what the crawl needs.
    commands, failed = {}, {}
    for name, value in stats.items():
        command = name[len("cmdstat_"):].split("|")[0]
        commands[command] = commands.get(command, 0) + value["calls"]
        if value.get("failed_calls"):
            failed[command] = failed.get(command, 0) + value["failed_calls"]
    print(json.dumps({
        "pages": len(fetched),
        "seconds": round(seconds, 2),
        "pages_per_second": round(len(fetched) / seconds, 1),
        "dupefilter_bytes": server.strlen("site:bloomfilter"),
        "commands": commands,
        "failed": failed,
    }))
    if problems:
        sys.exit("; ".join(problems))


if __name__ == "__main__":
    main()
