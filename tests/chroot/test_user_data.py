"""Quick chroot tier: the exported cloud-init user-data as cloud-init itself reads it.

Every built-in profile's user-data is exported by the real command (``gpuwizard --simulate P
export --format cloud-init``), as a cloud gets it: gzip-compressed. In fresh Debian 12 and 13
roots with Debian's ``cloud-init`` package, cloud-init's own user-data processor (the code that
reads user-data at boot) unpacks each file and must find one ``text/cloud-config`` part equal
to the text; that text passes ``cloud-init schema``. (Neither release's ``schema`` command reads
gzip itself: both decode the file as UTF-8.) Each file is under EC2's 16 KiB.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpuwizard.sim.profiles import list_profiles
from tests.chroot import roots
from tests.chroot.archive import ENV
from tests.chroot.conftest import T4, timed, unavailable
from tests.chroot.machine import ChrootMachine, create_machine, remove_machine
from tests.cli.helpers import gpuwizard
from tests.conftest import profile_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

UNDER_BYTES = 16 * 1024
REFUSED = {
    "t4-debian12-secureboot": "nobody can type at an unattended instance's console",
    "nogpu-ubuntu2204": "no NVIDIA GPU",
}
"""Profiles whose cloud-init export is refused, and why."""
# Runs inside the root with cloud-init's own Python: what each user-data file becomes at boot.
READ_AS_CLOUD_INIT = r"""
import json, sys
from cloudinit import helpers, user_data
result = {}
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        message = user_data.UserDataProcessor(helpers.Paths({})).process(handle.read())
    parts = [p for p in message.walk() if p.get_content_maintype() != "multipart"]
    result[path] = [(p.get_content_type(), p.get_payload(decode=True).decode()) for p in parts]
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """profile -> its exported cloud-init.yaml.gz; the refused ones checked for their reason."""
    home = tmp_path_factory.mktemp("export")
    files = {}
    for profile in (p.name for p in list_profiles()):
        out = home / profile
        done = gpuwizard(home, "--simulate", profile, "export", "--format", "cloud-init", "-o", str(out))  # fmt: skip
        if profile in REFUSED:
            assert done.returncode in (2, 3) and REFUSED[profile] in done.stderr, done.stderr
            continue
        assert done.returncode == 0, done.stderr
        files[profile] = out / "cloud-init.yaml.gz"
        assert "bytes gzip-compressed" in done.stdout, "the summary gives the size"
    return files


@pytest.fixture(scope="module", params=["bookworm", "trixie"])
def with_cloud_init(request, tmp_path_factory) -> ChrootMachine:
    suite: str = request.param
    try:
        archive = roots.tarball(suite)
    except roots.RootUnavailable as error:
        unavailable(str(error))
        raise
    machine = create_machine(tmp_path_factory.mktemp(f"ud-{suite}") / "m", archive, profile_dir(T4))
    with timed(f"{suite}: Debian's cloud-init installed"):
        machine.run(["apt-get", "-q", "update"], env=ENV, check=True)
        machine.run(
            ["apt-get", "-q", "-y", "install", "--no-install-recommends", "cloud-init"],
            env=ENV, check=True, timeout_s=1200,
        )  # fmt: skip
    yield machine
    remove_machine(machine)


def test_every_profile_is_under_16_kib(exported):
    assert set(exported) == {p.name for p in list_profiles()} - set(REFUSED)
    sizes = {profile: path.stat().st_size for profile, path in exported.items()}
    assert all(size < UNDER_BYTES for size in sizes.values()), sizes


def test_cloud_init_reads_each_as_cloud_config_and_its_schema_holds(with_cloud_init, exported):
    machine = with_cloud_init
    machine.path("/srv/ud").mkdir(parents=True)
    inside = {}
    for profile, path in exported.items():
        inside[profile] = f"/srv/ud/{profile}.gz"
        machine.path(inside[profile]).write_bytes(path.read_bytes())
    read = machine.run(["python3", "-c", READ_AS_CLOUD_INIT, *inside.values()], check=True)
    parts = json.loads(read.stdout)
    for profile, path in exported.items():
        text = gzip.decompress(path.read_bytes()).decode()
        assert parts[inside[profile]] == [["text/cloud-config", text]], profile
        machine.path(f"/srv/ud/{profile}.yaml").write_text(text)
        schema = machine.run(["cloud-init", "schema", "--config-file", f"/srv/ud/{profile}.yaml"])
        assert schema.returncode == 0, f"{profile}: {schema.stdout}{schema.stderr}"
        assert "Valid" in schema.stdout, schema.stdout
