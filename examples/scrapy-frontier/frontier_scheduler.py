"""A Scrapy scheduler backed by a sieved crawl frontier (FQ.*): the request queue, the
dupefilter, per-host politeness and the retry of failed pages, shared by every worker and kept
by the server, with nothing lost when a worker dies. Drop-in:

    SCHEDULER = "frontier_scheduler.FrontierScheduler"
    REDIS_URL = "redis://127.0.0.1:6390"
    FRONTIER_KEY = "%(spider)s:frontier"           # the default
    FRONTIER_RESERVE = "0.0001 10000000 LEASE 60000 RETRIES 3 DELAY 0"   # the default

A request is its URL and priority: each one the frontier hands out is parsed by the spider's
`parse`, and acknowledged once that callback has yielded everything (its links are then in the
frontier); a download that fails is given back (FQ.NACK) to be retried after a delay, and dead-
lettered after RETRIES deliveries. A worker killed mid-page leaves its leases to run out: the
page is fetched again by another worker. Requests marked dont_filter are pushed with FORCE.
Scrapy's own RetryMiddleware should be off (RETRY_ENABLED = False): the frontier retries."""

import redis
from scrapy import Request


class FrontierScheduler:
    def __init__(self, server, key, reserve, nack_delay_ms):
        self.server = server
        self.key_template = key
        self.reserve = reserve
        self.nack_delay_ms = nack_delay_ms
        self.spider = None
        self.key = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        server = redis.Redis.from_url(settings.get("REDIS_URL", "redis://127.0.0.1:6390"))
        return cls(
            server,
            settings.get("FRONTIER_KEY", "%(spider)s:frontier"),
            settings.get("FRONTIER_RESERVE", "0.0001 10000000 LEASE 60000 RETRIES 3 DELAY 0"),
            settings.getint("FRONTIER_NACK_DELAY_MS", 1000),
        )

    def open(self, spider):
        self.spider = spider
        self.key = self.key_template % {"spider": spider.name}
        try:
            self.server.execute_command("FQ.RESERVE", self.key, *self.reserve.split())
        except redis.ResponseError as error:
            if "item exists" not in str(error):
                raise

    def close(self, reason):
        self.server.close()

    def enqueue_request(self, request):
        args = ["FQ.PUSH", self.key, "PRIORITY", request.priority]
        if request.dont_filter:
            args.append("FORCE")
        pushed = self.server.execute_command(*args, request.url)
        return pushed[0] == 1

    def next_request(self):
        leased = self.server.execute_command("FQ.POP", self.key)
        if not leased:
            return None
        item_id, url = leased[0]
        return Request(url.decode(), callback=self._parse_then_ack, errback=self._give_back,
                       meta={"frontier_id": item_id}, dont_filter=True)

    def has_pending_requests(self):
        # Items leased by other workers may still bring links: a worker stays while any remain.
        info = self.server.execute_command("FQ.INFO", self.key)
        if not isinstance(info, dict):
            info = dict(zip(info[::2], info[1::2]))
        return info[b"Queued"] + info[b"Leased"] > 0

    def _parse_then_ack(self, response):
        yield from self.spider.parse(response) or ()
        self.server.execute_command("FQ.ACK", self.key, response.meta["frontier_id"])

    def _give_back(self, failure):
        item_id = failure.request.meta["frontier_id"]
        self.server.execute_command("FQ.NACK", self.key, item_id, "DELAY", self.nack_delay_ms)
