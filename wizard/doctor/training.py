"""The guide's training-time problems: out of GPU memory, and slow multi-node communication.

Out of memory: the guide's remedies made concrete for this machine (the batch the
benchmark fitted, bfloat16 where the GPUs have it). Multi-node: the network NCCL will use, the
InfiniBand ports and GPUDirect RDMA, and the NCCL settings to try with this machine's interface
names. Both also report what the logs say (NCCL timeouts, system errors, CUDA OOM). Pure.
"""

from __future__ import annotations

from gpuwizard.core.facts import HostFacts, Nic
from gpuwizard.core.hints import KnownError, find
from gpuwizard.core.machine_words import counted
from gpuwizard.doctor.findings import Finding, Severity
from gpuwizard.doctor.observed import BenchFits, LogText, Observed
from gpuwizard.recommend.table import CompatTable

OOM_SOURCE = "the guide's 'out of GPU memory'; PyTorch CUDA memory management notes"
NCCL_SOURCE = "the guide's 'slow multi-node communication'; NCCL environment variables"
MULTI_NODE_MBPS = 10_000


def _hits(logs: tuple[LogText, ...], *ids: str) -> list[tuple[LogText, KnownError]]:
    return [(log, hit) for log in logs for i in ids if (hit := find(log.text, i))]


def _batch_advice(bench: BenchFits | None) -> str:
    if bench is None:
        return (
            "Halve the batch size until it fits and keep the effective batch with gradient "
            "accumulation (divide the loss by k, step the optimizer every k batches); "
            "`gpuwizard bench` reports a batch that fits here."
        )
    single = {f.mode: f.batch_size for f in bench.fits if f.gpus == 1}
    fitted = ", ".join(f"{size} with {mode}" for mode, size in single.items())
    return (
        f"Batch size: {bench.model} at {bench.image_size} px fitted batch {fitted} per GPU in "
        f"the benchmark on this {bench.gpu}; start a larger model lower, halve until it fits, "
        "and keep the effective batch with gradient accumulation (divide the loss by k, step "
        "the optimizer every k batches)."
    )


def _amp_advice(facts: HostFacts) -> str:
    capabilities = [g.model.compute_capability for g in facts.hardware.gpus]
    if capabilities and all(c and float(c) >= 8.0 for c in capabilities):
        return (
            "AMP: wrap the forward pass in torch.autocast('cuda', dtype=torch.bfloat16) "
            "(these GPUs support bfloat16): activations take half the memory."
        )
    return (
        "AMP: wrap the forward pass in torch.autocast('cuda', dtype=torch.float16) and scale "
        "the loss with torch.amp.GradScaler('cuda') (these GPUs lack fast bfloat16): "
        "activations take half the memory."
    )


def oom_remedies(facts: HostFacts, bench: BenchFits | None) -> str:
    return " ".join(
        (
            _batch_advice(bench),
            "Gradient checkpointing: torch.utils.checkpoint.checkpoint(block, x, "
            "use_reentrant=False) around the big blocks (Hugging Face: "
            "model.gradient_checkpointing_enable()) recomputes activations instead of keeping "
            "them, for about a third more compute.",
            _amp_advice(facts),
            "empty_cache: torch.cuda.empty_cache() between training and evaluation returns "
            "cached blocks (it frees no live tensor); when much memory is reserved but "
            "unallocated, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
        )
    )


def _fit_lines(bench: BenchFits | None) -> tuple[str, ...]:
    if bench is None:
        return ("no benchmark results yet (gpuwizard bench)",)
    fits = [
        f"benchmark: {bench.model} {bench.image_size}px {f.mode} x{f.gpus}: batch {f.batch_size} "
        f"per GPU fits ({f.memory_mib} MiB)"
        for f in bench.fits
    ]
    return (*fits, f"from {bench.path}")


