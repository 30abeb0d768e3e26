"""newsdedup's Scrapy commands (``COMMANDS_MODULE``): a ``crawl`` that checks before it starts and exits
with the run's verdict."""
