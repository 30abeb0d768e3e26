"""Arrival-order hand-off for work that finishes out of order (pure asyncio, no Scrapy)."""

from __future__ import annotations

import asyncio


class InOrder:
    """Hands items to the stateful stages one at a time, in the order they arrived.

    Extraction finishes out of order on several processes; clustering must not depend on which
    worker was faster, so each item takes a ticket on arrival and waits until every earlier
    ticket is finished (stored, dropped or failed) before the dedup stages see it.
    """

    def __init__(self) -> None:
        self._next_ticket = 0
        self._turn = 0
        self._finished: set[int] = set()
        self._waiters: dict[int, asyncio.Future] = {}

    def take(self) -> int:
        ticket = self._next_ticket
        self._next_ticket += 1
        return ticket

    async def wait_turn(self, ticket: int) -> None:
        if ticket == self._turn:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[ticket] = waiter
        await waiter

    def finish(self, ticket: int) -> None:
        self._finished.add(ticket)
        while self._turn in self._finished:
            self._finished.discard(self._turn)
            self._turn += 1
        waiter = self._waiters.pop(self._turn, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
