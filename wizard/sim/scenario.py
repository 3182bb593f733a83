"""Fault scenarios for the stand-in tools: fail the first N calls, prompt and wait, hang, flood,
emit broken bytes, hold a lock, fail a DKMS build, leave nouveau loaded, ignore a reboot.

A scenario is scenario.json in the sandbox::

    {"rules": [{"tool": "apt-get", "match": "install", "times": 3, "exit": 100,
                "output": "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by ..."}],
     "dkms_fails": false, "nouveau_stays": false, "reboot_does_nothing": false,
     "mok_enrolled_at_console": true, "mok_console_password_sha256": "<hex>", "password_echo": "off",
     "dpkg_lock": {"holder": "4750 (unattended-upgr)", "calls": 1, "wait_s": 0.2},
     "cloud_init_ends": "done"}

A rule applies to calls of ``tool`` whose arguments contain ``match``, for the first ``times``
calls (all when absent). It may change sandbox files (``write_file`` {path: content},
``remove_file`` [paths]), print ``output`` (or ``raw`` bytes, ``flood_mb`` megabytes of lines),
show a ``prompt`` and read a line, ``sleep_s``, wait until the sandbox path ``wait_for``
exists, kill itself with ``signal``; with ``exit`` it ends there, otherwise the tool's normal
simulated behaviour follows.

``dpkg_lock``: another package manager holds the dpkg lock during the first ``calls`` package
changes; apt-get waits ``wait_s`` for it when given ``DPkg::Lock::Timeout``, else fails as apt
does. ``cloud_init_ends``: what ``cloud-init status --wait`` ends in (done, degraded, error).
``boot_id_hidden``: /proc/sys/kernel/random/boot_id cannot be read (a container, EACCES); a
sandbox given a /proc/stat gets a later ``btime`` at every reboot, the signal that stands in.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rule:
    tool: str
    match: str = ""
    times: int | None = None
    write_file: dict[str, str] = field(default_factory=dict)
    """Sandbox paths to write before anything else, e.g. a kernel that appears mid-install."""
    remove_file: tuple[str, ...] = ()
    output: str = ""
    raw: str = ""
    """Bytes to write, given as a latin-1 string ("\\xff\\xfe")."""
    flood_mb: int = 0
    prompt: str = ""
    sleep_s: float = 0
    wait_for: str = ""
    """A sandbox path the call waits for before anything else: a test holds a step running
    for as long as it needs, and lets it go by creating the file."""
    signal: int | None = None
    exit: int | None = None
    ahead: bool = False
    """For the fetching-ahead process's calls (runner/prefetch.py) only; other rules are for the
    steps' calls only, so a rule written for a step's uv never holds up its prefetch."""

    @property
    def key(self) -> str:
        return f"{self.tool}:{self.match}"


@dataclass(frozen=True)
class Scenario:
    rules: tuple[Rule, ...] = ()
    flags: dict[str, Any] = field(default_factory=dict)

    def flag(self, name: str, default: bool = False) -> bool:
        return bool(self.flags.get(name, default))


def parse_scenario(data: dict[str, Any]) -> Scenario:
    rules = tuple(
        Rule(**{**rule, "remove_file": tuple(rule.get("remove_file", ()))})
        for rule in data.get("rules", ())
    )
    flags = {k: v for k, v in data.items() if k != "rules"}
    return Scenario(rules, flags)


def matching(
    scenario: Scenario,
    tool: str,
    args: list[str],
    counters: dict[str, int],
    *,
    ahead: bool = False,
) -> Rule | None:
    joined = " ".join(args)
    for rule in scenario.rules:
        if rule.tool != tool or rule.match not in joined or rule.ahead != ahead:
            continue
        if rule.times is not None and counters.get(rule.key, 0) >= rule.times:
            continue
        return rule
    return None


def play(rule: Rule) -> int | None:
    """Act out a rule; returns an exit code to end with, or None to continue normally."""
    out = sys.stdout.buffer
    if rule.output:
        out.write(rule.output.encode() + b"\n")
    if rule.raw:
        out.write(rule.raw.encode("latin-1"))
    out.flush()
    if rule.flood_mb:
        flood(rule.flood_mb)
    if rule.prompt:
        out.write(rule.prompt.encode())
        out.flush()
        sys.stdin.readline()
    if rule.sleep_s:
        time.sleep(rule.sleep_s)
    if rule.signal is not None:
        os.kill(os.getpid(), rule.signal or signal.SIGKILL)
    return rule.exit


def flood(megabytes: int) -> None:
    line = (
        b"Get:1 http://archive.ubuntu.com/ubuntu jammy/main amd64 flood-package 1.0 [123 kB] "
        + b"x" * 100
        + b"\n"
    )
    block = line * (65536 // len(line))
    out = sys.stdout.buffer
    for _ in range(megabytes * 1024 * 1024 // len(block)):
        out.write(block)
    out.flush()
