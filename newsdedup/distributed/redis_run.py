"""What the crawl processes of a distributed crawl share in Redis, apart from scrapy-redis's queue: pure Python.

Several ``scrapy crawl portal`` processes, on any machines, with the same ``NEWSDEDUP_REDIS_URL`` and
``NEWSDEDUP_STORAGE_URI`` are one crawl (docs/distributed.md):

- :class:`RedisRun`: which run the processes are in. The first process to start opens a run; the others join
  it while it lives (its key expires :data:`LIVENESS` seconds after the last process's heartbeat). Per run:
  scrapy-redis's request queue and request filter (so start and list pages are fetched once per run, and again
  next run), each process's heartbeat and whether it is busy (so none stops while another may still add work);
- :class:`ResultStream`: every process extracts and fingerprints its pages and appends the results to one
  Redis stream; one process at a time, the *writer* (the holder of the store's run lock), consumes it in
  stream order through one consumer group and applies exact, near-duplicate and store stages. Single-Pass
  clustering is order dependent; the stream's order is the one order every decision follows, so the result is
  that of a single process reading the stream. An entry is acknowledged (and deleted) only once its records
  are committed: a writer killed mid-batch leaves its entries pending, and the next writer (any other process,
  within a heartbeat) reads them again first, under the same consumer name. The store ignores what was
  already committed (URLs are unique), so nothing is lost and nothing is stored twice;
- the record of requests taken (:meth:`RedisRun.take`, :meth:`RedisRun.finished`, :meth:`RedisRun.requeue_dead`):
  each request a process takes off the run's queue stays recorded under it until its page is published (or the
  request is queued again); a process that stops beating has its record put back on the queue by a live one, so the
  pages it had fetched and not published are fetched again in the same run (docs/distributed.md, "A process that
  dies");
- :class:`VerdictBoard`: the writer's verdict on each analysed page, posted once its records are committed, for
  the process that published the page: that process waits for it, so the item leaving its pipelines (what its
  item pipelines and feed exports get) carries the verdict of the run, as a single process's does;
- :class:`UrlFilter`: article URLs handled for good, one Redis set per UTC day of fetch, kept for the retention
  window: the shared form of the crawl's URL filter. Members are 8-byte BLAKE2 digests of the canonical URL
  (docs/performance.md has the measured memory per URL). ``SADD`` answers "new?" atomically. Redis is a cache: a URL it
  does not know is looked up in the store before it is fetched, so a Redis that lost its data costs time only.

Entries and queued requests are data (JSON, :mod:`newsdedup.distributed.wire`), never pickles: whoever can write to Redis can
disturb the crawl but not run code in its processes. An entry that does not decode is counted, logged and
dropped unread (docs/distributed.md, "Security: what crosses Redis").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone

import redis

from newsdedup.distributed import wire

logger = logging.getLogger(__name__)

# Seconds without a heartbeat after which a process counts as dead (its work no longer keeps the others up,
# and the run ends that long after the last process stopped). Heartbeats come every HEARTBEAT seconds.
LIVENESS = 10.0
HEARTBEAT = 0.5
# A run id starts with the UTC time its first process opened it.
_RUN_TIME = "%Y%m%dT%H%M%S"
# Per-run keys (queue, request filter) outlive the run this long, for a look after a crash, then expire.
RUN_KEYS_TTL = 24 * 3600
# Seconds between two looks for the verdicts a process waits for (one HMGET for all of them): the writer applies
# the stream a batch at a time, every 50 ms when idle.
VERDICT_POLL = 0.05

# Join the live run, or open a new one: atomic, so processes started together agree on one run.
_JOIN = """
local run = redis.call('GET', KEYS[1])
if not run then
    run = ARGV[1]
    redis.call('SET', KEYS[1], run, 'PX', ARGV[2])
end
return run
"""
# A heartbeat: keep the run alive (only the run this process is in), record this process's beat and whether
# it is busy ('1'), idle ('0') or idle holding pages for a site's template ('2'). Returns whether the run's
# marker of this process (KEYS[4], set when it joins, kept by its beats) is still there: 0 when Redis lost its data. Times come from the Redis server, so clocks of different machines do not matter.
_BEAT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZADD', KEYS[2], ms, ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
local kept = redis.call('PEXPIRE', KEYS[4], ARGV[5])
for i = 5, #KEYS do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
return kept
"""
# Live processes (a beat within LIVENESS) other than this one whose flag is ARGV[3].
_OTHERS_BUSY = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[1], ms - tonumber(ARGV[2]), '+inf')
local busy = 0
for _, worker in ipairs(live) do
    if worker ~= ARGV[1] and redis.call('HGET', KEYS[2], worker) == ARGV[3] then busy = busy + 1 end
