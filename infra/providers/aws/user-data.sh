#!/bin/bash
# Storage Lab host bootstrap: the cloud-init user-data of one EC2 host, rendered by infra/providers/aws/user-data.ts.
# Installs PostgreSQL, pgbackrest, Node and the control worker's WAL-G, formats and mounts the storage under test (instance-store NVMe or the
# attached gp3 volume), fetches the host agent and the secrets it needs (SSM Parameter Store, by name), writes
# host.json and runs the agent under systemd. No secret is in this script; what it prints reaches the serial
# console, which the cluster workflow shows when the agent never comes up.
set -euo pipefail

HOST_ID={{HOST_ID}}
STORAGE_KIND={{STORAGE_KIND}}
POSTGRES_VERSION={{POSTGRES_VERSION}}
NODE_VERSION={{NODE_VERSION}}
AGENT_S3_URI={{AGENT_S3_URI}}
AGENT_SHA256={{AGENT_SHA256}}
WALG_S3_URI={{WALG_S3_URI}}
WALG_SHA256={{WALG_SHA256}}
WALG_ARCH={{WALG_ARCH}}
AWS_REGION={{AWS_REGION}}
AWS_ENDPOINT_URL={{AWS_ENDPOINT_URL}}
TEMPORAL_ADDRESS={{TEMPORAL_ADDRESS}}
TEMPORAL_NAMESPACE={{TEMPORAL_NAMESPACE}}
TEMPORAL_API_KEY_PARAMETER={{TEMPORAL_API_KEY_PARAMETER}}
TEMPORAL_TLS_CERT_PARAMETER={{TEMPORAL_TLS_CERT_PARAMETER}}
TEMPORAL_TLS_KEY_PARAMETER={{TEMPORAL_TLS_KEY_PARAMETER}}
DATABASE_PASSWORD_PARAMETER={{DATABASE_PASSWORD_PARAMETER}}
HOST_BASE_JSON={{HOST_BASE_JSON}}

app=/opt/storage-lab
host_dir=/var/lib/storage-lab/host
storage_root=/srv/storage-lab
work=$(mktemp -d)
exec > >(tee -a /var/log/storage-lab-bootstrap.log) 2>&1

step() { echo "storage-lab[$HOST_ID]: $*"; }
trap 'step "bootstrap FAILED at line $LINENO (exit $?); full log: /var/log/storage-lab-bootstrap.log"' ERR
aws_() { aws --region "$AWS_REGION" ${AWS_ENDPOINT_URL:+--endpoint-url "$AWS_ENDPOINT_URL"} "$@"; }
imds() {
  local token
  token=$(curl -fsS -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 300')
  curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}

step "installing packages"
export DEBIAN_FRONTEND=noninteractive
. /etc/os-release
apt_install() { apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "$@" >/dev/null; }
apt-get update -qq
# xxhash: xxhsum reads a data set's relation files byte for byte (activities/host/relation-files.ts).
apt_install ca-certificates curl gnupg xz-utils awscli e2fsprogs mdadm util-linux xxhash
if [ -n "$POSTGRES_VERSION" ]; then
  step "adding apt.postgresql.org for PostgreSQL $POSTGRES_VERSION"
  install -d /usr/share/postgresql-common/pgdg
  curl -fsSL -o /usr/share/postgresql-common/pgdg/apt.postgresql.org.asc https://www.postgresql.org/media/keys/ACCC4CF8.asc
  echo "deb [signed-by=/usr/share/postgresql-common/pgdg/apt.postgresql.org.asc] https://apt.postgresql.org/pub/repos/apt ${VERSION_CODENAME}-pgdg main" \
    > /etc/apt/sources.list.d/pgdg.list
  apt-get update -qq
  pg_package=postgresql-$POSTGRES_VERSION
else
  pg_package=postgresql
fi
step "installing $pg_package and pgbackrest"
apt_install "$pg_package" pgbackrest
# The package starts a cluster of its own on port 5432; the agent runs the lab's cluster there instead.
pg_lsclusters -h | while read -r ver name _; do pg_dropcluster --stop "$ver" "$name"; done
systemctl disable --now postgresql >/dev/null 2>&1 || true

step "installing Node $NODE_VERSION"
case "$(uname -m)" in
  x86_64) node_arch=x64 ;;
  aarch64) node_arch=arm64 ;;
  *) step "unsupported CPU $(uname -m)"; exit 1 ;;
esac
node_dist=node-v$NODE_VERSION-linux-$node_arch
curl -fsSL -o "$work/$node_dist.tar.xz" "https://nodejs.org/dist/v$NODE_VERSION/$node_dist.tar.xz"
curl -fsSL -o "$work/SHASUMS256.txt" "https://nodejs.org/dist/v$NODE_VERSION/SHASUMS256.txt"
(cd "$work" && grep " $node_dist.tar.xz\$" SHASUMS256.txt | sha256sum -c --quiet -)
install -d /opt/node
tar -xJf "$work/$node_dist.tar.xz" -C /opt/node --strip-components=1
export PATH=/opt/node/bin:$PATH

# WAL-G as the control worker built it (no package has it), checked like the agent; without it, backups with
# backup.tool "wal-g" fail on this host naming the missing binary, and pgBackRest still works.
install_walg() {
  if [ -z "$WALG_S3_URI" ]; then
    step "no WAL-G from the control worker (its tools cache has none; run infra/bootstrap.sh there)"
    return 0
  fi
  if [ "$WALG_ARCH" != "$node_arch" ]; then
    step "WAL-G was built for $WALG_ARCH and this host is $node_arch: not installed (use a $WALG_ARCH instance type)"
    return 0
  fi
  aws_ s3 cp --only-show-errors "$WALG_S3_URI" "$work/wal-g"
  echo "$WALG_SHA256  $work/wal-g" | sha256sum -c --quiet -
  install -m 0755 "$work/wal-g" "$1/wal-g"
  step "installed $("$1/wal-g" --version | cut -f1) as $1/wal-g"
}
step "installing WAL-G"
install_walg /usr/local/bin

