#!/usr/bin/env bash
# install-chromium.sh
#
# Installs Debian's Chromium (the package chromium, /usr/bin/chromium) for
# the tests that drive the live view in a real browser
# (testscripts/view_browser_test.go), once: nothing is done when
# /usr/bin/chromium is there. It needs apt-get and root (as on the CI
# machines); elsewhere it prints a loud SKIP and the browser tests skip,
# unless ATM_REQUIRE_REAL_CODEX=1 (CI), where a missing prerequisite is an
# error.
set -euo pipefail
bin=/usr/bin/chromium
[ -x "$bin" ] && exit 0

fail() {
  echo "******************************************************************" >&2
  echo "SKIP browser tests: $*" >&2
  echo "******************************************************************" >&2
  if [ "${ATM_REQUIRE_REAL_CODEX:-}" = 1 ]; then
    echo "ATM_REQUIRE_REAL_CODEX=1: the browser tests are required here" >&2
    exit 1
  fi
  exit 0
}

command -v apt-get >/dev/null 2>&1 || fail "apt-get is not available to install chromium"
[ "$(id -u)" = 0 ] || fail "installing chromium with apt-get needs root"
echo "installing Debian's chromium (once)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2 || fail "apt-get update failed"
apt-get install -y -q chromium >&2 || fail "apt-get install chromium failed"
[ -x "$bin" ] || fail "$bin is missing after the install"
"$bin" --version >&2 || true
