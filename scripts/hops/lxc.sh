#!/usr/bin/env bash
# An LXC container on the GPU host of a run (see net.sh), as Proxmox runs
# one: container 200, Debian 12 with python3-torch (images.sh lxc), its
# root file system an overlay on the cached image so that every run starts
# clean. `pct` (scripts/hops/pct, on the GPU host's PATH) is the front end
# users call: `pct exec 200 -- CMD` runs `lxc-attach -n 200 -- CMD`.
# A run with no network of its own (no net.sh up) gets the container on
# this host, as scripts/demo.sh and the real-torch tests use it.
#
#   lxc.sh up PREFIX [IMAGE]  create and start container 200 of IMAGE
#                             (images.sh: lxc, the default, or trixie);
#                             prints LXC_PATH= and PCT_BIN= (the directory
#                             of the run's pct)
#   lxc.sh down PREFIX        stop and destroy it
set -euo pipefail
source "$(dirname "$0")/lib.sh"

vmid=200

# in_ns PREFIX CMD...: runs CMD in the run's GPU host: its network
# namespace when the run has one, else this host.
in_ns() {
	local prefix=$1
	shift
	if [[ -e "/run/netns/$prefix-gpu" ]]; then
		hops_in_ns "$prefix-gpu" "$@"
	else
		"$@"
	fi
}

up() {
	local prefix=$1 image=${2:-lxc} run l rootfs i
	hops_check_prefix "$prefix"
	[[ "$image" == lxc || "$image" == trixie ]] || hops_die "unknown image '$image': lxc or trixie"
	run=$HOPS_RUN/$prefix
	command -v lxc-start >/dev/null || hops_die "LXC is missing: apt-get install lxc (scripts/setup.sh installs it)"
	rootfs=$("$HOPS_SCRIPTS/images.sh" ensure "$image")
	trap 'down "'"$prefix"'" >/dev/null 2>&1 || true' EXIT
	l=$run/lxc
	mkdir -p "$l/$vmid/delta"
	# No network of its own (there is no lxcbr0 here) and no AppArmor
	# (none in this kernel); tini as init reaps what lxc-attach leaves.
	# The cgroup names the run, so that down finds every process.
	cat >"$l/$vmid/config" <<-CONF
		lxc.include = /usr/share/lxc/config/common.conf
		lxc.arch = linux64
		lxc.uts.name = ct$vmid
		lxc.rootfs.path = overlay:$rootfs:$l/$vmid/delta
		lxc.net.0.type = empty
		lxc.apparmor.profile = unconfined
		lxc.init.cmd = /usr/bin/tini -s -- /bin/sleep infinity
		lxc.cgroup.dir.container = $prefix-lxc/$vmid
		lxc.cgroup.dir.monitor = $prefix-lxc/$vmid-monitor
		lxc.tty.max = 0
		lxc.log.file = $l/$vmid.log
		lxc.log.level = WARN
	CONF
	in_ns "$prefix" lxc-start -P "$l" -n "$vmid" -d ||
		hops_die "lxc-start failed: $(tail -n 5 "$l/$vmid.log" 2>/dev/null)"
	# LXC's command socket is an abstract one, which belongs to the
	# network namespace: every lxc-* command runs in the GPU host's.
	in_ns "$prefix" lxc-wait -P "$l" -n "$vmid" -s RUNNING -t 30 || hops_die "container $vmid did not start: $(tail -n 5 "$l/$vmid.log")"
	# The pct front end, with this run's LXC path.
	mkdir -p "$run/bin"
	cat >"$run/bin/pct" <<-PCT
		#!/bin/sh
		PCT_LXCPATH=$l exec $HOPS_SCRIPTS/pct "\$@"
	PCT
	chmod 0755 "$run/bin/pct"
	for ((i = 0; i < 100; i++)); do
		in_ns "$prefix" "$run/bin/pct" exec "$vmid" -- /usr/bin/python3 -c 'import sys' >/dev/null 2>&1 && break
		sleep 0.1
	done
	trap - EXIT
	echo "LXC_PATH=$l"
	echo "PCT_BIN=$run/bin"
}

down() {
	local prefix=$1 run l ctl f
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	l=$run/lxc
	[[ -d "$l" ]] || return 0
	if [[ -f "$l/$vmid/config" ]]; then
		local ns=()
		[[ -e "/run/netns/$prefix-gpu" ]] && ns=(nsenter --net="/run/netns/$prefix-gpu" --)
		timeout 30 "${ns[@]}" lxc-stop -P "$l" -n "$vmid" -k >/dev/null 2>&1 || true
	fi
	hops_kill_naming "$l/"
	for ctl in /sys/fs/cgroup/*/"$prefix-lxc"; do
		[[ -d "$ctl" ]] || continue
		for f in $(find "$ctl" -name cgroup.procs); do
			xargs -r kill -KILL <"$f" 2>/dev/null || true
		done
		sleep 0.2
		find "$ctl" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	local m
	for m in $(awk -v d="$l/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$l" "$run/bin/pct"
}

hops_need_root
case "${1:-}" in
up) up "${2:?prefix}" "${3:-lxc}" ;;
down) down "${2:?prefix}" ;;
*)
	echo "usage: $0 up PREFIX [lxc|trixie] | down PREFIX" >&2
	exit 2
	;;
esac
