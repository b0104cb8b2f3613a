package sshtarget

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// defaultIdentities are tried, when they exist, if ssh_config names none.
var defaultIdentities = [...]string{"id_ed25519", "id_ecdsa", "id_rsa"}

// credentials are the keys one hop may use: agent keys first, then
// identity files, as OpenSSH orders them. Encrypted identity files the
// agent does not hold are remembered for the error message: torchlsp
// never prompts for a passphrase.
type credentials struct {
	signers   []ssh.Signer
	tried     []string // descriptions, for errors
	encrypted []string // paths of encrypted keys the agent lacks
	agentConn net.Conn
}

func (c *credentials) close() {
	if c.agentConn != nil {
		c.agentConn.Close()
	}
}

// loadCredentials connects to the agent at agentSock ("" for none) and
// reads identity files. identitiesOnly restricts agent keys to those
// files, as IdentitiesOnly does in OpenSSH.
func loadCredentials(ctx context.Context, agentSock string, files []string, identitiesOnly bool, home string) (*credentials, error) {
	c := &credentials{}
	var agentKeys []ssh.Signer
	if agentSock != "" {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", agentSock)
		if err != nil {
			// A stale SSH_AUTH_SOCK is common; fall back to files.
			c.tried = append(c.tried, fmt.Sprintf("ssh-agent at %s unreachable: %v", agentSock, err))
		} else {
			c.agentConn = conn
			agentKeys, err = agent.NewClient(conn).Signers()
			if err != nil {
				c.close()
				return nil, fmt.Errorf("ssh-agent at %s: list keys: %w", agentSock, err)
			}
		}
	}
	inAgent := func(pub ssh.PublicKey) bool {
		for _, s := range agentKeys {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return true
			}
		}
		return false
	}

	var fileSigners []ssh.Signer
	var filePubs []ssh.PublicKey
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("identity file %s: %w", f, err)
		}
		signer, err := ssh.ParsePrivateKey(pem)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			pub := missing.PublicKey
			if pub == nil {
				pub = readPublicKey(f + ".pub")
			}
			if pub != nil {
				filePubs = append(filePubs, pub)
				if inAgent(pub) {
					continue
				}
			}
			c.encrypted = append(c.encrypted, tildePath(f, home))
			continue
		case err != nil:
			c.close()
			return nil, fmt.Errorf("identity file %s: %w", tildePath(f, home), err)
		}
		filePubs = append(filePubs, signer.PublicKey())
		if !inAgent(signer.PublicKey()) {
			fileSigners = append(fileSigners, signer)
			c.tried = append(c.tried, tildePath(f, home))
		}
	}
	for _, s := range agentKeys {
		if identitiesOnly && !containsKey(filePubs, s.PublicKey()) {
			continue
		}
		c.signers = append(c.signers, s)
		c.tried = append(c.tried, "agent key "+ssh.FingerprintSHA256(s.PublicKey()))
	}
	c.signers = append(c.signers, fileSigners...)
	return c, nil
}

func containsKey(keys []ssh.PublicKey, k ssh.PublicKey) bool {
	for _, x := range keys {
		if bytes.Equal(x.Marshal(), k.Marshal()) {
			return true
		}
	}
	return false
}

func readPublicKey(path string) ssh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil
	}
	return k
}

// authError explains a failed authentication: which keys were tried and
// how to unlock encrypted ones.
func (c *credentials) authError(user string, err error) error {
	if len(c.encrypted) > 0 {
		k := c.encrypted[0]
		return fmt.Errorf("authenticate as %s: key %s is encrypted and no ssh-agent holds it: run ssh-add %s (tried: %s): %w",
			user, k, k, triedList(c.tried), err)
	}
	return fmt.Errorf("authenticate as %s: no key was accepted (tried: %s); add your public key to the server's authorized_keys or load the right key with ssh-add: %w",
		user, triedList(c.tried), err)
}

func triedList(t []string) string {
	if len(t) == 0 {
		return "no keys: no ssh-agent and no identity file"
	}
	return strings.Join(t, ", ")
}

// tildePath abbreviates home to ~ for messages.
func tildePath(p, home string) string {
	if home != "" {
		if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return "~/" + rest
		}
	}
	return p
}
