package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/torchlsp/torchlsp/lsp"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
	"github.com/torchlsp/torchlsp/server"
	"github.com/torchlsp/torchlsp/server/config"
)

// runServe speaks LSP on stdin/stdout until the client says exit.
func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Bool("stdio", true, "speak LSP on stdin/stdout (the only transport; VS Code's client passes it)")
	logLevel := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	target := fs.String("target", "", "target name (default: the configured default)")
	python := fs.String("python", "", "interpreter on the target")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logger, err := lsp.NewStderrLogger(*logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "torchlsp serve: %v\n", err)
		return 2
	}
	defer logger.Sync() //nolint:errcheck // stderr may be closed by then
	dirs, err := config.DefaultDirs()
	if err != nil {
		fmt.Fprintf(stderr, "torchlsp serve: %v\n", err)
		return 1
	}
	eng := server.New(server.Options{Dirs: dirs, Target: *target, Python: *python, Opener: sshtarget.Opener{}})
	code, err := lsp.Serve(ctx, stdioConn{stdin, stdout}, lsp.NewEngine(eng), lsp.Options{Logger: logger, Version: version})
	if err != nil {
		logger.Error("server ended", zap.Error(err))
	}
	return code
}

// stdioConn joins the process's stdin and stdout into one connection.
type stdioConn struct {
	io.Reader
	io.Writer
}

func (c stdioConn) Close() error {
	var err error
	if cl, ok := c.Reader.(io.Closer); ok {
		err = cl.Close()
	}
	if cl, ok := c.Writer.(io.Closer); ok {
		if e := cl.Close(); err == nil {
			err = e
		}
	}
	return err
}
