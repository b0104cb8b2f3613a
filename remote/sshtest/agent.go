package sshtest

import (
	"crypto"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// StartAgent serves an in-process ssh-agent holding the given private key
// files (encrypted ones are decrypted with passphrase) on a unix socket,
// and returns the socket path for SSH_AUTH_SOCK.
func StartAgent(t testing.TB, passphrase string, keyFiles ...string) string {
	t.Helper()
	keyring := agent.NewKeyring()
	for _, f := range keyFiles {
		pem, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var key crypto.PrivateKey
		key, err = ssh.ParseRawPrivateKey(pem)
		if _, ok := err.(*ssh.PassphraseMissingError); ok {
			key, err = ssh.ParseRawPrivateKeyWithPassphrase(pem, []byte(passphrase))
		}
		if err != nil {
			t.Fatalf("agent: load %s: %v", f, err)
		}
		if err := keyring.Add(agent.AddedKey{PrivateKey: key, Comment: filepath.Base(f)}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = agent.ServeAgent(keyring, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return sock
}
