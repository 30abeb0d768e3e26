"""Items finish extraction out of order but reach the dedup stages in arrival order."""

from __future__ import annotations

import asyncio
import random

from newsdedup.crawl.ordering import InOrder


def test_stages_run_in_ticket_order_whatever_the_extraction_order():
    order = InOrder()
    applied: list[int] = []
    rng = random.Random(7)

    async def item(delay: float) -> None:
        ticket = order.take()
        await asyncio.sleep(delay)  # extraction on some worker, finishing whenever
        await order.wait_turn(ticket)
        applied.append(ticket)
        await asyncio.sleep(0)  # the rest of the pipeline chain may yield
        order.finish(ticket)  # item_scraped / item_dropped / item_error

    async def main() -> None:
        await asyncio.gather(*(item(rng.random() / 100) for _ in range(200)))

    asyncio.run(main())
    assert applied == list(range(200))


def test_a_dropped_item_releases_the_next_one():
    order = InOrder()

    async def main() -> list[str]:
        events: list[str] = []
        first, second = order.take(), order.take()

        async def later() -> None:
            await order.wait_turn(second)
            events.append("second")

        task = asyncio.create_task(later())
        await asyncio.sleep(0.01)
        assert events == []  # still waiting for the first
        order.finish(first)  # dropped, e.g. a skipped list page
        await task
        return events

    assert asyncio.run(main()) == ["second"]
