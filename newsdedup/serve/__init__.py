"""The monitoring desk: ``newsdedup serve``, a read-only web view of a store (``pip install 'newsdedup[serve]'``).

Pages rendered on the server (Jinja2, autoescaped; they work without JavaScript), the same data as JSON under
``/api/``: what spreads now (:func:`newsdedup.serve.desk.now`), one story with its copies, quotations and the diff of
each near copy, each site's record and crawl health, and full-text search. See docs/desk.md.
"""
