"""Pages of the offline demo mini-portal, rendered from the package data in ``portal/``.

``portal/stories.toml`` holds the story texts (written for the demo), ``portal/manifest.toml``
the four invented portals and every URL path with its expected outcome, ``portal/templates/``
one HTML look per portal.  ``render_site(base_url, day)`` turns them into the bytes the demo
server sends; ``load_manifest()`` returns the expected outcome as plain data for tests.

The pages imitate real Chinese portals on purpose: navigation, ads, share bars, comment areas
and related-reading blocks (相关阅读, 推荐阅读, 热点新闻, 猜你喜欢, 排行) that quote *other*
articles' headlines and first sentences; one portal is GBK, one sends no charset, one page lies
in its ``<meta charset>``.  Rendering is deterministic: the same day and base URL give the same
bytes, and a day-1 page is identical on day 2 (only list pages grow).
"""

from __future__ import annotations

import html
import json
import re
import tomllib
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from functools import lru_cache
from importlib.resources import files
from string import Template
from typing import Any

__all__ = [
    "ARTICLE_KINDS",
    "DAYS",
    "Page",
    "PageSpec",
    "Portal",
    "Story",
    "load_manifest",
    "page_specs",
    "portals",
    "render_site",
    "robots_txt",
    "stories",
]

# Kinds whose pages are news articles a crawl must store (once per story).
ARTICLE_KINDS = frozenset({"original", "verbatim_reprint", "edited_reprint", "negative"})
_KINDS = ARTICLE_KINDS | {"list", "skip"}
_SKIP_REASONS = frozenset({"javascript_only", "video", "empty", "http_404", "robots_disallowed"})
_CHINA_TIME = timezone(timedelta(hours=8))
DAYS = (1, 2)


@dataclass(frozen=True)
class Portal:
    """One invented portal: where it lives on the server and how its URLs look."""

    id: str
    name: str
    brand: str
    prefix: str
    encoding: str
    content_type: str
    date_format: str
    article_path: str
    follow_path: str
    start_paths: tuple[str, ...]
    remove_selectors: tuple[str, ...]
    disclaimer: str


@dataclass(frozen=True)
class Story:
    """A story text (an original or an edited variant)."""

    id: str
    story: str  # the story it tells (itself for an original)
    topic: str
    title: str
    author: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.paragraphs)

    @property
    def first_sentence(self) -> str:
        first = self.paragraphs[0]
        # Skip a dateline such as "青禾资讯11月22日电 " so snippets read like the portals' own.
        first = re.sub(r"^\S{2,12}\d{1,2}月\d{1,2}日电\s+", "", first)
        end = first.find("。")
        return first[: end + 1] if 0 <= end < 90 else first[:60] + "……"


@dataclass(frozen=True)
class PageSpec:
    """One URL path of the manifest."""

    path: str
    portal: str
    kind: str
    day: int
    title: str
    story: str | None = None
    variant: str | None = None
    of: str | None = None
    published: datetime | None = None
    editor: str = ""
    listed_on: str | None = None
    skip_reason: str | None = None
    template: str = "article"
    declared_charset: str | None = None
    disclaimer: bool = False
    confusable_with: tuple[str, ...] = ()
    negative_reason: str | None = None


@dataclass(frozen=True)
class Page:
    """A rendered 200 response: body bytes, Content-Type and Last-Modified."""

    path: str
    body: bytes
    content_type: str
    last_modified: datetime

    @property
    def last_modified_header(self) -> str:
        return format_datetime(self.last_modified.astimezone(timezone.utc), usegmt=True)


# --------------------------------------------------------------------------- data loading


def _portal_data() -> Any:
    return files("newsdedup.demo") / "portal"


