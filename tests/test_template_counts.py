"""SiteTemplate's counts, boilerplate and sign-off candidates, kept up page by page, equal what its window of pages
gives when counted from scratch, through learning, the window forgetting its oldest pages, forget() and a save and
restore."""

from __future__ import annotations

import random
from collections import Counter

from newsdedup.extract.template import SiteTemplate


def from_scratch(template: SiteTemplate) -> tuple[Counter, Counter, frozenset[int], frozenset[int]]:
    count, outside, inside = Counter(), Counter(), Counter()
    for page_outside, page_body in template._pages:  # noqa: SLF001 - the window is what the counts must equal
        count.update(page_outside)
        count.update(page_body)
        outside.update(page_outside)
        inside.update(page_body)
    least = template.min_pages
    return (count, outside, frozenset(h for h, n in outside.items() if n >= least),
            frozenset(h for h, n in inside.items() if n >= least))


def test_counts_and_boilerplate_follow_the_window_through_learn_forget_and_restore():
    rng = random.Random(13)
    template = SiteTemplate(window=12, min_pages=3)
    learned = []
    for step in range(400):
        lines = set(rng.sample(range(60), rng.randrange(5, 30)))  # a site's template lines recur on many pages
        body = set(rng.sample(sorted(lines), rng.randrange(0, len(lines) // 2 + 1)))
        learned.append(template.learn(lines, body))
        if step % 7 == 3:
            template.forget(learned[rng.randrange(max(0, len(learned) - 15), len(learned))])
        if step % 50 == 49:
            template = SiteTemplate.from_bytes(template.to_bytes())
            learned = list(template._pages)  # noqa: SLF001 - what forget() can still take back
        count, outside, boilerplate, in_bodies = from_scratch(template)
        # As dicts: Counter equality takes a missing key for a zero, and a zero left behind would grow the state.
        assert dict(template._count) == dict(count) and dict(template._outside) == dict(outside)  # noqa: SLF001
        assert template.boilerplate() == boilerplate, step
        assert template.boilerplate() is template.boilerplate()  # made once until it changes
        assert template.sign_offs() == in_bodies, step
        assert template.sign_offs() is template.sign_offs()
