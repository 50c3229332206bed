"""Scrapy commands (COMMANDS_MODULE = "simhash_index.commands"): `crawl`, with an exit status."""
