"""The defaults of every ``NEWSDEDUP_*`` setting, written here and nowhere else.

This module is below Scrapy, like Scrapy's own ``default_settings.py``: it imports nothing, and the algorithms
(:mod:`newsdedup.dedup`, :mod:`newsdedup.extract`, :mod:`newsdedup.storage`) take their parameters' defaults from it
without knowing the Scrapy project. The Scrapy settings module (:mod:`newsdedup.settings`) includes it, the command
line's options read it, and docs/settings.md's reference table is generated from it
(``python docs/hooks/regions.py`` after a change; the tests fail while it is stale): a ``# -- Heading --`` line starts
a group, and the comment lines directly above a setting (and one beside it) are its description, so write them for
the user who sets it.
"""

# -- Storage --

# Where articles go: `sqlite:///relative.sqlite`, `sqlite:////abs/path.sqlite` or
# `postgresql://user:password@host:5432/dbname` (the `postgres` extra).
NEWSDEDUP_STORAGE_URI = "sqlite:///newsdedup.sqlite"
# Records per transaction; a killed crawl loses at most this open batch, whose pages are fetched again next run.
NEWSDEDUP_STORAGE_BATCH_SIZE = 100
# Seconds a commit waits for another process's write lock on the database before the attempt fails.
NEWSDEDUP_STORAGE_BUSY_TIMEOUT = 30.0
# Further commit attempts (1 s, 2 s, 4 s apart) before the records count as not saved (exit status 4).
NEWSDEDUP_STORAGE_RETRIES = 3

# -- Alerts --

# A watches file (TOML `[[watch]]` tables, see *Monitoring desk*): when the crawl closes, each watch's new matches are
# sent through its Apprise URLs, as `newsdedup alerts --watches FILE` sends them (the `serve` extra). `None`: no alerts.
NEWSDEDUP_ALERTS = None
# The desk's address (`http://desk.example:8321`) for the links in alerts; `None`: the origin page's URL.
NEWSDEDUP_DESK_URL = None

# -- Distributed crawl --

# A distributed crawl's Redis (`redis://:password@host:6379/0`, the `redis` extra): every process with the same
# Redis and store is a worker of one crawl (see *Running on several machines*). `None`: one machine.
NEWSDEDUP_REDIS_URL = None
# Prefix of the crawl's Redis keys: two deployments can share one Redis under different prefixes.
NEWSDEDUP_REDIS_PREFIX = "newsdedup"
# Seconds a distributed crawl's process goes on while its Redis cannot be reached (a restart, a failover), then
# stops with exit status 5: the pages it had not handed over are fetched again by the next run.
NEWSDEDUP_REDIS_GIVE_UP_AFTER = 60.0

# -- Extraction --

# Processes for extraction and fingerprinting: `None` is one per core; `0` runs them in the crawl process (no time
# limit, no crash recovery).
NEWSDEDUP_WORKERS = None
# Article bodies shorter than this many characters are skipped as `too_short`.
NEWSDEDUP_EXTRACT_MIN_CHARS = 150
# The same for pages with the shape of an article (headline, a date or source line, the body after it): news
# briefs (快讯) keep bodies this short.
NEWSDEDUP_EXTRACT_BRIEF_CHARS = 40
# Learn each site's template from its pages (kept in the store) and read template failures again.
NEWSDEDUP_EXTRACT_SITE_TEMPLATES = True
# Pages larger than this many bytes are skipped as `too_large`.
NEWSDEDUP_EXTRACT_MAX_BYTES = 5_000_000
# Seconds one page may take in a worker (extraction and fingerprints). A typical portal page takes 20-50 ms and
# a 3.7 MB one about 4 s; past the limit the worker is killed and replaced and the page is skipped as
# `timeout` (tried again on later runs). `None`: no limit. Needs `NEWSDEDUP_WORKERS` >= 1.
NEWSDEDUP_EXTRACT_TIMEOUT = 10.0

