"""Turn a finished search into a Recommendation, with reasons a person can check.

Every alternative the engine did not choose is listed with its reason: the rule it failed
("cu130: ... needs driver 580 or newer; 535.247.01 is older") or, when it would have worked, why
it ranked lower ("R595: a production branch, supported until 2027-03; R580 is long-term").
Refusals that need a search are written by ``refusal.py``; the ones that need none are here.
"""

from __future__ import annotations

from collections import Counter

from gpuwizard.core.gpus import GpuModel
from gpuwizard.core.version import Version, at_least, variant_cuda
from gpuwizard.recommend import changes as change_list
from gpuwizard.recommend import debian_native, host_pins, ranking
from gpuwizard.recommend.os_support import OsRelease, is_guess, match_os
from gpuwizard.recommend.result import (
    PYTORCH_INDEX,
    DriverPick,
    GpuSummary,
    PythonPick,
    Recommendation,
    Refusal,
    Rejected,
    Search,
    ToolkitPick,
    TorchPick,
)
from gpuwizard.recommend.rules import Candidate, DriverOption, driver_floor_for, failures
from gpuwizard.recommend.table import CompatTable, Flavor, TorchRelease
from gpuwizard.recommend.target import Target

PREFERRED_PYTHON = "3.12"


def summarise_gpus(models: tuple[GpuModel, ...]) -> tuple[GpuSummary, ...]:
    counts = Counter(models)
    return tuple(
        GpuSummary(f"10de:{m.device_id}", m.name, m.arch, m.compute_capability, n)
        for m, n in counts.items()
    )


def precondition_refusal(table: CompatTable, target: Target) -> Refusal | None:
    """Refusals that need no search: no GPU, an unknown GPU, an OS or platform we cannot serve."""
    gpus = summarise_gpus(target.gpus)
    if not target.gpus:
        return Refusal("no NVIDIA GPU was found on this host", gpus)
    if integrated := next((g for g in target.gpus if _is_integrated(table, g)), None):
        return Refusal(
            f"{integrated.name} (10de:{integrated.device_id}) is an integrated GPU: its driver and "
            "CUDA come with NVIDIA JetPack (Jetson Linux), not from a data-center driver branch; "
            "set it up with JetPack",
            gpus,
        )
    unknown = [g for g in target.gpus if not g.is_known]
    if unknown:
        return Refusal(
            f"{unknown[0].name} (10de:{unknown[0].device_id}) is not in gpuwizard's GPU catalogue; "
            "update gpuwizard, or check the device with `lspci -nn`",
            gpus,
        )
    if target.driver_managed_elsewhere and target.driver is None:
        where = (
            "under WSL the driver comes from Windows: install the NVIDIA driver for Windows"
            if target.wsl
            else (
                f"in a {target.container} container the driver belongs to the host: "
                "install it there and start the container with --gpus all"
            )
        )
        return Refusal(f"no NVIDIA driver is visible; {where}", gpus, (target.nvml_problem or "",))
    if (
        not target.driver_managed_elsewhere
        and match_os(table, target.os_id or "", target.os_version or "") is None
    ):
        supported = ", ".join(o.label for o in table.operating_systems)
        name = f"{target.os_id or 'an unknown OS'} {target.os_version or ''}".strip()
        return Refusal(f"{name} is not supported; gpuwizard installs on {supported}", gpus)
    return None


def _is_integrated(table: CompatTable, gpu: GpuModel) -> bool:
    """A Jetson/Tegra GPU by its name, or one the table's NVIDIA-list rows mark integrated."""
    listing = table.gpu_listing(gpu.device_id)
    return gpu.is_integrated or (listing is not None and listing.integrated)


