"""The login banner: while a setup is unfinished, whoever logs in is told how to go on; once it
is done the banner is gone. Only where login shells read /etc/profile.d."""

from __future__ import annotations

from gpuwizard.core.paths import LOGIN_BANNER

H100 = "h100x8-ubuntu2204-fresh"


def test_the_banner_says_how_to_go_on_until_the_setup_is_done(sim):
    host = sim(H100)
    host.path("/etc/profile.d").mkdir(parents=True)
    assert host.cli("apply", "--yes").returncode == 10
    banner = host.path(LOGIN_BANNER).read_text()
    assert f"the GPU setup {host.journal().run_id} is not finished" in banner
    assert "Run gpuwizard to see where it stands" in banner
    assert host.cli("apply", "--yes").returncode == 0
    assert not host.path(LOGIN_BANNER).exists()


def test_no_banner_where_no_login_shell_would_read_it(sim):
    host = sim(H100)
    assert host.cli("apply", "--yes").returncode == 10
    assert not host.path("/etc/profile.d").exists()