# -- Retries and run health --

# Attempts in all for a page skipped for a transient reason (`empty`, `too_short`, `malformed`, `error`,
# `timeout`, `crashed`) or that failed to download (5xx, over-size, redirect loop, network error).
NEWSDEDUP_RETRY_MAX_ATTEMPTS = 4
# Seconds before the second attempt; each further one waits twice as long (30 min, 1 h, 2 h).
NEWSDEDUP_RETRY_BACKOFF = 1800.0
# A site whose share of failed requests (after Scrapy's own retries) exceeds this fails the run (exit status 6):
# a portal that blocks the crawler (403/429) or is down fails most of them; a few dead links are normal.
NEWSDEDUP_MAX_HTTP_ERROR_SHARE = 0.2

# -- Filters and retention --

# False-positive bound of the filter of article URLs fetched in earlier runs (fewer than one new article in a
# million is wrongly skipped).
NEWSDEDUP_URLFILTER_ERROR_RATE = 1e-7
# Stories with no copy fetched for this many days leave the URL filter, the exact filter and the near-duplicate
# index (rows stay in the database): memory and start-up follow the window. `0` keeps everything.
NEWSDEDUP_RETENTION_DAYS = 30
# Folder where the exact filter, the SpotSigs near-duplicate index, the passage-reuse index and the URL filter persist
# between crawls, so a start opens them in seconds instead of rebuilding them from the store (docs/how-it-works.md). `auto`: beside a
# SQLite file (`<file>.state`), for PostgreSQL in this machine's cache (`~/.cache/newsdedup/state/<host>-<port>-<db>`);
# `none`: rebuild at every start. Each file is checked against its checksum when opened (a damaged one is named in a
# warning and its part rebuilt from the store); one process writes the folder at a time (its `lock` file).
NEWSDEDUP_STATE_DIR = "auto"
# False-positive bound of the exact-text Bloom filter (a false positive costs one lookup in the store, never an
# article).
NEWSDEDUP_EXACT_BLOOM_ERROR_RATE = 1e-3

# -- Passage reuse --

# Record which earlier stories a page quotes or repeats a passage of (80 characters or more; the page keeps its own
# story): `newsdedup export`'s `reuses`, the report's "quoted by". See *How it works*.
NEWSDEDUP_REUSE = True

# -- Near-duplicate method and text --

# `spotsigs`, `simhash`, `hybrid` (SpotSigs, else the nearest Simhash), `esimhash` (entropy-weighted 128-bit
# Simhash) or `dwdcs` (key concepts of a concept network). See *How it works* for why SpotSigs is the default.
NEWSDEDUP_NEAR_METHOD = "spotsigs"
# Word segmenter: `jieba`, `rjieba` (the same segmentation, faster) or `auto` (rjieba when it is importable and no
# user dictionary is given, else jieba).
NEWSDEDUP_SEGMENTER = "auto"
# A jieba user dictionary file. `None`: jieba's own.
NEWSDEDUP_SEGMENTER_USER_DICT = None
# A stopword file, one word a line. `None`: the shipped list.
NEWSDEDUP_STOPWORDS = None

# -- Simhash --

# Fingerprint bits: `64` or `128`.
NEWSDEDUP_SIMHASH_BITS = 64
# `words` (jieba words minus stopwords, TF-IDF weights), `word_shingles` or `chars`.
NEWSDEDUP_SIMHASH_FEATURES = "words"
# Hamming distance at or under which two fingerprints match.
NEWSDEDUP_SIMHASH_MAX_DISTANCE = 3

# -- SpotSigs --