end
return busy
"""
# Whether every other live process has beaten since ARGV[2] (ms, Redis time). A flag read once can be stale by
# up to a heartbeat: a process that said "idle" may since have taken the last queued request. Only a beat after
# the moment the run first looked done shows it idle with nothing taken (and its counters final).
_OTHERS_BEATEN_SINCE = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, worker in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ms - tonumber(ARGV[3]), ARGV[2])) do
    if worker ~= ARGV[1] then return 0 end
end
return 1
"""
# Leave the run (and forget the requests this process took: what it did not finish, pages held for a template when
# it was stopped, is the stop's cost, counted in its own verdict); the last busy (or holding) process ends it, so the next start opens a new run at once. Idle processes do not
# keep it: they are closing too (nothing queued, nobody busy), and one that died idle (kill -9) would otherwise hold
# the run for LIVENESS seconds, and a start within them would join the finished run and fetch nothing.
_LEAVE = """
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('DEL', KEYS[4])
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, worker in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], ms - tonumber(ARGV[3]), '+inf')) do
    local flag = redis.call('HGET', KEYS[3], worker)
    if flag == '1' or flag == '2' then return 0 end
end
if redis.call('GET', KEYS[1]) == ARGV[2] then redis.call('DEL', KEYS[1]) end
return 1
"""

# Take the first request off the run's queue (scrapy-redis's priority order: lowest score first) into this process's
# record of requests taken and not finished (field: a token, value: "score data"), in one step: a process killed
# right after it leaves the request in the record, where the others find it (_REQUEUE_DEAD).
_TAKE = """
local got = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #got == 0 then return false end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
redis.call('HSET', KEYS[2], ARGV[1], got[2] .. ' ' .. got[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return got[1]
"""
# Every process of the run whose last beat is older than ARGV[1] ms (dead: killed, its machine gone) and that had
# taken requests: they go back on the queue with their priority, for the live processes to fetch in this run.
# Returns {worker, count, worker, count, ...}. The record of a worker is ARGV[3] .. worker (ARGV[2]: TTL in ms).
_REQUEUE_DEAD = """
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local found = {}
for _, worker in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (ms - tonumber(ARGV[1])))) do
    local key = ARGV[3] .. worker
    local taken = redis.call('HGETALL', key)  -- token, value, token, value, ...
    if #taken > 0 then
        for i = 2, #taken, 2 do
            local space = string.find(taken[i], ' ', 1, true)
            redis.call('ZADD', KEYS[2], string.sub(taken[i], 1, space - 1), string.sub(taken[i], space + 1))
        end
        redis.call('PEXPIRE', KEYS[2], ARGV[2])
        redis.call('DEL', key)
        table.insert(found, worker)
        table.insert(found, #taken / 2)
    end
end
return found
"""


def connect(url: str) -> redis.Redis:
    """A client for ``url`` (bytes in and out)."""
    return redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=30, health_check_interval=30)


