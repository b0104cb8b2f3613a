package hops

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a process on one of the topology's hosts or in its containers.
type proc struct {
	pid, ppid int
	where     string // "bastion", "gpu", "lxc" or "docker"
	comm      string
	cmdline   string
}

func (p proc) String() string {
	return fmt.Sprintf("%s pid %d (parent %d): %s", p.where, p.pid, p.ppid, p.cmdline)
}

// processes lists the live processes of the topology: those in the
// bastion's and the GPU host's network namespaces, and those in the
// containers' cgroups (named by the run prefix). All share this
// machine's pid namespace tree, so /proc shows them all.
func (tp *topology) processes(t testing.TB) []proc {
	t.Helper()
	type nsID struct{ dev, ino uint64 }
	hosts := map[nsID]string{}
	for name, ns := range map[string]string{"bastion": tp.net["NS_BASTION"], "gpu": tp.net["NS_GPU"]} {
		var st syscall.Stat_t
		if err := syscall.Stat("/run/netns/"+ns, &st); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		hosts[nsID{st.Dev, st.Ino}] = name
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", d.Name())
		var where string
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(dir, "ns", "net"), &st) == nil {
			where = hosts[nsID{st.Dev, st.Ino}]
		}
		if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
			switch {
			case bytes.Contains(cg, []byte("/"+tp.prefix+"-docker/")):
				where = "docker"
			case bytes.Contains(cg, []byte("/"+tp.prefix+"-lxc/")):
				where = "lxc"
			}
		}
		if where == "" {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		comm := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		out = append(out, proc{pid: pid, ppid: ppid, where: where, comm: comm,
			cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
	}
	return out
}

// expected reports whether p belongs to the topology itself: the sshd
// listeners, the daemons, the containers' init processes.
func (tp *topology) expected(p proc) bool {
	if slices.Contains(tp.listeners(), p.pid) || strings.HasPrefix(p.cmdline, "[lxc monitor] ") {
		return true
	}
	switch p.where {
	case "gpu":
		switch p.comm {
		case "dockerd", "containerd", "containerd-shim", "slurmctld", "slurmd":
			return true
		}
		return p.cmdline == ": slurmscriptd" // slurmctld's script runner
	case "docker":
		return p.cmdline == "/sbin/docker-init -- sleep infinity" || p.cmdline == "sleep infinity"
	case "lxc":
		return p.cmdline == "/usr/bin/tini -s -- /bin/sleep infinity" || p.cmdline == "/bin/sleep infinity"
	}
	return false
}

// strays are the topology's processes that are not its own: what a test
// left running on the hosts or in the containers.
func (tp *topology) strays(t testing.TB) []proc {
	var out []proc
	for _, p := range tp.processes(t) {
		if !tp.expected(p) {
			out = append(out, p)
		}
	}
	return out
}

// jobs lists the Slurm jobs, "" when there are none or no cluster.
func (tp *topology) jobs(t testing.TB) string {
	t.Helper()
	if tp.hopEnv["SLURM_CONF"] == "" {
		return ""
	}
	out, err := tp.onGPU(20*time.Second, "squeue", "-h", "-o", "%i %j %T")
	if err != nil {
		t.Errorf("squeue: %v", err)
	}
	return strings.TrimSpace(out)
}

// requireNothingLeft fails the test unless, within a bounded wait (kills
// travel through sshd, container daemons and slurmctld), nothing runs on
// the hosts but the topology itself and no Slurm job is left.
func (tp *topology) requireNothingLeft(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		strays, jobs := tp.strays(t), tp.jobs(t)
		if len(strays) == 0 && jobs == "" {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range strays {
				b.WriteString("\n  " + p.String())
			}
			if jobs != "" {
				b.WriteString("\n  Slurm jobs: " + strings.ReplaceAll(jobs, "\n", "; "))
			}
			t.Fatalf("left running on the hosts 30 s after the session ended:%s", b.String())
		}
		// slurmctld's job table announces no change: it is asked again.
		time.Sleep(200 * time.Millisecond)
	}
}

// awaitProcs waits, bounded, until match holds for at least one process
// of the topology, and returns those it holds for.
func (tp *topology) awaitProcs(t testing.TB, what string, match func(proc) bool) []proc {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var found []proc
		for _, p := range tp.processes(t) {
			if match(p) {
				found = append(found, p)
			}
		}
		if len(found) > 0 {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process on the hosts is %s", what)
		}
		// A process starting announces itself to nobody a test can ask.
		time.Sleep(50 * time.Millisecond)
	}
}
