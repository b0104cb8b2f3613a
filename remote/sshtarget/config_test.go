package sshtarget

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSSHConfigLookup(t *testing.T) {
	home, err := filepath.Abs("testdata/home")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseSSHConfig("testdata/ssh_config", home)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want HostConfig
	}{
		{"gpu", HostConfig{HostName: "10.0.0.5", User: "root", Port: 2222,
			IdentityFiles: []string{"~/.ssh/id_gpu_%r@%h", "%d/.ssh/second"}, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"gpu-via-bastion", HostConfig{HostName: "10.0.0.6", User: "fallback", Port: 22,
			ProxyJump: []string{"bastion", "admin@jump2:2200"}, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"a.lab", HostConfig{User: "labuser", Port: 22, ProxyJump: []string{"none"}, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"secret.lab", HostConfig{User: "fallback", Port: 22, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"node7", HostConfig{HostName: "%h.cluster.internal", IdentitiesOnly: true, User: "fallback", Port: 22, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"node17", HostConfig{User: "fallback", Port: 22, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"GPU", HostConfig{HostName: "10.0.0.5", User: "root", Port: 2222,
			IdentityFiles: []string{"~/.ssh/id_gpu_%r@%h", "%d/.ssh/second"}, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"quoted name", HostConfig{User: "fallback", Port: 7, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
		{"included", HostConfig{HostName: "inc.example.com", User: "fallback", Port: 2022, ServerAliveInterval: 30 * time.Second, ConnectTimeout: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			got, err := cfg.Lookup(tt.host, "")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Lookup(%q)\n got %+v\nwant %+v", tt.host, got, tt.want)
			}
		})
	}
}

func TestSSHConfigErrors(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"Host\n", "Host without patterns"},
		{"Host a\n Port nope\n", "bad Port"},
		{"Host a\n HostName \"unterminated\n", "unterminated quote"},
		{"Match host\n", "needs an argument"},
	} {
		c := &SSHConfig{}
		err := c.parse(strings.NewReader(tt.text), "cfg", "/home/u", nil, 0)
		if err == nil {
			_, err = c.Lookup("a", "")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.text, err, tt.want)
		}
	}
}

func TestResolveExpandsTokens(t *testing.T) {
	home, _ := filepath.Abs("testdata/home")
	cfg, err := ParseSSHConfig("testdata/ssh_config", home)
	if err != nil {
		t.Fatal(err)
	}
	r := resolver{cfg: cfg, home: home, localUser: "me"}
	h, jumps, _, err := r.resolve("gpu", "ssh host")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{filepath.Join(home, ".ssh/id_gpu_root@10.0.0.5"), filepath.Join(home, ".ssh/second")}
	if h.addr != "10.0.0.5:2222" || h.user != "root" || !reflect.DeepEqual(h.identities, wantIDs) || jumps != nil {
		t.Errorf("resolve(gpu) = %+v, jumps %v", h, jumps)
	}
	if h.label != "ssh host gpu (10.0.0.5:2222)" {
		t.Errorf("label %q", h.label)
	}
	h, _, _, err = r.resolve("other@node3:2000", "ssh host")
	if err != nil {
		t.Fatal(err)
	}
	if h.addr != "node3.cluster.internal:2000" || h.user != "other" || !h.identitiesOnly {
		t.Errorf("resolve(node3) = %+v", h)
	}
	if len(h.identities) != 3 || h.identities[0] != filepath.Join(home, ".ssh/id_ed25519") {
		t.Errorf("default identities %v", h.identities)
	}
}

func TestWildcard(t *testing.T) {
	for _, tt := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*c", "abc", true}, {"a*c", "abd", false},
		{"?", "a", true}, {"?", "ab", false}, {"*.lab", "x.y.lab", true}, {"a*b*c", "aXbYbZc", true},
		{"node?", "node12", false}, {"", "", true}, {"", "a", false},
	} {
		if got := wildcard(tt.pat, tt.s); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v", tt.pat, tt.s, got)
		}
	}
}

func TestParseDestination(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Destination
		wantErr bool
	}{
		{"gpu", Destination{Host: "gpu"}, false},
		{"root@gpu-host", Destination{User: "root", Host: "gpu-host"}, false},
		{"root@127.0.0.1:2222", Destination{User: "root", Host: "127.0.0.1", Port: 2222}, false},
		{"[::1]:22", Destination{Host: "::1", Port: 22}, false},
		{"u@[fe80::1]", Destination{User: "u", Host: "fe80::1"}, false},
		{"::1", Destination{Host: "::1"}, false},
		{"ssh://root@gpu:2200", Destination{User: "root", Host: "gpu", Port: 2200}, false},
		{"ssh://gpu/", Destination{Host: "gpu"}, false},
		{"host:0", Destination{}, true},
		{"host:99999", Destination{}, true},
		{"-oProxyCommand=x", Destination{}, true},
		{"a;b", Destination{}, true},
		{"@host", Destination{}, true},
		{"ssh://gpu/path", Destination{}, true},
	} {
		got, err := ParseDestination(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseDestination(%q) = %+v, %v", tt.in, got, err)
		}
	}
	if _, err := ParseURL("root@gpu"); err == nil {
		t.Error("ParseURL accepted a non-URL")
	}
	if s := (Destination{User: "r", Host: "::1", Port: 22}).String(); s != "r@[::1]:22" {
		t.Errorf("String() = %q", s)
	}
}

func BenchmarkSSHConfigLookup(b *testing.B) {
	cfg, err := ParseSSHConfig("testdata/ssh_config", "/home/u")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cfg.Lookup("gpu-via-bastion", ""); err != nil {
			b.Fatal(err)
		}
	}
}
