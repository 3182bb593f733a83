"""The command-line contract, checked the way a script would use it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwizard.frontends.cli import main

CONTRACT_KEYS = {
    "status",
    "gpus",
    "driver",
    "torch",
    "python",
    "cuda_toolkit",
    "changes",
    "reasons",
    "rejected",
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_profiles_lists_one_per_line_with_a_description(capsys):
    code, out, _ = run(capsys, "profiles")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) >= 9
    assert all(len(line.split(None, 1)) == 2 for line in lines)


def test_detect_json_is_facts_and_findings(capsys):
    code, out, _ = run(capsys, "detect", "--json", "--simulate", "h100x8-ubuntu2204-fresh")
    data = json.loads(out)
    assert code == 0 and data["schema"] == 1
    assert len(data["facts"]["hardware"]["gpus"]) == 8
    assert {f["id"] for f in data["findings"]} >= {"ram", "disks", "network", "os"}


def test_detect_text_shows_the_host_at_a_glance(capsys):
    code, out, _ = run(capsys, "--simulate", "a100x4-ubuntu2004-fresh", "detect")
    assert code == 0
    assert "4x A100 SXM4 40GB (Ampere, sm_80)" in out and "nouveau loaded" in out


def test_recommend_json_contract(capsys):
    code, out, _ = run(capsys, "recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--json")
    data = json.loads(out)
    assert code == 0 and set(data) >= CONTRACT_KEYS
    assert data["status"] == "ok"
    assert set(data["driver"]) >= {"action", "branch", "min_version", "flavor", "packages"}
    assert set(data["torch"]) >= {"version", "variant", "index_url", "torchvision", "torchaudio"}
    assert data["python"] == {"version": "3.10", "action": "use_system"}
    assert all(set(r) == {"option", "reason"} for r in data["rejected"])


def test_recommend_unsupported_exits_3_with_a_reason(capsys):
    code, out, _ = run(
        capsys, "recommend", "--gpu", "RTX 5090", "--gpu", "V100", "--os", "ubuntu:24.04", "--json"
    )
    data = json.loads(out)
    assert code == 3 and data["status"] == "unsupported" and data["reason"]


def test_recommend_from_a_facts_file(capsys, tmp_path):
    _, out, _ = run(capsys, "detect", "--json", "--simulate", "v100x4-ubuntu2204-driver535")
    facts = tmp_path / "facts.json"
    facts.write_text(out)
    code, out, _ = run(capsys, "recommend", "--facts", str(facts), "--json")
    assert code == 0 and json.loads(out)["driver"]["action"] == "keep"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["recommend", "--gpu", "Voodoo", "--os", "ubuntu:22.04"],
            "--gpu 'Voodoo': no NVIDIA GPU matches",
        ),
        (["recommend", "--gpu", "H100", "--os", "arch:rolling"], "unknown OS; accepted:"),
        (["recommend", "--gpu", "H100"], "describe a host with both --gpu and --os"),
        (["recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--torch", "2.x"], "--torch '2.x'"),
        (
            ["recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--variant", "cuda12"],
            "--variant 'cuda12'",
        ),
        (
            ["recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--keep-driver"],
            "--keep-driver: no NVIDIA driver is installed",
        ),
        (
            ["recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--driver", "five"],
            "--driver 'five'",
        ),
        (
            ["recommend", "--gpu", "H100", "--os", "ubuntu:22.04", "--arch", "riscv"],
            "invalid choice: 'riscv'",
        ),
        (["recommend", "--facts", "/nonexistent.json"], "--facts /nonexistent.json: no such file"),
        (["--simulate", "nope", "detect"], "no built-in profile 'nope'"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "content",
    ["", "{", '{"schema": 1}', '{"schema": 99}', "[1, 2]", '{"facts": {"schema": 1, "os": 3}}'],
)
def test_a_malformed_facts_file_is_one_line(capsys, tmp_path, content):
    path = tmp_path / "facts.json"
    path.write_text(content)
    code, _, err = run(capsys, "recommend", "--facts", str(path))
    assert code == 2 and err.startswith("gpuwizard: --facts") and err.count("\n") == 1


def test_capture_host_refuses_a_folder_that_exists(capsys, tmp_path):
    (tmp_path / "x").write_text("")
    code, _, err = run(capsys, "--simulate", "t4-debian12-fresh", "capture-host", str(tmp_path))
    assert code == 2 and "exists; give a new folder" in err


def test_capture_host_writes_a_recording(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "--simulate",
        "t4-debian12-fresh",
        "capture-host",
        str(tmp_path / "rec"),
        "--description",
        "a T4",
    )
    assert code == 0 and "recorded 1 GPU" in out
    assert json.loads((tmp_path / "rec" / "profile.json").read_text())["description"] == "a T4"


def test_detect_json_loads_neither_textual_nor_torch():
    code = (
        "import sys, io, contextlib\n"
        "from gpuwizard.frontends.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['detect', '--json', '--simulate', 'h100x8-ubuntu2204-fresh'])\n"
        "    main(['recommend', '--simulate', 'h100x8-ubuntu2204-fresh', '--json'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'pynvml')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_console_script_runs():
    script = Path(sys.executable).parent / "gpuwizard"  # installed beside the interpreter
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.startswith("gpuwizard ")
