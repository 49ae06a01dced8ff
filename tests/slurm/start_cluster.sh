#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for testing the SLURM profile against a real
# scheduler (tests/workflow/test_slurm_cluster.py). Meant for a throwaway machine, as root.
#
#   tests/slurm/start_cluster.sh start    install slurm-wlm and munge if missing (apt-get), write
#                                         the configuration, start munged, slurmctld and slurmd,
#                                         wait until the node is idle; prints SLURM_CONF=<file>
#   tests/slurm/start_cluster.sh stop     cancel the jobs, stop the daemons, delete the folder
#   tests/slurm/start_cluster.sh status   sinfo of the running cluster
#   tests/slurm/start_cluster.sh install  only install the packages (CI does it before the tests)
#
# The configuration goes where every SLURM client looks for it, /etc/slurm (slurm.conf, gres.conf,
# fake_gpus.conf, each marked as written here): the SLURM plugin's job step runs srun inside
# the job with SLURM_CONF removed from its environment, so a configuration elsewhere would not
# be found on the node. Everything else (munge key and socket, state, logs) is under one folder,
# BAYESIRT_SLURM_DIR (default /tmp/bayesirt-slurm); stop deletes it and the three files. The
# script refuses to start where SLURM is configured already (a slurm.conf it did not write, a
# SLURM_CONF elsewhere, or a slurmctld/slurmd it did not start).
#
# Settings (environment variables):
#   BAYESIRT_SLURM_PARTITION  partition name (default: standard, the profile's default partition)
#   BAYESIRT_SLURM_CPUS       CPUs the node declares (default: this machine's)
#   BAYESIRT_SLURM_MEM_MB     memory the node declares in MB (default: this machine's, less 10%)
#   BAYESIRT_SLURM_GPUS       count-only GPUs the node declares (default 1; 0 for none)
# The node may declare more CPUs and memory than the machine has (SlurmdParameters=
# config_overrides), so that requests written for real cluster nodes can be scheduled here; they
# are bookkeeping only: no cgroups, no limits are enforced. The GPUs are a count without a
# device file: jobs asking for --gpus=1 are scheduled, none of them sees a GPU.
set -euo pipefail

DIR=${BAYESIRT_SLURM_DIR:-/tmp/bayesirt-slurm}
PARTITION=${BAYESIRT_SLURM_PARTITION:-standard}
GPUS=${BAYESIRT_SLURM_GPUS:-1}
CTLD_PORT=${BAYESIRT_SLURM_CTLD_PORT:-6817}
SLURMD_PORT=${BAYESIRT_SLURM_SLURMD_PORT:-6818}
ETC=${BAYESIRT_SLURM_ETC:-/etc/slurm}   # changed only by the test of the refusal below
CONF=$ETC/slurm.conf
SIGNATURE="# written by tests/slurm/start_cluster.sh"   # first line of the files it writes
MARKER=$DIR/.bayesirt-test-cluster   # says the folder is this script's, so stop may delete it

die() { echo "start_cluster.sh: $1" >&2; exit "${2:-1}"; }   # die <message> [exit code]

ours() { [[ -f $1 ]] && [[ $(head -n 1 "$1") == "$SIGNATURE"* ]]; }

pid_alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null && return 0
    export DEBIAN_FRONTEND=noninteractive
    # The packages' install scripts would start the system services with the system config;
    # this script starts its own daemons instead, so keep them from starting (policy-rc.d 101).
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    fi
    local ok=0 log
    log=$(mktemp)
    # A fresh machine may have no package lists yet: update only when the install fails.
    apt-get install -y -q --no-install-recommends slurm-wlm munge >"$log" 2>&1 && ok=1
    if [[ $ok == 0 ]]; then
        apt-get update -q >>"$log" 2>&1 || true
        apt-get install -y -q --no-install-recommends slurm-wlm munge >>"$log" 2>&1 && ok=1
    fi
    [[ $own_policy == 1 ]] && rm -f "$policy"
    if [[ $ok == 0 ]]; then tail -n 20 "$log" >&2; rm -f "$log"; die "apt-get could not install slurm-wlm and munge" 4; fi
    rm -f "$log"
}

refuse_foreign_slurm() {
    local f
    for f in "$ETC/slurm.conf" "$ETC/gres.conf" /etc/slurm-llnl/slurm.conf; do
        if [[ -e $f ]] && ! ours "$f"; then
            die "a SLURM configuration exists ($f): not touching this machine's SLURM" 3
        fi
    done
    if [[ -e $ETC/fake_gpus.conf && ! -e $MARKER ]]; then die "$ETC/fake_gpus.conf exists: not touching it" 3; fi
    if [[ -n ${SLURM_CONF:-} && $SLURM_CONF != "$CONF" ]]; then
        die "SLURM_CONF points to another configuration ($SLURM_CONF)" 3
    fi
    # daemons running that are not ours (ours have their pid files in $DIR)
    local name pid
    for name in slurmctld slurmd; do
        for pid in $(pgrep -x "$name" || true); do
            if [[ ! -s $DIR/run/$name.pid || $(cat "$DIR/run/$name.pid") != "$pid" ]]; then
                die "a $name (pid $pid) is running that this script did not start" 3
            fi
        done
    done
}

