"""Settings of the crawler project: `scrapy crawl site` with the simhash dedup pipeline on."""

BOT_NAME = "crawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

USER_AGENT = "simhash-index-crawler (+https://pypi.org/project/simhash-index/)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"

ITEM_PIPELINES = {"simhash_index.scrapy.SimhashDedupPipeline": 300}
LOG_FORMATTER = "simhash_index.scrapy.SimhashLogFormatter"

SIMHASH_ENABLED = True
SIMHASH_DATABASE_URL = "sqlite:///simhash.db"
COMMANDS_MODULE = "simhash_index.scrapy.commands"  # `scrapy crawl` exits 1 when the index stopped the crawl