def _driver_plan(table: CompatTable, found: Search, winner: Candidate) -> DriverPick:
    target, option = found.target, winner.driver
    floors = [f for g in target.gpus if (f := driver_floor_for(table, g, option.flavor))]
    cuda = variant_cuda(winner.variant)
    ga = table.cuda(cuda)
    wheel_floor = (
        ga.ga_driver if ga and at_least(option.version, ga.ga_driver) else table.driver_floor(cuda)
    )
    floors += [wheel_floor] if wheel_floor else []
    min_version = max(floors, key=Version.parse) if floors else option.version
    if option.action == "keep" or found.os_row is None:
        return DriverPick(
            option.action,
            option.branch,
            option.version,
            min_version,
            option.flavor,
            (),
            "host" if target.driver_managed_elsewhere else "installed",
        )
    names = change_list.driver_packages(table, target, found.os_row, option)
    return DriverPick(
        option.action,
        option.branch,
        option.version,
        min_version,
        option.flavor,
        names.core + names.supporting,
        option.source or found.os_row.driver_source,
        names.module_stream,
        names.signed,
        names.core,
        names.version_lock,
    )


def _python_plan(target: Target, release: TorchRelease, pin: str | None) -> PythonPick:
    if pin is not None:  # checked by now: the OS has it and the release has wheels for it
        return PythonPick(pin, "use_system" if pin == target.python else "install", pinned=True)
    low, high = (Version.parse(v) for v in release.python_for(target.arch))
    if target.python and low <= Version.parse(target.python) <= high:
        return PythonPick(target.python, "use_system")
    preferred = min(max(Version.parse(PREFERRED_PYTHON), low), high)
    return PythonPick(preferred.text, "install")


def _toolkit_plan(table: CompatTable, found: Search, winner: Candidate) -> ToolkitPick | None:
    if not found.request.needs_nvcc or found.os_row is None:
        return None
    cuda = variant_cuda(winner.variant)
    major, minor = cuda.split(".")
    names = table.packages[found.os_row.driver_source].toolkit
    return ToolkitPick(cuda, tuple(n.format(major=major, minor=minor) for n in names))


def recommendation_from(table: CompatTable, found: Search) -> Recommendation:
    winner = found.winner
    assert winner is not None
    target = found.target
    python = _python_plan(target, winner.torch, found.request.python)
    driver = _driver_plan(table, found, winner)
    changes = change_list.changes(table, target, found.os_row, driver, python, winner.torch)
    release = winner.torch
    return Recommendation(
        status="ok_after_changes" if changes else "ok",
        gpus=summarise_gpus(target.gpus),
        driver=driver,
        torch=TorchPick(
            release.version,
            winner.variant,
            f"{PYTORCH_INDEX}/{winner.variant}",
            release.torchvision,
            release.torchaudio,
            release.confirmed,
            release.python_for(target.arch),
        ),
        python=python,
        cuda_toolkit=_toolkit_plan(table, found, winner),
        changes=changes,
        reasons=tuple(reasons(table, found, winner, driver, python)),
        rejected=tuple(rejected(table, found, winner)),
        unconfirmed=tuple(unconfirmed(table, found, winner)),
    )


def reasons(
    table: CompatTable, found: Search, winner: Candidate, driver: DriverPick, python: PythonPick
) -> list[str]:
    target = found.target
    out = [
        f"{g.count}x {g.name}: {g.arch}, sm_{(g.compute_capability or '').replace('.', '')}"
        for g in summarise_gpus(target.gpus)
    ]
    out.append(_driver_reason(table, target, winner.driver, driver))
    branch, flavour = found.request.driver_branch, found.request.driver_flavour
    if branch or flavour:
        asked = " ".join(p for p in (f"R{branch}" if branch else "", flavour or "") if p)
        out[-1] += f" (as requested: {asked})"
    release = winner.torch
    if found.request.torch:
        out.append(f"torch {release.version}: as requested")
    elif release.confirmed:
        out.append(
            f"torch {release.version} is the newest release with a confirmed torchvision pair "
            f"({release.torchvision}) that fits"
        )
    out.append(_variant_reason(table, winner, target.arch))
    low, high = release.python_for(target.arch)
    supported = f"torch {release.version} supports Python {low}–{high}"
    if python.pinned:
        where = "the system's" if python.action == "use_system" else "from the OS's archive"
        out.append(f"Python {python.version} ({where}): as requested; {supported}")
    elif python.action == "use_system":
        out.append(f"the system's Python {python.version} fits: {supported}")
    else:
        out.append(f"Python {python.version} will be installed for the environment: {supported}")
    out += change_list.notes(table, target, found.os_row, driver)
    return out + end_of_life_warning(table, found, winner)