def worker_name() -> str:
    """This process, as the others see it: host, pid and a random suffix (pids repeat across machines)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class RedisRun:
    """This process's membership of the current run (see module doc)."""

    def __init__(self, client: redis.Redis, prefix: str, *, worker: str | None = None,
                 liveness: float = LIVENESS) -> None:
        self.client = client
        self.prefix = prefix
        self.worker = worker or worker_name()
        self.liveness = liveness
        self.run_id: str | None = None
        self.keep: list[str] = []  # other keys of the run (scrapy-redis's queue and filter) kept alive with it
        self._join = client.register_script(_JOIN)
        self._beat = client.register_script(_BEAT)
        self._others_busy = client.register_script(_OTHERS_BUSY)
        self._others_beaten_since = client.register_script(_OTHERS_BEATEN_SINCE)
        self._leave = client.register_script(_LEAVE)
        self._take = client.register_script(_TAKE)
        self._requeue_dead = client.register_script(_REQUEUE_DEAD)

    @property
    def _run_key(self) -> str:
        return f"{self.prefix}:run"

    def key(self, name: str) -> str:
        """A key of this run (``requests``, ``seen``, ...)."""
        if self.run_id is None:
            raise RuntimeError("join() the run first")
        return f"{self.prefix}:run:{self.run_id}:{name}"

    def join(self) -> tuple[str, bool]:
        """(run id, whether this process opened it)."""
        new = datetime.now(timezone.utc).strftime(_RUN_TIME) + "-" + uuid.uuid4().hex[:6]
        run = self._join(keys=[self._run_key], args=[new, int(self.liveness * 1000)])
        self.run_id = run.decode() if isinstance(run, bytes) else run
        self.client.set(self._kept_key, b"1", px=RUN_KEYS_TTL * 1000)
        self.beat(busy=True)
        return self.run_id, self.run_id == new

    def beat(self, *, busy: bool, holding: bool = False, keep: Iterable[str] = ()) -> bool:
        """The heartbeat: this process is alive (busy, or idle; ``holding``: idle with pages held for a site's
        template); the run and its keys ``keep`` stay. False when the run's keys are gone: Redis lost its data
        since this process joined (restarted empty, flushed), and with it the run's queue, request filter,
        records of taken requests and results not yet applied."""
        flag = "1" if busy else "2" if holding else "0"
        return bool(self._beat(
            keys=[self._run_key, self.key("workers"), self.key("busy"), self._kept_key, *keep],
            args=[self.run_id, self.worker, flag, int(self.liveness * 1000), RUN_KEYS_TTL * 1000],
        ))

    @property
    def _kept_key(self) -> str:
        """This process's marker in the run (each process its own: each must see for itself that Redis lost it)."""
        return self.key(f"kept:{self.worker}")

    def rejoin(self) -> None:
        """After Redis lost the run's keys: the run again under its id (unless another process opened a new run
        meanwhile), so the processes still at work end it together, and this process's marker."""
        self._join(keys=[self._run_key], args=[self.run_id, int(self.liveness * 1000)])
        self.client.set(self._kept_key, b"1", px=RUN_KEYS_TTL * 1000)

    def others_busy(self) -> int:
        """How many other live processes of the run are busy (fetching, extracting, or with work queued)."""
        return int(self._others_busy(keys=[self.key("workers"), self.key("busy")],
                                     args=[self.worker, int(self.liveness * 1000), "1"]))

    def others_holding(self) -> int:
        """How many other live processes of the run are idle holding pages for a site's template."""
        return int(self._others_busy(keys=[self.key("workers"), self.key("busy")],
                                     args=[self.worker, int(self.liveness * 1000), "2"]))

    @property
    def started_at(self) -> datetime:
        """When the run was opened (by whichever process opened it): the same moment for every process, so the
        run's records (``site_runs``) are one run's, not one per process."""
        if self.run_id is None:
            raise RuntimeError("join() the run first")
        return datetime.strptime(self.run_id.split("-", 1)[0], _RUN_TIME).replace(tzinfo=timezone.utc)

    def others_beaten_since(self, since_ms: int) -> bool:
        """Whether every other live process of the run has beaten after ``since_ms`` (see :meth:`now_ms`)."""
        return bool(self._others_beaten_since(keys=[self.key("workers")],
                                              args=[self.worker, since_ms, int(self.liveness * 1000)]))

    def now_ms(self) -> int:
        """The Redis server's clock in ms, the clock heartbeats are recorded in."""
        seconds, micros = self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def leave(self) -> None:
        if self.run_id is not None:
            self._leave(keys=[self._run_key, self.key("workers"), self.key("busy"), self.taken_key()],
                        args=[self.worker, self.run_id, int(self.liveness * 1000)])

    # -- requests taken and not finished ---------------------------------------------------------------------
    # A request taken off the run's queue is recorded under this process until what it gave is safe elsewhere in
    # Redis: its page or failed fetch published to the result stream (ResultStream.publish), or the request queued
    # again (a retry, a redirect). A process that dies (kill -9, its machine lost) leaves its record; the live
    # processes put what is in it back on the queue (requeue_dead), so the pages it had fetched and not published
    # (downloading, being extracted, held for a site's template) are fetched again in the same run, not next run.
    # Requests that end otherwise (a list page, a page robots.txt forbids) stay recorded until the process leaves:
    # after a death they are fetched once more, and what they yield is found in the run's request filter.
    def taken_key(self, worker: str | None = None) -> str:
        return self.key(f"taken:{worker or self.worker}")

    def take(self, queue_key: str, token: str) -> bytes | None:
        """The first request of the queue (its encoded form), recorded as taken under ``token``; None if empty."""
        data = self._take(keys=[queue_key, self.taken_key()], args=[token, RUN_KEYS_TTL * 1000])
        return data or None

    def finished(self, tokens: Iterable[str], pipe=None) -> None:
        """Forget taken requests (on ``pipe``, to go with what made them safe, when given)."""
        tokens = [t for t in tokens if t]
        if tokens:
            (pipe or self.client).hdel(self.taken_key(), *tokens)

    def requeue_dead(self, queue_key: str) -> dict[str, int]:
        """Put the requests of dead processes (no beat for ``liveness`` seconds) back on the queue; per worker,
        how many. Any live process may do it (one script: each request goes back once)."""
        found = self._requeue_dead(keys=[self.key("workers"), queue_key],
                                   args=[int(self.liveness * 1000), RUN_KEYS_TTL * 1000, self.key("taken:")])
        return {worker.decode(): int(count) for worker, count in zip(found[::2], found[1::2])}


