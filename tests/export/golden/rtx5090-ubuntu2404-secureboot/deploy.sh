#!/usr/bin/env bash
# deploy.sh: set up this server for PyTorch the way gpuwizard planned it.
#
# Made by gpuwizard 0.1.0 from its plan for: 1x GeForce RTX 5090, Ubuntu 24.04.3 LTS
#   driver: install R580 (open)
#   pytorch: torch 2.14.1 (cu130), torchvision 0.29.1
#   environment: venv /opt/gpuwizard/envs/pytorch (Python 3.12, system)
#   fit: as the machine is
# Steps (7):
#    1. Disable the nouveau driver
#    2. Install the NVIDIA driver
#    3. Enable persistence mode (nvidia-persistenced)
#    4. Reboot (reboot)
#    5. Create the Python environment /opt/gpuwizard/envs/pytorch
#    6. Install PyTorch 2.14.1 (cu130)
#    7. Verify PyTorch on every GPU
#
# Usage: sudo bash deploy.sh [--reboot] [--install-resume-unit] [--force]
#   It runs the plan's steps in order: the same commands, with the same environment, as
#   gpuwizard's own run. A finished step leaves a marker in
#   /var/lib/gpuwizard/deploy/ and is skipped when the script runs again; delete that
#   folder to start over. When the machine must reboot, the script stops with exit status 10:
#   reboot, run it again, and it continues where it stopped. With --reboot (or
#   GPUWIZARD_REBOOT=1) it reboots by itself. With --install-resume-unit, the first reboot
#   installs gpuwizard-deploy.service, which runs it again after each boot until every step is
#   done, then removes itself. Exit status: 0 done, 10 reboot needed, else a step failed.
#   Steps that had nothing to do on the machine above are left out (see the comments
#   below): run this on the same kind of machine, made from the same image. Its first run
#   refuses, before any change, a host whose GPUs, OS, CPU architecture or loaded driver
#   branch differ from that machine's (named below); --force (GPUWIZARD_FORCE=1) runs it anyway.
# Made for: GPUs 1x 10de:2b85 (1x GeForce RTX 5090), OS ubuntu 24.04,
#   CPU x86_64, loaded NVIDIA driver branch none
set -Eeuo pipefail

