"""Check that the built documentation site works when opened from disk (no web server).

    python tools/check_site_links.py [SITE_DIR]      (default: site/, what `make docs` builds)

A browser that opens ``site/index.html`` as a file follows a relative link to exactly the path it
names: a link to a folder (``studies/vibo/``) shows a bare folder listing instead of the page, and
a link to a file that is not there shows an error. Every ``href`` and ``src`` of every HTML page
of the site is resolved the way such a browser does it, and each must name a file of the site.
Links with a scheme (``https:``, ``mailto:``, ``data:``) and links within a page (``#...``) are
not checked, nor ``404.html`` (a server's page for a missing address; from disk it never
shows). Exit status 0 when every link is good, 1 with one line per bad link.
Standard library only; CI runs it after ``mkdocs build --strict`` (.ci/run).
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def links_of(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser.links


def bad_links(site: Path) -> list[str]:
    """One line per link that does not lead to a file of ``site`` when opened from disk."""
    site = site.resolve()
    problems = []
    for page in sorted(site.rglob("*.html")):
        if page == site / "404.html":  # a server's page for a missing address, with absolute links
            continue
        for link in links_of(page):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:  # another site, or a place in this page
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            where = f"{page.relative_to(site)}: {link}"
            if not target.is_relative_to(site):
                problems.append(f"{where} leads outside the site")
            elif target.is_dir():
                problems.append(f"{where} is a folder (from disk: a folder listing, not a page)")
            elif not target.is_file():
                problems.append(f"{where} names no file of the site")
    return problems


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "site")
    if not (site / "index.html").is_file():
        print(f"{site}/index.html not found: build the site first (make docs)", file=sys.stderr)
        return 1
    problems = bad_links(site)
    for line in problems:
        print(line, file=sys.stderr)
    pages = len(list(site.rglob("*.html")))
    print(f"{site}: {pages} pages, {len(problems)} bad link(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
