package server

import "github.com/torchlsp/torchlsp/remote"

// defaultOpenTarget makes the target a Spec describes.
func defaultOpenTarget(spec remote.Spec) (remote.Target, error) {
	if spec.IsLocal() {
		return remote.NewLocal(spec), nil
	}
	return openSSH(spec)
}
