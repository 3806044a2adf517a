#!/usr/bin/env bash
# Installs Debian's Chromium, which the web page's browser tests drive through playwright-core, when missing.
# playwright-core downloads no browser of its own; the tests point it at /usr/bin/chromium.
set -euo pipefail
if ! command -v /usr/bin/chromium >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
