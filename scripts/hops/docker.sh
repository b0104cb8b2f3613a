#!/usr/bin/env bash
# A Docker daemon on the GPU host of a run (see net.sh), with the bullseye
# image of images.sh imported and one container, "trainer", running it
# (no network, docker's init as PID 1). Clients find the daemon through
# DOCKER_HOST=unix://$TORCHLSP_HOPS_RUN/PREFIX/docker/docker.sock, which
# the GPU host's sshd sets for every session. kubectl's stand-in
# (scripts/hops/kubectl) maps pod trainer-0 to the same container.
#
#   docker.sh up PREFIX     start the daemon and the container
#   docker.sh down PREFIX   remove the container, stop the daemon
set -euo pipefail
source "$(dirname "$0")/lib.sh"

image_ref=torchlsp-hops/bullseye:py39

up() {
	local prefix=$1 run d ns image i
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	[[ -f "$run/net.env" ]] || hops_die "run $prefix has no network (net.sh up first)"
	ns=$prefix-gpu
	command -v dockerd >/dev/null || hops_die "dockerd is missing: apt-get install docker.io (scripts/setup.sh --test installs it)"
	image=$("$HOPS_SCRIPTS/images.sh" ensure docker)
	trap 'down "'"$prefix"'" >/dev/null 2>&1 || true' EXIT
	d=$run/docker
	mkdir -p "$d/data" "$d/exec"
	# No bridge, no iptables: the containers have no network. The cgroup
	# parent names the run, so that down finds every container process.
	setsid nsenter --net="/run/netns/$ns" -- dockerd \
		--data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/dockerd.pid" \
		-H "unix://$d/docker.sock" --bridge none --iptables=false --ip-masq=false \
		--storage-driver overlay2 --exec-opt native.cgroupdriver=cgroupfs \
		--cgroup-parent "/$prefix-docker" --log-level warn \
		</dev/null >"$d/dockerd.log" 2>&1 &
	export DOCKER_HOST=unix://$d/docker.sock
	for ((i = 0; i < 300; i++)); do
		/usr/bin/docker version >/dev/null 2>&1 && break
		sleep 0.1
	done
	/usr/bin/docker version >/dev/null 2>&1 || hops_die "dockerd did not answer within 30 s: $(tail -n 5 "$d/dockerd.log")"
	/usr/bin/docker import "$image" "$image_ref" >/dev/null
	/usr/bin/docker run -d --name trainer --init --network none "$image_ref" sleep infinity >/dev/null
	# Pair the GPU host's docker client with this daemon's version.
	mkdir -p "$run/bin" "$run/kube"
	ln -sfn /usr/bin/docker "$run/bin/docker"
	# kubectl's stand-in: pod trainer-0 (namespace ml, container pytorch)
	# is the same container.
	echo "ml trainer-0 pytorch trainer" >"$run/kube/pods"
	cat >"$run/bin/kubectl" <<-KUBECTL
		#!/bin/sh
		KUBECTL_SHIM_PODS=$run/kube/pods exec $HOPS_SCRIPTS/kubectl "\$@"
	KUBECTL
	chmod 0755 "$run/bin/kubectl"
	trap - EXIT
	echo "DOCKER_HOST=$DOCKER_HOST"
}

down() {
	local prefix=$1 run d ctl f
	hops_check_prefix "$prefix"
	run=$HOPS_RUN/$prefix
	d=$run/docker
	[[ -d "$d" ]] || return 0
	if [[ -S "$d/docker.sock" ]]; then
		export DOCKER_HOST=unix://$d/docker.sock
		local ids
		ids=$(timeout 20 /usr/bin/docker ps -aq 2>/dev/null || true)
		[[ -z "$ids" ]] || timeout 30 /usr/bin/docker rm -f $ids >/dev/null 2>&1 || true
	fi
	hops_kill_pidfile "$d/dockerd.pid" 15
	# What a killed daemon leaves: containerd, its shims, their containers.
	hops_kill_naming "$d/"
	for ctl in /sys/fs/cgroup/*/"$prefix-docker"; do
		[[ -d "$ctl" ]] || continue
		for f in $(find "$ctl" -name cgroup.procs); do
			xargs -r kill -KILL <"$f" 2>/dev/null || true
		done
		find "$ctl" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	local m
	for m in $(awk -v d="$d/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$run/bin/docker" "$run/bin/kubectl" "$run/kube"
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
