#!/usr/bin/env python3
"""De-duplicate a stream of URLs through sieved, as a crawler's frontier would.

Reads URLs, one per line, on standard input and prints each URL the first time it is seen.
URLs go to the server in batches: one BF.MADD per batch, several batches per pipeline, so a
round trip carries thousands of URLs. BF.MADD answers 1 for an item it had not seen (and adds
it), 0 for one it (probably) had: with a 0.1% error rate, about one new URL in a thousand is
wrongly skipped, and a URL seen before is never printed twice.

    python3 examples/crawler.py --port 6390 < urls.txt > new-urls.txt

Needs redis-py (pip install redis).
"""

import argparse
import sys
from itertools import islice

import redis


def batches(lines, size):
    lines = iter(lines)
    while batch := list(islice(lines, size)):
        yield batch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6390)
    parser.add_argument("--key", default="crawler:seen")
    parser.add_argument("--capacity", type=int, default=10_000_000)
    parser.add_argument("--error-rate", type=float, default=0.001)
    parser.add_argument("--batch", type=int, default=1000, help="URLs per BF.MADD")
    parser.add_argument("--pipeline", type=int, default=8, help="BF.MADDs per round trip")
    args = parser.parse_args()

    r = redis.Redis(host=args.host, port=args.port)
    try:
        r.bf().reserve(args.key, args.error_rate, args.capacity)
    except redis.ResponseError as error:
        if "item exists" not in str(error):
            raise

    urls = (line.strip() for line in sys.stdin)
    seen = new = 0
    for round_trip in batches(batches(filter(None, urls), args.batch), args.pipeline):
        pipe = r.pipeline(transaction=False)
        for batch in round_trip:
            pipe.execute_command("BF.MADD", args.key, *batch)
        for batch, added in zip(round_trip, pipe.execute()):
            for url, is_new in zip(batch, added):
                seen += 1
                if is_new:
                    new += 1
                    print(url)
    print(f"{seen} URLs read, {new} new", file=sys.stderr)


if __name__ == "__main__":
    main()