write_config() {
    local host cpus mem
    host=$(hostname -s)
    cpus=${BAYESIRT_SLURM_CPUS:-$(nproc)}
    mem=${BAYESIRT_SLURM_MEM_MB:-$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)}
    mkdir -p "$ETC" "$DIR"/{munge,state/ctld,state/slurmd,log,run}
    local gres_node="" gres_types=""
    if (( GPUS > 0 )); then
        gres_node="Gres=gpu:$GPUS"
        gres_types="GresTypes=gpu"
        # SLURM 22.05 drops a GPU declared without a device file (gres.conf Count= alone), so the
        # GPUs come from fake_gpus.conf, SLURM's own stand-in for detected GPUs (its test suite
        # uses it): <type>|<CPU count>|<CPU range>|<links>|<device file>. No device is opened.
        printf '%s\nAutoDetect=off\n' "$SIGNATURE" >"$ETC/gres.conf"
        : >"$ETC/fake_gpus.conf"
        local g
        for (( g = 0; g < GPUS; g++ )); do
            printf '(null)|%s|0-%s|-1|/dev/nvidia%s\n' "$cpus" "$((cpus - 1))" "$g" >>"$ETC/fake_gpus.conf"
        done
    fi
    cat >"$CONF" <<EOF
$SIGNATURE: a one-node test cluster, state and logs in $DIR
ClusterName=bayesirt-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state/ctld
SlurmdSpoolDir=$DIR/state/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# no cgroups: processes are tracked through /proc, nothing is confined
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
# schedule at once; finished jobs stay visible to squeue for an hour (no accounting database)
SchedulerParameters=sched_min_interval=100000
MinJobAge=3600
ReturnToService=2
SlurmdParameters=config_overrides
$gres_types
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem $gres_node State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    # a key of our own, readable by root only (munged insists)
    head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
    chmod 755 "$DIR/munge" && chmod 400 "$DIR/munge/munge.key"
    munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munged.seed"
}

wait_idle() {
    local i state
    for i in $(seq 1 120); do
        # a daemon that died (a configuration it rejects) will not come back: fail at once
        # (after 2 s, by when both have written their pid files)
        if (( i > 4 )) && ! { pid_alive "$DIR/run/slurmctld.pid" && pid_alive "$DIR/run/slurmd.pid"; }; then
            break
        fi
        state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
        [[ $state == idle ]] && return 0
        # a node that came up "down" or "drained" is resumed once (ReturnToService covers most)
        if [[ $state == down* || $state == drain* ]] && (( i % 10 == 0 )); then
            scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
        fi
        sleep 0.5
    done
    echo "node state: '${state:-none}'" >&2
    tail -n 20 "$DIR"/log/*.log >&2 || true
    return 1
}

start() {
    [[ $(id -u) == 0 ]] || die "must run as root (it installs packages and starts daemons)" 2
    if [[ -e $MARKER ]]; then stop; fi   # a cluster of ours left behind: start afresh
    refuse_foreign_slurm
    install_packages
    mkdir -p "$DIR" && touch "$MARKER"
    write_config
    start_munge
    slurmctld -f "$CONF"
    slurmd -f "$CONF"
    if ! wait_idle; then stop; die "the node did not become idle" 1; fi
    echo "SLURM_CONF=$CONF"
}

stop_pid() {  # stop_pid <pid file>: TERM, then KILL after 10 s
    local file=$1 pid i
    [[ -s $file ]] || return 0
    pid=$(cat "$file")
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    [[ -e $MARKER ]] || { echo "no test cluster in $DIR"; return 0; }
    if pid_alive "$DIR/run/slurmctld.pid"; then
        # cancel what is still queued or running, so no job outlives the daemons
        scancel --full --quiet --partition="$PARTITION" 2>/dev/null || true
        local i
        for i in $(seq 1 30); do
            [[ -z $(squeue -h -t PD,R,CG -o %i 2>/dev/null) ]] && break
            sleep 0.5
        done
    fi
    stop_pid "$DIR/run/slurmd.pid"
    stop_pid "$DIR/run/slurmctld.pid"
    stop_pid "$DIR/run/munged.pid"
    # step daemons of cancelled jobs die with their jobs; any left are this cluster's (start
    # refuses to run beside another SLURM), listed by their ids
    local pid
    for pid in $(pgrep -x slurmstepd || true); do kill -9 "$pid" 2>/dev/null || true; done
    local f
    for f in "$ETC/slurm.conf" "$ETC/gres.conf"; do ours "$f" && rm -f "$f"; done
    rm -f "$ETC/fake_gpus.conf"
    rm -rf "$DIR"
}

case ${1:-} in
    start) start ;;
    install)
        [[ $(id -u) == 0 ]] || die "must run as root to install packages" 2
        install_packages ;;
    stop) stop ;;
    status) sinfo -N -l ;;
    *) echo "usage: $0 start|stop|status|install" >&2; exit 2 ;;
esac
