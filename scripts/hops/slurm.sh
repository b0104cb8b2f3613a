#!/usr/bin/env bash
# A one-node Slurm cluster on the GPU host of a run (see net.sh): munged
# with the run's own key and socket, slurmctld and slurmd in the GPU host's
# network namespace, one partition "debug". Clients find it through
# SLURM_CONF=$TORCHLSP_HOPS_RUN/PREFIX/slurm/slurm.conf, which the GPU
# host's sshd sets for every session (as /etc/slurm/slurm.conf would on a
# real login node).
#
#   slurm.sh up PREFIX     start; wait until the node is idle
#   slurm.sh down PREFIX   cancel every job, stop the daemons
set -euo pipefail
source "$(dirname "$0")/lib.sh"

up() {
	local prefix=$1 run s m ns host i
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	[[ -f "$run/net.env" ]] || hops_die "run $prefix has no network (net.sh up first)"
	ns=$prefix-gpu
	command -v slurmctld >/dev/null && command -v munged >/dev/null ||
		hops_die "Slurm is missing: apt-get install slurm-wlm munge (scripts/setup.sh --test installs them)"
	trap 'down "'"$prefix"'" >/dev/null 2>&1 || true' EXIT
	s=$run/slurm m=$run/munge
	mkdir -p "$s/ctld" "$s/d" "$m"
	# munged insists on its own user owning its key and directories.
	dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
	chown -R munge:munge "$m"
	chmod 0700 "$m"
	chmod 0400 "$m/munge.key"
	chmod 0755 "$m"
	runuser -u munge -- /usr/sbin/munged --key-file="$m/munge.key" --socket="$m/munge.socket" \
		--pid-file="$m/munged.pid" --seed-file="$m/munge.seed" --log-file="$m/munged.log" ||
		hops_die "munged did not start: $(tail -n 5 "$m/munged.log" 2>/dev/null)"
	# slurmctld accepts only the machine's own host name as its host; the
	# node has a name of its own and its address inside the namespace.
	host=$(hostname -s)
	cat >"$s/slurm.conf" <<-CONF
		ClusterName=tlh
		SlurmctldHost=$host(127.0.0.1)
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		AuthInfo=socket=$m/munge.socket
		StateSaveLocation=$s/ctld
		SlurmdSpoolDir=$s/d
		SlurmctldPidFile=$s/slurmctld.pid
		SlurmdPidFile=$s/slurmd.pid
		SlurmctldLogFile=$s/slurmctld.log
		SlurmdLogFile=$s/slurmd.log
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_CPU
		SchedulerType=sched/backfill
		MpiDefault=none
		ReturnToService=2
		# scancel: SIGTERM, then SIGKILL 2 s later.
		KillWait=2
		MessageTimeout=10
		JobAcctGatherType=jobacct_gather/none
		AccountingStorageType=accounting_storage/none
		JobCompType=jobcomp/none
		# More CPUs than the machine has, so that the tests' concurrent steps
		# (the helper, a mirror, five repro variants) all run at once.
		SlurmdParameters=config_overrides
		NodeName=gpu1 NodeAddr=127.0.0.1 CPUs=8 RealMemory=2000 State=UNKNOWN
		PartitionName=debug Nodes=gpu1 Default=YES MaxTime=INFINITE State=UP
	CONF
	hops_in_ns "$ns" env SLURM_CONF="$s/slurm.conf" slurmctld -f "$s/slurm.conf" ||
		hops_die "slurmctld did not start: $(tail -n 5 "$s/slurmctld.log" 2>/dev/null)"
	hops_in_ns "$ns" env SLURM_CONF="$s/slurm.conf" slurmd -f "$s/slurm.conf" -N gpu1 ||
		hops_die "slurmd did not start: $(tail -n 5 "$s/slurmd.log" 2>/dev/null)"
	for ((i = 0; i < 300; i++)); do
		if [[ "$(hops_in_ns "$ns" env SLURM_CONF="$s/slurm.conf" sinfo -h -n gpu1 -o %t 2>/dev/null)" == idle ]]; then
			trap - EXIT
			echo "SLURM_CONF=$s/slurm.conf"
			return 0
		fi
		sleep 0.1
	done
	hops_die "the Slurm node did not become idle within 30 s: $(tail -n 5 "$s/slurmctld.log" "$s/slurmd.log" 2>/dev/null)"
}

down() {
	local prefix=$1 run s ns
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	s=$run/slurm
	ns=$prefix-gpu
	[[ -d "$s" ]] || return 0
	if [[ -s "$s/slurmctld.pid" && -e "/run/netns/$ns" ]]; then
		timeout 20 nsenter --net="/run/netns/$ns" -- env SLURM_CONF="$s/slurm.conf" scancel --full --quiet --partition=debug 2>/dev/null || true
	fi
	hops_kill_pidfile "$s/slurmd.pid" 10
	hops_kill_pidfile "$s/slurmctld.pid" 10
	# Steps outlive slurmd; their slurmstepd and tasks name the spool dir
	# or run in the namespace, which net.sh down empties.
	hops_kill_naming "$s/"
	hops_kill_pidfile "$run/munge/munged.pid" 5
}

hops_need_root
case "${1:-}" in
up) up "${2:?prefix}" ;;
down) down "${2:?prefix}" ;;
*)
	echo "usage: $0 up PREFIX | down PREFIX" >&2
	exit 2
	;;
esac
