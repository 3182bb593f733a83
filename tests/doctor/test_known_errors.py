"""Every known error is recognised in a real-world sample of its text, and says the specifics it
captured (versions, paths, the GPU) in its explanation and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwizard.core.hints import cuda_from_int, find, find_all, known_errors, match

SAMPLES = Path(__file__).parent / "samples"

# sample file -> (the entry that must win, words its filled explanation + fix must contain)
EXPECTED = {
    "disk-full": ("disk-full", ["The disk is full", "/var/cache/apt/archives/", "retry"]),
    "disk-full-dpkg": ("disk-full", ["The disk is full", "apt-get clean"]),
    "dpkg-lock": ("dpkg-lock", ["(unattended-upgr) holds the dpkg lock", "never delete"]),
    "dpkg-interrupted": ("dpkg-interrupted", ["dpkg --configure -a"]),
    "headers-gone": ("headers-gone", ["linux-headers-5.15.0-91-generic", "upgrade-kernel"]),
    "package-missing": ("package-missing", ["nvidia-driver-580-server-open"]),
    "dkms-build": ("dkms-build", ["6.14.0-29-generic", "/var/lib/dkms/nvidia/570.133.20/build/make.log"]),
    "runfile-build": ("runfile-build", ["/var/log/nvidia-installer.log"]),
    "key-rejected": ("key-rejected", ["refused to load the nvidia module", "MOK"]),
    "key-rejected-kernel": ("key-rejected", ["Secure Boot refused"]),
    "legacy-driver": ("legacy-driver", ["590.44.01 driver", "Tesla V100-SXM2-16GB", "R580"]),
    "nouveau-loaded": ("nouveau-loaded", ["nouveau", "update-initramfs -u"]),
    "nouveau-loaded-kernel": ("nouveau-loaded", ["still drives 0000:01:00.0"]),
    "nvml-mismatch": ("nvml-mismatch", ["NVML 535.183", "Reboot"]),
    "nvrm-api-mismatch": ("nvrm-api-mismatch", ["module is 535.171.04 but", "libraries are 535.183.01"]),
    "no-driver-communication": ("no-driver-communication", ["not loaded", "gpuwizard doctor"]),
    "no-device-nodes": ("no-device-nodes", ["/dev/nvidia*", "nvidia-modprobe"]),
    "no-device-nodes-docker": ("no-device-nodes", ["/dev/nvidia0"]),
    "fabric-not-initialized": ("fabric-not-initialized", ["error 802", "Fabric Manager", "systemctl enable --now nvidia-fabricmanager"]),
    "gpu-lost": ("gpu-lost", ["0000:3B:00.0", "Xid 79"]),
    "xid": ("xid", ["Xid 79 on 0000:3b:00"]),
    "torch-arch-unsupported": ("torch-arch-unsupported", ["NVIDIA GeForce RTX 5090 (sm_120)", "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90"]),
    "no-kernel-image": ("no-kernel-image", ["no kernels compiled for this GPU"]),
    "ptx-toolchain": ("ptx-toolchain", ["newer than the driver supports"]),
    "cuda-extension-mismatch": ("cuda-extension-mismatch", ["nvcc is CUDA 12.4", "built with CUDA 13.0", "cuda-toolkit-13.0"]),
    "torch-driver-too-old": ("torch-driver-too-old", ["CUDA up to 12.2"]),
    "cuda-insufficient-driver": ("cuda-insufficient-driver", ["newer than the driver supports"]),
    "cuda-oom": ("cuda-oom", ["GPU 0 ran out", "2.00 GiB", "gradient checkpointing", "torch.autocast", "empty_cache"]),
    "cuda-oom-old": ("cuda-oom", ["GPU 0 ran out", "20.00 MiB"]),
    "nccl-timeout": ("nccl-timeout", ["ALLREDUCE", "24710", "600000 ms", "NCCL_DEBUG=INFO", "NCCL_SOCKET_IFNAME"]),
    "nccl-system-error": ("nccl-system-error", ["NCCL 2.27.3", "socketStartConnect: Connect to 10.18.0.12<54321> failed", "NCCL_SOCKET_IFNAME"]),
    "checksum": ("checksum", ["checksum"]),
    "silent-prompt": ("silent-prompt", ["question"]),
}  # fmt: skip


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.txt"))


def test_every_entry_has_at_least_one_real_world_sample() -> None:
    covered = {entry for entry, _ in EXPECTED.values()}
    assert covered == {hint.id for hint in known_errors()}


def test_every_sample_has_an_expectation() -> None:
    assert set(sample_names()) == set(EXPECTED)


@pytest.mark.parametrize("name", sample_names())
def test_the_sample_is_recognised_with_its_specifics(name: str) -> None:
    lines = (SAMPLES / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    entry, words = EXPECTED[name]
    found = match(lines)
    assert found is not None, f"{name}: nothing matched"
    assert found.id == entry
    said = f"{found.explanation} {found.fix}"
    for word in words:
        assert word in said, f"{name}: {word!r} not in {said!r}"
    assert "{" not in said, f"{name}: a placeholder was left unfilled: {said!r}"
    assert found.line, "the matched line is kept as evidence"


@pytest.mark.parametrize("hint", known_errors(), ids=lambda h: h.id)
def test_every_sentence_reads_without_its_optional_groups(hint) -> None:  # type: ignore[no-untyped-def]
    """Filled from a match where no optional group took part, no placeholder or gap is left."""
    for sample in SAMPLES.glob("*.txt"):
        text = sample.read_text(encoding="utf-8")
        if (found := find(text, hint.id)) is not None:
            for sentence in (found.explanation, found.fix):
                assert "{" not in sentence and "  " not in sentence and " ," not in sentence


def test_find_all_reports_each_entry_once_in_table_order() -> None:
    text = "\n".join(
        (SAMPLES / f"{name}.txt").read_text(encoding="utf-8")
        for name in ("cuda-oom", "nccl-timeout", "cuda-oom-old")
    )
    assert [k.id for k in find_all(text)] == ["cuda-oom", "nccl-timeout"]


def test_plain_output_matches_nothing() -> None:
    lines = ["Reading package lists... Done", "Setting up nvidia-driver-580-server (580.95.05) ..."]
    assert match(lines) is None


def test_cuda_integer_versions_read_as_versions() -> None:
    assert (cuda_from_int("12040"), cuda_from_int("11080"), cuda_from_int("13000")) == (
        "12.4",
        "11.8",
        "13.0",
    )
