// Package hops runs torchlsp end to end through the exec hops its users
// reach torch with, for real: separate hosts (network namespaces, each
// with its own sshd and host key), the GPU host reachable only through a
// bastion behind a slow link, and on the GPU host an LXC container behind a
// `pct` front end, a Docker container, a one-node Slurm cluster and a
// kubectl stand-in over the Docker container. Only kubectl is a shim: no
// Kubernetes cluster can be had here.
//
// The scripts in scripts/hops build the topology and tear it down; the
// root file systems and images they need are built once from Debian's
// mirrors and cached under /var/cache/torchlsp-hops (scripts/setup.sh
// --test builds them). The tests need root; they skip, saying why, where
// network namespaces cannot be made or a program is not installed.
//
//	go test -count=1 ./test/hops/
package hops