def end_of_life_warning(table: CompatTable, found: Search, winner: Candidate) -> list[str]:
    """A branch past its end of life is installed only when no supported one fits: say so."""
    option = winner.driver
    row = table.branch(option.branch)
    if option.action == "keep" or row is None or ranking.is_supported(table, option.branch):
        return []
    head = (
        f"warning: R{option.branch} is past its end of life (since {row.eol}): NVIDIA no longer "
        "fixes it, security fixes included"
    )
    if found.request.driver_branch == option.branch:
        return [f"{head}; it is installed because it was asked for"]
    return [f"{head}; {_why_no_supported_branch(table, found, winner)}"]


def _newer_release(table: CompatTable, row: OsRelease | None) -> str:
    """The next release of the same OS in the table that offers a supported branch."""
    newer = [
        o
        for o in table.operating_systems
        if row
        and o.id == row.id
        and Version.parse(o.version) > Version.parse(row.version)
        and any(ranking.is_supported(table, b) for b in o.driver_branches)
    ]
    if not newer:
        return ""
    first = min(newer, key=lambda o: Version.parse(o.version))
    branches = [f"R{b}" for b in first.driver_branches if ranking.is_supported(table, b)]
    return f"; {first.label} offers {', '.join(branches)}"


def _why_no_supported_branch(table: CompatTable, found: Search, winner: Candidate) -> str:
    supported = [
        o for o in found.options if o.action != "keep" and ranking.is_supported(table, o.branch)
    ]
    row = found.os_row
    where = row.label if row else "this OS"
    if not supported:
        offered = ", ".join(f"R{b}" for b in host_pins.offered_branches(table, row))
        return f"{where} offers no supported branch (only {offered}){_newer_release(table, row)}"
    option = supported[0]
    alt = Candidate(winner.torch, winner.variant, winner.build, option, winner.python)
    problems = failures(table, found.target, alt, found.request.needs_nvcc)
    why = problems[0] if problems else "it ranks lower"
    return f"no supported branch fits here: R{option.branch} {option.flavor or ''}: {why}"


def _driver_reason(
    table: CompatTable, target: Target, option: DriverOption, plan: DriverPick
) -> str:
    if option.action == "keep":
        where = (
            " (managed by Windows)"
            if target.wsl
            else " (managed by the host)"
            if target.container
            else ""
        )
        return f"driver {option.version}{where} is kept: it supports these GPUs and runs the chosen build"
    life = _life(table, option.branch)
    flavor = {"open": "open kernel modules", "proprietary": "proprietary kernel modules"}.get(
        option.flavor or "", ""
    )
    why = _flavor_why(target, option)
    if option.source == debian_native.SOURCE:
        return (
            f"R{option.branch} ({life}) with {flavor}{why}, from Debian's own archive (non-free): "
            f"no third-party repository; Debian's release {plan.version}"
        )
    return f"R{option.branch} ({life}) with {flavor}{why}; newest known release {plan.version}"


def _flavor_why(target: Target, option: DriverOption) -> str:
    required = [g for g in target.gpus if g.open_modules == "required"]
    unsupported = [g for g in target.gpus if g.open_modules == "unsupported"]
    if option.flavor == "open" and required:
        return f" (required by {required[0].arch})"
    if option.flavor == "proprietary" and unsupported:
        return f" ({unsupported[0].arch} cannot use the open modules)"
    if option.flavor == "open":
        return " (NVIDIA's default from R560)"
    return ""


