// Package faults injects the failures torchlsp meets in the field (a
// helper killed mid-request, a full disk, a damaged cache, an editor that
// vanishes, a process that ignores SIGTERM) and checks, each in a test,
// that the server answers, recovers and leaves nothing behind. It also
// holds the security checks that need the whole server: secrets kept out
// of logs and messages, no agent forwarding, and VS Code's trust
// settings. The package has no code outside its tests.
package faults
