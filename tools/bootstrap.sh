#!/usr/bin/env bash
# Install gpuwizard on a fresh server, in its own environment, with a Python >= 3.10.
#
#   tools/bootstrap.sh [SOURCE]      SOURCE: this checkout (default), a wheel, or a pip spec
#
# Works on Ubuntu 20.04/22.04/24.04, Debian 12/13 and Rocky 9, also where the system Python is
# 3.8 or 3.9. The system Python's packages are never touched:
#   1. a system Python >= 3.10 whose venv module works -> a virtual environment from it;
#   2. as root on Debian/Ubuntu (apt-get), a Python >= 3.10 without its venv module (stock
#      Debian 12/13) gets it from the OS archive (python3.X-venv, a few MB), and a machine
#      without python3 at all gets python3 and python3-venv, each said before it happens; then 1;
#   3. otherwise the pinned uv release is fetched from the package index (PEP 691 simple API,
#      PIP_INDEX_URL respected, https only), its SHA-256 checked against the value pinned below
#      (the same as wizard/core/download_pins.yaml), and uv builds the environment, from a system Python
#      >= 3.10 if there is one, else from a standalone CPython it downloads from
#      python-build-standalone's releases and checks against the SHA-256 its own release carries.
#      uv trusts the system certificate store (UV_SYSTEM_CERTS), as Python's downloader does.
# gpuwizard and its dependencies come from the package index (pip or uv), pip pinned below.
# Everything lands in $GPUWIZARD_PREFIX (default ~/.local/share/gpuwizard, or /opt/gpuwizard
# for root), with a `gpuwizard` link in ~/.local/bin (or /usr/local/bin for root).
#
# No Python started here imports from the caller's folder (issue 28): the script works from /
# and every interpreter runs isolated (-I: no current folder on sys.path, no user site, no
# PYTHON* variables), so modules planted where root happens to stand never run.
set -Eeuo pipefail

UV_VERSION="0.13.9"
UV_SHA256_X86_64="d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"
UV_SHA256_AARCH64="5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe"
PIP_VERSION="26.3" # as wizard/core/download_pins.yaml pins it for Python >= 3.10 (a test keeps them equal)
STANDALONE_PYTHON="3.12"

