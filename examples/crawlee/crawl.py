"""A Crawlee for Python crawl (ParselCrawler) whose only storage is sieved, through Crawlee's own
RedisStorageClient, unchanged: its request queue (in either de-duplication mode: Redis sets, or
a Bloom filter), its dataset (RedisJSON documents) and its key-value store.

    python3 crawl.py crawl --redis-port 6390 --site-port 8000 --pages 100 --dedup bloom
    python3 crawl.py check --redis-port 6390 --site-port 8000 --pages 100 --dedup bloom

`crawl` crawls the site (see site.py) from its home page until the shared queue is finished; run
it in two processes at once and they share the queue. `check` prints one JSON line: the pages the
site served and how often, the dataset's pages, and the queue's figures.
"""

import argparse
import asyncio
import json
import logging
import urllib.request
import warnings

from crawlee import ConcurrencySettings
from crawlee.crawlers import ParselCrawler, ParselCrawlingContext
from crawlee.storage_clients import RedisStorageClient
from crawlee.storage_clients._redis import RedisRequestQueueClient
from crawlee.storages import Dataset, RequestQueue

QUEUE = "site"
DATASET = "pages"


def storage(args):
    warnings.simplefilter("ignore", UserWarning)  # the client's "experimental" notice
    return RedisStorageClient(
        connection_string=f"redis://127.0.0.1:{args.redis_port}",
        queue_dedup_strategy=args.dedup,
    )


async def crawl(args):
    if args.lease_ms:
        # After a crash, a request that a dead process held comes back once its lease ends
        # (Crawlee's default: five minutes); a resumed crawl need not wait that long.
        RedisRequestQueueClient._BLOCK_REQUEST_TIME = args.lease_ms
        RedisRequestQueueClient._RECLAIM_INTERVAL = __import__("datetime").timedelta(seconds=1)
    client = storage(args)
    queue = await RequestQueue.open(name=QUEUE, storage_client=client)
    dataset = await Dataset.open(name=DATASET, storage_client=client)
    crawler = ParselCrawler(
        request_manager=queue,
        storage_client=client,
        concurrency_settings=ConcurrencySettings(max_concurrency=4, desired_concurrency=4),
        max_request_retries=10,
        configure_logging=False,
    )

    @crawler.router.default_handler
    async def page(context: ParselCrawlingContext) -> None:
        title = context.selector.css("title::text").get()
        await dataset.push_data({"url": context.request.url, "title": title})
        await context.enqueue_links()

    await crawler.run([f"http://127.0.0.1:{args.site_port}/page/0"])


async def check(args):
    client = storage(args)
    queue = await RequestQueue.open(name=QUEUE, storage_client=client)
    dataset = await Dataset.open(name=DATASET, storage_client=client)
    metadata = await queue.get_metadata()
    items = []
    offset = 0
    while True:
        page = await dataset.get_data(offset=offset, limit=1000)
        items.extend(page.items)
        offset += len(page.items)
        if len(page.items) < 1000:
            break
    with urllib.request.urlopen(f"http://127.0.0.1:{args.site_port}/stats") as reply:
        hits = json.load(reply)
    urls = [item["url"] for item in items]
    summary = {
        "pages": args.pages,
        "fetched": len(hits),
        "fetches": sum(hits.values()),
        "fetched_twice": sorted(path for path, count in hits.items() if count > 1),
        "items": len(items),
        "distinct_items": len(set(urls)),
        "handled": metadata.handled_request_count,
        "pending": metadata.pending_request_count,
        "total": metadata.total_request_count,
        "empty": await queue.is_empty(),
        "finished": await queue.is_finished(),
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["crawl", "check"])
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--site-port", type=int, required=True)
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--dedup", choices=["default", "bloom"], default="default")
    parser.add_argument("--lease-ms", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(crawl(args) if args.action == "crawl" else check(args))
