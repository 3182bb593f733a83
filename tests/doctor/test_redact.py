"""The support bundle's redaction: what is replaced, what stays readable, and consistency."""

from __future__ import annotations

import pytest

from gpuwizard.doctor.redact import Redactor

CASES = [
    pytest.param("inet 10.23.45.67/24 brd 10.23.45.255", "inet <ip-1>/24 brd <ip-2>", id="IPv4"),
    pytest.param("Connect to 10.18.0.12<54321> failed", "Connect to <ip-1><54321> failed", id="IPv4 in NCCL's format"),
    pytest.param("inet6 2001:db8:85a3::8a2e:370:7334/64 scope global", "inet6 <ip-1>/64 scope global", id="IPv6"),
    pytest.param("inet6 fe80::1c2b:3aff:fe4d:5e6f/64 scope link", "inet6 <ip-1>/64 scope link", id="IPv6 link-local"),
    pytest.param("link/ether 52:54:00:ab:cd:ef brd ff:ff:ff:ff:ff:ff", "link/ether <mac-1> brd ff:ff:ff:ff:ff:ff", id="MAC, not broadcast"),
    pytest.param("link/infiniband 80:00:00:48:fe:80:00:00:00:00:00:00:24:8a:07:03:00:a1:b2:c3 brd", "link/infiniband <mac-1> brd", id="InfiniBand address"),
    pytest.param("Node GUID: 0x248a070300a1b2c3", "Node GUID: <guid-1>", id="InfiniBand GUID"),
    pytest.param("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f3c2a1b-9d8e-4f7a-b6c5-1d2e3f4a5b6c)", "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-<uuid-1>)", id="GPU UUID"),
    pytest.param('"boot_id": "6f0c6c2e-3c51-4a0a-9d0e-2b7a1f9e4c11"', '"boot_id": "<uuid-1>"', id="boot_id"),
    pytest.param('"machine_id": "3d1f0a8c2b7e4f19a6c5d2e8b1f04a7c"', '"machine_id": "<id-1>"', id="machine-id"),
    pytest.param("    Serial Number                         : 1650521012345", "    Serial Number                         : <serial-1>", id="GPU serial (nvidia-smi -q)"),
    pytest.param("export MOK_PASSWORD=Canary-Pa55word!", "export MOK_PASSWORD=<secret-1>", id="password in the environment"),
    pytest.param("password: hunter2-long", "password: <secret-1>", id="password: value"),
    pytest.param("sudo mokutil --password s3cret-value", "sudo mokutil --password <secret-1>", id="password flag"),
    pytest.param("Err:1 http://proxyuser:Canary-Pa55@proxy.example.com:3128 jammy", "Err:1 http://proxyuser:<secret-1>@proxy.example.com:3128 jammy", id="credentials in a URL"),
    pytest.param("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "Authorization: Bearer <secret-1>", id="bearer token"),
    pytest.param("HF_TOKEN is hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF_TOKEN is <secret-1>", id="Hugging Face token"),
    pytest.param("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "<secret-1>", id="private key"),
]  # fmt: skip

KEPT = [
    pytest.param("0000:1b:00.0 bound to nvidia; NVRM: Xid (PCI:0000:1b:00): 79", id="PCI addresses"),
    pytest.param("[rank3]:[E1202 14:03:11.482107123 ProcessGroupNCCL.cpp:632]", id="timestamps"),
    pytest.param("nvidia-driver-535-server 535.247.01-0ubuntu0.22.04.1 linux-headers-generic 5.15.0.126.125", id="versions"),
    pytest.param("c10d::ProcessGroupNCCL and std::vector, 127.0.0.1, ::1, 255.255.255.0", id="C++ names, loopback, netmasks"),
    pytest.param("git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'", id="a git hash"),
    pytest.param("[sudo] password for ubuntu:", id="a password prompt with nothing typed"),
    pytest.param("Ubuntu 22.04.5 LTS on host ubuntu", id="a generic hostname stays"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_identifying_values_are_replaced(text: str, expected: str) -> None:
    assert Redactor(hostnames=["ubuntu"]).redact(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_what_identifies_nothing_stays_readable(text: str) -> None:
    assert Redactor(hostnames=["ubuntu"]).redact(text) == text


def test_the_machines_own_hostname_and_serials_are_replaced_everywhere() -> None:
    redactor = Redactor(
        hostnames=["gpu-node-07.cluster.example.com"],
        serials=["S1X2Y3Z4", "To Be Filled By O.E.M."],
    )
    text = (
        "ssh gpu-node-07 and GPU-NODE-07.cluster.example.com; chassis S1X2Y3Z4; gpu-node-070 stays"
    )
    assert (
        redactor.redact(text) == "ssh <host-2> and <host-1>; chassis <serial-1>; gpu-node-070 stays"
    )


def test_the_same_value_gets_the_same_placeholder_in_every_text() -> None:
    redactor = Redactor()
    first = redactor.redact("from 10.0.0.5 to 10.0.0.6")
    second = redactor.redact(
        "again 10.0.0.6 then 10.0.0.5, mac 52:54:00:AB:CD:EF and 52:54:00:ab:cd:ef"
    )
    assert (first, second) == (
        "from <ip-1> to <ip-2>",
        "again <ip-2> then <ip-1>, mac <mac-1> and <mac-1>",
    )
    assert redactor.counts == {"ip": 2, "mac": 1}