def _variant_reason(table: CompatTable, winner: Candidate, platform: str) -> str:
    release, variant = winner.torch, winner.variant
    cuda = variant_cuda(variant)
    kind = "PyPI's default build" if variant == release.pypi_default(platform) else "the build"
    mvc = ""
    ga = table.cuda(cuda)
    if ga and not at_least(winner.driver.version, ga.ga_driver):
        major = cuda.split(".")[0]
        mvc = f"; driver {winner.driver.version} runs it through CUDA {major} minor-version compatibility (no PTX JIT)"
    return f"{variant} (CUDA {cuda}) is {kind} of torch {release.version} with kernels for every GPU here{mvc}"


def rejected(table: CompatTable, found: Search, chosen: Candidate) -> list[Rejected]:
    target, needs_nvcc = found.target, found.request.needs_nvcc
    out: list[Rejected] = []
    out += _rejected_releases(table, found, chosen)
    for variant in chosen.torch.builds_for(target.arch):
        if variant == chosen.variant:
            continue
        alt = Candidate(
            chosen.torch,
            variant,
            table.build(variant, chosen.torch.version, target.arch),
            chosen.driver,
            chosen.python,
        )
        problems = failures(table, target, alt, needs_nvcc)
        pin = found.request.variant
        out.append(
            Rejected(
                variant,
                problems[0]
                if problems
                else f"not the build asked for ({pin})"
                if pin
                else _variant_preference(table, chosen, variant, target.arch),
            )
        )
    seen = set()
    for option in found.options:
        if option == chosen.driver:
            continue
        reason = _driver_rejected(table, found, chosen, option)
        if (option.label, reason) not in seen:
            seen.add((option.label, reason))
            out.append(Rejected(option.label, reason))
    out += [Rejected(label, why) for label, why in debian_native.not_offered(found.os_row)]
    return out


def _driver_rejected(
    table: CompatTable, found: Search, chosen: Candidate, option: DriverOption
) -> str:
    """Why a driver option lost: the pins exclude it, a rule fails, or it ranks lower."""
    if excluded := host_pins.excluded_by_pin(option, found.request):
        return excluded
    target, needs_nvcc = found.target, found.request.needs_nvcc
    alt = Candidate(chosen.torch, chosen.variant, chosen.build, option, chosen.python)
    problems = failures(table, target, alt, needs_nvcc)
    if not problems:
        return _driver_preference(table, found, chosen, option)
    if option.source == debian_native.SOURCE:
        return problems[0] + debian_native.hint(table, target, chosen.torch, option, needs_nvcc)
    return problems[0]


def _rejected_releases(table: CompatTable, found: Search, chosen: Candidate) -> list[Rejected]:
    if found.request.torch:
        return []
    newer = [
        r
        for r in table.torch_releases
        if Version.parse(r.version) > Version.parse(chosen.torch.version)
    ]
    out = []
    for release in sorted(newer, key=lambda r: Version.parse(r.version)):
        if not release.confirmed:
            note = release.note or "it is not fully checked"
            anyway = _would_not_fit(table, found, release, chosen.python)
            choose = (
                f"{anyway}"
                if anyway
                else f"; pass --torch {release.version} to choose it anyway (the install then "
                "checks torchvision's compiled ops and the GPU architectures)"
            )
            out.append(Rejected(f"torch {release.version}", f"{note}{choose}"))
        else:
            out.append(
                Rejected(
                    f"torch {release.version}",
                    "no CUDA build of it fits this host's GPUs and driver",
                )
            )
    return out


