"""The Machine view's table and the sizing findings from this real machine's facts (no
simulation): on a machine without a GPU the TUI simulates one, so the view is drawn here from
the real facts directly, as the TUI would on a GPU server."""

from __future__ import annotations

from rich.console import Console

from gpuwizard.core.machine_words import disk_words, nic_words
from gpuwizard.machine.detect import detect_host, local_host
from gpuwizard.recommend.os_support import load_os_support
from gpuwizard.recommend.sizing import assess
from gpuwizard.screens.machine import findings_table, host_table


def test_the_machine_view_draws_this_machines_facts() -> None:
    facts = detect_host(local_host())
    console = Console(width=100, record=True)
    console.print(host_table(facts))
    console.print(findings_table(assess(facts, load_os_support())))
    text = console.export_text()
    for row in ("OS", "Driver", "Disks", "Network", "Python"):
        assert f"\n{row}" in "\n" + text
    for disk in facts.hardware.disks:
        assert disk_words(disk) in " ".join(text.split())
        assert disk.kind != "hdd" or disk.model, "an HDD only with a real device's model"
    for nic in facts.hardware.nics:
        assert nic_words(nic) in " ".join(text.split())
