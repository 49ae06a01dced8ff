"""Fetch raw data archives: checksums, retries, atomic writes, and a clear message offline.

``fetch(url, dest)`` accepts an ``http(s)://`` or ``ftp://`` URL, a ``file://`` URL, or a plain
local path (a mirror, or a copy the user downloaded by hand). The bytes go to a temporary file
beside ``dest`` while their SHA-256 is computed; the file is renamed onto ``dest`` only when the
size and checksum match what was expected (when given), so an interrupted or corrupt download
never leaves a file that looks complete. When nothing is known in advance, the checksum and
size of what was fetched are returned so that they can be recorded.

Transient failures (time-outs, connection resets, HTTP 408/429/5xx, a body shorter than its
Content-Length) are retried with exponential back-off. Failures that will not go away by
waiting -- no network (name resolution fails, network unreachable, connection refused), HTTP
4xx, a checksum mismatch -- stop at once, so a machine without network fails in seconds with a
message naming the URL and the path where the file can be placed by hand.

``extract(archive, member, dest)`` copies one member out of a zip archive the same way and
reports a truncated or corrupt archive by name.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

from bayesirt.io import DataFormatError, atomic_path

log = logging.getLogger("bayesirt")

CHUNK = 1 << 20
DEFAULT_TIMEOUT = 30.0


class DownloadError(RuntimeError):
    """A download failed; the message names the URL and where to put the file by hand."""


def sha256_of(path, chunk: int = CHUNK) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def is_remote(url: str) -> bool:
    return urllib.parse.urlsplit(str(url)).scheme.lower() in ("http", "https", "ftp")


def manual_location(url: str, folder) -> Path:
    """Where a copy of ``url`` downloaded by hand is looked for: ``folder/<file name in url>``."""
    name = Path(urllib.parse.urlsplit(str(url)).path).name or "download"
    return Path(folder) / name


def local_source(url: str) -> Path | None:
    """The local path behind a ``file://`` URL or a plain path; None for remote URLs."""
    url = str(url)
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() == "file":
        return Path(urllib.request.url2pathname(parts.path))
    if parts.scheme == "" or len(parts.scheme) == 1:  # plain path (or a Windows drive letter)
        return Path(url)
    return None


def fetch(
    url: str,
    dest,
    sha256: str | None = None,
    size: int | None = None,
    retries: int = 3,
    timeout: float = DEFAULT_TIMEOUT,
    backoff: float = 1.0,
    manual_path=None,
) -> dict:
    """Copy ``url`` to ``dest`` atomically; return ``{"url", "path", "sha256", "size", ...}``.

    ``sha256``/``size``: expected values, checked when given (a mismatch raises DownloadError
    and leaves ``dest`` untouched). ``retries``: attempts for transient failures.
    If ``dest`` already exists with the expected checksum it is kept and reported as reused.
    ``manual_path``: where a user may put a copy downloaded by hand (default ``dest``); when a
    file is there it is used instead of ``url`` (and checked the same way).
    """
    dest = Path(dest)
    manual = Path(manual_path) if manual_path is not None else dest
    if manual != dest and manual.is_file():
        log.info("using %s, placed there by hand, instead of %s", manual, url)
        got_sha, got_size = _copy_verified(lambda: open(manual, "rb"), str(manual), dest, sha256, size, None)
        out = _result(url, dest, got_sha, got_size, sha256, size, attempts=0, reused=False)
        out["manual_copy"] = str(manual)
        return out
    sha256 = sha256.lower() if sha256 else None
    if retries < 1:
        raise ValueError(f"retries must be at least 1, got {retries}")
    if (
        sha256
        and dest.exists()
        and dest.stat().st_size == (size if size is not None else dest.stat().st_size)
        and sha256_of(dest) == sha256
    ):
        log.info("%s already present with the expected sha256; not fetched again", dest)
        return _result(url, dest, sha256, dest.stat().st_size, sha256, size, attempts=0, reused=True)

    source = local_source(url)
    if source is not None:
        if not source.is_file():
            raise DownloadError(
                f"{url}: local source file not found; place the file at {manual} "
                f"by hand or point the config at an existing copy"
            )
        got_sha, got_size = _copy_verified(lambda: open(source, "rb"), url, dest, sha256, size, None)
        return _result(url, dest, got_sha, got_size, sha256, size, attempts=1, reused=False)

    if not is_remote(url):
        raise DownloadError(f"{url}: unsupported URL scheme; use http(s)://, ftp://, file:// or a path")
    last = None
    for attempt in range(1, retries + 1):
        try:

            def opener():
                req = urllib.request.Request(url, headers={"User-Agent": "bayesirt-download/1"})
                return urllib.request.urlopen(req, timeout=timeout)

            got_sha, got_size = _copy_verified(opener, url, dest, sha256, size, "content-length", manual)
            return _result(url, dest, got_sha, got_size, sha256, size, attempts=attempt, reused=False)
        except _Transient as err:
            last = err
            if attempt < retries:
                wait = backoff * 2 ** (attempt - 1)
                log.warning("download of %s failed (%s); retry %d/%d in %.1f s", url, err, attempt, retries - 1, wait)
                time.sleep(wait)
    raise DownloadError(
        f"could not download {url} after {retries} attempt(s) ({last}); download it "
        f"by hand and place it at {manual}, or point the config at a local copy or mirror"
    )


class _Transient(Exception):
    pass


