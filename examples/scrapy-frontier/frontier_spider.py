"""A plain Scrapy spider of the generated site, its scheduler swapped for the frontier's: the
only change a Scrapy project makes is the SCHEDULER setting (and REDIS_URL)."""

import scrapy


class SiteSpider(scrapy.Spider):
    name = "site"
    custom_settings = {
        "SCHEDULER": "frontier_scheduler.FrontierScheduler",
        "RETRY_ENABLED": False,
        # Every fetched page goes to the list site:items, as scrapy-redis's pipeline does.
        "ITEM_PIPELINES": {"scrapy_redis.pipelines.RedisPipeline": 300},
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
