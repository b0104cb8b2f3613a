package sshtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ssh"
)

// conn is the shared connection: the target host's client and the jump
// host clients it tunnels through.
type conn struct {
	label   string // the target hop's label, for errors
	clients []*ssh.Client
	log     *zap.Logger

	done chan struct{}
	once sync.Once
	err  error // why the connection ended; set before done closes
}

func (c *conn) client() *ssh.Client { return c.clients[len(c.clients)-1] }

func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// lost returns the reason the connection ended, or nil while it is alive.
func (c *conn) lost() error {
	if c.alive() {
		return nil
	}
	return c.err
}

// fail ends the connection with err; the first reason wins.
func (c *conn) fail(err error) {
	c.once.Do(func() {
		c.err = fmt.Errorf("%s: connection lost: %w", c.label, err)
		c.log.Info("ssh connection closed", zap.String("host", c.label), zap.String("reason", err.Error()))
		close(c.done)
		for i := len(c.clients) - 1; i >= 0; i-- {
			c.clients[i].Close()
		}
	})
}

// watch fails the connection when the transport ends.
func (c *conn) watch() {
	err := c.client().Wait()
	if err == nil {
		err = errors.New("server closed the connection")
	}
	c.fail(err)
}

// keepalive sends keepalive@openssh.com every interval; a reply missing
// for longer than timeout means a dead link, and the connection is closed
// so that processes on it fail promptly instead of hanging.
func (c *conn) keepalive(interval, timeout time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ticker.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.client().SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		timer := time.NewTimer(timeout)
		select {
		case err := <-reply:
			timer.Stop()
			if err != nil {
				c.fail(fmt.Errorf("keepalive: %w", err))
				return
			}
		case <-timer.C:
			c.log.Warn("ssh keepalive timed out; closing connection", zap.String("host", c.label), zap.Duration("timeout", timeout))
			c.fail(fmt.Errorf("no reply to keepalive within %s (dead link)", timeout))
			return
		case <-c.done:
			timer.Stop()
			return
		}
	}
}

// connection returns the live shared connection, dialling a new one when
// there is none. After failed dials, new attempts wait with exponential
// backoff so that a dead host is not hammered by every request.
func (t *Target) connection(ctx context.Context) (*conn, error) {
	select {
	case t.dialLock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("ssh target %s: connect: %w", t.spec.Name, ctx.Err())
	}
	defer func() { <-t.dialLock }()

	t.mu.Lock()
	closed, c, retryAt := t.closed, t.conn, t.retryAt
	t.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("ssh target %s: closed", t.spec.Name)
	}
	if c != nil && c.alive() {
		return c, nil
	}
	if wait := time.Until(retryAt); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("ssh target %s: waiting %s before reconnecting: %w", t.spec.Name, wait.Round(time.Millisecond), ctx.Err())
		case <-timer.C:
		}
	}
	c, err := t.dial(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.failures++
		t.retryAt = time.Now().Add(min(backoffMin<<min(t.failures-1, 10), backoffMax))
		return nil, err
	}
	if t.closed {
		c.fail(errors.New("target closed"))
		return nil, fmt.Errorf("ssh target %s: closed", t.spec.Name)
	}
	t.failures, t.retryAt = 0, time.Time{}
	t.conn = c
	go c.watch()
	go c.keepalive(t.keepalive, t.kaTimeout)
	return c, nil
}

// dial connects through every hop in turn.
func (t *Target) dial(ctx context.Context) (*conn, error) {
	var clients []*ssh.Client
	closeAll := func() {
		for i := len(clients) - 1; i >= 0; i-- {
			clients[i].Close()
		}
	}
	for _, h := range t.hops {
		var prev *ssh.Client
		if len(clients) > 0 {
			prev = clients[len(clients)-1]
		}
		start := time.Now()
		client, err := t.dialHop(ctx, prev, h)
		if err != nil {
			closeAll()
			return nil, err
		}
		t.log.Debug("ssh hop connected", zap.String("hop", h.label), zap.Duration("latency", time.Since(start)))
		clients = append(clients, client)
	}
	return &conn{label: t.hops[len(t.hops)-1].label, clients: clients, log: t.log, done: make(chan struct{})}, nil
}

