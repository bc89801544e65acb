"""scrapy-redis's dupefilter with its fingerprints in a sieved Bloom filter instead of a set or a
client-hashed bitmap: one BF.ADD per request, which tests and adds in one atomic step on the
server, so two workers can never both take the same new request (the bitmap's six GETBITs and then
six SETBITs can). Use it with `DUPEFILTER_CLASS = "bloom_dupefilter.BloomDupeFilter"`."""

from scrapy_redis.dupefilter import RFPDupeFilter

# Sized for the crawl: a scaling filter that starts at 10^6 fingerprints at a one-in-a-million
# false-positive rate (a false positive drops a new request, so keep it rare).
ERROR_RATE = "0.000001"
CAPACITY = "1000000"


class BloomDupeFilter(RFPDupeFilter):
    def __init__(self, server, key, debug=False):
        super().__init__(server, key, debug)
        if not server.exists(key):
            server.execute_command("BF.RESERVE", key, ERROR_RATE, CAPACITY)

    def request_seen(self, request):
        # BF.ADD answers 1 when the fingerprint was new (and is now added), 0 when seen.
        added = self.server.execute_command("BF.ADD", self.key, self.request_fingerprint(request))
        return added == 0
