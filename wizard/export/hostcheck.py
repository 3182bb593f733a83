"""Is this the kind of host a plan was made for? The facts an export records, and the one rule
that compares them (deploy.sh, the Ansible playbook and answers replay all follow it; a replay
resolves its plan again, so it also takes another number of the same GPUs and a newer point
release of the same OS, docs/decisions.md).

A plan is made from one machine's facts: its NVIDIA GPUs (PCI device ids and count), its OS
(os-release ID and VERSION_ID), its CPU architecture (``uname -m``) and the driver branch
loaded there (``/sys/module/nvidia/version``, "none" without one). Running it on a host that
differs in any of these installs the wrong thing (R580 over a 570 that was not planned for), so
the exports refuse such a host before changing anything, naming each difference, unless forced.
Each fact is read the way a shell can read it too, so deploy.sh checks exactly what is recorded.
Outside the characters os-release allows in an ID (letters, digits, ".", "_", "-"), each byte of
a fact is "?" on both sides (``fact_word``): a hostile os-release or sysfs cannot put a terminal
escape into the script or into the message that names a difference. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gpuwizard.core.facts import HostFacts
from gpuwizard.core.safetext import one_line

NONE = "none"
_FACT_CHARS = re.compile(r"[A-Za-z0-9._-]")


def fact_word(value: str) -> str:
    """A fact as the host check records and shows it: each byte of a character outside
    ``[A-Za-z0-9._-]`` becomes "?", as IDENTITY_SH does under LC_ALL=C."""
    return "".join(
        c if _FACT_CHARS.fullmatch(c) else "?" * len(c.encode("utf-8", "surrogateescape"))
        for c in value
    )


@dataclass(frozen=True)
class HostIdentity:
    gpus: str
    """"<count>x <vendor:device>[+<vendor:device>...]", e.g. "8x 10de:2330"; "none"."""
    os: str
    """os-release ``ID VERSION_ID``, e.g. "ubuntu 22.04"."""
    arch: str
    """``uname -m``: x86_64, aarch64."""
    driver: str
    """The loaded NVIDIA driver's branch ("570"), or "none"."""
    gpu_names: str = ""
    """For messages only: "8x H100 SXM5 80GB"."""


def gpu_ids(facts: HostFacts) -> str:
    """The GPUs as sysfs shows them: NVIDIA display controllers (class 03xxxx) on the PCI bus."""
    found = [
        f"{g.pci.vendor_id}:{g.pci.device_id}"
        for g in facts.hardware.gpus
        if g.pci.class_code.startswith("03")
    ]
    return f"{len(found)}x {'+'.join(sorted(set(found)))}" if found else NONE


def gpu_names(facts: HostFacts) -> str:
    """The GPUs for people: "8x H100 SXM5 80GB", "2x A100 80GB + L40S", "no NVIDIA GPU"."""
    gpus = facts.hardware.gpus
    names = sorted({g.model.name for g in gpus})
    return f"{len(gpus)}x {' + '.join(names)}" if gpus else "no NVIDIA GPU"


def in_words(facts: HostFacts) -> str:
    """The machine in one line, for the exports' headers: "8x H100 SXM5 80GB, Ubuntu 22.04";
    cleaned as for a terminal, since os-release and the PCI names are the machine's words."""
    os = facts.os
    system = (os.pretty_name or f"{os.id} {os.version_id}") if os else "unknown OS"
    return one_line(f"{gpu_names(facts)}, {system}")


def identity(facts: HostFacts) -> HostIdentity:
    version = facts.boot.nvidia_module_version
    os = facts.os
    return HostIdentity(
        gpus=gpu_ids(facts),
        os=f"{fact_word(os.id)} {fact_word(os.version_id or 'unknown')}"
        if os
        else "unknown unknown",
        arch=fact_word(facts.platform.arch),
        driver=fact_word(version.split(".")[0]) if version else NONE,
        gpu_names=gpu_names(facts),
    )


FIELDS = (
    ("gpus", "GPUs"),
    ("os", "OS"),
    ("arch", "CPU architecture"),
    ("driver", "loaded NVIDIA driver branch"),
)
"""The facts compared, in the order differences are named, with their names for people."""


Use = Literal["script", "replay"]
"""Who asks: a script (deploy.sh, the playbook) runs the commands resolved for the recorded host;
a replay (``apply --config``) resolves its plan again on this host."""

POINT_RELEASES = frozenset({"rhel", "rocky", "almalinux", "ol", "centos"})
"""os-release IDs whose VERSION_ID names a point release ("9.4"): a newer one of the same major
release takes the same packages from the same repositories. Debian ("12") and Ubuntu ("22.04",
whose "22.10" is another release) keep one VERSION_ID for all their point releases."""


