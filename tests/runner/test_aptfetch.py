"""gpuwizard-apt-fetch (wizard/runner/aptfetch.py): apt's URIs and hashes, fetched into apt's cache.

A real HTTP server on 127.0.0.1 serves the packages; apt's own ``--print-uris`` output is taken as
apt prints it (the real command runs in tests/chroot and on this machine in tests/realhost).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwizard.runner import aptfetch
from gpuwizard.runner.aptfetch import Wanted, fetch_all, parse_uris

PRINTED = """\
'http://deb.debian.org/debian/pool/main/c/cowsay/cowsay_3.03%2bdfsg2-8_all.deb' cowsay_3.03+dfsg2-8_all.deb 21372 SHA256:5b16f90ff97871aa0f442087abc1878940d00e310f74190ba854a097545204bf
'http://deb.debian.org/debian/pool/main/libt/x/x_1_amd64.deb' x_1_amd64.deb 9496 MD5Sum:c73f71595c4a2fb6d6384ce8ad6f63c6
Reading package lists...
"""


def test_apt_s_printed_uris_are_read_with_their_sha256():
    cowsay, unsigned = parse_uris(PRINTED)
    assert cowsay == Wanted(
        "http://deb.debian.org/debian/pool/main/c/cowsay/cowsay_3.03%2bdfsg2-8_all.deb",
        "cowsay_3.03+dfsg2-8_all.deb",
        21372,
        "5b16f90ff97871aa0f442087abc1878940d00e310f74190ba854a097545204bf",
    )
    assert unsigned.sha256 is None  # left to apt, never fetched unchecked


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    folder = tmp_path / "mirror"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def package(folder: Path, url: str, name: str, data: bytes, claimed: bytes | None = None) -> Wanted:
    (folder / name).write_bytes(data)
    said = claimed if claimed is not None else data
    return Wanted(f"{url}/{name}", name, len(said), hashlib.sha256(said).hexdigest())


def opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def test_each_file_lands_checked_and_a_second_run_fetches_nothing(served, tmp_path, capsys):
    folder, url = served
    archives = tmp_path / "archives"
    archives.mkdir()
    wanted = [package(folder, url, f"p{i}_1_amd64.deb", bytes([i]) * 5000) for i in range(3)]

    assert fetch_all(wanted, archives, opener()) == 0
    assert sorted(p.name for p in archives.iterdir()) == [w.name for w in wanted]
    assert "3 of 3 files fetched ahead" in capsys.readouterr().out

    for w in wanted:
        (folder / w.name).unlink()  # nothing to download now: the cache must serve
    assert fetch_all(wanted, archives, opener()) == 0
    assert "0 of 3 files fetched ahead" in capsys.readouterr().out


def test_a_file_that_does_not_match_apt_s_index_is_deleted_and_the_run_fails(
    served, tmp_path, capsys
):
    folder, url = served
    archives = tmp_path / "archives"
    archives.mkdir()
    good = package(folder, url, "good_1_all.deb", b"good" * 100)
    bad = package(folder, url, "bad_1_all.deb", b"altered" * 100, claimed=b"honest!" * 100)

    assert fetch_all([bad, good], archives, opener()) == 1

    assert [p.name for p in archives.iterdir()] == ["good_1_all.deb"]  # no partial file either
    assert "bad_1_all.deb: got" in capsys.readouterr().err


def test_a_file_the_mirror_lacks_fails_alone(served, tmp_path):
    folder, url = served
    archives = tmp_path / "archives"
    archives.mkdir()
    here = package(folder, url, "here_1_all.deb", b"x" * 10)
    gone = Wanted(f"{url}/gone_1_all.deb", "gone_1_all.deb", 10, "0" * 64)
    assert fetch_all([gone, here], archives, opener()) == 1
    assert [p.name for p in archives.iterdir()] == ["here_1_all.deb"]


def test_apt_that_cannot_name_a_package_is_one_line_and_exit_1(monkeypatch, tmp_path, capsys):
    def refuse(packages: list[str], recommends: bool) -> list[Wanted]:
        raise aptfetch.AptFetchError(
            "apt cannot name them yet: E: Unable to locate package nvidia-open"
        )

    monkeypatch.setattr(aptfetch, "print_uris", refuse)
    assert aptfetch.main(["--archives", str(tmp_path), "nvidia-open"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unable to locate package nvidia-open" in err