def check_out_of_memory(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not facts.hardware.gpus and not seen.logs:
        return None
    hits = _hits(seen.logs, "cuda-oom")
    fits = _fit_lines(seen.bench)
    if not hits:
        read = (
            f"{counted(len(seen.logs), 'log')} read" if seen.logs else "no failed step or named log"
        )
        return Finding(
            "out-of-memory", "ok", "No out-of-memory errors",
            f"Nothing here ran out of GPU memory ({read}); if your training does, run "
            "`gpuwizard doctor --log train.log` for the remedies with this machine's numbers.",
            evidence=fits, source=OOM_SOURCE,
        )  # fmt: skip
    log, hit = hits[0]
    return Finding(
        "out-of-memory",
        "problem",
        f"Out of GPU memory ({log.label})",
        hit.explanation,
        oom_remedies(facts, seen.bench),
        (hit.line, *fits),
        OOM_SOURCE,
    )


def _speed(nic: Nic) -> str:
    return f"{nic.speed_mbps / 1000:g} Gb/s" if nic.speed_mbps else "speed unknown"


def nccl_settings(facts: HostFacts, seen: Observed) -> tuple[str, ...]:
    """The NCCL environment to try first, with this machine's interface and HCA names."""
    settings = ["NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"]
    ethernet = [n for n in facts.hardware.nics if n.kind == "ethernet" and n.speed_mbps]
    if ethernet:
        top = max(n.speed_mbps or 0 for n in ethernet)
        settings.append(
            "NCCL_SOCKET_IFNAME=" + ",".join(n.name for n in ethernet if n.speed_mbps == top)
        )
    hcas = sorted({p.device for p in seen.infiniband if p.active})
    if hcas:
        settings.append("NCCL_IB_HCA=" + ",".join(hcas))
    elif seen.infiniband:
        settings.append("NCCL_IB_DISABLE=1 (to confirm the fabric is the cause)")
    return tuple(settings)


def _network_evidence(facts: HostFacts, seen: Observed) -> tuple[str, ...]:
    lines = [f"{n.name}: {n.kind}, {_speed(n)}" for n in facts.hardware.nics]
    lines += [
        f"{p.device} port {p.port}: {p.state}, {p.rate}, {p.link_layer}" for p in seen.infiniband
    ]
    if seen.infiniband:
        peermem = "loaded" if "nvidia_peermem" in facts.boot.modules else "not loaded"
        lines.append(f"nvidia_peermem (GPUDirect RDMA): {peermem}")
    conf = facts.installs.managed_files.get("/etc/nccl.conf")
    if conf:
        lines.append("/etc/nccl.conf: " + "; ".join(conf.split()))
    return tuple(lines) or ("no physical network interface found",)


PEERMEM_FIX = (
    "sudo modprobe nvidia_peermem; to load it at every boot: echo nvidia_peermem | sudo tee "
    "/etc/modules-load.d/nvidia-peermem.conf (NCCL_DEBUG=INFO then says 'GPU Direct RDMA Enabled')"
)


def _network_trouble(
    facts: HostFacts, seen: Observed
) -> tuple[Severity, str, str, str | None] | None:
    """(severity, title, sentence, its own fix or None) for the network itself."""
    active = [p for p in seen.infiniband if p.active]
    if seen.infiniband and not active:
        return (
            "problem",
            "InfiniBand ports down",
            (
                "The InfiniBand HCAs have no active port (cable, switch or subnet manager), so NCCL "
                "falls back to TCP sockets"
            ),
            None,
        )
    if facts.hardware.infiniband and not seen.infiniband:
        return (
            "warn",
            "InfiniBand without RDMA drivers",
            (
                "InfiniBand HCAs are on the PCI bus but no RDMA device exists (no /sys/class/"
                "infiniband): NCCL cannot use them until the mlx5_ib / ib_core drivers load"
            ),
            None,
        )
    if active and facts.boot.nvidia_loaded and "nvidia_peermem" not in facts.boot.modules:
        return (
            "warn",
            "GPUDirect RDMA off",
            (
                "InfiniBand is up but nvidia_peermem is not loaded, so NCCL copies through host "
                "memory instead of reading the GPUs directly"
            ),
            PEERMEM_FIX,
        )
    fastest = max((n.speed_mbps or 0 for n in facts.hardware.nics), default=0)
    if not active and fastest < MULTI_NODE_MBPS and len(facts.hardware.gpus) > 1:
        return (
            "warn",
            "Network slow for multi-node training",
            (
                f"The fastest link is {fastest / 1000:g} Gb/s with no InfiniBand: fine on one node, "
                "but gradients between nodes will wait on it (the guide asks for 10 Gb/s or more)"
            ),
            None,
        )
    return None


def check_multi_node(facts: HostFacts, seen: Observed, table: CompatTable) -> Finding | None:
    del table
    if not facts.hardware.gpus and not seen.logs:
        return None
    settings = nccl_settings(facts, seen)
    evidence = _network_evidence(facts, seen)
    try_these = f"Try: {' '.join(settings)} torchrun ..."
    if hits := _hits(seen.logs, "nccl-timeout", "nccl-system-error"):
        log, hit = hits[0]
        trouble = _network_trouble(facts, seen)
        also = f" Also: {trouble[2]}." if trouble else ""
        return Finding(
            "multi-node", "problem", f"NCCL failed ({log.label})",
            f"{hit.explanation}{also}", f"{hit.fix} {try_these}",
            (hit.line, *evidence), NCCL_SOURCE,
        )  # fmt: skip
    if trouble := _network_trouble(facts, seen):
        severity, title, sentence, fix = trouble
        return Finding(
            "multi-node", severity, title, f"{sentence}.", fix or try_these, evidence, NCCL_SOURCE
        )
    ib = "InfiniBand up" if any(p.active for p in seen.infiniband) else "no InfiniBand"
    return Finding(
        "multi-node", "ok", f"Network ready for NCCL ({ib})",
        "Nothing here slows communication between nodes; if a multi-node run is slow or hangs, "
        "start with the settings below.",
        try_these, evidence, NCCL_SOURCE,
    )  # fmt: skip
