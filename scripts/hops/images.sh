#!/usr/bin/env bash
# Builds and caches the root file systems the real exec hops run in, from
# Debian's mirrors alone (no image registry is reachable):
#   lxc     Debian 12 (bookworm) with python3-torch (torch 1.13): the LXC
#           container behind `pct exec`
#   docker  Debian 11 (bullseye) with Python 3.9 and numpy, plus the small
#           torch-shaped package in test/hops/testdata/torch39: the image
#           behind `docker exec -i`, an older interpreter
#   trixie  Debian 13 (trixie) with python3-torch (a real torch 2.6 on
#           Python 3.13), libtorch-dev and g++ so that Inductor compiles
#           on the CPU: the container of scripts/demo.sh and of the tests
#           that need a real torch 2.x
# Each is built once (a few minutes on 2 cores) under
# $TORCHLSP_HOPS_CACHE (default /var/cache/torchlsp-hops), keyed by a hash
# of what it is made from, built in a temporary directory and renamed into
# place, so an interrupted build is never used.
#
#   images.sh ensure lxc|docker   build if missing; print the path
#   images.sh path lxc|docker     print the path, fail if not built
#   images.sh build all           build both (scripts/setup.sh --test)
#   images.sh clean               remove every cached image
set -euo pipefail
source "$(dirname "$0")/lib.sh"

lxc_packages=python3,python3-torch,tini,procps
docker_packages=python3,python3-numpy
trixie_packages=python3,python3-torch,libtorch-dev,g++,python3-dev,tini,procps
torch39=$HOPS_REPO/test/hops/testdata/torch39

# Bump when the steps below change what an image holds; the keys also
# cover the suites, the package lists and the torch-shaped package.
recipe=1
lxc_key() { hops_key -- "$recipe" bookworm "$lxc_packages"; }
trixie_key() { hops_key -- "$recipe" trixie "$trixie_packages"; }
bullseye_key() { hops_key -- "$recipe" bullseye "$docker_packages"; }
docker_key() {
	local files
	mapfile -t files < <(find "$torch39" -type f \( -name '*.py' -o -name '*.pyi' \) | LC_ALL=C sort)
	hops_key "${files[@]}" -- "$(bullseye_key)" "${files[@]#"$torch39"}"
}

lxc_path() { echo "$HOPS_CACHE/lxc-bookworm/$(lxc_key)/rootfs"; }
trixie_path() { echo "$HOPS_CACHE/lxc-trixie/$(trixie_key)/rootfs"; }
bullseye_path() { echo "$HOPS_CACHE/rootfs-bullseye/$(bullseye_key)/rootfs"; }
docker_path() { echo "$HOPS_CACHE/docker-bullseye/$(docker_key)/image.tar"; }