step "fetching the host agent from $AGENT_S3_URI"
aws_ s3 cp --only-show-errors "$AGENT_S3_URI" "$work/agent.tgz"
echo "$AGENT_SHA256  $work/agent.tgz" | sha256sum -c --quiet -
install -d "$app"
tar -xzf "$work/agent.tgz" -C "$app"
(cd "$app" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)

step "preparing $STORAGE_KIND storage"
root_disk=$(lsblk -no PKNAME "$(findmnt -no SOURCE /)")
# NVMe devices other than the root disk whose controller reports this model.
devices_with_model() {
  local d name
  for d in /sys/block/nvme*n*; do
    name=${d##*/}
    [ -e "$d/device/model" ] && [ "$name" != "$root_disk" ] || continue
    if [ "$(sed 's/ *$//' "$d/device/model")" = "$1" ]; then echo "/dev/$name"; fi
  done
}
devices=()
if [ "$STORAGE_KIND" = instance-store ]; then
  mapfile -t devices < <(devices_with_model "Amazon EC2 NVMe Instance Storage")
  [ ${#devices[@]} -gt 0 ] || { step "this instance type has no instance-store NVMe; use one with local disks (m6id, i4i, ...)"; exit 1; }
else
  # The control side attaches the gp3 volume once the instance runs: wait for it (10 min at most).
  for _ in $(seq 1 120); do
    mapfile -t devices < <(devices_with_model "Amazon Elastic Block Store")
    [ ${#devices[@]} -eq 0 ] || break
    sleep 5
  done
  [ ${#devices[@]} -eq 1 ] || { step "expected one attached gp3 data volume, found ${#devices[@]}"; exit 1; }
fi
if [ ${#devices[@]} -gt 1 ]; then
  mdadm --create /dev/md0 --run --level=0 --raid-devices=${#devices[@]} "${devices[@]}"
  device=/dev/md0
else
  device=${devices[0]}
fi
step "formatting $device (${devices[*]})"
# Inode tables and journal now, not lazily in the background during the measurement.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$device"
install -d "$storage_root"
mount -o noatime "$device" "$storage_root"
echo "$device $storage_root ext4 noatime,nofail 0 2" >> /etc/fstab
# As on a local host: the agent runs as root and starts Postgres as postgres and the workload's pgbench as the
# unprivileged storage-lab user, which the ident map lets be lab_workload only (never the lab's superuser).
id storage-lab >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin storage-lab
install -d -m 0755 "$host_dir"
install -d -o postgres -g postgres "$storage_root" "$host_dir/logs"
# The socket folder: the agent narrows it to postgres:storage-lab 0750 before the server starts. Secrets: root's.
install -d -m 0700 -o postgres -g postgres "$host_dir/run"
install -d -m 0700 "$host_dir/secrets"

step "reading secrets from SSM Parameter Store"
agent_env=/etc/storage-lab/agent.env
install -d -m 0755 /etc/storage-lab
# A secret's value goes straight to a 0600 file of the agent (root); it is never printed.
fetch_secret() {
  (umask 077 && aws_ ssm get-parameter --with-decryption --name "$1" --query Parameter.Value --output text > "$2")
}
{
  echo "TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS"
  echo "TEMPORAL_NAMESPACE=$TEMPORAL_NAMESPACE"
} > "$agent_env"
if [ -n "$TEMPORAL_API_KEY_PARAMETER" ]; then
  fetch_secret "$TEMPORAL_API_KEY_PARAMETER" "$host_dir/secrets/temporal-api-key"
  echo "TEMPORAL_API_KEY_FILE=$host_dir/secrets/temporal-api-key" >> "$agent_env"
fi
if [ -n "$TEMPORAL_TLS_CERT_PARAMETER" ]; then
  fetch_secret "$TEMPORAL_TLS_CERT_PARAMETER" "$host_dir/secrets/temporal-tls.crt"
  fetch_secret "$TEMPORAL_TLS_KEY_PARAMETER" "$host_dir/secrets/temporal-tls.key"
  echo "TEMPORAL_TLS_CERT=$host_dir/secrets/temporal-tls.crt" >> "$agent_env"
  echo "TEMPORAL_TLS_KEY=$host_dir/secrets/temporal-tls.key" >> "$agent_env"
fi
if [ -n "$DATABASE_PASSWORD_PARAMETER" ]; then
  fetch_secret "$DATABASE_PASSWORD_PARAMETER" "$host_dir/secrets/db-password"
else
  (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > "$host_dir/secrets/db-password")
fi

step "writing $host_dir/host.json"
echo "$HOST_BASE_JSON" > "$work/host-base.json"
node "$app/dist/infra/providers/aws/host-config.js" "$work/host-base.json" "$host_dir/host.json" \
  "$(imds local-ipv4)" "$(imds instance-id)" "$POSTGRES_VERSION"

step "starting the host agent"
cat > /etc/systemd/system/storage-lab-agent.service <<UNIT
[Unit]
Description=Storage Lab host agent ($HOST_ID)
Wants=network-online.target
After=network-online.target

[Service]
EnvironmentFile=$agent_env
ExecStart=/opt/node/bin/node $app/dist/worker/host-agent.js $host_dir/host.json
Restart=always
RestartSec=2
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable --now storage-lab-agent
rm -rf "$work"
step "bootstrap done; agent polling host:$HOST_ID on $TEMPORAL_ADDRESS ($TEMPORAL_NAMESPACE)"
