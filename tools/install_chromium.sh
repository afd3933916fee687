#!/usr/bin/env bash
# Headless Chromium for the report test (tests/test_report.py opens the generated page in it).
# Debian's package, installed when it is missing and this user can install packages; prints
# where it is. CI (.ci/run) calls this, then requires the browser test to run, not skip.
set -euo pipefail
for exe in "${MDFORCE_CHROMIUM:-}" chromium chromium-browser google-chrome; do
  if [ -n "$exe" ] && command -v "$exe" >/dev/null 2>&1; then command -v "$exe"; exit 0; fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: no chromium and no apt-get here; install a Chromium and set MDFORCE_CHROMIUM" >&2; exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install_chromium: not root and no sudo: install chromium yourself" >&2; exit 1; }
  sudo="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null || true  # a stale list still installs from the cache
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
