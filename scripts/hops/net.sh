#!/usr/bin/env bash
# The test topology's hosts: two network namespaces, each a host with its
# own address, the GPU host reachable only through the bastion.
#
#   root namespace (the client)  ADDR_CLIENT ──veth── ADDR_BASTION  PREFIX-bastion
#   PREFIX-bastion               ADDR_BASTION_IN ──veth── ADDR_GPU  PREFIX-gpu
#
# The bastion does not forward IP, and the root namespace has no route to
# the GPU host's link, so the GPU host's sshd can only be reached by a
# jump through the bastion's.
#
#   net.sh up PREFIX OWNER_PID   create; print the addresses as NAME=VALUE
#   net.sh down PREFIX           stop every daemon of the run, delete it all
#   net.sh sweep                 tear down runs whose owner process is gone
#
# PREFIX is tlh plus up to 8 of [a-z0-9], unique per run (the tests use
# their pid and a random part); every name made here starts with it. Each
# run's state lives in $TORCHLSP_HOPS_RUN/PREFIX (default
# /run/torchlsp-hops/PREFIX).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

up() {
	local prefix=$1 owner=$2 run octet try
	hops_check_prefix "$prefix"
	[[ "$owner" =~ ^[0-9]+$ ]] || hops_die "bad owner pid '$owner'"
	run=$HOPS_RUN/$prefix
	[[ ! -e "$run" ]] || hops_die "run $prefix exists already ($run)"
	mkdir -p "$run"
	echo "$owner" >"$run/owner"
	# Any failure below leaves nothing behind.
	trap 'down "'"$prefix"'" >/dev/null 2>&1 || true' EXIT
	if ! ip netns add "$prefix-bastion" 2>"$run/netns.err"; then
		# The tests skip on "not permitted", and only on that.
		if grep -qiE "not permitted|permission denied" "$run/netns.err"; then
			hops_die "ip netns add is not permitted here: $(<"$run/netns.err")"
		fi
		hops_die "ip netns add $prefix-bastion: $(<"$run/netns.err")"
	fi
	ip netns add "$prefix-gpu"
	# The client's link: a /30 in 10.213.0.0/16 no other run uses.
	octet=
	for try in $(shuf -i 0-255 -n 64); do
		if ! ip -4 addr show | grep -q "inet 10\.213\.$try\."; then
			octet=$try
			break
		fi
	done
	[[ -n "$octet" ]] || hops_die "no free /30 left in 10.213.0.0/16"
	local client=10.213.$octet.1 bastion=10.213.$octet.2
	# Inside the two namespaces nothing else exists: a fixed link.
	local bastion_in=192.168.213.1 gpu=192.168.213.2

	ip link add "${prefix}r" type veth peer name "${prefix}b"
	ip link set "${prefix}b" netns "$prefix-bastion"
	ip addr add "$client/30" dev "${prefix}r"
	ip link set "${prefix}r" up
	hops_in_ns "$prefix-bastion" ip addr add "$bastion/30" dev "${prefix}b"
	hops_in_ns "$prefix-bastion" ip link set "${prefix}b" up
	hops_in_ns "$prefix-bastion" ip link set lo up

	ip link add "${prefix}bg" type veth peer name "${prefix}g"
	ip link set "${prefix}bg" netns "$prefix-bastion"
	ip link set "${prefix}g" netns "$prefix-gpu"
	hops_in_ns "$prefix-bastion" ip addr add "$bastion_in/30" dev "${prefix}bg"
	hops_in_ns "$prefix-bastion" ip link set "${prefix}bg" up
	hops_in_ns "$prefix-gpu" ip addr add "$gpu/30" dev "${prefix}g"
	hops_in_ns "$prefix-gpu" ip link set "${prefix}g" up
	hops_in_ns "$prefix-gpu" ip link set lo up
	# A host that is not a router.
	hops_in_ns "$prefix-bastion" sysctl -qw net.ipv4.ip_forward=0

	cat >"$run/net.env" <<-ENV
		NS_BASTION=$prefix-bastion
		NS_GPU=$prefix-gpu
		ADDR_CLIENT=$client
		ADDR_BASTION=$bastion
		ADDR_BASTION_IN=$bastion_in
		ADDR_GPU=$gpu
	ENV
	trap - EXIT
	cat "$run/net.env"
}

down() {
	local prefix=$1 run
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	# The daemons first (they hold files and sockets in the run dir),
	# then anything else still in the namespaces, then the namespaces.
	if [[ -d "$run" ]]; then
		"$HOPS_SCRIPTS/lxc.sh" down "$prefix" || true
		"$HOPS_SCRIPTS/docker.sh" down "$prefix" || true
		"$HOPS_SCRIPTS/slurm.sh" down "$prefix" || true
		local f
		for f in "$run"/*.pid; do
			[[ -e "$f" ]] && hops_kill_pidfile "$f" 5
		done
	fi
	local ns pid
	for ns in "$prefix-gpu" "$prefix-bastion"; do
		[[ -e "/run/netns/$ns" ]] || continue
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null || true
		done
		ip netns del "$ns" 2>/dev/null || true
	done
	ip link del "${prefix}r" 2>/dev/null || true
	rm -rf "$run"
}

# sweep: runs whose owner died without tearing down (a killed test binary).
sweep() {
	local d prefix owner
	[[ -d "$HOPS_RUN" ]] || return 0
	for d in "$HOPS_RUN"/tlh*; do
		[[ -d "$d" ]] || continue
		prefix=$(basename "$d")
		if [[ ! -e "$d/owner" && -n "$(find "$d" -maxdepth 0 -newermt '-60 seconds')" ]]; then
			continue # another run's up, between its mkdir and its owner file
		fi
		owner=$(cat "$d/owner" 2>/dev/null || echo 0)
		if [[ "$owner" =~ ^[0-9]+$ ]] && ((owner > 1)) && kill -0 "$owner" 2>/dev/null; then
			continue
		fi
		hops_log "sweeping run $prefix (owner $owner is gone)"
		down "$prefix"
	done
	# Namespaces of runs whose directory is already gone.
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tlh[a-z0-9]{1,8}-(bastion|gpu)$' || true); do
		prefix=${ns%-*}
		[[ -d "$HOPS_RUN/$prefix" ]] || down "$prefix"
	done
}

hops_need_root
case "${1:-}" in
up) up "${2:?prefix}" "${3:?owner pid}" ;;
down) down "${2:?prefix}" ;;
sweep) sweep ;;
*)
	echo "usage: $0 up PREFIX OWNER_PID | down PREFIX | sweep" >&2
	exit 2
	;;
esac
