"""Settings of the crawler project: `scrapy crawl site` with near-duplicate dropping on."""

BOT_NAME = "crawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

USER_AGENT = "simhash-index-crawler (Scrapy; set USER_AGENT to name yourself and a contact)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"

# One line per dropped page and a progress line a minute; -s LOG_LEVEL=DEBUG for every request.
LOG_LEVEL = "INFO"
# Error pages (404s) reach the spider, which skips them and counts them in one line at the
# end, rather than a line each from Scrapy's HttpErrorMiddleware.
HTTPERROR_ALLOW_ALL = True

# The pipeline, the log formatter, the progress line and the (opt-in) skip middleware.
ADDONS = {"simhash_index.scrapy.Addon": 100}
# Not settable by an add-on: `scrapy crawl` exits 1 when the index stopped the crawl or nothing was fetched.
COMMANDS_MODULE = "simhash_index.scrapy.commands"
# The index: SIMHASH_DATABASE_URL, from -s or else the environment variable, else sqlite:///simhash.db.
