"""Existing PyTorch installs, found from files in fixed places (machine/detect/torch_envs.py).

Each layout people have is built in a temporary root the way it is on disk (pyvenv.cfg, conda-
meta, version.py, dist-info and egg-info folders, links as links.json holds them), and the
hostile ones are there too: symlink loops, a folder of thousands of names, a 50 MB pyvenv.cfg,
a PATH of thousands of entries. Every read detection makes is bounded: a test counts them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwizard.core.facts import Interpreter, NvmlUnavailable
from gpuwizard.machine.detect import torch_envs
from gpuwizard.machine.detect.recording import RecordedCommands
from gpuwizard.machine.detect.torch_envs import (
    FILE_LIMIT,
    LIST_LIMIT,
    PASSWD_LIMIT,
    SITE_LIST_LIMIT,
    read_torch_envs,
)
from gpuwizard.machine.host import SAFE_PATH, Host

VERSION_PY = "__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda}\n"
PY312 = (Interpreter("/usr/bin/python3.12", "3.12"),)


def write(root: Path, path: str, text: str = "") -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def torch_in(
    root: Path, site: str, version: str, cuda: str | None, vision: str | None = None
) -> None:
    write(root, f"{site}/torch/version.py", VERSION_PY.format(version=version, cuda=repr(cuda)))
    if vision:
        write(root, f"{site}/torchvision/version.py", f"__version__ = '{vision}'\n")


def venv(root: Path, prefix: str, python: str = "3.12.3") -> str:
    write(root, f"{prefix}/pyvenv.cfg", f"home = /usr/bin\nversion = {python}\n")
    write(root, f"{prefix}/bin/python")
    return f"{prefix}/lib/python{python.rsplit('.', 1)[0]}/site-packages"


def host(
    root: Path, environ: dict[str, str] | None = None, links: dict[str, str] | None = None
) -> Host:
    return Host(
        root=root,
        run=RecordedCommands({}),
        nvml=lambda: NvmlUnavailable("none"),
        links=links or {},
        environ=environ or {},
    )


def found(h: Host, interpreters: tuple[Interpreter, ...] = PY312) -> dict[str, tuple[object, ...]]:
    return {
        e.path: (e.kind, e.torch, e.torch_cuda, e.torchvision, e.found_by, e.on_path)
        for e in read_torch_envs(h, interpreters)
    }


def test_the_first_python3_on_path_is_a_venv(tmp_path: Path) -> None:
    site = venv(tmp_path, "/opt/torch/.venv")
    torch_in(tmp_path, site, "2.11.0+cu130", "13.0", "0.26.0")
    links = {"/opt/torch/.venv/bin/python3": "/usr/bin/python3", "/usr/bin/python3": "python3.12"}
    h = host(tmp_path, {"PATH": f"/opt/torch/.venv/bin:{SAFE_PATH}"}, links)
    assert found(h) == {
        "/opt/torch/.venv": ("venv", "2.11.0+cu130", "13.0", "0.26.0",
                             ("first python3 on PATH", "venv in /opt"), True),
    }  # fmt: skip
    (env,) = read_torch_envs(h, PY312)
    assert (env.python, env.python_version, env.site) == (
        "/opt/torch/.venv/bin/python3",
        "3.12",
        site,
    )
    assert env.words() == "torch 2.11.0+cu130 (CUDA 13.0) in /opt/torch/.venv, Python 3.12"


def test_the_active_venv_and_conda_environment_count_when_passed_on(tmp_path: Path) -> None:
    torch_in(tmp_path, venv(tmp_path, "/work/proj/.venv"), "2.9.1+cu128", "12.8")
    write(tmp_path, "/work/conda/envs/x/conda-meta/history")
    write(tmp_path, "/work/conda/envs/x/bin/python")
    torch_in(tmp_path, "/work/conda/envs/x/lib/python3.11/site-packages", "2.10.0", "12.8")
    h = host(tmp_path, {"VIRTUAL_ENV": "/work/proj/.venv", "CONDA_PREFIX": "/work/conda/envs/x"})
    assert {p: v[4] for p, v in found(h).items()} == {
        "/work/proj/.venv": ("VIRTUAL_ENV",),
        "/work/conda/envs/x": ("CONDA_PREFIX",),
    }


def test_conda_installs_in_the_usual_places_with_their_environments(tmp_path: Path) -> None:
    write(tmp_path, "/opt/conda/conda-meta/history")  # base: no torch
    write(tmp_path, "/opt/conda/envs/pytorch/conda-meta/python-3.11.9-h0.json", "{}")
    torch_in(
        tmp_path,
        "/opt/conda/envs/pytorch/lib/python3.11/site-packages",
        "2.3.1+cu121",
        "12.1",
        "0.18.1+cu121",
    )
    write(tmp_path, "/opt/conda/envs/empty/conda-meta/history")
    assert found(host(tmp_path)) == {
        "/opt/conda/envs/pytorch": (
            "conda",
            "2.3.1+cu121",
            "12.1",
            "0.18.1+cu121",
            ("conda install /opt/conda",),
            False,
        ),
    }


def test_the_sudo_users_home_comes_from_passwd(tmp_path: Path) -> None:
    write(
        tmp_path,
        "/etc/passwd",
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/data/alice:/bin/bash\n",
    )
    torch_in(tmp_path, venv(tmp_path, "/data/alice/.venv", "3.10.12"), "2.5.1+cu124", "12.4")
    write(tmp_path, "/data/alice/miniforge3/conda-meta/history")
    torch_in(tmp_path, "/data/alice/miniforge3/lib/python3.12/site-packages", "2.6.0", "12.4")
    h = host(tmp_path, {"PATH": SAFE_PATH, "HOME": "/root", "SUDO_USER": "alice"})
    assert set(found(h)) == {"/data/alice/.venv", "/data/alice/miniforge3"}


def test_lambda_stack_is_torch_in_the_systems_dist_packages(tmp_path: Path) -> None:
    site = "/usr/lib/python3/dist-packages"
    torch_in(tmp_path, site, "2.4.1", "12.4", "0.19.1")
    write(tmp_path, "/usr/bin/python3.10")
    h = host(tmp_path, {"PATH": SAFE_PATH}, {"/usr/bin/python3": "python3.10"})
    assert found(h, (Interpreter("/usr/bin/python3.10", "3.10"),)) == {
        site: (
            "system",
            "2.4.1",
            "12.4",
            "0.19.1",
            ("first python3 on PATH", "system dist-packages"),
            True,
        ),
    }


def test_pip_as_root_on_debian_and_a_users_local_site(tmp_path: Path) -> None:
    torch_in(tmp_path, "/usr/local/lib/python3.12/dist-packages", "2.11.0+cu130", "13.0")
    torch_in(tmp_path, "/home/bob/.local/lib/python3.12/site-packages", "2.14.1", "13.0")
    h = host(tmp_path, {"HOME": "/home/bob"})
    assert {p: v[0] for p, v in found(h).items()} == {
        "/usr/local/lib/python3.12/dist-packages": "system",
        "/home/bob/.local/lib/python3.12/site-packages": "user",
    }


def test_without_version_py_the_dist_info_name_says_what_it_can(tmp_path: Path) -> None:
    (tmp_path / "opt/a/.venv/lib/python3.12/site-packages/torch").mkdir(parents=True)
    venv(tmp_path, "/opt/a/.venv")
    (tmp_path / "opt/a/.venv/lib/python3.12/site-packages/torch-2.5.1+cu124.dist-info").mkdir()
    (tmp_path / "opt/b/venv/lib/python3.12/site-packages/torch").mkdir(parents=True)
    venv(tmp_path, "/opt/b/venv")
    (tmp_path / "opt/b/venv/lib/python3.12/site-packages/torch-2.5.1.dist-info").mkdir()
    envs = {e.path: e for e in read_torch_envs(host(tmp_path), PY312)}
    assert (envs["/opt/a/.venv"].torch_cuda, envs["/opt/a/.venv"].build_known) == ("12.4", True)
    assert (envs["/opt/b/venv"].torch_cuda, envs["/opt/b/venv"].build) == (None, "build unknown")


def test_gpuwizards_own_environments_are_not_listed_here(tmp_path: Path) -> None:
    torch_in(tmp_path, venv(tmp_path, "/opt/gpuwizard/envs/pytorch"), "2.14.1+cu130", "13.0")
    h = host(
        tmp_path,
        {"VIRTUAL_ENV": "/opt/gpuwizard/envs/pytorch", "PATH": "/opt/gpuwizard/envs/pytorch/bin"},
    )
    assert found(h) == {}


def test_a_cpu_build_is_a_known_build_without_cuda(tmp_path: Path) -> None:
    torch_in(tmp_path, venv(tmp_path, "/root/.venv"), "2.14.1+cpu", None)
    (env,) = read_torch_envs(host(tmp_path), PY312)
    assert (env.torch_cuda, env.build_known, env.build) == (None, True, "CPU only")


# ----------------------------------------------------------------------------------- hostile
def test_a_python3_that_links_to_itself_stops(tmp_path: Path) -> None:
    h = host(tmp_path, {"PATH": "/loop/bin"}, {"/loop/bin/python3": "python3", "/a/bin/python3": "../../b/bin/python3",
                                               "/b/bin/python3": "../../a/bin/python3"})  # fmt: skip
    assert found(h) == {}
    assert found(host(tmp_path, {"PATH": "/a/bin"}, dict(h.links))) == {}


def test_a_real_symlink_loop_on_this_machine_stops(tmp_path: Path) -> None:
    """The real machine's door follows real links: python3 -> python3, and a venv folder that
    is a link to itself."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/python3").symlink_to("python3")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    real = Host(root=Path("/"), run=RecordedCommands({}), nvml=lambda: NvmlUnavailable("none"),
                environ={"PATH": f"{tmp_path}/bin", "VIRTUAL_ENV": f"{tmp_path}/loop"})  # fmt: skip
    assert [e for e in read_torch_envs(real, ()) if str(tmp_path) in e.path] == []


