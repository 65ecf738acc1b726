#!/usr/bin/env bash
# install-codex.sh CACHE VERSION NAME
#
# Installs @openai/codex@VERSION with npm into CACHE/VERSION (once; reused on
# later runs) and writes the path of its `codex` binary to CACHE/NAME, which
# the Makefile hands to the real-Codex tests. Without npm it prints a loud SKIP
# and clears CACHE/NAME, unless ATM_REQUIRE_REAL_CODEX=1 (CI), where a missing
# prerequisite is an error.
set -euo pipefail
cache=$1 version=$2 name=$3
dir="$cache/$version"
bin="$dir/node_modules/.bin/codex"
mkdir -p "$cache"
rm -f "$cache/$name"

fail() {
  echo "******************************************************************" >&2
  echo "SKIP real-Codex $version tests: $*" >&2
  echo "******************************************************************" >&2
  if [ "${ATM_REQUIRE_REAL_CODEX:-}" = 1 ]; then
    echo "ATM_REQUIRE_REAL_CODEX=1: the real-Codex suite is required here" >&2
    exit 1
  fi
  exit 0
}

if [ ! -x "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
  command -v npm >/dev/null 2>&1 || fail "npm is not installed"
  echo "installing @openai/codex@$version into $dir (once)" >&2
  rm -rf "$dir.partial"
  mkdir -p "$dir.partial"
  if ! npm install --no-audit --no-fund --loglevel=error --prefix "$dir.partial" "@openai/codex@$version" >&2; then
    rm -rf "$dir.partial"
    fail "npm install @openai/codex@$version failed"
  fi
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
fi
got=$("$bin" --version 2>/dev/null || true)
case "$got" in
  *"$version"*) ;;
  *) fail "$bin reports '$got', want $version" ;;
esac
echo "$bin" > "$cache/$name"
