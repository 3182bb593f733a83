"""The whole wizard driven by keystrokes (Textual's Pilot) on a simulated host, with the real
detached runner underneath."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from gpuwizard.frontends.app import GpuWizardApp
from gpuwizard.machine.host import Host
from gpuwizard.screens.benchmark import BenchmarkView
from gpuwizard.screens.choose import ChooseView
from gpuwizard.screens.done import DoneView
from gpuwizard.screens.export import ExportView
from gpuwizard.screens.install import InstallView
from gpuwizard.screens.machine import MachineView
from gpuwizard.screens.reboot import RebootView
from gpuwizard.screens.resume import ResumeView
from gpuwizard.screens.review import ReviewView
from gpuwizard.screens.verify import VerifyView
from gpuwizard.sim.backend import sim_backend
from gpuwizard.sim.sandbox import Sandbox
from tests.ui.pilots import shows, until, view_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


async def to_the_install(pilot: Any) -> InstallView:
    """From the machine view, the recommendation as it is, reviewed and started: the install."""
    for view, key in ((MachineView, "enter"), (ChooseView, "c"), (ReviewView, "s")):
        await until(pilot, shows(pilot, view))
        await pilot.press(key)
    await until(pilot, shows(pilot, InstallView))
    install: InstallView = view_of(pilot)
    return install


async def test_the_whole_flow_detect_choose_review_install_reboot_resume_verify_done(
    home: Path,
) -> None:
    backend = sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard")
    app = GpuWizardApp(backend)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        extras = view_of(pilot).query_one("#extras")
        extras.focus()
        for _ in range(4):  # down to "NCCL multi-node settings", then choose it
            await pilot.press("down")
        await pilot.press("space")
        await pilot.pause()
        assert view_of(pilot).request.nccl  # type: ignore[attr-defined]
        await pilot.press("c")
        await until(pilot, shows(pilot, ReviewView))
        assert any(s.id == "configure-nccl" and not s.satisfied for s in view_of(pilot).plan.steps)  # type: ignore[attr-defined]
        await pilot.press("s")
        await until(pilot, shows(pilot, InstallView))
        await pilot.press("enter")  # the first step, after reading what it does
        await until(
            pilot,
            lambda: (
                view_of(pilot).mode == "waiting"
                and view_of(pilot).current == "install-nvidia-driver"
            ),
        )  # type: ignore[attr-defined]
        await pilot.press("a")  # then all the rest
        await until(pilot, shows(pilot, RebootView))
        await pilot.press("escape")  # Later: back to the install, where the reboot waits
        await until(pilot, shows(pilot, InstallView))
        await until(pilot, lambda: view_of(pilot).reboot_pending)  # type: ignore[attr-defined]
        assert app.is_running
        await pilot.press("enter")  # the reboot screen again, from the journal
        await until(pilot, shows(pilot, RebootView))
        await pilot.press("r")
        await until(pilot, shows(pilot, ResumeView))
        await until(pilot, lambda: view_of(pilot).done)  # the check after the reboot has run
        checked = view_of(pilot).checked  # type: ignore[attr-defined]
        assert {state for _, state, _ in checked} == {"done"}
        await pilot.press("enter")
        await until(pilot, shows(pilot, InstallView))
        states = view_of(pilot).query_one("StepList").states  # type: ignore[attr-defined]
        assert states["install-nvidia-driver"] == "done"  # what ran before the reboot shows so
        assert not str(view_of(pilot).query_one("#progress").render()).startswith("0/")
        await pilot.press("a")
        await until(pilot, shows(pilot, VerifyView))
        assert view_of(pilot).report.ok  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, shows(pilot, BenchmarkView))
        await pilot.press("enter")
        await until(pilot, lambda: view_of(pilot).state == "done")  # type: ignore[attr-defined]
        assert len(view_of(pilot).results) == 5  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, shows(pilot, ExportView))
        folder = view_of(pilot).query_one("#folder", Input)
        folder.focus()
        folder.value = ""
        await pilot.press(*str(home / "exported"), "enter")  # typed, then enter writes
        written = view_of(pilot).written  # type: ignore[attr-defined]
        status = str(view_of(pilot).query_one("#export-status", Static).content)
        assert f"Wrote 6 files to {home / 'exported'}" in status and "cloud-init.yaml" in status
        assert {Path(p).name for p in written} == {"deploy.sh", "Dockerfile", "docker-host.md", "answers.yaml", "playbook.yml", "cloud-init.yaml.gz"}  # fmt: skip
        await pilot.press("c")
        await until(pilot, shows(pilot, DoneView))
        done = view_of(pilot)
        assert done.bench and "results.md" in done.bench  # type: ignore[attr-defined]
    assert Sandbox(backend.state_dir.parent / "sandbox").load().reboots == 1


async def test_a_failing_step_shows_its_hint_and_retry_succeeds(home: Path) -> None:
    backend = sim_backend("t4-debian12-fresh", home=home / "gpuwizard")
    scenario = {"rules": [{"tool": "apt-get", "match": "install", "times": 1, "exit": 100,
                           "output": "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4750 (unattended-upgr)"}]}  # fmt: skip
    (backend.state_dir.parent / "sandbox" / "scenario.json").write_text(json.dumps(scenario))
    app = GpuWizardApp(backend)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        await pilot.press("c")
        await until(pilot, shows(pilot, ReviewView))
        await pilot.press("s")
        await until(pilot, shows(pilot, InstallView))
        screen = view_of(pilot)
        while screen.current != "install-headers":  # type: ignore[attr-defined]
            await pilot.press("enter")
            await until(pilot, lambda: screen.mode in ("waiting", "failed"))  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: screen.mode == "failed")  # type: ignore[attr-defined]
        hint = str(screen.query_one("#hint").render())
        assert "holds the dpkg lock" in hint and "never delete the lock files" in hint
        await pilot.press("r")
        await until(pilot, lambda: screen.mode == "waiting" and screen.current != "install-headers")  # type: ignore[attr-defined]
        assert screen.query_one("StepList").states["install-headers"] == "done"  # type: ignore[attr-defined]


async def test_a_machine_that_cannot_be_looked_at_ends_the_wizard_with_one_line(
    home: Path,
) -> None:
    def unreadable() -> Host:
        raise PermissionError("[Errno 13] Permission denied: '/sys/bus/pci/devices'")

    backend = dataclasses.replace(
        sim_backend("h100x8-ubuntu2204-fresh", home=home / "gpuwizard"), host=unreadable
    )
    app = GpuWizardApp(backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.return_value is not None)
    assert app.failed
    assert app.return_value == (
        "gpuwizard: could not look at this machine: "
        "[Errno 13] Permission denied: '/sys/bus/pci/devices'"
    )


async def test_a_skipped_needed_step_is_asked_marked_and_named_to_the_end(home: Path) -> None:
    """Issue 31 (4): Fabric Manager's apt fails on the H100 x8; `s` asks first and names what the
    step is for; the skipped step has its own mark, is not counted as done, and run all goes on.
    Without Fabric Manager the GPUs never join the fabric, so the verification fails as it would
    on the real machine (CUDA error 802, its hint naming Fabric Manager); skipped too, Verify,
    Done, the export and the doctor name both, and a new plan has Fabric Manager again."""
    from gpuwizard.screens.modals import ConfirmScreen
    from gpuwizard.screens.widgets.step_list import StepList
    from tests.cli.helpers import gpuwizard

    profile, title = "h100x8-ubuntu2204-fresh", "Install NVIDIA Fabric Manager (NVSwitch)"
    backend = sim_backend(profile, home=home / "gpuwizard")
    fails = {"rules": [{"tool": "apt-get", "match": "nvidia-fabricmanager", "times": 1, "exit": 100,
                        "output": "E: Unable to locate package nvidia-fabricmanager-580"}]}  # fmt: skip
    (backend.state_dir.parent / "sandbox" / "scenario.json").write_text(json.dumps(fails))
    app = GpuWizardApp(backend)

    async def skip_the_failed(install: InstallView, step: str) -> None:
        await until(pilot, lambda: install.mode == "failed" and install.current == step)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")

    async with app.run_test(size=(80, 24)) as pilot:
        install = await to_the_install(pilot)
        await pilot.press("a")
        await until(pilot, lambda: install.mode == "failed")
        assert install.current == "install-fabric-manager"
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        asked = str(app.screen.query_one(Static).render())
        assert f"Skip “{title}”" in asked and "without it CUDA sees no usable GPU" in asked, asked
        await pilot.press("n")  # kept: nothing changes
        await pilot.pause()
        assert install.mode == "failed" and install.current == "install-fabric-manager"
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")  # skipped: run all goes on by itself
        await until(
            pilot, lambda: install.query_one(StepList).states["install-fabric-manager"] == "left"
        )
        await until(
            pilot,
            lambda: " · 1 skipped · " in str(install.progress.key) or shows(pilot, RebootView)(),
        )
        await until(pilot, shows(pilot, RebootView))
        await pilot.press("r")
        await until(pilot, lambda: shows(pilot, ResumeView)() and view_of(pilot).done)
        await pilot.press("enter")
        await until(pilot, shows(pilot, InstallView))
        install = view_of(pilot)
        await pilot.press("a")
        await until(pilot, lambda: install.mode == "failed" and install.current == "verify-torch")
        hint = str(install.query_one("#hint").render())
        assert "Error 802: system not yet initialized" in hint and "Fabric Manager" in hint, hint
        await skip_the_failed(install, "verify-torch")
        await until(pilot, shows(pilot, VerifyView))
        assert f"skipped by you: {title}" in str(view_of(pilot).summary())
        await pilot.press("enter")
        await until(pilot, shows(pilot, DoneView))
        headline = str(view_of(pilot).headline())
        assert f"Done, except what you skipped: ⊘ {title}; ⊘ Verify PyTorch" in headline, headline
        assert "set up." not in headline
    doctor = gpuwizard(home, "--simulate", profile, "doctor")
    assert f"Skipped in the setup: {title}" in doctor.stdout, doctor.stdout
    assert "Fabric Manager not installed" in doctor.stdout
    exported = gpuwizard(home, "--simulate", profile, "export", "--format", "answers")
    assert f"you skipped {title}" in exported.stderr, exported.stderr
    again = gpuwizard(home, "--simulate", profile, "apply", "--dry-run")
    assert f"1. {title}" in again.stdout, "a new plan has the step still needed: " + again.stdout


async def test_esc_on_the_mok_prompt_asks_to_cancel_and_the_step_never_waits_unseen(
    home: Path,
) -> None:
    """Issue 31 (2): Esc at "One-time MOK password" asks whether to cancel the step. Keeping it
    brings the question back; cancelling stops the step at once (it fails, r asks again), where
    the runner used to wait 30 minutes for an answer nobody was asked for."""
    from gpuwizard.screens.modals import ConfirmScreen, SecretScreen

    app = GpuWizardApp(sim_backend("t4-debian12-secureboot", home=home / "gpuwizard"))
    async with app.run_test(size=(80, 24)) as pilot:
        install = await to_the_install(pilot)
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, SecretScreen))
        assert "waits for you: Prepare Secure Boot key enrollment" in str(install.progress.key)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Cancel the step?" in str(app.screen.query_one(Static).render())
        await pilot.press("n")  # keep it: the question again
        await until(pilot, lambda: isinstance(app.screen, SecretScreen))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: install.mode == "failed", timeout_s=30)
        assert install.current == "enroll-mok"
        assert "you cancelled it at its question" in install.stage.run.ending.why  # type: ignore[union-attr]
        await pilot.press("r")  # again: it asks again
        # its fields are there once it has mounted (a screen is pushed before it composes)
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, SecretScreen) and bool(app.screen.query("#secret-again"))
            ),
        )
        for field in ("#secret", "#secret-again"):
            app.screen.query_one(field, Input).focus()
            await pilot.press(*"Correct-Horse-9", "enter")
        await until(pilot, lambda: install.current != "enroll-mok" or install.mode != "running")
        assert install.stage.run.status("enroll-mok") in ("done", "awaiting_reboot")


async def test_the_pytorch_already_here_can_be_chosen_and_is_used_as_it_is(home: Path) -> None:
    """Issue 26 (1): on the H200 microVM with torch 2.11.0+cu130 in /opt/torch/.venv, Choose
    lists it with its fit and offers it; chosen, Review plans no environment and no download,
    only its verification, which runs in that environment."""
    from tests.ui.test_benchmark import text_of

    app = GpuWizardApp(sim_backend("h200-vm-ubuntu2404-preinstalled", home=home / "gpuwizard"))
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, shows(pilot, MachineView))
        await pilot.press("enter")
        await until(pilot, shows(pilot, ChooseView))
        choose = view_of(pilot)
        said = " ".join(text_of(app, "#here").split())
        assert "torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv" in said and "fits" in said
        select = choose.query_one("#wish-use_env", Select)
        select.value = "/opt/torch/.venv"
        await pilot.pause()
        assert choose.request.use_env == "/opt/torch/.venv"
        said = " ".join(text_of(app, "#here").split())
        assert "Uses the PyTorch here" in said and "nothing is downloaded" in said
        assert "not chosen: a new environment with torch 2.14.1 cu130, about" in said, said
        card = " ".join(text_of(app, "#result-text").split())
        assert "the one here, as it is" in card and "2.14.1" not in card, card
        await pilot.press("c")
        await until(pilot, shows(pilot, ReviewView))
        todo = [s.id for s in view_of(pilot).plan.steps if not s.satisfied]
        assert todo == ["verify-torch"], todo
        await pilot.press("s")
        await until(pilot, shows(pilot, InstallView))
        await pilot.press("a")
        await until(pilot, shows(pilot, VerifyView))
        report = view_of(pilot).report
        assert report.ok and report.env == "/opt/torch/.venv" and report.torch == "2.11.0"