def test_a_folder_of_thousands_is_read_only_so_far(tmp_path: Path) -> None:
    """A conda envs/ folder with 200 environments that all have torch: LIST_LIMIT are looked at;
    a site-packages of 6,000 dist-info names without version.py: the listing is capped."""
    for i in range(200):
        write(tmp_path, f"/opt/conda/envs/e{i:03d}/conda-meta/history")
        torch_in(
            tmp_path,
            f"/opt/conda/envs/e{i:03d}/lib/python3.12/site-packages",
            "2.5.1+cu124",
            "12.4",
        )
    write(tmp_path, "/opt/conda/conda-meta/history")
    assert len(found(host(tmp_path))) == LIST_LIMIT
    site = tmp_path / "srv/lib/python3.12/site-packages"
    (site / "torch").mkdir(parents=True)
    for i in range(6000):
        (site / f"pkg{i:05d}-1.0.dist-info").mkdir()
    (site / "torch-2.5.1+cu124.dist-info").mkdir()
    counted = Counting(tmp_path, {"VIRTUAL_ENV": "/srv"})
    write(tmp_path, "/srv/pyvenv.cfg", "version = 3.12.1\n")
    read_torch_envs(counted, ())
    assert max(counted.listed) <= SITE_LIST_LIMIT


def test_a_50_mb_pyvenv_cfg_is_read_only_to_its_cap(tmp_path: Path) -> None:
    cfg = tmp_path / "opt/big/.venv/pyvenv.cfg"
    site = venv(tmp_path, "/opt/big/.venv")
    torch_in(tmp_path, site, "2.11.0+cu130", "13.0")
    with cfg.open("r+b") as handle:
        handle.truncate(50 * 1024 * 1024)  # version on line 2, then 50 MB of NUL
    counted = Counting(tmp_path, {})
    (env,) = read_torch_envs(counted, ())
    assert env.python_version == "3.12"
    assert max(counted.read) <= FILE_LIMIT


