package server

import (
	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/remote/sshtarget"
)

// TargetOpener makes the target a Spec describes: local for specs without
// ssh, SSH otherwise.
func TargetOpener(ssh sshtarget.Options) func(remote.Spec) (remote.Target, error) {
	return func(spec remote.Spec) (remote.Target, error) {
		if spec.IsLocal() {
			return remote.NewLocal(spec), nil
		}
		return openSSH(spec, ssh)
	}
}