# unmount_under DIR: what debootstrap mounted inside a root it was
# building (proc, sys), deepest first.
unmount_under() {
	local m
	for m in $(awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
}

# debootstrap_into SUITE PACKAGES FINAL: debootstraps into a temporary
# sibling of FINAL's directory and renames it into place.
debootstrap_into() {
	local suite=$1 packages=$2 final=$3
	local entry tmp
	entry=$(dirname "$final")
	[[ -e "$entry/.complete" ]] && return 0
	mkdir -p "$(dirname "$entry")" "$HOPS_CACHE/debs"
	tmp=$(mktemp -d "$(dirname "$entry")/.tmp-XXXXXX")
	# On any exit before the rename, nothing half-built stays behind.
	trap 'unmount_under "'"$tmp"'"; rm -rf "'"$tmp"'"' EXIT
	hops_log "debootstrap $suite with $packages (1-3 minutes, once)"
	debootstrap --variant=minbase --include="$packages" --cache-dir="$HOPS_CACHE/debs" \
		"$suite" "$tmp/rootfs" "$DEBIAN_MIRROR" >"$tmp/debootstrap.log" 2>&1 &
	local pid=$! started=$SECONDS last=""
	# Progress every 10 s: the step debootstrap is at, from its own log.
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if (((SECONDS - started) % 10 == 0)); then
			last=$(grep '^I: ' "$tmp/debootstrap.log" 2>/dev/null | tail -n 1 | cut -c4-)
			[[ -n "$last" ]] && hops_log "debootstrap $suite: $((SECONDS - started)) s: $last"
		fi
	done
	if ! wait "$pid"; then
		tail -n 30 "$tmp/debootstrap.log" >&2
		hops_die "debootstrap $suite failed (log above)"
	fi
	hops_log "debootstrap $suite: done in $((SECONDS - started)) s"
	unmount_under "$tmp"
	# Nothing in the images is fetched later: drop apt's lists and caches.
	rm -rf "$tmp/rootfs/var/lib/apt/lists/"* "$tmp/rootfs/var/cache/apt/"*.bin
	touch "$tmp/.complete"
	rm -rf "$entry"
	mv "$tmp" "$entry"
	trap - EXIT
	# Older entries of the same image are of no further use.
	find "$(dirname "$entry")" -mindepth 1 -maxdepth 1 -not -name "$(basename "$entry")" -not -name '.tmp-*' -exec rm -rf {} +
}

build_lxc() {
	debootstrap_into bookworm "$lxc_packages" "$(lxc_path)"
}

build_trixie() {
	debootstrap_into trixie "$trixie_packages" "$(trixie_path)"
}

build_docker() {
	local final entry tmp site
	final=$(docker_path)
	entry=$(dirname "$final")
	[[ -e "$entry/.complete" ]] && return 0
	hops_locked rootfs-bullseye debootstrap_into bullseye "$docker_packages" "$(bullseye_path)"
	mkdir -p "$(dirname "$entry")"
	tmp=$(mktemp -d "$(dirname "$entry")/.tmp-XXXXXX")
	trap 'rm -rf "'"$tmp"'"' EXIT
	# The package goes where pip would put it for Debian's python3.9.
	site=usr/local/lib/python3.9/dist-packages
	mkdir -p "$tmp/overlay/$site"
	cp -R "$torch39/torch" "$tmp/overlay/$site/torch"
	find "$tmp/overlay" -name __pycache__ -prune -exec rm -rf {} +
	tar -C "$(bullseye_path)" -cf "$tmp/image.tar" --numeric-owner .
	tar -C "$tmp/overlay" -rf "$tmp/image.tar" --numeric-owner --owner=0 --group=0 "./$site/torch"
	rm -rf "$tmp/overlay"
	touch "$tmp/.complete"
	rm -rf "$entry"
	mv "$tmp" "$entry"
	trap - EXIT
	find "$(dirname "$entry")" -mindepth 1 -maxdepth 1 -not -name "$(basename "$entry")" -not -name '.tmp-*' -exec rm -rf {} +
}

need_tools() {
	command -v debootstrap >/dev/null || hops_die "debootstrap is missing: apt-get install debootstrap (scripts/setup.sh --test installs it)"
}

main() {
	local cmd=${1:-} what=${2:-}
	case "$cmd:$what" in
	ensure:lxc | build:lxc)
		hops_need_root
		need_tools
		hops_locked image-lxc build_lxc
		if [[ $cmd == ensure ]]; then lxc_path; fi
		;;
	ensure:trixie | build:trixie)
		hops_need_root
		need_tools
		hops_locked image-trixie build_trixie
		if [[ $cmd == ensure ]]; then trixie_path; fi
		;;
	ensure:docker | build:docker)
		hops_need_root
		need_tools
		hops_locked image-docker build_docker
		if [[ $cmd == ensure ]]; then docker_path; fi
		;;
	build:all)
		hops_need_root
		need_tools
		hops_locked image-lxc build_lxc
		hops_locked image-docker build_docker
		hops_locked image-trixie build_trixie
		;;
	path:lxc | path:docker | path:trixie)
		local p
		p=$("${what}_path")
		[[ -e "$(dirname "$p")/.complete" ]] || hops_die "$what image not built: run scripts/hops/images.sh build $what"
		echo "$p"
		;;
	clean:)
		hops_need_root
		rm -rf "$HOPS_CACHE/lxc-bookworm" "$HOPS_CACHE/lxc-trixie" "$HOPS_CACHE/rootfs-bullseye" "$HOPS_CACHE/docker-bullseye"
		;;
	*)
		echo "usage: $0 ensure|build|path lxc|docker|trixie; $0 build all; $0 clean" >&2
		exit 2
		;;
	esac
}

main "$@"
