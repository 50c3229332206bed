"""The Scrapy project: the `site` spider with near-duplicate dropping on."""
