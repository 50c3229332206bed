"""Scrapy commands (COMMANDS_MODULE = "simhash_index.scrapy.commands"): `crawl`, with an exit status."""