def _would_not_fit(
    table: CompatTable, found: Search, release: TorchRelease, python: str | None
) -> str:
    """Why an unconfirmed release could not be chosen here even when pinned ("" when it could)."""
    target = found.target
    options = [o for o in found.options if host_pins.allowed(o, found.request)]
    tried = [
        Candidate(release, v, table.build(v, release.version, target.arch), o, python)
        for v in release.builds_for(target.arch) or release.variants
        for o in options
    ]
    said = [failures(table, target, c, found.request.needs_nvcc) for c in tried]
    if not said or any(not problems for problems in said):
        return ""
    return f"; it would not fit here anyway: {min(said, key=len)[0]}"


def _variant_preference(table: CompatTable, chosen: Candidate, variant: str, platform: str) -> str:
    release = chosen.torch
    if variant in release.experimental:
        return f"experimental in torch {release.version}; {chosen.variant} is preferred"
    if _native(table, chosen.driver.version, chosen.variant) and not _native(
        table, chosen.driver.version, variant
    ):
        return (
            f"driver {chosen.driver.version} would run it only through minor-version "
            f"compatibility (no PTX JIT); it runs {chosen.variant} natively"
        )
    if Version.parse(variant_cuda(variant)) < Version.parse(variant_cuda(chosen.variant)):
        return f"an older CUDA than {chosen.variant}"
    return (
        f"{chosen.variant} is PyPI's default build of torch {release.version}"
        if chosen.variant == release.pypi_default(platform)
        else f"ranked below {chosen.variant}"
    )


def _native(table: CompatTable, driver: str, variant: str) -> bool:
    ga = table.cuda(variant_cuda(variant))
    return ga is None or at_least(driver, ga.ga_driver)


def _driver_preference(
    table: CompatTable, found: Search, chosen: Candidate, option: DriverOption
) -> str:
    """Why an option that passes every rule lost: the first preference of ``ranking.rank``
    on which it and the chosen one differ, in that preference's words."""
    target = found.target
    installed = target.driver.branch if target.driver else None
    alt = Candidate(chosen.torch, chosen.variant, chosen.build, option, chosen.python)
    won = ranking.rank(table, chosen, target.arch, installed)
    lost = ranking.rank(table, alt, target.arch, installed)
    place = next((i for i, (a, b) in enumerate(zip(won, lost, strict=True)) if a != b), None)
    decided = ranking.RANKED_BY[place] if place is not None else "order"
    return _PREFERENCES.get(decided, _ranked_lower)(table, chosen, option)


