package gates

import (
	"context"
	"os"
	"testing"
)

func TestProfTorch211(t *testing.T) {
	dir := os.Getenv("TORCHLSP_TORCH_SITE")
	if dir == "" {
		t.Skip("TORCHLSP_TORCH_SITE not set")
	}
	if _, err := Scan(context.Background(), dir, Options{}); err != nil {
		t.Fatal(err)
	}
}
