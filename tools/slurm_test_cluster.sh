#!/usr/bin/env bash
# A one-node SLURM cluster on localhost for the cluster tests: munged, a MariaDB server and slurmdbd (accounting:
# submitit reads job states with sacct, as on any real cluster), slurmctld and slurmd, started by hand (no systemd),
# configured in a private folder (never /etc/slurm). Idempotent; `stop` leaves nothing running.
#
#   tools/slurm_test_cluster.sh start    # installs slurm-wlm, slurmdbd, munge, mariadb-server when missing (Debian,
#                                        # as root), then starts
#   tools/slurm_test_cluster.sh stop
#   tools/slurm_test_cluster.sh status   # exit 0 when the node answers and is idle or allocated
#   tools/slurm_test_cluster.sh env      # prints `export SLURM_CONF=...` for a shell
#
# The partition `test` holds this machine's cores, allows time limits from 1 minute, and requeues jobs that are
# preempted or time out (JobRequeue=1, PreemptMode=REQUEUE). State lives in $LIT_SLURM_DIR (default
# /tmp/lit_slurm_test); commands find the cluster through SLURM_CONF=$LIT_SLURM_DIR/slurm.conf.
set -euo pipefail

DIR="${LIT_SLURM_DIR:-/tmp/lit_slurm_test}"
CONF="$DIR/slurm.conf"
PORT="${LIT_SLURM_PORT:-6817}"   # slurmctld; slurmd, slurmdbd and MariaDB take the next three
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
MUNGE_SOCKET_DIR=/run/munge

install_if_missing() {
    local missing=0
    for tool in slurmctld slurmd slurmdbd munged mariadbd; do
        command -v "$tool" >/dev/null || missing=1
    done
    [ "$missing" = 0 ] && return
    if [ "$(id -u)" != 0 ]; then
        echo "slurm_test_cluster: slurm-wlm and munge are missing and installing them needs root" >&2
        exit 1
    fi
    echo "slurm_test_cluster: installing slurm-wlm, slurmdbd, munge and mariadb-server (apt-get)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurmdbd munge mariadb-server >/dev/null
}

write_config() {
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    local node cpus mem
    node="$(hostname -s)"
    cpus="$(nproc)"
    # slurmd refuses a node configured with more memory than it has: give the partition 90% of it
    mem="$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)"
    cat >"$DIR/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/slurmdbd.pid
CONF
    chmod 600 "$DIR/slurmdbd.conf"
    cat >"$CONF" <<CONF
ClusterName=littest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# a requeued job waits cred_expire seconds before it may start again (default 120): short for tests
AuthInfo=cred_expire=10
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
# seconds between SIGTERM and SIGKILL when a job ends (scancel, time limit): what a run has to checkpoint
KillWait=30
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE DefaultTime=60 State=UP PreemptMode=REQUEUE
CONF
}

# The daemons this script started are found by their pid files in $DIR (a process of the same name started by
# anyone else, another test cluster or a real SLURM, is never looked at, waited for or stopped).
running() {  # running NAME: $DIR/NAME.pid names a live process called NAME (not a stale file's reused pid)
    [ -s "$DIR/$1.pid" ] && [ "$(cat "/proc/$(cat "$DIR/$1.pid")/comm" 2>/dev/null)" = "$1" ]
}

stop_daemon() {  # stop_daemon NAME: SIGTERM, up to 10 s to exit, then SIGKILL
    running "$1" || return 0
    local pid
    pid="$(cat "$DIR/$1.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.5
    done
    kill -9 "$pid" 2>/dev/null || true
}

start_munge() {
    if [ -S "$MUNGE_SOCKET_DIR/munge.socket.2" ] && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return  # a munged is already serving (ours from an earlier start, or the machine's): used, not owned
    fi
    mkdir -p "$MUNGE_SOCKET_DIR" /var/lib/munge /var/log/munge /etc/munge
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    fi
    chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge "$MUNGE_SOCKET_DIR" 2>/dev/null || true
    chmod 0400 /etc/munge/munge.key
    if id munge >/dev/null 2>&1; then
        runuser -u munge -- munged --pid-file="$MUNGE_SOCKET_DIR/munged.pid"
    else
        munged --force --pid-file="$MUNGE_SOCKET_DIR/munged.pid"
    fi
    for _ in $(seq 1 20); do
        [ -s "$MUNGE_SOCKET_DIR/munged.pid" ] && break
        sleep 0.5
    done
    cp "$MUNGE_SOCKET_DIR/munged.pid" "$DIR/munged.pid"  # started here: `stop` stops it
}

start_accounting() {
    if ! running mariadbd; then
        if [ ! -d "$DIR/mysql/mysql" ]; then
            mariadb-install-db --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
                >"$DIR/log/mariadb-install.log" 2>&1
        fi
        mariadbd --user=root --datadir="$DIR/mysql" --socket="$DIR/mysql.sock" --bind-address=127.0.0.1 \
            --port="$DB_PORT" --pid-file="$DIR/mariadbd.pid" --log-error="$DIR/log/mariadb.log" >/dev/null 2>&1 &
        for _ in $(seq 1 60); do
            mariadb --socket="$DIR/mysql.sock" -e "select 1" >/dev/null 2>&1 && break
            sleep 0.5
        done
        mariadb --socket="$DIR/mysql.sock" -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
            CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
            GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
    fi
    if ! running slurmdbd; then
        SLURM_CONF="$CONF" slurmdbd  # reads slurmdbd.conf from SLURM_CONF's folder
    fi
    for _ in $(seq 1 60); do
        SLURM_CONF="$CONF" sacctmgr -n list cluster >/dev/null 2>&1 && break
        sleep 0.5
    done
    SLURM_CONF="$CONF" sacctmgr -i add cluster littest >/dev/null 2>&1 || true
}

node_ready() {
    local state
    state="$(SLURM_CONF="$CONF" sinfo -h -N -o '%T' 2>/dev/null | head -1)"
    case "$state" in idle*|alloc*|mix*|completing*) return 0 ;; *) return 1 ;; esac
}

start() {
    install_if_missing
    write_config
    start_munge
    start_accounting
    export SLURM_CONF="$CONF"
    running slurmctld || slurmctld -f "$CONF"
    running slurmd || slurmd -f "$CONF"
    for _ in $(seq 1 60); do
        if node_ready; then
            echo "slurm_test_cluster: up (SLURM_CONF=$CONF)"
            return 0
        fi
        # a node left DOWN by an earlier stop comes back on request
        scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
    echo "slurm_test_cluster: the node did not come up in 60 s; logs in $DIR/log" >&2
    exit 1
}

stop() {
    if running slurmctld; then
        # jobs first: a job step's slurmstepd outlives slurmd, so the jobs must have ended (KillWait) before it stops
        SLURM_CONF="$CONF" scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
        for _ in $(seq 1 90); do
            [ -z "$(SLURM_CONF="$CONF" squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
    for daemon in slurmd slurmctld slurmdbd mariadbd; do
        stop_daemon "$daemon"
    done
    # munged only when this script started it and no SLURM daemon of any other cluster on the machine needs it
    if [ -f "$DIR/munged.pid" ] && ! pgrep -x slurmctld >/dev/null && ! pgrep -x slurmd >/dev/null; then
        stop_daemon munged
    fi
    rm -f "$DIR/munged.pid"
    rm -rf "$DIR/state" "$DIR/spool" "$DIR/mysql"
    echo "slurm_test_cluster: stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) SLURM_CONF="$CONF" node_ready ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
