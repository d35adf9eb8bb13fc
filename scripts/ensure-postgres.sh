#!/usr/bin/env bash
# Makes sure the PostgreSQL the tests use answers on 127.0.0.1:5432: starts a
# local cluster when one is installed but stopped, installs Debian's server
# package when none is installed, creates the "test" database, and fails
# loudly when it still cannot connect.
set -euo pipefail
host=127.0.0.1 port=5432

ready() { pg_isready -q -h "$host" -p "$port" 2>/dev/null; }

if ! command -v pg_isready >/dev/null 2>&1 || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "postgres: installing the Debian server package" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if ! ready; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "postgres: starting cluster $version/main" >&2
  conf=/etc/postgresql/$version/main
  # Local trust auth on loopback for the test database only.
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$conf/pg_hba.conf"; then
    sed -i '1i host all all 127.0.0.1/32 trust' "$conf/pg_hba.conf"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do ready && break; sleep 1; done
fi
if ! ready; then
  echo "postgres: no server answers on $host:$port; the store/postgres tests need one" >&2
  exit 1
fi
if ! psql -h "$host" -p "$port" -U postgres -d test -c 'select 1' >/dev/null 2>&1; then
  psql -h "$host" -p "$port" -U postgres -d postgres -c 'create database test' >/dev/null
fi
psql -h "$host" -p "$port" -U postgres -d test -c 'select 1' >/dev/null
echo "postgres: ready on $host:$port" >&2
