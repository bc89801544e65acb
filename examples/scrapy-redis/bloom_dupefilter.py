"""scrapy-redis's dupefilter with its fingerprints in a sieved Bloom filter instead of a set or a
client-hashed bitmap: one BF.INSERT per request, which creates the filter if it is missing, tests
and adds in one atomic step on the server, so two workers can never both take the same new request
(the bitmap's six GETBITs and then six SETBITs can). Use it with
`DUPEFILTER_CLASS = "bloom_dupefilter.BloomDupeFilter"`."""

from scrapy_redis.dupefilter import RFPDupeFilter

# Sized for the crawl: a scaling filter that starts at 10^6 fingerprints at a one-in-a-million
# false-positive rate (a false positive drops a new request, so keep it rare).
ERROR_RATE = "0.000001"
CAPACITY = "1000000"


class BloomDupeFilter(RFPDupeFilter):
    def request_seen(self, request):
        # The filter is made with the first fingerprint, whichever worker sends it: reserving it
        # beforehand would race between workers. BF.INSERT answers [1] when the fingerprint was
        # new (and is now added), [0] when seen.
        [added] = self.server.execute_command(
            "BF.INSERT", self.key, "CAPACITY", CAPACITY, "ERROR", ERROR_RATE,
            "ITEMS", self.request_fingerprint(request))
        return added == 0
