"""A stock Scrapy-Redis spider with the scrapy-redis-bloomfilter dupefilter: the crawler as its
users run it today, with nothing changed for sieved but REDIS_URL."""

import json

import scrapy
from scrapy_redis.spiders import RedisSpider


class SiteSpider(RedisSpider):
    name = "site"
    custom_settings = {
        # scrapy-redis-bloomfilter's scheduler and dupefilter: the request queue is a Redis sorted
        # set and the dupefilter a 2^BLOOMFILTER_BIT-bit string driven by GETBIT/SETBIT.
        "SCHEDULER": "scrapy_redis_bloomfilter.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis_bloomfilter.dupefilter.RFPDupeFilter",
        "BLOOMFILTER_BIT": 30,
        "BLOOMFILTER_HASH_NUMBER": 6,
        "SCHEDULER_PERSIST": True,
        # Items and stats in the same server, as scrapy-redis offers.
        "ITEM_PIPELINES": {"scrapy_redis.pipelines.RedisPipeline": 300},
        "STATS_CLASS": "scrapy_redis.stats.RedisStatsCollector",
        # Workers stop once the shared queue has stayed empty this long.
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def make_request_from_data(self, data):
        # A start URL goes through the dupefilter like any link (scrapy-redis's own exempts it),
        # so that a link back to the start page is known as a duplicate.
        return scrapy.Request(json.loads(data)["url"])

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
