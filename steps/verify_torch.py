"""verify-torch: prove the environment works on every GPU, and name the cause when it does not.

Runs in the target environment's Python: torch's version, ``torch.cuda.is_available()``, every
GPU's name, each GPU's ``sm_XY`` among the build's architectures (``get_arch_list``), a real
matmul and one AMP training step on every GPU, and torchvision's compiled ``nms`` (which fails
when torch and torchvision do not match). The report goes to /var/lib/gpuwizard/verify.json,
which detection reads back; it names its boot, so a later boot is verified again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuwizard.core.facts import HostFacts, judge_boot
from gpuwizard.core.isolation import ISOLATED
from gpuwizard.core.machine_words import counted
from gpuwizard.core.ops import Command
from gpuwizard.core.paths import VERIFY_REPORT
from gpuwizard.core.plan import Action, Target
from gpuwizard.core.selection import EnvChoice, TorchChoice
from gpuwizard.steps.base import Check

# The probe is a standalone script (verify_probe.py) run with ``python -I -c`` in the target
# environment, where gpuwizard is not installed; its text is part of the plan. -I: a -c script
# would otherwise import from the current folder first.
VERIFY_SCRIPT = Path(__file__).with_name("verify_probe.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class VerifyTorch:
    env: EnvChoice
    torch: TorchChoice
    gpu_count: int
    id: str = "verify-torch"
    title: str = "Verify PyTorch on every GPU"
    needs_reboot: bool = False
    reboot: bool = False
    targets: tuple[Target, ...] = (Target.HOST, Target.IMAGE)

    @property
    def why(self) -> str:
        where = "that was here already" if self.env.existing else "just built"
        return (
            f"Checks what really matters, in the environment {where}: CUDA is available, every "
            "GPU is seen and has kernels in this build, a matmul and an AMP training step run "
            "on each, and torchvision's compiled ops load. A failure names its cause."
        )

    def check(self, facts: HostFacts) -> Check:
        report = facts.installs.verification
        if report is None or report.env != self.env.path or report.torch != self.torch.version:
            return Check(False, "not verified yet")
        if judge_boot(report.boot, facts.boot.mark).same is False:  # unjudgeable: as before
            return Check(False, "verified in an earlier boot; checking again")
        if not report.ok:
            return Check(False, "; ".join(report.problems) or "verification failed")
        return Check(True, f"torch {report.torch} works on {counted(len(report.devices), 'GPU')}")

    def plan(self, facts: HostFacts) -> tuple[Action, ...]:
        return () if self.check(facts).satisfied else self.probe()

    def probe(self) -> tuple[Action, ...]:
        """The verification itself, whatever the facts say now."""
        python = self.env.interpreter
        return (
            Command(
                (
                    python,
                    ISOLATED,
                    "-c",
                    VERIFY_SCRIPT,
                    VERIFY_REPORT,
                    str(self.gpu_count),
                    self.env.path,
                ),
                timeout_s=900,
            ),
        )

    def verify(self, facts: HostFacts) -> Check:
        return self.check(facts)
