"""`newsdedup serve` on a crawled store answers as a user sees it: the Now page lists the reprinted stories, its
script is served from the wheel, and search finds the top story by three characters of its headline.

    python .ci/check_desk.py PORT
"""

import json
import sys
import time
import urllib.parse
import urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(600):  # until it listens
    try:
        now = json.load(urllib.request.urlopen(base + "/api/now", timeout=5))
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("the desk did not answer")
page = urllib.request.urlopen(base + "/").read().decode()
assert now["stories"] and all(s["copies"] >= 1 for s in now["stories"]), now
top = now["stories"][0]
assert top["title"] in page.replace("&#34;", '"'), "the Now page lacks the top story"
assert urllib.request.urlopen(base + "/static/uplot.iife.min.js").status == 200
query = "".join(ch for ch in top["title"] if "\u4e00" <= ch <= "\u9fff")[:3]
found = json.load(urllib.request.urlopen(base + "/api/search?" + urllib.parse.urlencode({"q": query}), timeout=30))
assert found["matches"] >= 1 and any(s["title"] == top["title"] for s in found["stories"]), (query, found)
print(f"the desk shows {len(now['stories'])} reprinted stories; search {query!r} finds {found['matches']}")