@lru_cache(maxsize=1)
def _manifest_document() -> dict[str, Any]:
    return tomllib.loads((_portal_data() / "manifest.toml").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def stories() -> dict[str, Story]:
    """Every story and variant of ``stories.toml`` by id."""
    document = tomllib.loads((_portal_data() / "stories.toml").read_text(encoding="utf-8"))
    found: dict[str, Story] = {}
    for entry in document["story"]:
        found[entry["id"]] = _story(entry, story=entry["id"], topic=entry["topic"], author=entry["author"])
    for entry in document.get("variant", []):
        base = found[entry["story"]]
        found[entry["id"]] = _story(entry, story=base.id, topic=base.topic, author=base.author)
    return found


def _story(entry: dict[str, Any], *, story: str, topic: str, author: str) -> Story:
    paragraphs = tuple(p.strip() for p in entry["body"].split("\n\n") if p.strip())
    return Story(id=entry["id"], story=story, topic=topic, title=entry["title"], author=author, paragraphs=paragraphs)


@lru_cache(maxsize=1)
def portals() -> dict[str, Portal]:
    """The four demo portals by id."""
    found = {}
    for portal_id, entry in _manifest_document()["portal"].items():
        found[portal_id] = Portal(
            id=portal_id,
            name=entry["name"],
            brand=entry.get("brand", entry["name"]),
            prefix=entry["prefix"],
            encoding=entry["encoding"],
            content_type=entry["content_type"],
            date_format=entry["date_format"],
            article_path=entry["article_path"],
            follow_path=entry["follow_path"],
            start_paths=tuple(entry["start_paths"]),
            remove_selectors=tuple(entry["remove_selectors"]),
            disclaimer=entry.get("disclaimer", ""),
        )
    return found


@lru_cache(maxsize=1)
def page_specs() -> dict[str, PageSpec]:
    """Every URL path of the manifest, validated against the stories and portals."""
    known_stories, known_portals = stories(), portals()
    specs: dict[str, PageSpec] = {}
    for entry in _manifest_document()["page"]:
        path = entry["path"]
        kind = entry["kind"]
        if path in specs or kind not in _KINDS or entry["portal"] not in known_portals:
            raise ValueError(f"manifest.toml: bad page {path!r} (duplicate, kind {kind!r} or portal)")
        story_id = entry.get("story")
        variant = entry.get("variant", story_id)
        if story_id is not None and (story_id not in known_stories or variant not in known_stories):
            raise ValueError(f"manifest.toml: page {path!r} names an unknown story or variant")
        if (kind == "skip") != ("skip_reason" in entry) or entry.get("skip_reason", "javascript_only") not in _SKIP_REASONS:
            raise ValueError(f"manifest.toml: page {path!r}: skip pages, and only they, need a known skip_reason")
        title = entry.get("title") or known_stories[variant].title
        published = entry.get("published")
        specs[path] = PageSpec(
            path=path,
            portal=entry["portal"],
            kind=kind,
            day=entry["day"],
            title=title,
            story=story_id,
            variant=variant,
            of=entry.get("of"),
            published=datetime.strptime(published, "%Y-%m-%d %H:%M").replace(tzinfo=_CHINA_TIME) if published else None,
            editor=entry.get("editor", ""),
            listed_on=entry.get("listed_on"),
            skip_reason=entry.get("skip_reason"),
            template=entry.get("template", "article"),
            declared_charset=entry.get("declared_charset"),
            disclaimer=entry.get("disclaimer", False),
            confusable_with=tuple(entry.get("confusable_with", ())),
            negative_reason=entry.get("negative_reason"),
        )
    for spec in specs.values():
        for other in [spec.of, spec.listed_on, *spec.confusable_with]:
            if other is not None and other not in specs:
                raise ValueError(f"manifest.toml: page {spec.path!r} refers to unknown page {other!r}")
    return specs


def robots_txt() -> bytes:
    """The server's robots.txt."""
    return (_portal_data() / "robots.txt").read_bytes()


def _source_of(spec: PageSpec) -> str:
    """The 来源 line: the portal's own brand, or the outlet a reprint names."""
    origin = page_specs()[spec.of] if spec.of else spec
    return portals()[origin.portal].brand


def _expectation(spec: PageSpec) -> str:
    if spec.kind in ("original", "negative"):
        return "unique"
    if spec.kind in ("verbatim_reprint", "edited_reprint"):
        return "duplicate"
    if spec.kind == "list":
        return "list"
    return "not_fetched" if spec.skip_reason == "robots_disallowed" else "skipped"


def load_manifest() -> dict[str, Any]:
    """The expected outcome of crawling the demo, as plain data (JSON-compatible).

    ``pages`` maps every URL path to its portal, kind, day, story, title, ``expect``
    (``unique | duplicate | skipped | not_fetched | list``) and details; ``by_day`` counts what
    a crawl of that day finds (day 2 = day 1 plus the pages with ``day == 2``).
    """
    all_portals = portals()
    pages: dict[str, Any] = {}
    for spec in page_specs().values():
        portal = all_portals[spec.portal]
        entry: dict[str, Any] = {
            "portal": spec.portal,
            "kind": spec.kind,
            "day": spec.day,
            "title": spec.title,
            "expect": _expectation(spec),
            "encoding": portal.encoding,
            "header_charset": _charset_of(portal.content_type),
            "declared_charset": None if spec.template in ("empty", "missing") else spec.declared_charset or portal.encoding,
        }
        if spec.story is not None:
            entry["story"] = spec.story
            entry["variant"] = spec.variant
        if spec.kind in ARTICLE_KINDS:
            entry["source"] = _source_of(spec)
            entry["published"] = spec.published.isoformat() if spec.published else None
            entry["editor"] = spec.editor
        for key in ("of", "listed_on", "skip_reason", "negative_reason"):
            if getattr(spec, key) is not None:
                entry[key] = getattr(spec, key)
        if spec.confusable_with:
            entry["confusable_with"] = list(spec.confusable_with)
        pages[spec.path] = entry
    return {
        "days": list(DAYS),
        "portals": {
            portal.id: {
                "name": portal.name,
                "prefix": portal.prefix,
                "encoding": portal.encoding,
                "content_type": portal.content_type,
                "article_path": portal.article_path,
                "follow_path": portal.follow_path,
                "start_paths": list(portal.start_paths),
                "remove_selectors": list(portal.remove_selectors),
            }
            for portal in all_portals.values()
        },
        "stories": {
            story.id: {"topic": story.topic, "title": story.title}
            for story in stories().values()
            if story.id == story.story and not story.id.startswith("x-")
        },
        "pages": pages,
        "by_day": {day: _day_summary(pages, day) for day in DAYS},
    }


def _day_summary(pages: dict[str, Any], day: int) -> dict[str, Any]:
    online = {path: page for path, page in pages.items() if page["day"] <= day}
    articles = {path: page for path, page in online.items() if page["kind"] in ARTICLE_KINDS}
    return {
        "article_pages": len(articles),
        "stories": len({page["story"] for page in articles.values()}),
        "unique": sum(page["expect"] == "unique" for page in articles.values()),
        "duplicates": sum(page["expect"] == "duplicate" for page in articles.values()),
        "verbatim_reprints": sum(page["kind"] == "verbatim_reprint" for page in articles.values()),
        "edited_reprints": sum(page["kind"] == "edited_reprint" for page in articles.values()),
        "list_pages": sum(page["kind"] == "list" for page in online.values()),
        "skipped": {path: page["skip_reason"] for path, page in online.items() if page["expect"] == "skipped"},
        "not_fetched": sorted(path for path, page in online.items() if page["expect"] == "not_fetched"),
        "new_article_pages": sorted(path for path, page in articles.items() if page["day"] == day),
    }


def _charset_of(content_type: str) -> str | None:
    match = re.search(r"charset=([\w-]+)", content_type, re.I)
    return match.group(1).lower() if match else None


# --------------------------------------------------------------------------- rendering


@lru_cache(maxsize=None)
def _template(name: str) -> Template:
    return Template((_portal_data() / "templates" / name).read_text(encoding="utf-8"))


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _pick(key: str, candidates: list[PageSpec], count: int) -> list[PageSpec]:
    """A deterministic, page-dependent choice (what a portal's recommender would show)."""
    return sorted(candidates, key=lambda c: zlib.crc32(f"{key}|{c.path}".encode()))[:count]


def _number(key: str, low: int, high: int) -> int:
    return low + zlib.crc32(key.encode()) % (high - low + 1)


_COMMENTS = (
    ("江畔听风", "南岭临江", "希望这样的好事能多一些，实实在在的民生。"),
    ("老街的猫", "南岭云州", "我们那边什么时候也能有？蹲一个后续报道。"),
    ("晨跑的阿杰", "南岭滨海", "数据挺详细的，收藏了，转给家里人看看。"),
    ("用户7730215", "南岭安澜", "说得轻巧，具体落实还得看基层。"),
    ("一叶知秋", "南岭青川", "点赞！记者辛苦了。"),
    ("海边的小鱼", "南岭滨海", "有没有人知道具体怎么申请？求指路。"),
    ("清风徐来", "南岭临江", "看完挺振奋的，家乡越来越好了。"),
    ("老王不是隔壁的", "南岭云州", "理性看待，好事是好事，别一窝蜂。"),
    ("用户5102883", "南岭临江", "楼上说得对，关键在执行。"),
    ("青禾读者", "南岭安澜", "这个标题起得好，内容也扎实。"),
)


def _comments(portal: Portal, spec: PageSpec) -> str:
    picked = sorted(range(len(_COMMENTS)), key=lambda i: zlib.crc32(f"{spec.path}|comment{i}".encode()))[:3]
    rows = []
    for index, choice in enumerate(picked):
        user, place, text = _COMMENTS[choice]
        when = (spec.published or datetime(2026, 11, 16, tzinfo=_CHINA_TIME)) + timedelta(minutes=37 * (index + 1))
        likes = _number(spec.path + user, 0, 480)
        if portal.id == "dongfang":
            rows.append(
                f'      <div class="comment-item"><span class="user">{_esc(user)}</span> <span class="loc">[{place}]</span> '
                f'<span class="time">{when:%m-%d %H:%M}</span><p>{_esc(text)}</p><span class="up">赞({likes})</span></div>'
            )
        else:
            rows.append(
                f'      <div class="tie-item"><div class="tie-author">星河{place}网友 {_esc(user)}</div>'
                f'<div class="tie-bdy">{_esc(text)}</div><div class="tie-operate">顶[{likes}] 踩 回复 {when:%m-%d %H:%M}</div></div>'
            )
    return "\n".join(rows)


class _Renderer:
    """Renders one day of the site for one base URL."""

    def __init__(self, base_url: str, day: int) -> None:
        self.base_url = base_url.rstrip("/")
        self.day = day
        self.specs = page_specs()
        self.portals = portals()
        self.stories = stories()

    # ---- helpers
    def text_of(self, spec: PageSpec) -> Story:
        assert spec.variant is not None
        return self.stories[spec.variant]

    def articles(self, *, day: int, portal: str | None = None, exclude: PageSpec | None = None) -> list[PageSpec]:
        chosen = []
        for spec in self.specs.values():
            if spec.kind not in ARTICLE_KINDS or spec.day > day:
                continue
            if portal is not None and spec.portal != portal:
                continue
            if exclude is not None and (spec.path == exclude.path or spec.story == exclude.story):
                continue
            chosen.append(spec)
        return chosen

    def date_text(self, spec: PageSpec) -> str:
        assert spec.published is not None
        return spec.published.strftime(self.portals[spec.portal].date_format)

    # ---- blocks quoting other articles
    def related(self, spec: PageSpec) -> str:
        portal = self.portals[spec.portal]
        others = _pick(spec.path, self.articles(day=spec.day, portal=spec.portal, exclude=spec), 4)
        rows = []
        for other in others:
            title, snippet = _esc(other.title), _esc(self.text_of(other).first_sentence)
            if portal.id == "dongfang":
                rows.append(
                    f'        <li><a href="{other.path}" target="_blank">{title}</a> <span class="time">'
                    f'{other.published:%m-%d %H:%M}</span><p class="summary">{snippet}</p></li>'
                )
            elif portal.id == "nanling":
                rows.append(f'        <li><a href="{other.path}" target="_blank">{title}</a> <i>{other.published:%Y-%m-%d}</i></li>')
            elif portal.id == "xinghe":
                rows.append(
                    f'      <div class="post_recommend"><a href="{other.path}"><h3 class="post_recommend_title">{title}</h3></a>'
                    f'<p class="post_recommend_info">{snippet}</p><span class="post_recommend_source">{_esc(_source_of(other))}</span> '
                    f'<span class="post_recommend_time">{other.published:%Y-%m-%d %H:%M}</span></div>'
                )
        return "\n".join(rows)

    def hot(self, spec: PageSpec, count: int = 5) -> str:
        others = _pick(spec.path + "#hot", self.articles(day=spec.day, portal=spec.portal, exclude=spec), count)
        rows = []
        for rank, other in enumerate(others, start=1):
            rows.append(f'        <li><span class="num">{rank}</span><a href="{other.path}" target="_blank">{_esc(other.title)}</a></li>')
        return "\n".join(rows)

    def guess(self, spec: PageSpec) -> str:
        """猜你喜欢 / 推荐阅读: headlines and first sentences, from other portals too."""
        candidates = [c for c in self.articles(day=spec.day, exclude=spec) if c.portal != spec.portal]
        rows = []
        for other in _pick(spec.path + "#guess", candidates, 3):
            title, snippet = _esc(other.title), _esc(self.text_of(other).first_sentence)
            rows.append(
                f'      <div class="read-item"><h3><a href="{other.path}" target="_blank">{title}</a></h3>'
                f"<p>{snippet}</p></div>"
            )
        return "\n".join(rows)

    # ---- pages
    def body_html(self, spec: PageSpec) -> str:
        portal = self.portals[spec.portal]
        paragraphs = list(self.text_of(spec).paragraphs)
        if spec.disclaimer:
            paragraphs.append(portal.disclaimer)
        style = ' style="text-indent: 2em;"' if portal.id == "nanling" else ""
        return "\n".join(f"      <p{style}>{_esc(p)}</p>" for p in paragraphs)

    def article(self, spec: PageSpec) -> str:
        portal = self.portals[spec.portal]
        text = self.text_of(spec)
        canonical = self.base_url + spec.path
        headline = spec.title
        suffix = {"dongfang": "_东方快讯网", "nanling": f"--{text.topic}--南岭日报网", "xinghe": "_星河新闻", "qinghe": "-青禾资讯"}
        values = {
            "title_tag": _esc(headline + suffix[portal.id]),
            "headline": _esc(headline),
            "og_title": _esc(headline),
            "canonical": _esc(canonical),
            "description": _esc(text.paragraphs[0][:80]),
            "keywords": _esc(f"{text.topic},{headline.split()[0]}"),
            "iso_time": spec.published.isoformat() if spec.published else "",
            "date_only": f"{spec.published:%Y-%m-%d}" if spec.published else "",
            "ptime": f"{spec.published:%Y-%m-%d %H:%M:%S}" if spec.published else "",
            "date_text": self.date_text(spec),
            "source": _esc(_source_of(spec)),
            "author": _esc(text.author),
            "editor": _esc(spec.editor),
            "channel": _esc(text.topic),
            "body_html": self.body_html(spec),
            "related_html": self.related(spec),
            "hot_html": self.hot(spec),
            "guess_html": self.guess(spec),
            "comments_html": _comments(portal, spec),
            "comment_count": str(_number(spec.path, 3, 900)),
            "comment_join": str(_number(spec.path + "#join", 900, 20000)),
            "declared_charset": spec.declared_charset or portal.encoding,
            "news_id": re.sub(r"\D", "", spec.path)[-10:],
        }
        if portal.id == "qinghe":
            values.update(self.qinghe_extras(spec))
        return _template(f"{portal.id}_article.html").substitute(values)

    def qinghe_extras(self, spec: PageSpec) -> dict[str, str]:
        others = self.articles(day=spec.day, portal=spec.portal, exclude=spec)
        inline = _pick(spec.path + "#inline", others, 2)
        inline_html = '      <p class="related-inline"><strong>【相关阅读】</strong></p>\n' + "\n".join(
            f'      <p><a href="{o.path}" target="_blank">{_esc(o.title)}</a></p>' for o in inline
        )
        following = _pick(spec.path + "#next", others, 1)
        rank = _pick(spec.path + "#rank", self.articles(day=spec.day, exclude=spec), 6)
        rank_html = "\n".join(
            f'        <li><span>{i}</span><a href="{o.path}" target="_blank">{_esc(o.title)}</a></li>' for i, o in enumerate(rank, 1)
        )
        return {
            "inline_related_html": inline_html,
            "next_url": following[0].path if following else "/qinghe/index.htm",
            "next_title": _esc(following[0].title) if following else "返回首页",
            "rank_html": rank_html,
        }

    def video(self, spec: PageSpec) -> str:
        return _template("xinghe_video.html").substitute(
            title_tag=_esc(spec.title + "_星河新闻"),
            og_title=_esc(spec.title),
            canonical=_esc(self.base_url + spec.path),
            headline=_esc(spec.title),
            date_text=self.date_text(spec),
            source="星河新闻",
            video_id=re.sub(r"\W", "", spec.path)[-16:],
            hot_html=self.hot(spec, 8),
            guess_html=self.guess(spec),
        )

    def script_page(self, spec: PageSpec) -> str:
        text = self.text_of(spec)
        state = {
            "article": {
                "id": re.sub(r"\D", "", spec.path)[-8:],
                "title": text.title,
                "time": self.date_text(spec),
                "source": self.portals[spec.portal].brand,
                "content": "".join(f"<p>{_esc(p)}</p>" for p in text.paragraphs),
            }
        }
        state_json = json.dumps(state, ensure_ascii=False).replace("</", "<\\/")
        return _template("dongfang_script.html").substitute(canonical=_esc(self.base_url + spec.path), state_json=state_json)

    def listing(self, spec: PageSpec) -> tuple[str, datetime]:
        portal = self.portals[spec.portal]
        items = [
            s for s in self.specs.values() if s.listed_on == spec.path and s.day <= self.day and s.published is not None
        ]
        items.sort(key=lambda s: (s.published, s.path), reverse=True)
        rows = []
        for item in items:
            title = _esc(item.title)
            when = item.published
            snippet = _esc(self.text_of(item).first_sentence) if item.variant else ""
            topic = self.stories[item.variant].topic if item.variant else "视频"
            if portal.id == "dongfang":
                rows.append(
                    f'    <li><span class="c_chl">[{topic}]</span><a href="{item.path}" target="_blank">{title}</a>'
                    f'<span class="c_time">{when:%m-%d %H:%M}</span></li>'
                )
            elif portal.id == "nanling":
                rows.append(f'      <li><a href="{item.path}" target="_blank">{title}</a> <em>[{when:%Y-%m-%d %H:%M}]</em></li>')
            elif portal.id == "xinghe":
                rows.append(
                    f'    <div class="news_item"><h3><a href="{item.path}">{title}</a></h3>'
                    f'<p class="news_summary">{snippet}</p><span class="time">{when:%m/%d %H:%M}</span></div>'
                )
            else:
                rows.append(
                    f'    <li><h3><a href="{item.path}" target="_blank">{title}</a></h3><p class="summary">{snippet}</p>'
                    f'<span class="time">{when:%Y-%m-%d %H:%M}</span></li>'
                )
        pagination = ""
        if spec.path == "/dongfang/roll/":
            pagination = '<span class="current">1</span> <a href="/dongfang/roll/index_2.html">2</a> <a href="/dongfang/roll/index_2.html">下一页</a>'
        elif spec.path == "/dongfang/roll/index_2.html":
            pagination = '<a href="/dongfang/roll/">上一页</a> <a href="/dongfang/roll/">1</a> <span class="current">2</span>'
        body = _template(f"{portal.id}_list.html").substitute(
            title=_esc(spec.title),
            canonical=_esc(self.base_url + spec.path),
            items_html="\n".join(rows),
            pagination_html=pagination,
        )
        newest = max((item.published for item in items), default=datetime(2026, 11, 16, tzinfo=_CHINA_TIME))
        return body, newest

    def render(self) -> dict[str, Page]:
        site: dict[str, Page] = {}
        for spec in self.specs.values():
            if spec.day > self.day or spec.template == "missing":
                continue
            portal = self.portals[spec.portal]
            if spec.kind == "list":
                text, modified = self.listing(spec)
            elif spec.template == "empty":
                text, modified = "", spec.published
            elif spec.template == "video":
                text, modified = self.video(spec), spec.published
            elif spec.template == "script":
                text, modified = self.script_page(spec), spec.published
            else:
                text, modified = self.article(spec), spec.published
            assert modified is not None
            # strict: a character the portal's encoding lacks is a bug in the demo data.
            site[spec.path] = Page(
                path=spec.path,
                body=text.encode(portal.encoding),
                content_type=portal.content_type,
                last_modified=modified,
            )
        return site


def render_site(base_url: str, day: int) -> dict[str, Page]:
    """Every page online on ``day`` (1 or 2), keyed by URL path, with links and canonical
    URLs under ``base_url`` (``http://127.0.0.1:PORT``)."""
    if day not in DAYS:
        raise ValueError(f"day must be one of {DAYS}, got {day!r}")
    if not re.fullmatch(r"https?://[^/\s]+", base_url.rstrip("/")):
        raise ValueError(f"base_url must be scheme://host[:port] without a path, got {base_url!r}")
    return _Renderer(base_url, day).render()
