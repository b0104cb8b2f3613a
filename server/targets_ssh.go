package server

import (
	"errors"

	"github.com/torchlsp/torchlsp/remote"
)

func openSSH(spec remote.Spec) (remote.Target, error) {
	return nil, errors.New("ssh targets are not available in this build")
}