def host_differences(
    made: HostIdentity, here: HostIdentity, *, gpus: bool = True, use: Use = "script"
) -> list[str]:
    """Each fact where this host differs from the one the plan was made for ("OS: made for
    ubuntu 22.04, this host has debian 12"); empty when it is the same kind of host. A fact not
    recorded ("") is not compared; ``gpus=False`` leaves the GPUs out (WSL: the Windows driver
    shows them, not the PCI bus). A script compares every fact exactly (deploy.sh's
    gw_check_host and the playbook's asserts are rendered from FIELDS); a replay re-resolves, so
    it also takes another number of the same GPUs and a newer point release (``same_for``)."""
    found = []
    for name, label in FIELDS:
        if name == "gpus" and not gpus:
            continue
        before, now = getattr(made, name), getattr(here, name)
        if before and not same_for(use, name, before, now):
            found.append(f"{label}: made for {before}, this host has {now}")
    return found


def same_for(use: Use, name: str, made: str, here: str) -> bool:
    """Whether one recorded fact holds here, for a script (exactly) or a replay."""
    if use == "script" or made == here:
        return made == here
    if name == "gpus":  # the plan is made again for the GPUs found: the models must match
        return _models(made) == _models(here)
    if name == "os":
        return _newer_point_release(made, here)
    return False


def _models(gpus: str) -> str:
    """ "8x 10de:2330" -> "10de:2330"; "none" stays."""
    return gpus.partition("x ")[2] or gpus


def _newer_point_release(made: str, here: str) -> bool:
    """ "rocky 9.4" -> "rocky 9.6": the same major release, a newer point release."""
    made_id, _, made_version = made.partition(" ")
    here_id, _, here_version = here.partition(" ")
    if made_id != here_id or made_id not in POINT_RELEASES:
        return False
    try:
        before = tuple(int(part) for part in made_version.split("."))
        now = tuple(int(part) for part in here_version.split("."))
    except ValueError:
        return False
    return now[:1] == before[:1] and now >= before


IDENTITY_SH = r"""LC_ALL=C  # byte by byte: fact_word's "?" for each byte outside [A-Za-z0-9._-]
gw_count=0 gw_ids='' gw_vendor='' gw_class='' gw_device=''
for gw_dev in "$gw_root"/sys/bus/pci/devices/*; do
  [[ -r $gw_dev/vendor && -r $gw_dev/class && -r $gw_dev/device ]] || continue
  read -r gw_vendor <"$gw_dev/vendor" || true
  read -r gw_class <"$gw_dev/class" || true
  read -r gw_device <"$gw_dev/device" || true
  [[ $gw_vendor == 0x10de && $gw_class == 0x03* ]] || continue
  gw_count=$((gw_count + 1))
  gw_device=${gw_device//[^A-Za-z0-9._-]/?}
  gw_ids+="${gw_vendor#0x}:${gw_device#0x}"$'\n'
done
if ((gw_count > 0)); then
  printf '%sx %s\n' "$gw_count" "$(printf '%s' "$gw_ids" | sort -u | paste -sd+ -)"
else
  printf 'none\n'
fi
gw_os_id=unknown gw_os_version=unknown
if [[ -r $gw_root/etc/os-release ]]; then
  while IFS='=' read -r gw_key gw_value || [[ -n $gw_key ]]; do
    gw_value=${gw_value#[\"\']} && gw_value=${gw_value%[\"\']}
    gw_value=${gw_value//[^A-Za-z0-9._-]/?}
    case $gw_key in
      ID) gw_os_id=$gw_value ;;
      VERSION_ID) gw_os_version=$gw_value ;;
    esac
  done <"$gw_root/etc/os-release"
fi
printf '%s %s\n' "${gw_os_id,,}" "${gw_os_version:-unknown}"
gw_arch=$(uname -m)
printf '%s\n' "${gw_arch//[^A-Za-z0-9._-]/?}"
gw_driver=none
if [[ -r $gw_root/sys/module/nvidia/version ]]; then
  read -r gw_driver <"$gw_root/sys/module/nvidia/version" || true
  gw_driver=${gw_driver%%.*}
  gw_driver=${gw_driver//[^A-Za-z0-9._-]/?}
fi
printf '%s\n' "${gw_driver:-none}"
"""
"""What a shell reads for ``identity``: four lines (GPUs, OS, CPU architecture, driver branch),
under the folder ``$gw_root`` (empty on a real machine). deploy.sh runs it as a function; the
playbook runs it with bash on each server. Quoted os-release values lose their quotes, as
gpuwizard's own reader does."""
