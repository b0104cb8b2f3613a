package navigation

import (
	"testing"

	"github.com/torchlsp/torchlsp/server/api"
)

func TestAttributeIn(t *testing.T) {
	t.Parallel()
	const text = "y = x.view(3)  # z.add\nx.  \n3.5\r\nt.mul_\r\n"
	tests := []struct {
		pos  api.Position
		want string
	}{
		{api.Position{Line: 0, Column: 7}, "view"},
		{api.Position{Line: 0, Column: 6}, "view"},
		{api.Position{Line: 0, Column: 10}, "view"}, // just after the name
		{api.Position{Line: 0, Column: 4}, ""},      // on the receiver
		{api.Position{Line: 0, Column: 20}, ""},     // in a comment
		{api.Position{Line: 1, Column: 2}, ""},      // nothing after the dot
		{api.Position{Line: 2, Column: 2}, ""},      // a float
		{api.Position{Line: 3, Column: 3}, "mul_"},  // CRLF line
		{api.Position{Line: 9, Column: 0}, ""},
	}
	for _, tt := range tests {
		if got := attributeIn([]byte(text), tt.pos); got != tt.want {
			t.Errorf("attributeAt(%v) = %q, want %q", tt.pos, got, tt.want)
		}
	}
}
