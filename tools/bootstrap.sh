#!/usr/bin/env bash
# Install gpuwizard on a fresh server, in its own environment, with a Python >= 3.10.
#
#   tools/bootstrap.sh [SOURCE]      SOURCE: this checkout (default), a wheel, or a pip spec
#
# Works on Ubuntu 20.04/22.04/24.04, Debian 12/13 and Rocky 9, also where the system Python is
# 3.8 or 3.9. The system Python's packages are never touched:
#   1. a system Python >= 3.10 whose venv module works -> a virtual environment from it;
#   2. otherwise the pinned uv release is fetched from the package index (PEP 691 simple API,
#      PIP_INDEX_URL respected, https only), its SHA-256 checked against the value pinned below
#      (the same as wizard/core/pins.yaml), and uv builds the environment, from a system Python
#      >= 3.10 if there is one, else from a standalone CPython it downloads (uv verifies those
#      downloads itself).
# Everything lands in $GPUWIZARD_PREFIX (default ~/.local/share/gpuwizard, or /opt/gpuwizard
# for root), with a `gpuwizard` link in ~/.local/bin (or /usr/local/bin for root).
set -Eeuo pipefail

UV_VERSION="0.13.9"
UV_SHA256_X86_64="d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"
UV_SHA256_AARCH64="5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe"
PIP_VERSION="26.3" # as wizard/core/pins.yaml pins it for Python >= 3.10 (a test keeps them equal)
STANDALONE_PYTHON="3.12"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_spec=${1:-$(dirname "$here")}
if [ "$(id -u)" -eq 0 ]; then
    prefix=${GPUWIZARD_PREFIX:-/opt/gpuwizard}
    bin_dir=${GPUWIZARD_BIN_DIR:-/usr/local/bin}
else
    prefix=${GPUWIZARD_PREFIX:-$HOME/.local/share/gpuwizard}
    bin_dir=${GPUWIZARD_BIN_DIR:-$HOME/.local/bin}
fi
venv="$prefix/venv"

say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }
trap 'die "failed at line $LINENO; nothing outside $prefix was changed"' ERR

# A system interpreter that is at least 3.10, newest first; "" when there is none.
find_python() {
    local candidate
    for candidate in ${GPUWIZARD_PYTHON:-python3.14 python3.13 python3.12 python3.11 python3.10 python3}; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    echo ""
}

# Any python3 at all, to run the small downloader below (3.6 is enough).
any_python() {
    local candidate
    for candidate in python3 /usr/libexec/platform-python; do
        command -v "$candidate" >/dev/null 2>&1 && { command -v "$candidate"; return 0; }
    done
    die "no python3 at all: install it first (apt-get install python3 / dnf install python3)"
}

fetch_uv() {
    local arch sha python
    arch=$(uname -m)
    case "$arch" in
        x86_64) sha=$UV_SHA256_X86_64 ;;
        aarch64) sha=$UV_SHA256_AARCH64 ;;
        *) die "unsupported CPU architecture $arch (x86_64 and aarch64 are supported)" ;;
    esac
    python=$(any_python)
    mkdir -p "$prefix/bin"
    say "fetching uv $UV_VERSION for $arch from the package index"
    "$python" - "$UV_VERSION" "$arch" "$sha" "$prefix/bin/uv" <<'PY'
import hashlib, json, os, stat, sys, tempfile, urllib.request, zipfile

version, arch, want, target = sys.argv[1:5]
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
if not index.startswith("https://"):
    sys.exit("PIP_INDEX_URL %s is not https; refusing to download from it" % index)
request = urllib.request.Request(index + "/uv/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(request, timeout=60))["files"]
tag = "manylinux_2_17_" + arch
wheel = next(f for f in files if f["filename"].startswith("uv-%s-" % version) and tag in f["filename"])
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, wheel["filename"])
    urllib.request.urlretrieve(wheel["url"], path)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest != want:
        sys.exit("uv wheel SHA-256 mismatch: got %s, pinned %s; not using it" % (digest, want))
    with zipfile.ZipFile(path) as archive:
        data = archive.read("uv-%s.data/scripts/uv" % version)
    with open(target + ".part", "wb") as out:
        out.write(data)
    os.chmod(target + ".part", stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    os.replace(target + ".part", target)
PY
}

install_with_venv() {
    local python=$1
    say "using $python ($("$python" -V 2>&1)) for a virtual environment in $venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q "pip==$PIP_VERSION"
    "$venv/bin/python" -m pip install -q "$source_spec"
}

install_with_uv() {
    local python=$1
    [ -x "$prefix/bin/uv" ] || fetch_uv
    export UV_PYTHON_INSTALL_DIR="$prefix/python" UV_CACHE_DIR="$prefix/cache"
    if [ -z "$python" ]; then
        say "no Python >= 3.10 on this system: uv installs a standalone CPython $STANDALONE_PYTHON"
        "$prefix/bin/uv" python install "$STANDALONE_PYTHON"
        python=$STANDALONE_PYTHON
    fi
    say "uv builds the environment in $venv from Python $python"
    "$prefix/bin/uv" venv --quiet --allow-existing --python "$python" "$venv"
    "$prefix/bin/uv" pip install --quiet --python "$venv/bin/python" "$source_spec"
}

main() {
    local python
    mkdir -p "$prefix"
    python=$(find_python)
    if [ -n "$python" ] && [ -z "${GPUWIZARD_FORCE_UV:-}" ] && "$python" -c 'import ensurepip, venv' 2>/dev/null; then
        install_with_venv "$python"
    else
        install_with_uv "$python"
    fi
    mkdir -p "$bin_dir"
    ln -sf "$venv/bin/gpuwizard" "$bin_dir/gpuwizard"
    "$bin_dir/gpuwizard" --version >/dev/null
    say "installed: $bin_dir/gpuwizard ($("$venv/bin/python" -V 2>&1))"
    case ":$PATH:" in
        *":$bin_dir:"*) say "run: gpuwizard" ;;
        *) say "run: $bin_dir/gpuwizard   (or add $bin_dir to PATH)" ;;
    esac
}

main "$@"