def _kept(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    return f"not needed: the installed driver {chosen.driver.version} already fits"


def _end_of_life(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    return (
        f"R{option.branch} is {_life(table, option.branch)}; R{chosen.driver.branch} is "
        f"{_life(table, chosen.driver.branch)}, and a supported branch that fits comes first"
    )


def _installed_branch(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    return (
        f"it would leave the installed branch; R{chosen.driver.branch} serves these GPUs with "
        f"its {chosen.driver.flavor} kernel modules, so the change stays in it"
    )


def _source(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    if chosen.driver.source == debian_native.SOURCE:
        return (
            f"needs NVIDIA's third-party repository; Debian's own R{chosen.driver.branch} fits "
            "these GPUs and this build without one"
        )
    return (
        f"needs a third-party repository; R{chosen.driver.branch} comes from the OS's own archive"
    )


def _not_native(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    cuda = variant_cuda(chosen.variant)
    ga = table.cuda(cuda)
    needs = f" (CUDA {cuda} needs {ga.ga_driver})" if ga else ""
    return (
        f"it fits, but driver {option.version} runs {chosen.variant} only through CUDA "
        f"{cuda.split('.')[0]} minor-version compatibility (no PTX JIT); "
        f"R{chosen.driver.branch} ({chosen.driver.version}) runs it natively{needs}"
    )


def _long_term(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    return (
        f"R{option.branch} is {_life(table, option.branch)}; R{chosen.driver.branch} is "
        f"{_life(table, chosen.driver.branch)}, and a long-term branch comes first"
    )


def _newer_branch(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    return f"R{chosen.driver.branch} is the newer branch of the same standing"


def _flavour(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    if chosen.driver.flavor == "open":
        return f"R{chosen.driver.branch} open modules are preferred (NVIDIA's default from R560 is open)"
    return "proprietary modules are the safer choice before R560"


def _ranked_lower(table: CompatTable, chosen: Candidate, option: DriverOption) -> str:
    del table, option
    return f"ranked below R{chosen.driver.branch} {chosen.driver.flavor or ''}".rstrip()


_PREFERENCES = {
    "keep": _kept,
    "supported": _end_of_life,
    "installed-branch": _installed_branch,
    "source": _source,
    "native": _not_native,
    "long-term": _long_term,
    "newer-branch": _newer_branch,
    "flavour": _flavour,
}


def _life(table: CompatTable, branch: str) -> str:
    row = table.branch(branch)
    if row is None:
        return "not in gpuwizard's table"
    if row.eol < table.reviewed[:7]:
        return f"{row.designation}, end of life since {row.eol}"
    return f"{row.designation}, supported until {row.eol}"


def unconfirmed(table: CompatTable, found: Search, winner: Candidate) -> list[str]:
    os_row, target = found.os_row, found.target
    out = _os_unconfirmed(found) + _listing_unconfirmed(table, target, winner.driver)
    if not winner.torch.confirmed:
        out.append(
            f"torch {winner.torch.version}: {winner.torch.note or 'not fully confirmed'}; verified after install"
        )
    if winner.build and not winner.build.confirmed:
        source = (
            winner.build.note
            or "they come from build scripts or release notes, not from the wheels"
        )
        out.append(
            f"the GPU architectures in {winner.variant} builds of torch {winner.torch.version}: "
            f"{source}; verified after install"
        )
    source = winner.driver.source or (os_row.driver_source if os_row else "")
    if (
        os_row
        and winner.driver.action != "keep"
        and source in table.packages
        and not table.packages[source].confirmed
    ):
        out.append(
            f"driver package names from {source} are not confirmed; "
            "the install step checks they exist before changing anything"
        )
    if os_row and target.arch == "aarch64" and winner.driver.action != "keep":
        out.append(
            f"the {os_row.driver_source} driver packages were checked for x86_64 only; "
            "the install step checks the arm64 ones exist before changing anything"
        )
    return out


_LISTS = {"open": "open-module READMEs", "proprietary": "driver READMEs (Appendix A)"}


def _listing_unconfirmed(table: CompatTable, target: Target, driver: DriverOption) -> list[str]:
    """A GPU whose NVIDIA list leaves it out in some release of the driver's own branch."""
    both: tuple[Flavor, ...] = ("open", "proprietary")
    flavours = (driver.flavor,) if driver.flavor else both
    out = []
    for gpu in dict.fromkeys(target.gpus):
        listing = table.gpu_listing(gpu.device_id)
        if listing is None:
            continue
        for flavour in flavours:
            if driver.branch in listing.gaps(flavour):
                out.append(
                    f"{gpu.name} with R{driver.branch}: NVIDIA's {_LISTS[flavour]} disagree "
                    f"({listing.note}); verified after install"
                )
    return out


def _os_unconfirmed(found: Search) -> list[str]:
    os_row, target = found.os_row, found.target
    if os_row is None:
        return []
    out = []
    if is_guess(os_row, target.os_id or "", target.os_version or ""):
        name = f"{os_row.label.rsplit(' ', 1)[0]} {target.os_version}"
        out.append(
            f"{name} is newer than gpuwizard's table: treated as {os_row.label}, its newest known "
            "release before it (package names and Python may differ; the install step checks them)"
        )
    if not os_row.confirmed and os_row.note:
        out.append(f"{os_row.label}: {os_row.note}")
    return out
