"""Runs Scrapy workers with frontier_scheduler.FrontierScheduler over the generated site of
examples/scrapy-redis/site.py, then checks: every page fetched exactly once (the frontier's
push-if-unseen is atomic, so racing workers never fetch a page twice), the frontier drained.

    python3 crawl.py --port 6390 [--workers 2] [--pages 1000]

Prints one JSON line: pages, duplicates, seconds, pages per second, the frontier's memory."""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
SITE = os.path.join(HERE, "..", "scrapy-redis", "site.py")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=6390)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pages", type=int, default=1000)
    args = parser.parse_args()
    server = redis.Redis(port=args.port)
    server.delete("site:frontier", "site:items")
    site = subprocess.Popen([sys.executable, SITE, "0", str(args.pages)],
                            stdout=subprocess.PIPE, text=True)
    try:
        site_port = int(site.stdout.readline())
        server.execute_command("FQ.RESERVE", "site:frontier", 0.0001, 100000, "LEASE", 60000)
        server.execute_command("FQ.PUSH", "site:frontier", f"http://127.0.0.1:{site_port}/p0")
        started = time.monotonic()
        workers = [
            subprocess.Popen([sys.executable, "-m", "scrapy", "runspider", "frontier_spider.py",
                              "-s", f"REDIS_URL=redis://127.0.0.1:{args.port}"], cwd=HERE)
            for _ in range(args.workers)
        ]
        failed = [w.args for w in workers if w.wait() != 0]
        seconds = time.monotonic() - started
    finally:
        site.kill()
    if failed:
        sys.exit(f"a worker failed: {failed}")
    fetched = Counter(json.loads(item)["url"] for item in server.lrange("site:items", 0, -1))
    expected = {f"http://127.0.0.1:{site_port}/p{n}" for n in range(args.pages)}
    duplicates = sum(fetched.values()) - len(fetched)
    info = server.execute_command("FQ.INFO", "site:frontier")
    if not isinstance(info, dict):
        info = dict(zip(info[::2], info[1::2]))
    problems = []
    if set(fetched) != expected:
        problems.append(f"{len(expected - set(fetched))} pages never fetched")
    if duplicates:
        problems.append(f"{duplicates} pages fetched twice")
    if info[b"Queued"] or info[b"Leased"] or info[b"Dead"]:
        problems.append(f"the frontier is not drained: {info}")
    print(json.dumps({
        "workers": args.workers,
        "pages": len(fetched),
        "duplicates": duplicates,
        "seconds": round(seconds, 2),
        "pages_per_second": round(len(fetched) / seconds, 1),
        "done": info[b"Done"],
        "frontier_bytes": info[b"Memory"],
    }))
    if problems:
        sys.exit("; ".join(problems))


if __name__ == "__main__":
    main()
