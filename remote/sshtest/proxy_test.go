package sshtest

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every connection by sending back what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// The link delays each direction and paces bytes, and keeps every byte in
// order. Only lower bounds are checked: the relay promises at least its
// delay, and a loaded machine may add more.
func TestLinkDelaysAndPaces(t *testing.T) {
	t.Parallel()
	p := NewProxy(t, echoServer(t))
	link := Link{Delay: 30 * time.Millisecond, Rate: 4 << 20}
	p.SetLink(link)
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	if rtt := time.Since(start); rtt < 2*link.Delay {
		t.Errorf("round trip took %v, less than twice the one-way delay %v", rtt, link.Delay)
	}

	payload := make([]byte, 1<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	go func() { _, _ = c.Write(payload) }()
	back := make([]byte, len(payload))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, payload) {
		t.Fatal("bytes changed or reordered on the link")
	}
	// 1 MiB each way at 4 MiB/s, pipelined: at least a quarter second.
	if took, min := time.Since(start), time.Second/4; took < min {
		t.Errorf("1 MiB took %v over a 4 MiB/s link, want at least %v", took, min)
	}
}

// A frozen link carries nothing until thawed; a cut ends live connections.
func TestLinkFreezeAndCut(t *testing.T) {
	t.Parallel()
	p := NewProxy(t, echoServer(t))
	p.SetLink(Link{Delay: 5 * time.Millisecond})
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Freeze()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a frozen link delivered %d bytes", n)
	}
	p.Thaw()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("after thaw: %v", err)
	}
	p.Cut()
	if _, err := io.ReadFull(c, make([]byte, 1)); err == nil {
		t.Fatal("a cut connection still reads")
	}
}

// BenchmarkWANRoundTrip measures what a request/answer costs over the WAN
// link (the floor under every SSH figure in docs/BENCHMARKS.md).
func BenchmarkWANRoundTrip(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := NewProxy(b, ln.Addr().String())
	p.SetLink(WAN)
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// Turns counts the changes of direction of a dialogue: n request and
// answer pairs, each waited for, make 2n-1 turns.
func TestTurnsCountRoundTrips(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 5} {
		p := NewProxy(t, echoServer(t))
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4)
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		if got, want := p.Turns(), int64(2*n-1); got != want {
			t.Errorf("%d round trips: %d turns, want %d", n, got, want)
		}
	}
}