def _classify(err: BaseException, url: str, dest: Path) -> Exception:
    """Map an exception to _Transient (retry) or DownloadError (stop now)."""
    hint = (
        f"; without network, download it by hand and place it at {dest}, or point the config at a local copy or mirror"
    )
    if isinstance(err, urllib.error.HTTPError):
        if err.code in (408, 429) or 500 <= err.code < 600:
            return _Transient(f"HTTP {err.code}")
        return DownloadError(f"could not download {url}: HTTP {err.code} {err.reason}{hint}")
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(
        reason,
        (
            socket.timeout,
            TimeoutError,
            ConnectionResetError,
            ConnectionAbortedError,
            http.client.IncompleteRead,
            http.client.RemoteDisconnected,
        ),
    ):
        return _Transient(f"{type(reason).__name__}: {reason}")
    # name resolution failed, network unreachable, connection refused, TLS errors: stop now
    return DownloadError(f"could not download {url}: {reason}{hint}")


def _copy_verified(opener, url, dest: Path, sha256, size, length_header, manual=None) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    with atomic_path(dest) as tmp:
        try:
            with opener() as src, open(tmp, "wb") as out:
                announced = None
                if length_header and getattr(src, "headers", None) is not None:
                    value = src.headers.get(length_header)
                    announced = int(value) if value and value.isdigit() else None
                for block in iter(lambda: src.read(CHUNK), b""):
                    h.update(block)
                    out.write(block)
                    n += len(block)
            if announced is not None and n != announced:
                raise _Transient(f"received {n} of {announced} bytes")
        except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
            if isinstance(err, (urllib.error.URLError, http.client.HTTPException)) or is_remote(url):
                raise _classify(err, url, manual if manual is not None else dest) from None
            raise DownloadError(f"could not read {url}: {err}") from None
        digest = h.hexdigest()
        if size is not None and n != int(size):
            raise DownloadError(f"size mismatch for {url}: expected {size} bytes, got {n}; {dest} not written")
        if sha256 and digest != sha256:
            raise DownloadError(
                f"checksum mismatch for {url}: expected sha256 {sha256}, got {digest}; {dest} not written"
            )
    return digest, n


def _result(url, dest, got_sha, got_size, sha256, size, attempts, reused) -> dict:
    return {
        "url": str(url),
        "path": str(dest),
        "sha256": got_sha,
        "size": int(got_size),
        "sha256_verified": sha256 is not None,
        "size_verified": size is not None,
        "attempts": attempts,
        "reused": reused,
    }


def extract(archive, member: str, dest) -> dict:
    """Copy ``member`` out of the zip ``archive`` to ``dest`` atomically; checks the CRC.

    Returns ``{"archive", "member", "path", "sha256", "size"}``. A truncated or corrupt archive,
    or a member that is not in it, raises DataFormatError naming the archive.
    """
    archive, dest = Path(archive), Path(dest)
    if not archive.is_file():
        raise FileNotFoundError(f"{archive}: archive not found")
    try:
        with zipfile.ZipFile(archive) as zf:
            names = zf.namelist()
            if member not in names:
                hits = [n for n in names if n.endswith("/" + member.rsplit("/", 1)[-1])]
                raise DataFormatError(
                    f"{archive}: member '{member}' not in the archive"
                    + (f"; did you mean {hits[:3]}?" if hits else f"; it holds {names[:5]}")
                )
            h = hashlib.sha256()
            n = 0
            with atomic_path(dest) as tmp, zf.open(member) as src, open(tmp, "wb") as out:
                for block in iter(lambda: src.read(CHUNK), b""):
                    h.update(block)
                    out.write(block)
                    n += len(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:
        if isinstance(err, FileNotFoundError) and not archive.exists():
            raise
        raise DataFormatError(
            f"{archive}: truncated or corrupt zip archive ({err}); delete it and fetch it again"
        ) from None
    return {"archive": str(archive), "member": member, "path": str(dest), "sha256": h.hexdigest(), "size": n}


def copy_local(src, dest) -> None:
    """Atomic copy of a local file (used when a config points a data set at a file directly)."""
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)


def source_of(record: dict) -> str:
    """The user's file behind a download record (``fetch``'s result): the copy placed by hand,
    or the configured URL or path."""
    return str(record.get("manual_copy") or record["url"])


@contextmanager
def raw_csv(download, member: str, source=None):
    """Yield the path of the CSV behind a download: ``member`` extracted from a zip archive into
    a temporary file (removed afterwards), or the download itself when it is not a zip.

    ``source``: the user's file (configured URL or path, see ``source_of``). A DataFormatError
    raised in the block, or by the extraction, that names our cached copy or the extracted
    temporary file is re-raised naming ``source`` (with the member of a zip archive) instead,
    so that the message points at the file the user can open and fix; its line and column
    are those of that CSV.
    """
    download = Path(download)
    if not zipfile.is_zipfile(download):
        with open(download, "rb") as fh:
            magic = fh.read(2)
        if download.suffix.lower() == ".zip" or magic == b"PK":
            raise DataFormatError(
                f"{source or download}: truncated or corrupt zip archive; delete {download} and fetch it again"
            )
        with _naming(source, {download: source}):
            yield download
        return
    with tempfile.TemporaryDirectory(dir=download.parent, prefix=".extract-") as tmp:
        target = Path(tmp) / Path(member).name
        inside = f"{source} (member {member})" if source is not None else None
        with _naming(source, {target: inside, download: source}):
            extract(download, member, target)
            yield target


@contextmanager
def _naming(source, names: dict):
    """Re-raise a DataFormatError whose message starts with one of ``names``' paths with that
    path replaced by its name (nothing changes when ``source`` is None)."""
    try:
        yield
    except DataFormatError as err:
        message = str(err)
        for path, name in names.items():
            if source is not None and message.startswith(f"{path}:"):
                raise DataFormatError(f"{name}{message[len(str(path)) :]}") from err
        raise
