"""Downloads: local paths, file:// URLs, checksums, retries against a local HTTP server, offline."""

import hashlib
import http.server
import threading
import time
import zipfile

import pytest

from bayesirt.data import download
from bayesirt.io import DataFormatError

PAYLOAD = b"Q1,Q2\n1,2\n" * 1000
SHA = hashlib.sha256(PAYLOAD).hexdigest()


@pytest.fixture
def source(tmp_path):
    p = tmp_path / "src" / "archive.bin"
    p.parent.mkdir()
    p.write_bytes(PAYLOAD)
    return p


def test_local_path_and_file_url(tmp_path, source):
    out = download.fetch(str(source), tmp_path / "a" / "copy.bin")
    assert out["sha256"] == SHA and out["size"] == len(PAYLOAD) and not out["sha256_verified"]
    assert (tmp_path / "a" / "copy.bin").read_bytes() == PAYLOAD
    out = download.fetch(source.as_uri(), tmp_path / "b.bin", sha256=SHA, size=len(PAYLOAD))
    assert out["sha256_verified"] and out["size_verified"] and not out["reused"]
    # already there with the right checksum: kept
    again = download.fetch(source.as_uri(), tmp_path / "b.bin", sha256=SHA)
    assert again["reused"] and again["attempts"] == 0


def test_checksum_and_size_mismatch_leave_nothing(tmp_path, source):
    dest = tmp_path / "out.bin"
    with pytest.raises(download.DownloadError, match="checksum mismatch.*expected sha256 0+"):
        download.fetch(str(source), dest, sha256="0" * 64)
    with pytest.raises(download.DownloadError, match="size mismatch.*expected 5 bytes"):
        download.fetch(str(source), dest, size=5)
    assert list(tmp_path.iterdir()) == [source.parent]  # no dest, no temporary file


def test_missing_local_source_names_dest(tmp_path):
    with pytest.raises(download.DownloadError, match=r"not found; place the file at .*out\.bin"):
        download.fetch(str(tmp_path / "nope.zip"), tmp_path / "out.bin")


def test_offline_fails_fast_naming_url_and_path(tmp_path):
    # .invalid never resolves (RFC 2606): same failure as a machine without network
    url = "https://data.example.invalid/RWAS.zip"
    t0 = time.perf_counter()
    with pytest.raises(download.DownloadError) as err:
        download.fetch(url, tmp_path / "raw" / "RWAS.zip", retries=3, timeout=5)
    assert time.perf_counter() - t0 < 10
    msg = str(err.value)
    assert url in msg and str(tmp_path / "raw" / "RWAS.zip") in msg and "by hand" in msg
    assert not (tmp_path / "raw" / "RWAS.zip").exists()


class _Flaky(http.server.BaseHTTPRequestHandler):
    failures = 0
    served = 0

    def do_GET(self):
        type(self).served += 1
        if type(self).served <= type(self).failures:
            self.send_response(503)
            self.end_headers()
            return
        if self.path == "/missing":
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    handler = type("Handler", (_Flaky,), {"failures": 2, "served": 0})
    httpd = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, handler
    httpd.shutdown()
    httpd.server_close()


def test_retries_transient_http_errors(tmp_path, server):
    httpd, handler = server
    url = f"http://127.0.0.1:{httpd.server_address[1]}/RWAS.zip"
    out = download.fetch(url, tmp_path / "x.bin", sha256=SHA, retries=3, backoff=0.01, timeout=5)
    assert out["attempts"] == 3 and handler.served == 3
    assert (tmp_path / "x.bin").read_bytes() == PAYLOAD


def test_gives_up_after_retries_and_does_not_retry_404(tmp_path, server):
    httpd, handler = server
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    with pytest.raises(download.DownloadError, match=r"after 2 attempt\(s\) \(HTTP 503\)"):
        download.fetch(base + "/a", tmp_path / "a.bin", retries=2, backoff=0.01, timeout=5)
    handler.served = 10  # no more 503s
    with pytest.raises(download.DownloadError, match="HTTP 404"):
        download.fetch(base + "/missing", tmp_path / "m.bin", retries=3, backoff=0.01, timeout=5)
    assert handler.served == 11  # exactly one request for the 404
    assert not (tmp_path / "a.bin").exists() and not (tmp_path / "m.bin").exists()


def test_extract_member_and_truncated_archive(tmp_path):
    archive = tmp_path / "RWAS.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("RWAS/data.csv", PAYLOAD)
        zf.writestr("RWAS/codebook.txt", b"codebook")
    out = download.extract(archive, "RWAS/data.csv", tmp_path / "data.csv")
    assert out["sha256"] == SHA and (tmp_path / "data.csv").read_bytes() == PAYLOAD
    with pytest.raises(
        DataFormatError, match=r"member 'data.csv' not in the archive; did you mean \['RWAS/data.csv'\]"
    ):
        download.extract(archive, "data.csv", tmp_path / "d2.csv")
    truncated = tmp_path / "cut.zip"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(DataFormatError, match=r"cut\.zip: truncated or corrupt zip archive"):
        download.extract(truncated, "RWAS/data.csv", tmp_path / "d3.csv")
    assert not (tmp_path / "d2.csv").exists() and not (tmp_path / "d3.csv").exists()


def test_copy_placed_by_hand_is_used_instead_of_the_url(tmp_path, source):
    url = "https://data.example.invalid/RWAS.zip"
    manual = download.manual_location(url, tmp_path / "manual")
    assert manual == tmp_path / "manual" / "RWAS.zip"
    with pytest.raises(download.DownloadError, match=r"place it at .*manual/RWAS\.zip"):
        download.fetch(url, tmp_path / "download", manual_path=manual, retries=1)
    manual.parent.mkdir()
    manual.write_bytes(PAYLOAD)
    out = download.fetch(url, tmp_path / "download", sha256=SHA, manual_path=manual)
    assert out["sha256_verified"] and out["manual_copy"] == str(manual)
    assert (tmp_path / "download").read_bytes() == PAYLOAD
    with pytest.raises(download.DownloadError, match="checksum mismatch"):
        download.fetch(url, tmp_path / "other", sha256="1" * 64, manual_path=manual)


def test_raw_csv_from_zip_or_plain_file(tmp_path):
    plain = tmp_path / "download"
    plain.write_bytes(PAYLOAD)
    with download.raw_csv(plain, "RWAS/data.csv") as p:
        assert p == plain
    archive = tmp_path / "zipped"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("RWAS/data.csv", PAYLOAD)
    with download.raw_csv(archive, "RWAS/data.csv") as p:
        assert p.read_bytes() == PAYLOAD
        extracted = p
    assert not extracted.exists()  # temporary copy removed
    cut = tmp_path / "cut"
    cut.write_bytes(archive.read_bytes()[:40])
    with pytest.raises(DataFormatError, match="truncated or corrupt zip"):
        with download.raw_csv(cut, "RWAS/data.csv"):
            pass
