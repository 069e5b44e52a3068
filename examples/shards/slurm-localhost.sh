#!/usr/bin/env bash
# A one-node Slurm cluster on this machine (Debian's slurm-wlm and munge), to try the job array
# of examples/shards/imagetime.sbatch for real. Run as root; stop it with `$0 stop`.
set -euo pipefail

node=$(hostname -s)
if [ "${1:-start}" = stop ]; then
    # slurmctld stops the slurmd daemons with it; munged by the pid it wrote.
    scontrol shutdown >/dev/null 2>&1 || true
    if [ -s /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)" || true; fi
    exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi

cpus=$(nproc)
memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=imagetime-local
SlurmctldHost=${node}
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
# No cgroups in a container: track processes through /proc, bind no tasks.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=${node} CPUs=${cpus} RealMemory=${memory} State=UNKNOWN
PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP
CONF

if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null \
        || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running /run/munge/munged.pid || su -s /bin/sh munge -c /usr/sbin/munged
running /run/slurmctld.pid || slurmctld
running /run/slurmd.pid || slurmd

for _ in $(seq 30); do
    if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
        sinfo
        exit 0
    fi
    sleep 1
done
echo "slurm did not come up; see /var/log/slurm/" >&2
exit 1