// dialHop opens one hop: TCP (directly or as a direct-tcpip channel of
// prev), then the SSH handshake with this hop's own host key check and
// credentials. Errors name the hop.
func (t *Target) dialHop(ctx context.Context, prev *ssh.Client, h hop) (*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, h.connectTimeout)
	defer cancel()

	hostKeys, err := loadHostKeys(h.knownHosts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.label, err)
	}
	var nc net.Conn
	if prev == nil {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", h.addr)
	} else {
		nc, err = prev.DialContext(ctx, "tcp", h.addr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", h.label, err)
	}
	creds, err := loadCredentials(ctx, t.agentSock, h.identities, h.identitiesOnly, t.home)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", h.label, err)
	}
	defer creds.close()

	cfg := &ssh.ClientConfig{
		User:              h.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(creds.signers...)},
		HostKeyCallback:   hostKeys.callback(h.verify),
		HostKeyAlgorithms: hostKeys.algorithms(h.addr),
		ClientVersion:     "SSH-2.0-torchlsp",
	}
	// The handshake has no context: closing the socket interrupts it.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(nc, h.addr, cfg)
	interrupted := !stop()
	if err != nil {
		nc.Close()
		var hkErr *HostKeyError
		var algErr *ssh.AlgorithmNegotiationError
		switch {
		case interrupted:
			return nil, fmt.Errorf("%s: handshake: %w", h.label, ctx.Err())
		case errors.As(err, &hkErr):
			return nil, fmt.Errorf("%s: %w", h.label, hkErr)
		case errors.As(err, &algErr) && algErr.What == "host key":
			return nil, fmt.Errorf("%s: %w", h.label, hostKeys.typeGone(h.addr, h.verify, algErr.RequestedAlgorithms))
		case isAuthFailure(err):
			return nil, fmt.Errorf("%s: %w", h.label, creds.authError(h.user, err))
		default:
			return nil, fmt.Errorf("%s: handshake: %w", h.label, err)
		}
	}
	if interrupted {
		sc.Close()
		return nil, fmt.Errorf("%s: handshake: %w", h.label, ctx.Err())
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

func isAuthFailure(err error) bool {
	var se *ssh.ServerAuthError
	if errors.As(err, &se) {
		return true
	}
	return err != nil && (strings.Contains(err.Error(), "unable to authenticate") || strings.Contains(err.Error(), "no supported methods remain"))
}

// HopResult is the outcome of connecting to one hop, for `torchlsp doctor`.
type HopResult struct {
	Name    string        // the hop as configured: alias or host
	Jump    bool          // a jump host, not the target host
	Addr    string        // host:port dialled
	User    string        // the user logged in as
	Latency time.Duration // TCP connect, handshake and authentication
	Err     error         // nil when the hop was reached
}

// Hops connects to each hop in turn on a fresh connection, reporting each
// one; it stops at the first failure. The shared connection is not used
// or disturbed.
func (t *Target) Hops(ctx context.Context) []HopResult {
	var results []HopResult
	var clients []*ssh.Client
	defer func() {
		for i := len(clients) - 1; i >= 0; i-- {
			clients[i].Close()
		}
	}()
	for i, h := range t.hops {
		var prev *ssh.Client
		if len(clients) > 0 {
			prev = clients[len(clients)-1]
		}
		start := time.Now()
		client, err := t.dialHop(ctx, prev, h)
		r := HopResult{Name: h.name, Jump: i < len(t.hops)-1, Addr: h.addr, User: h.user, Latency: time.Since(start), Err: err}
		results = append(results, r)
		if err != nil {
			break
		}
		clients = append(clients, client)
	}
	return results
}
