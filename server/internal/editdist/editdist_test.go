package editdist

import "testing"

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"", "", 3, 0},
		{"max-autotune", "max-autotune", 3, 0},
		{"max-autotun", "max-autotune", 3, 1},
		{"reduce_overhead", "reduce-overhead", 3, 1},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3},  // over the limit: limit+1
		{"a", "abcdefgh", 3, 4},      // lengths alone exceed the limit
		{"abcdefgh", "a", 3, 4},      // either way round
		{"default", "defualt", 4, 2}, // a swap is two edits
		{"cudagraphs", "cudagraph_trees", 5, 5},
	} {
		if got := Distance(tc.a, tc.b, tc.limit); got != tc.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.limit, got, tc.want)
		}
		if got := Distance(tc.b, tc.a, tc.limit); got != tc.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d (not symmetric)", tc.b, tc.a, tc.limit, got, tc.want)
		}
	}
}
