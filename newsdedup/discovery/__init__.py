"""Finding a portal's article links beyond ``<a href>``: list sources, embedded page data, canonical URLs.

Pure modules the portal spider calls (no Scrapy engine involved; :mod:`.sitemaps` uses Scrapy's sitemap
utilities, plain lxml functions):

- :mod:`.listsources`: the ``[[site.sources]]`` tables of the site file, validated, and the paging of one source;
- :mod:`.payloads`: JSON / JSONP feeds, JSON kept in a page's scripts, links in scripts, RSS/Atom, feed times;
- :mod:`.sitemaps`: sitemaps, sitemap indexes (gzipped too) and the ``Sitemap:`` lines of robots.txt;
- :mod:`.startsources`: a feed, sitemap or JSON Feed given as a plain start URL, recognised by its content;
- :mod:`.canonical`: one article, one URL (mobile host to desktop host, tracking parameters dropped).
"""
