#!/usr/bin/env bash
# Installs the PostgreSQL 15 server binaries the PostgreSQL store's tests and bench need, when missing.
# The tests start their own throwaway cluster from them (bench/support/pgCluster.ts); nothing is started here.
set -euo pipefail
if ! command -v /usr/lib/postgresql/15/bin/initdb >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-15
fi
# The server runs as this user when the tests run as root; the Debian package creates it.
id -u postgres >/dev/null