class ResultStream:
    """The ordered stream of analysed pages, consumed by one writer at a time (see module doc)."""

    GROUP = "writer"
    CONSUMER = "writer"  # one name for every writer: a new one inherits the entries the last left pending

    def __init__(self, client: redis.Redis, prefix: str, *,
                 on_undecodable: Callable[[bytes, wire.WireError], None] | None = None,
                 on_lost: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.key = f"{prefix}:results"
        self.codec = wire.stream_codec()
        self.on_undecodable = on_undecodable  # told of each entry dropped unread (for the crawl's stats)
        self.on_lost = on_lost  # told when the stream's group is found gone (Redis lost its data)
        self._create_group()

    def _create_group(self) -> None:
        try:
            self.client.xgroup_create(self.key, self.GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def publish(self, entry: object, *, finished: Callable | None = None) -> str:
        """Append ``entry``; its entry id. ``finished(pipe)``: what to do in the same transaction (forget the
        request the entry came from: RedisRun.finished), so a process killed in between leaves one or the other."""
        data = self.codec.dumps(wire.check_entry(entry))
        if finished is None:
            return self.client.xadd(self.key, {b"e": data}).decode()
        with self.client.pipeline() as pipe:
            pipe.xadd(self.key, {b"e": data})
            finished(pipe)
            return pipe.execute()[0].decode()

    def pending(self, count: int) -> list[tuple[bytes, object]]:
        """Entries a writer read but did not acknowledge (its batch was not committed), oldest first."""
        return self._read("0", count)

    def new(self, count: int) -> list[tuple[bytes, object]]:
        """Entries no writer has read yet, in stream order."""
        return self._read(">", count)

    def _read(self, start: str, count: int) -> list[tuple[bytes, object]]:
        try:
            reply = self.client.xreadgroup(self.GROUP, self.CONSUMER, {self.key: start}, count=count)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # The consumer group is gone with the stream's entries (Redis restarted empty, keys deleted): what was
            # published and not applied is lost. The group again, from the stream's start (what the processes
            # published since), and the crawl is told (its verdict: pages not processed).
            logger.error("distributed crawl: the result stream's consumer group is gone (Redis lost its data?): "
                         "the results published and not yet stored are lost; reading the stream from its start")
            self._create_group()
            if self.on_lost is not None:
                self.on_lost("the result stream's consumer group")
            reply = self.client.xreadgroup(self.GROUP, self.CONSUMER, {self.key: start}, count=count)
        entries, undecodable = [], []
        for entry_id, fields in reply[0][1] if reply else []:
            if not fields:
                continue  # deleted after it was read (XDEL): nothing left to apply
            try:
                entries.append((entry_id, wire.check_entry(self.codec.loads(fields.get(b"e", b"")))))
            except wire.WireError as exc:
                # Not an entry a crawl process wrote: dropped now, so no writer reads it again, and never run.
                logger.warning("distributed crawl: dropped stream entry %s, not one of ours: %s",
                               entry_id.decode(), exc)
                undecodable.append(entry_id)
                if self.on_undecodable is not None:
                    self.on_undecodable(entry_id, exc)
        self.done(undecodable)
        return entries

    def done(self, entry_ids: list[bytes]) -> None:
        """The entries' records are committed: acknowledge and delete them (the stream stays small)."""
        if entry_ids:
            with self.client.pipeline() as pipe:
                pipe.xack(self.key, self.GROUP, *entry_ids)
                pipe.xdel(self.key, *entry_ids)
                pipe.execute()

    def __len__(self) -> int:
        """Entries not yet committed by a writer (read or not)."""
        return self.client.xlen(self.key)


class VerdictBoard:
    """The writer's verdicts on analysed pages, for the processes that published them (see module doc).

    One Redis hash per run: field the page's stream entry id, value its verdict (JSON). The writer posts the
    verdicts of a batch after committing its records and before acknowledging its entries (a writer killed in
    between leaves them to the next, which posts them again); the publisher waits for its pages' verdicts
    (:meth:`wait`, one task polling for all of them) and takes each off the board. A verdict nobody takes (its
    publisher died) goes when the run's keys expire.
    """

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = key
        self._waiting: dict[str, asyncio.Future] = {}
        self._poller: asyncio.Task | None = None

    def post(self, verdicts: dict[str, dict]) -> None:
        if not verdicts:
            return
        with self.client.pipeline() as pipe:
            pipe.hset(self.key, mapping={entry_id: json.dumps(v, ensure_ascii=False) for entry_id, v in verdicts.items()})
            pipe.pexpire(self.key, RUN_KEYS_TTL * 1000)
            pipe.execute()

    async def wait(self, entry_id: str) -> dict | None:
        """The verdict on the page published as ``entry_id``; None if :meth:`give_up` came first."""
        future = asyncio.get_running_loop().create_future()
        self._waiting[entry_id] = future
        if self._poller is None or self._poller.done():
            self._poller = asyncio.ensure_future(self._poll())
        return await future

    def waiting(self) -> int:
        return len(self._waiting)

    def give_up(self, verdict: dict | None = None) -> None:
        """Stop waiting: every page still waiting gets ``verdict`` (None: the process stops first)."""
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_result(verdict)

    async def _poll(self) -> None:
        while self._waiting:
            try:
                self._take()
            except Exception:  # noqa: BLE001 - a Redis hiccup: the verdicts stay posted, looked for again
                logger.exception("distributed crawl: cannot read the writer's verdicts; trying again")
                await asyncio.sleep(1.0)
            if self._waiting:
                await asyncio.sleep(VERDICT_POLL)

    def _take(self) -> None:
        entry_ids = list(self._waiting)
        found = {entry_id: value for entry_id, value in zip(entry_ids, self.client.hmget(self.key, entry_ids))
                 if value is not None}
        if not found:
            return
        self.client.hdel(self.key, *found)
        for entry_id, value in found.items():
            future = self._waiting.pop(entry_id, None)
            if future is not None and not future.done():
                future.set_result(json.loads(value))


def url_digest(url_key: str) -> bytes:
    """8 bytes per URL: a collision among 10 million URLs has a chance of about 3 in a million million.

    >>> len(url_digest("http://news.example/a/1.html"))
    8
    """
    return hashlib.blake2b(url_key.encode("utf-8"), digest_size=8).digest()


class UrlFilter:
    """Article URLs handled for good, per UTC day of fetch, kept ``retention_days`` (None: for ever)."""

    def __init__(self, client: redis.Redis, prefix: str, *, retention_days: float | None) -> None:
        self.client = client
        self.prefix = prefix
        self.retention_days = retention_days

    def _day_key(self, day: datetime) -> str:
        return f"{self.prefix}:urls:{day:%Y-%m-%d}" if self.retention_days else f"{self.prefix}:urls:all"

    def _window(self, now: datetime) -> list[str]:
        if not self.retention_days:
            return [self._day_key(now)]
        return [self._day_key(now - timedelta(days=n)) for n in range(int(self.retention_days) + 2)]

    def add(self, url_keys: Iterable[str], *, now: datetime | None = None) -> None:
        """Remember URLs handled for good (after their records are committed)."""
        digests = [url_digest(u) for u in url_keys]
        if not digests:
            return
        key = self._day_key(now or datetime.now(timezone.utc))
        with self.client.pipeline(transaction=False) as pipe:
            pipe.sadd(key, *digests)
            if self.retention_days:
                # Kept a day past the window: a URL leaves when the window no longer covers its day.
                pipe.expire(key, int((self.retention_days + 2) * 86400))
            pipe.execute()

    def __contains__(self, url_key: str) -> bool:
        digest = url_digest(url_key)
        with self.client.pipeline(transaction=False) as pipe:
            for key in self._window(datetime.now(timezone.utc)):
                pipe.sismember(key, digest)
            return any(pipe.execute())

    def keys(self) -> list[str]:
        return sorted(key.decode() for key in self.client.scan_iter(match=f"{self.prefix}:urls:*", count=1000))
