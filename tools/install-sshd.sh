#!/usr/bin/env bash
# install-sshd.sh
#
# Installs Debian's OpenSSH server (the package openssh-server,
# /usr/sbin/sshd) for the tests that run agents on another host over ssh
# (codexchild/testing/sshtest starts a private sshd on loopback, with its own host
# key, user key and configuration), once: nothing is done when
# /usr/sbin/sshd is there. No system sshd is started: the package's
# service would listen on port 22, so a policy-rc.d that refuses every
# start (exit 101) is in place during the install, and the one that was
# there before, if any, is put back. It needs apt-get and root (as on the
# CI machines); elsewhere it prints a loud SKIP and the ssh tests skip,
# unless ATM_REQUIRE_REAL_CODEX=1 (CI), where a missing prerequisite is an
# error.
set -euo pipefail
bin=/usr/sbin/sshd
[ -x "$bin" ] && exit 0

fail() {
  echo "******************************************************************" >&2
  echo "SKIP ssh tests: $*" >&2
  echo "******************************************************************" >&2
  if [ "${ATM_REQUIRE_REAL_CODEX:-}" = 1 ]; then
    echo "ATM_REQUIRE_REAL_CODEX=1: the ssh tests are required here" >&2
    exit 1
  fi
  exit 0
}

command -v apt-get >/dev/null 2>&1 || fail "apt-get is not available to install openssh-server"
[ "$(id -u)" = 0 ] || fail "installing openssh-server with apt-get needs root"

policy=/usr/sbin/policy-rc.d
saved=
if [ -e "$policy" ]; then
  saved=$(mktemp "$policy.atm-saved.XXXXXX")
  cp -p "$policy" "$saved"
fi
restore() {
  if [ -n "$saved" ]; then
    mv -f "$saved" "$policy"
  else
    rm -f "$policy"
  fi
}
trap restore EXIT
printf '#!/bin/sh\n# install-sshd.sh: start no service while openssh-server installs\nexit 101\n' >"$policy"
chmod 0755 "$policy"

echo "installing Debian's openssh-server (once; no sshd is started)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2 || fail "apt-get update failed"
apt-get install -y -q --no-install-recommends openssh-server >&2 || fail "apt-get install openssh-server failed"
[ -x "$bin" ] || fail "$bin is missing after the install"
"$bin" -V >&2 2>&1 || true