here=$(CDPATH='' cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
if [ -z "${1:-}" ] && [ ! -e "$(dirname -- "$here")/pyproject.toml" ]; then
    printf 'bootstrap: %s is not in a gpuwizard checkout or release archive: name SOURCE (a wheel, or gpuwizard==VERSION from the package index)\n' "$here" >&2
    exit 2
fi
source_spec=${1:-$(dirname -- "$here")}
case $source_spec in # a file or folder is made absolute before the script leaves the caller's folder
    */* | .*) source_spec=$(CDPATH='' cd -- "$(dirname -- "$source_spec")" && pwd -P)/$(basename -- "$source_spec") ;;
    *) [ -e "$source_spec" ] && source_spec=$PWD/$source_spec ;;
esac
cd /

if [ "$(id -u)" -eq 0 ]; then
    prefix=${GPUWIZARD_PREFIX:-/opt/gpuwizard}
    bin_dir=${GPUWIZARD_BIN_DIR:-/usr/local/bin}
else
    prefix=${GPUWIZARD_PREFIX:-$HOME/.local/share/gpuwizard}
    bin_dir=${GPUWIZARD_BIN_DIR:-$HOME/.local/bin}
fi
venv="$prefix/venv"
prefix_existed=$([ -e "$prefix" ] && echo 1 || echo 0)
apt_installed="" # what apt-get installed in this run, for the failure message
linked=""        # the gpuwizard link this run made

say() { printf 'bootstrap: %s\n' "$*"; }
# Ends the run, undoing what it can: a prefix this run created is removed whole.
fail() {
    local undone
    if [ "$prefix_existed" = 1 ]; then
        undone="nothing outside $prefix was changed${apt_installed:+ but what apt-get installed:$apt_installed}"
    else
        undone="$prefix was not created"
        if [ -e "$prefix" ]; then
            rm -rf -- "$prefix"
            [ -z "$linked" ] || rm -f -- "$linked"
            undone="removed $prefix, which this run had created"
        fi
        [ -z "$apt_installed" ] || undone="$undone; apt-get installed$apt_installed"
    fi
    printf 'bootstrap: %s (%s)\n' "$1" "$undone" >&2
    exit 1
}

trap 'fail "failed: $BASH_COMMAND (line $LINENO)"' ERR

# A system interpreter that is at least 3.10, newest first; "" when there is none.
find_python() {
    local candidate
    for candidate in ${GPUWIZARD_PYTHON:-python3.14 python3.13 python3.12 python3.11 python3.10 python3}; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -I -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    echo ""
}

# Any python3 at all, to run the small downloader below (3.6 is enough); "" when there is none.
any_python() {
    local candidate
    for candidate in python3 /usr/libexec/platform-python; do
        command -v "$candidate" >/dev/null 2>&1 && { command -v "$candidate"; return 0; }
    done
    echo ""
}

has_venv() { "$1" -I -c 'import ensurepip, venv' 2>/dev/null; }

# Root with apt-get: packages come from the archive the machine already trusts.
can_apt() { [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; }

apt_install() {
    local log
    say "installing $* from the OS archive (apt-get)"
    log=$(mktemp)
    # apt's progress and debconf's notes stay out of the way unless something fails.
    if ! { DEBIAN_FRONTEND=noninteractive apt-get -q update &&
        DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends "$@"; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        rm -f -- "$log"
        fail "apt-get could not install $* (its last lines are above)"
    fi
    rm -f -- "$log"
    apt_installed="$apt_installed $*"
}

# The python3.X-venv package of this interpreter (Debian and Ubuntu split venv and ensurepip out).
venv_package() { "$1" -I -c 'import sys; print("python3.%d-venv" % sys.version_info[1])'; }

fetch_uv() {
    local arch sha python
    arch=$(uname -m)
    case "$arch" in
        x86_64) sha=$UV_SHA256_X86_64 ;;
        aarch64) sha=$UV_SHA256_AARCH64 ;;
        *) fail "unsupported CPU architecture $arch (x86_64 and aarch64 are supported)" ;;
    esac
    python=$(any_python)
    [ -n "$python" ] || fail "no python3 at all: install it first (apt-get install python3 python3-venv / dnf install python3)"
    mkdir -p "$prefix/bin"
    say "fetching uv $UV_VERSION for $arch from the package index"
    # Its own messages are the one line that names the address and the error.
    if ! "$python" -I - "$UV_VERSION" "$arch" "$sha" "$prefix/bin/uv" <<'PY'; then
import hashlib, json, os, stat, sys, tempfile, urllib.error, urllib.parse, urllib.request, zipfile

version, arch, want, target = sys.argv[1:5]
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


class HttpsOnly(urllib.request.HTTPRedirectHandler):
    """A redirect that leaves https is refused, as every download of gpuwizard's is."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not newurl.startswith("https://"):
            raise urllib.error.URLError("redirected to %s, which is not https" % newurl)
        return urllib.request.HTTPRedirectHandler.redirect_request(self, req, fp, code, msg, headers, newurl)


def download(url, accept=None):
    """The body at url; any network, TLS or HTTP failure ends the run in one line."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        if not url.startswith("https://"):
            raise urllib.error.URLError("not https; refusing to download from it")
        with urllib.request.build_opener(HttpsOnly).open(request, timeout=60) as answer:
            return answer.read()
    except urllib.error.HTTPError as error:
        problem = "HTTP %s %s" % (error.code, error.reason)
    except urllib.error.URLError as error:
        problem = str(error.reason)
    except (OSError, ValueError) as error:  # timeouts, resets, a truncated body, a bad URL
        problem = str(error) or type(error).__name__
    if "CERTIFICATE_VERIFY_FAILED" in problem:
        problem += " (behind a proxy that re-signs TLS, add its CA to the system store)"
    sys.exit("bootstrap: could not download %s: %s" % (url, problem))


if not index.startswith("https://"):
    sys.exit("bootstrap: PIP_INDEX_URL %s is not https; refusing to download from it" % index)
listing = index + "/uv/"
try:
    files = json.loads(download(listing, "application/vnd.pypi.simple.v1+json"))["files"]
except (ValueError, KeyError, TypeError):
    sys.exit("bootstrap: %s is not a PEP 691 JSON listing" % listing)
tag = "manylinux_2_17_" + arch
wheels = [f for f in files if f["filename"].startswith("uv-%s-" % version) and tag in f["filename"]]
if not wheels:
    sys.exit("bootstrap: %s lists no uv %s wheel for %s" % (listing, version, tag))
data = download(urllib.parse.urljoin(listing, wheels[0]["url"]))
digest = hashlib.sha256(data).hexdigest()
if digest != want:
    sys.exit("bootstrap: uv wheel SHA-256 mismatch: got %s, pinned %s; not using it" % (digest, want))
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, wheels[0]["filename"])
    with open(path, "wb") as out:
        out.write(data)
    with zipfile.ZipFile(path) as archive:
        binary = archive.read("uv-%s.data/scripts/uv" % version)
with open(target + ".part", "wb") as out:
    out.write(binary)
os.chmod(target + ".part", stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
os.replace(target + ".part", target)
PY
        fail "uv was not installed"
    fi
}

install_with_venv() {
    local python=$1
    say "using $python ($("$python" -V 2>&1)) for a virtual environment in $venv"
    mkdir -p "$prefix"
    "$python" -I -m venv "$venv"
    "$venv/bin/python" -I -m pip install -q "pip==$PIP_VERSION"
    "$venv/bin/python" -I -m pip install -q "$source_spec"
}

install_with_uv() {
    local python=$1
    [ -x "$prefix/bin/uv" ] || fetch_uv
    # A proxy that re-signs TLS is trusted through the system store; uv's own bundle lacks it.
    export UV_PYTHON_INSTALL_DIR="$prefix/python" UV_CACHE_DIR="$prefix/cache" UV_SYSTEM_CERTS=1
    if [ -z "$python" ]; then
        say "no Python >= 3.10 on this system: uv installs a standalone CPython $STANDALONE_PYTHON (python-build-standalone, checked against the SHA-256 uv $UV_VERSION carries)"
        "$prefix/bin/uv" python install "$STANDALONE_PYTHON"
        python=$STANDALONE_PYTHON
    fi
    say "uv builds the environment in $venv from Python $python"
    "$prefix/bin/uv" venv --quiet --allow-existing --python "$python" "$venv"
    "$prefix/bin/uv" pip install --quiet --python "$venv/bin/python" "$source_spec"
}

# Sets python (found by the caller): the interpreter to build from, after what root may install
# first; "" means uv.
choose_python() {
    if [ -z "$python" ] && [ -z "$(any_python)" ] && can_apt; then
        say "no python3 on this system"
        apt_install python3 python3-venv
        python=$(find_python)
    fi
    if [ -z "$python" ] || [ -n "${GPUWIZARD_FORCE_UV:-}" ] || has_venv "$python"; then
        return 0
    fi
    if can_apt; then
        say "$python has no venv module: installing it from the OS archive (smaller than uv)"
        apt_install "$(venv_package "$python")"
    else
        say "$python has no venv module (as root, bootstrap would install $(venv_package "$python") from the OS archive instead)"
    fi
}

main() {
    local python
    python=$(find_python)
    if [ -z "$python" ] && [ -z "$(any_python)" ] && ! can_apt; then
        fail "no python3 at all: install python3 and python3-venv (apt-get) or python3 (dnf) as root first, or run this as root on Debian/Ubuntu"
    fi
    choose_python
    if [ -n "$python" ] && [ -z "${GPUWIZARD_FORCE_UV:-}" ] && has_venv "$python"; then
        install_with_venv "$python"
    else
        install_with_uv "$python"
    fi
    mkdir -p "$bin_dir"
    ln -sf "$venv/bin/gpuwizard" "$bin_dir/gpuwizard"
    linked="$bin_dir/gpuwizard"
    "$bin_dir/gpuwizard" --version >/dev/null
    say "installed: $bin_dir/gpuwizard ($("$venv/bin/python" -V 2>&1))"
    case ":$PATH:" in
        *":$bin_dir:"*) say "run: gpuwizard" ;;
        *) say "run: $bin_dir/gpuwizard   (or add $bin_dir to PATH)" ;;
    esac
}

main "$@"
