"""The simulated archive installs the release of each driver branch that the compatibility table
names as its newest there, so a simulated setup installs what the Choose view promised (issue 31:
the Machine view showed 580.95.05 after Choose had named 580.178.04)."""

from __future__ import annotations

from gpuwizard.recommend.table import load_table
from gpuwizard.sim.effects import ARCHIVE_VERSIONS, DRIVER_VERSIONS, driver_release, version_for

TABLE = load_table()


def test_each_simulated_branch_installs_the_tables_newest_release() -> None:
    latest = {d.branch: d.latest for d in TABLE.drivers if d.installable}
    assert {branch: latest.get(branch) for branch in DRIVER_VERSIONS} == DRIVER_VERSIONS


def test_an_archive_with_its_own_newest_release_installs_that_one() -> None:
    own = {
        o.codename: dict(o.driver_versions) for o in TABLE.operating_systems if o.driver_versions
    }
    assert own == ARCHIVE_VERSIONS


def test_what_is_installed_is_what_the_table_promises_on_every_os() -> None:
    for os_row in TABLE.operating_systems:
        for branch in os_row.driver_branches:
            promised = TABLE.newest_driver(TABLE.branch(branch), os_row)  # type: ignore[arg-type]
            assert driver_release(branch, os_row.codename or "") == promised, (
                os_row.id,
                os_row.version,
                branch,
            )


def test_a_driver_package_installs_its_branchs_release() -> None:
    assert version_for("nvidia-driver-580-server-open", "jammy") == "580.178.04-0ubuntu1"
    assert (
        version_for("nvidia-open", "bookworm") == "580.178.04-0ubuntu1"
    )  # NVIDIA's, pinned to R580
    assert version_for("nvidia-driver-570-server", "focal") == "570.133.20-0ubuntu1"