# Antecedent list: `basic`, `optimized` (basic and optimized) or a file (`newsdedup antecedents` learns one).
NEWSDEDUP_SPOTSIGS_ANTECEDENTS = "optimized"
# SpotSigs chain length n.
NEWSDEDUP_SPOTSIGS_CHAIN = 1
# SpotSigs spot distance d.
NEWSDEDUP_SPOTSIGS_DISTANCE = 1
# Multiset Jaccard at or over which two documents match; tuned on the tune half of the reprint benchmark
# (`newsdedup eval`).
NEWSDEDUP_SPOTSIGS_TAU = 0.5
# Texts with fewer spots (script-only pages, bare headlines) are neither indexed nor matched, by any method that
# uses spots.
NEWSDEDUP_SPOTSIGS_MIN_SIGNATURES = 5
# When no centre reaches tau, match a centre whose spots contain this share of the smaller text's spots (short
# versions, copies with text added); tuned likewise. `None` switches the containment fallback off (also
# `newsdedup dedup --min-containment none`).
NEWSDEDUP_SPOTSIGS_MIN_CONTAINMENT = 0.8
# The smaller text needs this many spots for a containment match.
NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SPOTS = 10
# A containment match whose smaller text has under this share of the larger one's spots needs the smaller text
# wholly in the larger (99% of its spots): an abridged copy keeps its text verbatim, while an article reusing most
# of a shorter one (a commentary, a page stitched from two reports) does not. `None` (the default) switches the
# rule off. 0.6 merges fewer reuse pairs on the real labelled pairs (test F1 0.914 -> 0.939) but misses short
# versions whose cluster centre is an edited copy: the synthetic text-level F1 falls under its floor (Evaluation).
NEWSDEDUP_SPOTSIGS_CONTAINMENT_WHOLE_BELOW = None
# A containment match needs the shared spots to be at least this share of the longer text's. Under it the longer
# text's own story outweighs what it shares with the shorter one: another article reusing it, not a copy (the
# labelling guideline's test), so the page stays its own story and the passage-reuse stage records what it shares.
# `None` switches the rule off. Chosen on the tune half of the real labelled pairs (Evaluation).
NEWSDEDUP_SPOTSIGS_CONTAINMENT_MIN_SHARE = 0.5

# -- E-Simhash --

# Hamming distance (of 128 bits) at or under which two E-Simhash fingerprints match.
NEWSDEDUP_ESIMHASH_MAX_DISTANCE = 10
# Word weights above this are cut to it (the paper's W_t).
NEWSDEDUP_ESIMHASH_WEIGHT_CAP = 90.0
# Word pairs kept for neighbour entropy (about 100 bytes each); the rarest are dropped beyond it.
NEWSDEDUP_ESIMHASH_MAX_BIGRAMS = 2_000_000

# -- DWDCS --

# Key concepts per document (the paper's p).
NEWSDEDUP_DWDCS_KEY_CONCEPTS = 20
# Highest-degree concepts scored by their contribution to the average shortest path (the paper's l).
NEWSDEDUP_DWDCS_HUB_CANDIDATES = 30
# A concept is a network node when it occurs at least this often.
NEWSDEDUP_DWDCS_MIN_FREQUENCY = 2
# Phrases whose token overlap exceeds this merge into one concept (Rel_thr).
NEWSDEDUP_DWDCS_MERGE_THRESHOLD = 0.6
# At most this many network nodes, the most frequent (bounds the cost of very long texts).
NEWSDEDUP_DWDCS_MAX_NODES = 400
# A synonym file, one set a line (HIT Cilin's `Aa01A01= 词 词` format works). `None`: none is bundled.
NEWSDEDUP_DWDCS_SYNONYMS = None
# Cosine of key-concept vectors over which two documents may match (Sim_thr).
NEWSDEDUP_DWDCS_COSINE = 0.9
# ...and the mean variance of their key concepts' relative position differences must stay under this (S_thr).
NEWSDEDUP_DWDCS_MAX_VARIANCE = 0.01
# Documents with fewer key concepts are neither indexed nor matched.
NEWSDEDUP_DWDCS_MIN_KEY_CONCEPTS = 5
