"""tools/check_site_links.py: a built site's links each name a file, as a browser opening the
site from disk needs (CI runs the tool over the real build after `mkdocs build --strict`)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_site_links", ROOT / "tools" / "check_site_links.py")
check_site_links = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_site_links)


def test_links_to_folders_and_missing_files_are_named(tmp_path):
    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "vibo.html").write_text('<a href="../index.html#top">home</a><img src="../logo.png">')
    (tmp_path / "logo.png").write_bytes(b"png")
    (tmp_path / "index.html").write_text(
        '<a href="studies/">a folder</a> <a href="studies/vibo.html">a page</a> <a href="gone.html">gone</a>'
        ' <a href="https://example.org/x/">elsewhere</a> <a href="#section">here</a>'
        ' <script src="assets/app.js"></script> <a href="../../outside.html">out</a>'
    )
    (tmp_path / "404.html").write_text('<a href="/studies/vibo.html">absolute, for a server</a>')
    problems = check_site_links.bad_links(tmp_path)
    assert problems == [
        "index.html: studies/ is a folder (from disk: a folder listing, not a page)",
        "index.html: gone.html names no file of the site",
        "index.html: assets/app.js names no file of the site",
        "index.html: ../../outside.html leads outside the site",
    ]
    assert check_site_links.main([str(tmp_path)]) == 1
    (tmp_path / "index.html").write_text('<a href="studies/vibo.html">a page</a>')
    assert check_site_links.main([str(tmp_path)]) == 0