umask 022  # nothing this script creates is group- or world-writable, whatever called it
# This script's own file, named absolutely before it leaves the caller's folder (the resume unit
# copies it); empty when it is read from stdin.
gw_self=${BASH_SOURCE[0]:-}
if [[ -n $gw_self && $gw_self != /* ]]; then gw_self=$PWD/$gw_self; fi
# Never the caller's folder: a program a step starts (python3 -m venv) must not find there what
# another user put there. Every path below is absolute.
cd /
readonly GW_STATE="/var/lib/gpuwizard"
readonly GW_DOWNLOADS="/var/cache/gpuwizard"
readonly GW_MARKERS="$GW_STATE/deploy"
readonly GW_UNIT=gpuwizard-deploy.service
readonly GW_UNIT_FILE="/etc/systemd/system/$GW_UNIT"
readonly GW_INSTALLED_SCRIPT="$GW_STATE/deploy.sh"
gw_reboot_now=0
gw_resume_unit=0
gw_force=0
gw_step=''
gw_backups=()

gw_say() { printf '%s\n' "$@"; }
gw_die() {
  printf 'deploy.sh: %s\n' "$*" >&2
  exit 1
}

gw_usage() {
  gw_say "usage: sudo bash deploy.sh [--reboot] [--install-resume-unit] [--force]" \
    "  --reboot               reboot by itself when a step needs it (or GPUWIZARD_REBOOT=1)" \
    "  --install-resume-unit  run again after each boot ($GW_UNIT) until every step is done" \
    "  --force                run on a host unlike the one the plan was made for (or GPUWIZARD_FORCE=1)" \
    "exit status: 0 done, 10 reboot needed (then run it again), anything else: a step failed"
}

gw_on_error() {
  local status=$? line=$1
  trap - ERR
  gw_restore_backups
  printf 'deploy.sh: step %s failed (exit status %s, line %s). ' "${gw_step:-(none)}" "$status" "$line" >&2
  printf 'Fix the cause and run deploy.sh again: finished steps are skipped.\n' >&2
  exit "$status"
}
trap 'gw_on_error $LINENO' ERR

gw_parse_args() {
  while (($#)); do
    case $1 in
      --reboot) gw_reboot_now=1 ;;
      --install-resume-unit) gw_resume_unit=1 ;;
      --force) gw_force=1 ;;
      -h | --help)
        gw_usage
        exit 0
        ;;
      *) gw_die "unknown option: $1 (see --help)" ;;
    esac
    shift
  done
  if [[ ${GPUWIZARD_REBOOT:-} == 1 ]]; then gw_reboot_now=1; fi
  if [[ ${GPUWIZARD_FORCE:-} == 1 ]]; then gw_force=1; fi
}

gw_start() {
  gw_parse_args "$@"
  if [[ $EUID -ne 0 ]]; then
    gw_die "run me as root: sudo bash ${gw_self:-deploy.sh}"
  fi
  if ! compgen -G "$GW_MARKERS/*.done" >/dev/null; then gw_check_host; fi
  mkdir -p -- "$GW_MARKERS"
  chmod 0700 -- "$GW_MARKERS"
  exec 9>>"$GW_MARKERS/.lock"
  flock -n 9 || gw_die "another deploy.sh is at work on this machine; let it finish first"
}

# gw_host_identity: this host's GPUs, OS, CPU architecture and loaded driver branch, one line
# each, read as gpuwizard recorded them for the machine the plan was made on (hostcheck.py).
gw_host_identity() {
  local gw_root=""
  (
    LC_ALL=C  # byte by byte: fact_word's "?" for each byte outside [A-Za-z0-9._-]
    gw_count=0 gw_ids='' gw_vendor='' gw_class='' gw_device=''
    for gw_dev in "$gw_root"/sys/bus/pci/devices/*; do
      [[ -r $gw_dev/vendor && -r $gw_dev/class && -r $gw_dev/device ]] || continue
      read -r gw_vendor <"$gw_dev/vendor" || true
      read -r gw_class <"$gw_dev/class" || true
      read -r gw_device <"$gw_dev/device" || true
      [[ $gw_vendor == 0x10de && $gw_class == 0x03* ]] || continue
      gw_count=$((gw_count + 1))
      gw_device=${gw_device//[^A-Za-z0-9._-]/?}
      gw_ids+="${gw_vendor#0x}:${gw_device#0x}"$'\n'
    done
    if ((gw_count > 0)); then
      printf '%sx %s\n' "$gw_count" "$(printf '%s' "$gw_ids" | sort -u | paste -sd+ -)"
    else
      printf 'none\n'
    fi
    gw_os_id=unknown gw_os_version=unknown
    if [[ -r $gw_root/etc/os-release ]]; then
      while IFS='=' read -r gw_key gw_value || [[ -n $gw_key ]]; do
        gw_value=${gw_value#[\"\']} && gw_value=${gw_value%[\"\']}
        gw_value=${gw_value//[^A-Za-z0-9._-]/?}
        case $gw_key in
          ID) gw_os_id=$gw_value ;;
          VERSION_ID) gw_os_version=$gw_value ;;
        esac
      done <"$gw_root/etc/os-release"
    fi
    printf '%s %s\n' "${gw_os_id,,}" "${gw_os_version:-unknown}"
    gw_arch=$(uname -m)
    printf '%s\n' "${gw_arch//[^A-Za-z0-9._-]/?}"
    gw_driver=none
    if [[ -r $gw_root/sys/module/nvidia/version ]]; then
      read -r gw_driver <"$gw_root/sys/module/nvidia/version" || true
      gw_driver=${gw_driver%%.*}
      gw_driver=${gw_driver//[^A-Za-z0-9._-]/?}
    fi
    printf '%s\n' "${gw_driver:-none}"
  )
}

# gw_check_host: before anything changes, refuse a host unlike the one this plan was made for,
# naming each difference; --force (GPUWIZARD_FORCE=1) runs it anyway. Only a first run checks:
# a later one meets what the earlier runs changed (the driver this script installed).
gw_check_host() {
  local -a made=("$GW_MADE_GPUS" "$GW_MADE_OS" "$GW_MADE_ARCH" "$GW_MADE_DRIVER")
  local -a labels=(GPUs OS 'CPU architecture' 'loaded NVIDIA driver branch') here=() differ=()
  local i joined
  mapfile -t here < <(gw_host_identity)
  for i in "${!made[@]}"; do
    if [[ -n ${made[i]} && ${made[i]} != "${here[i]:-unknown}" ]]; then
      differ+=("${labels[i]}: made for ${made[i]}, this host has ${here[i]:-unknown}")
    fi
  done
  ((${#differ[@]} > 0)) || return 0
  joined=$(printf '%s; ' "${differ[@]}")
  if ((gw_force)); then
    gw_say "deploy.sh: this host differs from the plan's: ${joined%; }; going on (--force)"
    return 0
  fi
  gw_die "this host is not the kind the plan was made for: ${joined%; }. Nothing was changed." \
    "Run gpuwizard on it for a plan of its own, or pass --force (GPUWIZARD_FORCE=1) to run this one anyway"
}

gw_boot_id() {
  local file="/proc/sys/kernel/random/boot_id" id=''
  if [[ -r $file ]]; then read -r id <"$file" || true; fi
  printf '%s\n' "$id"
}

gw_marker() { printf '%s/%s.done' "$GW_MARKERS" "$1"; }
gw_is_done() { [[ -e $(gw_marker "$1") ]]; }

# gw_done ID: the step's every action succeeded; the marker holds the boot_id it finished in.
gw_done() {
  local tmp
  tmp=$(mktemp -- "$GW_MARKERS/.gpuwizard-tmp.XXXXXX")
  gw_boot_id >"$tmp"
  mv -f -- "$tmp" "$(gw_marker "$1")"
}

# gw_begin N ID TITLE: announce a step; fails (so it is skipped) when an earlier run finished it.
gw_begin() {
  gw_step=$2
  gw_backups=()
  if gw_is_done "$2"; then
    gw_say "==> [$1/$GW_TOTAL] $3: skip (done before)"
    return 1
  fi
  gw_say "==> [$1/$GW_TOTAL] $3"
}

# gw_begin_reboot N ID TITLE: a reboot step is done only once the boot_id differs from the one
# its marker holds; the same boot_id means the reboot has not happened yet, so it is asked again.
gw_begin_reboot() {
  local before now
  gw_step=$2
  if ! gw_is_done "$2"; then
    gw_say "==> [$1/$GW_TOTAL] $3"
    return 0
  fi
  before=$(<"$(gw_marker "$2")")
  now=$(gw_boot_id)
  if [[ -z $now || $before != "$now" ]]; then
    gw_say "==> [$1/$GW_TOTAL] $3: skip (done before)"
    return 1
  fi
  gw_say "==> [$1/$GW_TOTAL] $3: the machine has not rebooted since this step asked for it"
}

# gw_dpkg_interrupted: a dpkg run was cut off (its journal waits in updates/, or `dpkg --audit`
# names a package left mid-way); until it is finished every apt call fails with exit 100.
gw_dpkg_interrupted() {
  local audit
  if compgen -G "/var/lib/dpkg/updates/*" >/dev/null; then return 0; fi
  audit=$( (trap - ERR; exec -- dpkg --audit) </dev/null 2>/dev/null || true)
  [[ -n $audit ]]
}

# gw_repair_dpkg: before an apt command that needs it (gw_run --repair), finish an interrupted
# dpkg the way the wizard's runner does: dpkg --configure -a, then apt-get -f install when a
# package is still left half-installed (apt waits for the lock as long as the runner's). The two
# commands are the runner's own, written out below the helpers (gw_repair_commands).
gw_repairing=0
gw_repair_dpkg() {
  ((gw_repairing == 0)) || return 0
  gw_dpkg_interrupted || return 0
  gw_repairing=1
  gw_say "    dpkg was left interrupted by an earlier run; running dpkg --configure -a first"
  gw_repair_commands configure
  if gw_dpkg_interrupted; then
    gw_say "    a package is still half-installed; running apt-get -f install"
    gw_repair_commands fix
  fi
  gw_repairing=0
}

gw_show() {
  local arg
  local -a shown=()
  for arg in "$@"; do
    if [[ $arg == *$'\n'* ]]; then shown+=('<script>'); else shown+=("$arg"); fi
  done
  gw_say "    \$ ${shown[*]}"
}

# gw_run [--ok 'CODES'] [--stdin] [--retry] [--repair] [NAME=VALUE...] -- PROGRAM [ARG...]: one
# planned command, with exactly its own environment added; it succeeds when its exit status is
# one of CODES (default 0). Its stdin is /dev/null unless --stdin: a prompt nobody foresaw fails
# the step instead of hanging. --retry (apt-get update, which another apt's lists lock can fail)
# tries again after 2, 4, 8, 16 and 32 s, as the runner does. --repair (apt-get update, install,
# upgrade) first finishes a dpkg an earlier run left interrupted, as the runner does.
gw_run() {
  local ok=0 stdin=/dev/null retries=0 attempt=0 repair=0 status assignment
  local -a assignments=()
  while [[ $1 != -- ]]; do
    case $1 in
      --ok)
        ok=$2
        shift
        ;;
      --stdin) stdin=/dev/stdin ;;
      --retry) retries=5 ;;
      --repair) repair=1 ;;
      *) assignments+=("$1") ;;
    esac
    shift
  done
  shift
  ((repair == 0)) || gw_repair_dpkg
  gw_show "$@"
  while true; do
    status=0
    (
      trap - ERR
      for assignment in "${assignments[@]}"; do export "${assignment?}"; done
      exec -- "$@"
    ) <"$stdin" || status=$?
    if [[ " $ok " == *" $status "* ]]; then return 0; fi
    if ((attempt >= retries)); then return "$status"; fi
    attempt=$((attempt + 1))
    gw_say "    exit status $status; trying again in $((2 ** attempt)) s ($attempt of $retries)"
    sleep $((2 ** attempt))
  done
}

# gw_replies REPLY...: the answers to a command's prompts, one line each, in the plan's order.
gw_replies() { printf '%s\n' "$@"; }

# gw_read_secret VAR GIVEN ENVNAME PROMPT: the secret given in the environment as ENVNAME (moved
# into the shell variable GIVEN at the top of the script), else typed twice on the terminal. It
# stays in this shell's memory: never in a file, an argument or the environment.
gw_read_secret() {
  local value again
  if [[ -n ${!2:-} ]]; then
    printf -v "$1" '%s' "${!2}"
    printf -v "$2" '%s' ''
    return 0
  fi
  if ! { true </dev/tty; } 2>/dev/null; then
    gw_die "$4: there is no terminal to ask on; set $3 in the environment instead"
  fi
  read -rs -p "$4: " value </dev/tty
  printf '\n' >&2
  read -rs -p "Again, to be sure: " again </dev/tty
  printf '\n' >&2
  [[ -n $value && $value == "$again" ]] || gw_die "$4: the two entries differ or are empty; run again"
  printf -v "$1" '%s' "$value"
}

# gw_write PATH MODE [--trim-newline] [--backup] <CONTENT: write a whole file atomically (a temp
# file beside it, then mv) with its mode; --trim-newline drops the newline a here-document ends with.
gw_write() {
  local path=$1 mode=$2 trim=0 backup=0 folder tmp
  shift 2
  while (($#)); do
    case $1 in
      --trim-newline) trim=1 ;;
      --backup) backup=1 ;;
      *) gw_die "gw_write: unknown option $1" ;;
    esac
    shift
  done
  folder=$(dirname -- "$path")
  gw_folder "$folder"
  tmp=$(mktemp -- "$folder/.gpuwizard-tmp.XXXXXX")
  cat >"$tmp"
  if ((trim)); then truncate -s -1 -- "$tmp"; fi
  chmod -- "$mode" "$tmp"
  if ((backup)); then gw_back_up "$path" "$tmp"; fi
  mv -f -- "$tmp" "$path"
  gw_say "    wrote $path (mode $mode)"
}

# Keep the previous file as PATH.gpuwizard-bak, as the wizard does, and put it back if the step
# fails (gw_on_error); a file that did not exist before is removed again.
gw_back_up() {
  local path=$1 new=$2
  if [[ ! -e $path ]]; then
    gw_backups+=("$path|")
  elif ! cmp -s -- "$path" "$new"; then
    cp -p -- "$path" "$path.gpuwizard-bak"
    gw_backups+=("$path|$path.gpuwizard-bak")
  elif [[ -e $path.gpuwizard-bak ]]; then
    gw_backups+=("$path|$path.gpuwizard-bak")
  fi
}

gw_restore_backups() {
  local entry
  for entry in "${gw_backups[@]}"; do
    if [[ -n ${entry#*|} ]]; then
      cp -p -- "${entry#*|}" "${entry%%|*}"
    else
      rm -f -- "${entry%%|*}"
    fi
    gw_say "    restored ${entry%%|*}" >&2
  done
}

# gw_folder DIR: make a folder for a file; the download folder only root may enter, since what is
# downloaded there is run or installed from there.
gw_folder() {
  if [[ $1 == "$GW_DOWNLOADS" ]]; then
    mkdir -p -- "$(dirname -- "$1")"
    mkdir -m 0700 -- "$1" 2>/dev/null || true
    chmod 0700 -- "$1"
  else
    mkdir -p -- "$1"
  fi
}

# gw_curl ARG...: curl over https only: a redirect that leaves https is refused.
gw_curl() { curl -fsSL --proto '=https' --proto-redir '=https' --retry 3 "$@"; }

# gw_fetch URL DEST (--sha256 HEX | --fingerprint FPR | --unpinned) [--member NAME]
#   [--dearmor | --armor]: what gpuwizard-fetch does: download to a temporary file beside DEST,
# check it against the pin gpuwizard's data gave (a file's SHA-256; a key's one primary key and
# its fingerprint, checked by the runner's own key check), optionally take one file out of a
# wheel, and only then move it into place; a mismatch deletes the file and fails the step.
# --unpinned is for a file gpuwizard has no confirmed checksum of (UNCONFIRMED): HTTPS alone, and
# a warning. A key (--dearmor, --armor, or --fingerprint) is kept as the checked key alone, never
# as downloaded: binary with --dearmor (apt's signed-by), else freshly armoured (dnf's gpgkey);
# one with no pinned fingerprint must still be exactly one primary key.
gw_fetch() {
  local url=$1 dest=$2 sha256='' fingerprint='' unpinned=0 member='' key='' part got mode=0644 status=0
  local -a check=()
  shift 2
  while (($#)); do
    case $1 in
      --sha256) sha256=$2; shift ;;
      --fingerprint) fingerprint=$2; shift ;;
      --unpinned) unpinned=1 ;;
      --member) member=$2; shift ;;
      --dearmor) key=binary ;;
      --armor) key=armored ;;
      *) gw_die "gw_fetch: unknown option $1" ;;
    esac
    shift
  done
  if [[ -n $fingerprint && -z $key ]]; then key=armored; fi
  gw_need_curl
  if [[ $url == pypi:* ]]; then url=$(gw_pypi_wheel "${url#pypi:}"); fi
  gw_say "    fetching $url"
  gw_folder "$(dirname -- "$dest")"
  part=$(mktemp -- "$(dirname -- "$dest")/.gpuwizard-tmp.XXXXXX")
  gw_curl -o "$part" --url "$url" || status=$?
  if ((status)); then
    rm -f -- "$part"
    return "$status"
  fi
  if [[ -n $sha256 ]]; then
    got=$(sha256sum <"$part")
    got=${got%%[[:space:]]*}
    if [[ ${got,,} != "${sha256,,}" ]]; then
      rm -f -- "$part"
      gw_die "SHA-256 mismatch for $url: got $got, pinned $sha256; the file was deleted and not used"
    fi
  elif ((unpinned)); then
    gw_say "deploy.sh: WARNING: $url has no pinned checksum in gpuwizard's data (UNCONFIRMED);" \
      "  it is trusted on HTTPS alone" >&2
  elif [[ -z $fingerprint ]]; then
    rm -f -- "$part"
    gw_die "gw_fetch: $url has no pin; refusing to use it"
  fi
  if [[ -n $key ]]; then
    command -v python3 >/dev/null || gw_die "python3 is needed to check the key from $url: install it first"
    check=("$part" "${fingerprint:-UNPINNED}")
    if [[ $key == binary ]]; then check+=(--dearmor); fi
    if ! python3 -I -c "$GW_KEYCHECK" "${check[@]}"; then
      rm -f -- "$part"
      gw_die "$url is not exactly one key${fingerprint:+, the one gpuwizard pins}; it was deleted and not used"
    fi
  fi
  if [[ -n $member ]]; then
    python3 -I -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$part" "$member" >"$part.member"
    mv -f -- "$part.member" "$part"
    mode=0755
  fi
  chmod -- "$mode" "$part"
  mv -f -- "$part" "$dest"
  gw_say "    saved $dest${sha256:+ (SHA-256 verified)}${fingerprint:+ (key fingerprint verified)}"
}

# gw_need_curl: gw_fetch downloads with curl, which a minimal image may lack (Debian's minbase
# has none): install it with the system's package manager first.
gw_need_curl() {
  if command -v curl >/dev/null; then return 0; fi
  gw_say "    curl is missing; installing it to download with"
  if command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get -q update
    DEBIAN_FRONTEND=noninteractive apt-get -q -y --no-install-recommends install curl ca-certificates
  elif command -v dnf >/dev/null; then
    dnf -y -q install curl
  else
    gw_die "curl is missing and there is no apt-get or dnf to install it with; install curl, then run again"
  fi
}

# gw_pypi_wheel NAME==VERSION: the URL of this machine's manylinux wheel of that release, from the
# index in PIP_INDEX_URL (PyPI's by default), picked as gpuwizard-fetch picks it.
gw_pypi_wheel() {
  local name=${1%%==*} version=${1#*==} index=${PIP_INDEX_URL:-https://pypi.org/simple} listing url
  [[ $index == https://* ]] || gw_die "PIP_INDEX_URL $index is not https; refusing to download from it"
  listing=$(gw_curl -H 'Accept: application/vnd.pypi.simple.v1+json' --url "${index%/}/$name/")
  url=$(grep -o -e '"url": *"[^"]*"' <<<"$listing" | awk -v want="/$name-$version-" \
    -v tag="manylinux_2_17_$(uname -m)" '{ sub(/^"url": *"/, ""); sub(/"$/, "") }
    !found && index($0, want) && index($0, tag) { found = 1; print }') || true
  [[ -n $url ]] || gw_die "the index has no manylinux_2_17_$(uname -m) wheel of $name $version"
  printf '%s\n' "$url"
}

gw_after_reboot() {
  if [[ -e $GW_UNIT_FILE ]]; then
    printf '%s\n' "$GW_UNIT continues after the boot"
  else
    printf '%s\n' "run this script again: it continues where it stopped"
  fi
}

# gw_reboot ID [NAME=VALUE...] -- COMMAND...: mark the step with this boot's id, then reboot (with
# --reboot) or ask for one; either way exit 10, since the steps after it need the new boot.
gw_reboot() {
  local id=$1
  shift
  gw_done "$id"
  if ((gw_resume_unit)); then gw_install_resume_unit; fi
  if ((gw_reboot_now)); then
    gw_say "==> rebooting; $(gw_after_reboot)"
    gw_run "$@"
    exit 10
  fi
  gw_say "==> reboot needed: reboot now (sudo reboot), then $(gw_after_reboot)"
  exit 10
}

# The resume unit runs the installed copy of this script at every boot until it is done; it is
# installed when the first reboot comes. It is Type=simple, not oneshot: a oneshot would hold up
# multi-user.target (and cloud-final.service, ordered after it on Ubuntu) for the whole install.
gw_install_resume_unit() {
  local flags=''
  if ((gw_reboot_now)); then flags=' --reboot'; fi
  if [[ ! $gw_self -ef $GW_INSTALLED_SCRIPT ]]; then
    [[ -n $gw_self && -f $gw_self ]] || gw_die "--install-resume-unit needs this script as a file, not on stdin"
    cp -- "$gw_self" "$GW_INSTALLED_SCRIPT.tmp"
    chmod 0700 -- "$GW_INSTALLED_SCRIPT.tmp"
    mv -f -- "$GW_INSTALLED_SCRIPT.tmp" "$GW_INSTALLED_SCRIPT"
  fi
  gw_write "$GW_UNIT_FILE" 0644 <<GPUWIZARD_UNIT
[Unit]
Description=gpuwizard deploy.sh: continue setting up this GPU server after a boot
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=/bin/bash /var/lib/gpuwizard/deploy.sh$flags
SuccessExitStatus=10
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
GPUWIZARD_UNIT
  systemctl daemon-reload
  systemctl enable "$GW_UNIT"
}

gw_remove_resume_unit() {
  if [[ -e $GW_UNIT_FILE ]]; then
    systemctl disable "$GW_UNIT"
    rm -f -- "$GW_UNIT_FILE"
    systemctl daemon-reload
    gw_say "    removed $GW_UNIT: nothing is left to resume"
  fi
}

# gw_finish MESSAGE...: every step is done.
gw_finish() {
  gw_step=''
  gw_remove_resume_unit
  gw_say "==> done: $1" "${@:2}"
}

gw_repair_commands() {
  case $1 in
    configure)
      gw_run DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 NEEDRESTART_MODE=l \
          NEEDRESTART_SUSPEND=1 APT_LISTCHANGES_FRONTEND=none -- dpkg --force-confdef --force-confold \
          --configure -a
      ;;
    fix)
      gw_run DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 NEEDRESTART_MODE=l \
          NEEDRESTART_SUSPEND=1 APT_LISTCHANGES_FRONTEND=none -- apt-get -q -y --no-remove -o \
          DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
          -f install
      ;;
  esac
}

readonly GW_TOTAL=7
readonly GW_MADE_GPUS='1x 10de:2b85' GW_MADE_OS='ubuntu 24.04'
readonly GW_MADE_ARCH=x86_64 GW_MADE_DRIVER=none
gw_start "$@"

# --- repair-dpkg: Repair an interrupted package database: nothing to do on the machine this was planned on

# --- upgrade-kernel: Apply the pending kernel update: nothing to do on the machine this was planned on

# --- reboot-kernel: Reboot into the updated kernel: nothing to do on the machine this was planned on

# --- remove-runfile-driver: Remove the driver installed by NVIDIA's .run installer: nothing to do on the machine this was planned on

# --- 1. blacklist-nouveau: Disable the nouveau driver
# nouveau, the open-source driver, claims NVIDIA GPUs at boot and blocks the NVIDIA driver. The
# blacklist must also go into the initramfs, where nouveau is loaded from; it takes effect at the
# next boot.
if gw_begin 1 blacklist-nouveau 'Disable the nouveau driver'; then
  gw_write /etc/modprobe.d/gpuwizard-blacklist-nouveau.conf 0644 <<'GPUWIZARD_EOF'
# Written by gpuwizard: the NVIDIA driver needs the GPUs; nouveau must not take them.
blacklist nouveau
options nouveau modeset=0
GPUWIZARD_EOF
  gw_run -- update-initramfs -u -k all
  gw_done blacklist-nouveau
  gw_say '    takes effect at the next boot'
fi

# --- 2. install-nvidia-driver: Install the NVIDIA driver
# Driver branch R580 with open kernel modules, from Ubuntu's archive: it supports every GPU here and
# runs the chosen PyTorch build. Canonical-signed prebuilt modules load under Secure Boot without a
# MOK.
if gw_begin 2 install-nvidia-driver 'Install the NVIDIA driver'; then
  gw_run --retry --repair DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 NEEDRESTART_MODE=l \
      NEEDRESTART_SUSPEND=1 APT_LISTCHANGES_FRONTEND=none -- apt-get -q update
  gw_run --repair DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 NEEDRESTART_MODE=l \
      NEEDRESTART_SUSPEND=1 APT_LISTCHANGES_FRONTEND=none -- apt-get -q -y -o \
      DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
      -o Dpkg::Progress-Fancy=0 install linux-modules-nvidia-580-server-open-6.14.0-29-generic \
      nvidia-driver-580-server-open nvidia-utils-580-server
  gw_done install-nvidia-driver
fi

# --- 3. enable-persistence: Enable persistence mode (nvidia-persistenced)
# Keeps the driver loaded and the GPUs initialised between jobs, so each new process does not pay
# seconds of start-up; NVIDIA recommends it on compute servers.
if gw_begin 3 enable-persistence 'Enable persistence mode (nvidia-persistenced)'; then
  gw_run -- systemctl enable nvidia-persistenced
  gw_done enable-persistence
fi

# --- 4. reboot: Reboot
# The new kernel modules load at boot: nouveau leaves, the NVIDIA driver arrives. After the reboot,
# log in again and run gpuwizard: it checks everything again and continues.
if gw_begin_reboot 4 reboot Reboot; then
  gw_reboot reboot -- reboot
fi

# --- 5. create-env: Create the Python environment /opt/gpuwizard/envs/pytorch
# An isolated Python 3.12 environment: PyTorch never mixes with the system's packages. uv (pinned,
# its SHA-256 checked) makes it.
if gw_begin 5 create-env 'Create the Python environment /opt/gpuwizard/envs/pytorch'; then
  gw_fetch pypi:uv==0.13.9 /opt/gpuwizard/bin/uv --sha256 \
      d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19 --member \
      uv-0.13.9.data/scripts/uv
  gw_run UV_PYTHON_INSTALL_DIR=/opt/gpuwizard/python UV_NO_CONFIG=1 UV_SYSTEM_CERTS=1 -- \
      /opt/gpuwizard/bin/uv venv --clear --python /usr/bin/python3.12 /opt/gpuwizard/envs/pytorch
  gw_write /var/cache/gpuwizard/pip-26.3.hashes.txt 0644 <<'GPUWIZARD_EOF'
pip==26.3 --hash=sha256:f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13
GPUWIZARD_EOF
  gw_run UV_PYTHON_INSTALL_DIR=/opt/gpuwizard/python UV_NO_CONFIG=1 UV_SYSTEM_CERTS=1 -- \
      /opt/gpuwizard/bin/uv pip install --python /opt/gpuwizard/envs/pytorch/bin/python --index-url \
      https://pypi.org/simple --verify-hashes -r /var/cache/gpuwizard/pip-26.3.hashes.txt
  gw_done create-env
fi

# --- 6. install-torch: Install PyTorch 2.14.1 (cu130)
# torch 2.14.1 with torchvision 0.29.1 from PyPI (its default build, the wheels checked against the
# SHA-256 gpuwizard pins): the build with kernels for these GPUs that the driver runs. uv installs
# it (pinned, its SHA-256 checked), about 3x faster than pip.
if gw_begin 6 install-torch 'Install PyTorch 2.14.1 (cu130)'; then
  gw_fetch pypi:uv==0.13.9 /opt/gpuwizard/bin/uv --sha256 \
      d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19 --member \
      uv-0.13.9.data/scripts/uv
  gw_write /var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt 0644 <<'GPUWIZARD_EOF'
# torch 2.14.1 (cu130) for CPython 3.12 on x86_64: the SHA-256
# of each wheel, from gpuwizard's wizard/core/torch-hashes (PyPI's PEP 691 JSON).
# wheel torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl sha256:23011fe29a99b591eabb3a31a25080c62e2c2f0690a3c798744e5489dae50451
# wheel torchvision-0.29.1-cp312-cp312-manylinux_2_28_x86_64.whl sha256:6c717bd68dddaebbd9525377a17a84e38a291a33a218f59fdb76e8bb41e61c99
torch==2.14.1 --hash=sha256:23011fe29a99b591eabb3a31a25080c62e2c2f0690a3c798744e5489dae50451
torchvision==0.29.1 --hash=sha256:6c717bd68dddaebbd9525377a17a84e38a291a33a218f59fdb76e8bb41e61c99
GPUWIZARD_EOF
  gw_run UV_PYTHON_INSTALL_DIR=/opt/gpuwizard/python UV_NO_CONFIG=1 UV_SYSTEM_CERTS=1 -- \
      /opt/gpuwizard/bin/uv pip install --python /opt/gpuwizard/envs/pytorch/bin/python \
      --reinstall-package torch --reinstall-package torchvision --index-url https://pypi.org/simple \
      --verify-hashes -r /var/cache/gpuwizard/torch-2.14.1-cu130.hashes.txt
  gw_done install-torch
fi

# --- 7. verify-torch: Verify PyTorch on every GPU
# Checks what really matters, in the environment just built: CUDA is available, every GPU is seen
# and has kernels in this build, a matmul and an AMP training step run on each, and torchvision's
# compiled ops load. A failure names its cause.
if gw_begin 7 verify-torch 'Verify PyTorch on every GPU'; then
  gw_run -- /opt/gpuwizard/envs/pytorch/bin/python -I -c \
      '"""Verify PyTorch in the environment it runs in; write a JSON report; exit 1 on any problem.

Standalone: the target environment has torch and torchvision but not gpuwizard, so this file
imports only the standard library, torch and torchvision (inside main). argv: report path,
expected GPU count, environment path. Every problem names its likely cause.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return None


def btime() -> int | None:
    """When this boot began (/proc/stat): tells the boot where the boot_id cannot be read."""
    try:
        lines = Path("/proc/stat").read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        words = line.split()
        if len(words) == 2 and words[0] == "btime" and words[1].isdigit():
            return int(words[1])
    return None


def covered(major: int, minor: int, arch_list: list[str]) -> bool:
    """A build serves sm_XY if it has sm_XZ with Z <= Y (same major): the cubin rule."""
    tags = [a for a in arch_list if a.startswith("sm_") and a[3:].isdigit()]
    return any(int(t[3:-1]) == major and int(t[-1]) <= minor for t in tags)


def train_step(torch: Any, device: Any) -> None:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 30 * 30, 10),
    )
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = (
        torch.amp.GradScaler("cuda")
        if hasattr(torch.amp, "GradScaler")
        else torch.cuda.amp.GradScaler()
    )
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(torch.randn(8, 3, 32, 32, device=device)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


def check_gpu(
    torch: Any, index: int, arch_list: list[str], devices: list[str], problems: list[str]
) -> None:
    name = torch.cuda.get_device_name(index)
    major, minor = torch.cuda.get_device_capability(index)
    devices.append(f"{index}: {name} (sm_{major}{minor})")
    if not covered(major, minor, arch_list):
        shipped = " ".join(arch_list)
        problems.append(
            f"{name} is sm_{major}{minor} but this torch build has kernels for {shipped} only: "
            f"install a build with sm_{major}{minor}"
        )
        return
    device = torch.device("cuda", index)
    a = torch.randn(1024, 1024, device=device)
    if not torch.allclose(a @ torch.eye(1024, device=device), a, atol=1e-3):
        problems.append(f"matmul on GPU {index} gave wrong results")
    train_step(torch, device)
    torch.cuda.synchronize(device)


def check_torchvision(torch: Any, problems: list[str]) -> None:
    try:
        import torchvision

        boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device="cuda")
        torchvision.ops.nms(boxes, torch.tensor([0.9, 0.8], device="cuda"), 0.5)
    except Exception as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        problems.append(
            f"torchvision'"'"'s compiled ops fail ({first}): torch and torchvision do not match"
        )


def check(expected: int) -> tuple[str, list[str], list[str]]:
    devices: list[str] = []
    problems: list[str] = []
    import torch

    version = str(torch.__version__).split("+")[0]
    if not torch.cuda.is_available():
        cuda = torch.version.cuda
        problems.append(
            f"torch.cuda.is_available() is False (torch built for CUDA {cuda}): "
            "the driver is not loaded, or it is older than this build needs"
        )
        return version, devices, problems
    count = torch.cuda.device_count()
    if count != expected:
        problems.append(
            f"torch sees {count} GPU(s), the host has {expected}: CUDA_VISIBLE_DEVICES, or a GPU fallen off the bus"
        )
    arch_list = list(torch.cuda.get_arch_list())
    for index in range(count):
        check_gpu(torch, index, arch_list, devices, problems)
    check_torchvision(torch, problems)
    return version, devices, problems


def write_report(path: str, report: dict[str, Any]) -> None:
    """Atomically: readers see the old report or the new one, never half of one."""
    directory = Path(path).parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".verify.")
    with os.fdopen(fd, "w") as handle:
        json.dump(report, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    Path(tmp).replace(path)


def main(argv: list[str]) -> int:
    report_path, expected, env = argv[0], int(argv[1]), argv[2]
    try:
        version, devices, problems = check(expected)
    except Exception as error:
        version, devices = "not installed", []
        problems = [f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else '"'"''"'"'}"]
    report = {
        "env": env,
        "torch": version,
        "boot_id": boot_id(),
        "btime": btime(),
        "ok": not problems,
        "devices": devices,
        "problems": problems,
    }
    write_report(report_path, report)
    lines = devices + (
        [f"PROBLEM: {p}" for p in problems]
        if problems
        else [f"verified: torch {version} on {len(devices)} GPU(s)"]
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
' /var/lib/gpuwizard/verify.json 1 /opt/gpuwizard/envs/pytorch
  gw_done verify-torch
fi

gw_finish 'every step of the plan is finished'