def test_a_huge_version_py_and_passwd_are_read_only_to_their_caps(tmp_path: Path) -> None:
    site = venv(tmp_path, "/root/.venv")
    write(
        tmp_path,
        f"{site}/torch/version.py",
        "__version__ = '2.9.0+cu128'\ncuda = '12.8'\n" + "#" * (8 * 1024 * 1024),
    )
    write(tmp_path, "/etc/passwd", "x" * (4 * 1024 * 1024))
    counted = Counting(tmp_path, {"SUDO_USER": "alice"})
    assert [e.torch for e in read_torch_envs(counted, ())] == ["2.9.0+cu128"]
    assert max(counted.read) <= PASSWD_LIMIT


@pytest.mark.parametrize(
    "environ",
    [
        pytest.param(
            {"PATH": ":".join(f"/p{i}" for i in range(20_000))}, id="a PATH of 20,000 entries"
        ),
        pytest.param(
            {"PATH": "relative:../x:\0/bad:/ok/../..//"}, id="relative, NUL and dot-dot entries"
        ),
        pytest.param(
            {"VIRTUAL_ENV": "../../etc", "CONDA_PREFIX": "/" + "x" * 10_000},
            id="odd environment paths",
        ),
        pytest.param(
            {"SUDO_USER": "../../root", "HOME": "relative"}, id="a user name that is a path"
        ),
    ],
)
def test_hostile_session_values_are_bounded_and_harmless(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    counted = Counting(tmp_path, environ)
    assert read_torch_envs(counted, ()) == ()
    assert counted.exists_calls[0] <= torch_envs.PATH_ENTRIES + 200


class Counting(Host):
    """A Host that counts what detection asks of it: exists calls, listing and read caps."""

    def __init__(self, root: Path, environ: dict[str, str]) -> None:
        base = host(root, environ)
        super().__init__(**{f.name: getattr(base, f.name) for f in dataclasses.fields(Host)})
        object.__setattr__(self, "listed", [0])
        object.__setattr__(self, "read", [0])
        object.__setattr__(self, "exists_calls", [0])

    def exists(self, absolute: str) -> bool:
        self.exists_calls[0] += 1
        return super().exists(absolute)

    def listdir(self, absolute: str, limit: int | None = None) -> tuple[str, ...]:
        assert limit is not None, f"an unbounded listing of {absolute}"
        self.listed.append(limit)
        return super().listdir(absolute, limit)

    def read_bytes(self, absolute: str, limit: int | None = None) -> bytes | None:
        assert limit is not None, f"an unbounded read of {absolute}"
        self.read.append(limit)
        return super().read_bytes(absolute, limit)


def test_a_version_py_that_names_no_cuda_version_is_an_unknown_build(tmp_path: Path) -> None:
    site = venv(tmp_path, "/root/.venv")
    write(
        tmp_path, f"{site}/torch/version.py", "__version__ = '2.5.1a0+git1234'\ncuda = 'rm -rf /'\n"
    )
    (env,) = read_torch_envs(host(tmp_path), PY312)
    assert (env.torch, env.torch_cuda, env.build_known) == ("2.5.1a0+git1234", None, False)
