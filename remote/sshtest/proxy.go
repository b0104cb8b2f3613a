package sshtest

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a target address. Tests use it to cut
// links mid-stream (Cut), to make them silently dead (Freeze), and to give
// them the delay and bandwidth of a real network (SetLink): the kernel's
// netem is not available on these machines, so the link is modelled here.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener
	moved  atomic.Int64 // bytes delivered, both directions
	turns  atomic.Int64 // times a connection's deliveries changed direction

	mu     sync.Mutex // guards the fields below; cond waits on it
	cond   *sync.Cond
	frozen bool
	closed bool
	link   Link
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Link is the shape of a network path, the same in each direction.
type Link struct {
	// Delay is the one-way latency added to every byte (a round trip
	// costs twice this).
	Delay time.Duration
	// Rate caps each direction in bytes per second; 0 is unlimited.
	Rate int
}

// WAN is a laptop-to-datacenter link: 25 ms each way (50 ms round trip)
// and 100 Mbit/s.
var WAN = Link{Delay: 25 * time.Millisecond, Rate: 100e6 / 8}

// maxInFlight bounds the bytes a direction holds while they are delayed;
// past it the relay stops reading, and TCP's flow control pushes back.
const maxInFlight = 8 << 20

// NewProxy listens on a free loopback port and forwards to target until
// the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Listen starts a relay on addr that forwards every connection to target;
// Close stops it. Programs that are not tests (the benchmark driver) use it
// to put a WAN link in front of a server.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay to %s: %w", target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		dir := &direction{}
		go p.pipe(up, c, dir, towardTarget)
		go p.pipe(c, up, dir, towardClient)
	}
}

// direction is the way a connection's last delivery went, for counting
// its turns: a request answered and the next request sent are two.
type direction struct {
	mu   sync.Mutex // guards last
	last int8       // towardTarget, towardClient, or 0 before the first
}

const (
	towardTarget int8 = 1
	towardClient int8 = -1
)

// delivered notes a delivery in way, counting a turn when the
// connection's last one went the other way.
func (p *Proxy) delivered(d *direction, way int8) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != way {
		if d.last != 0 {
			p.turns.Add(1)
		}
		d.last = way
	}
}

// chunk is data read from one side, due on the other at a time.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst through the link: each chunk leaves once the ones
// before it have left at the link's rate, and arrives Delay later, so the
// link carries a full bandwidth-delay product in flight as a real one does.
// Data is held back while the proxy is frozen.
func (p *Proxy) pipe(dst, src net.Conn, dir *direction, way int8) {
	defer p.wg.Done()
	closeBoth := func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}
	defer closeBoth()
	queue := make(chan chunk, maxInFlight/(16<<10))
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer closeBoth() // a failed write ends the reader too
		for c := range queue {
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			p.mu.Lock()
			for p.frozen && !p.closed {
				p.cond.Wait()
			}
			p.mu.Unlock()
			// The turn is counted before the bytes go out: whoever reads
			// them then sees it counted.
			p.delivered(dir, way)
			n, err := dst.Write(c.data)
			p.moved.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	defer func() { close(queue); <-writerDone }()
	var departed time.Time // when the last chunk finished leaving
	for {
		buf := make([]byte, 16<<10)
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			link := p.link
			p.mu.Unlock()
			now := time.Now()
			leave := now
			if link.Rate > 0 {
				if departed.After(leave) {
					leave = departed
				}
				leave = leave.Add(time.Duration(n) * time.Second / time.Duration(link.Rate))
				departed = leave
			}
			select {
			case queue <- chunk{data: buf[:n], due: leave.Add(link.Delay)}:
			case <-writerDone:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Moved returns the bytes the relay has delivered, in both directions.
func (p *Proxy) Moved() int64 { return p.moved.Load() }

// Turns returns how many times a connection's deliveries have changed
// direction, summed over the connections: a dialogue of n round trips
// (the client speaks first) makes 2n-1 turns. A link's delay is paid at
// each turn, so they are what a slow link makes slow.
func (p *Proxy) Turns() int64 { return p.turns.Load() }

// SetLink gives every connection, live and new, the link's delay and
// rate; the zero Link forwards as fast as loopback does.
func (p *Proxy) SetLink(l Link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.link = l
}

// Throttle limits each direction of every connection to about
// bytesPerSecond (0 lifts the limit), so a transfer lasts long enough to
// be cut in the middle whatever the machine's load.
func (p *Proxy) Throttle(bytesPerSecond int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.link.Rate = bytesPerSecond
}

// Cut closes every live connection; new ones are still accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	p.frozen = false
	p.cond.Broadcast()
}

// Freeze stops forwarding on every connection while keeping the sockets
// open: the link looks alive to TCP but carries nothing, like a dead route.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Thaw resumes forwarding.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	p.frozen = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
