package repro

import "testing"

func TestParseProgress(t *testing.T) {
	tests := []struct {
		line string
		want Progress
		ok   bool
	}{
		{`TORCHLSP_PROGRESS {"done": 20, "errors": 3, "total": 200, "variant": "threads", "wrong": 1}`, Progress{"threads", 20, 200, 1, 3}, true},
		{`TORCHLSP_PROGRESS {"done": 1}`, Progress{}, false},
		{`TORCHLSP_PROGRESS {nope`, Progress{}, false},
		{`progress 20/200`, Progress{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseProgress(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseProgress(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSettleTreatsWrongNumbersAsFailure(t *testing.T) {
	tests := []struct {
		name string
		r    VariantResult
		want bool
	}{
		{"all right", VariantResult{OK: true, Calls: 10, ExpectedCalls: 10, Right: 10}, true},
		{"script says ok but a call was wrong", VariantResult{OK: true, Calls: 10, ExpectedCalls: 10, Right: 9, Wrong: 1}, false},
		{"an exception", VariantResult{OK: true, Calls: 10, ExpectedCalls: 10, Errors: []ErrorInfo{{Type: "E", Count: 1}}}, false},
		{"calls missing", VariantResult{OK: true, Calls: 9, ExpectedCalls: 10}, false},
		{"unsupported", VariantResult{OK: true, Calls: 10, ExpectedCalls: 10, Unsupported: "no torch.compile"}, false},
		{"runner failure", VariantResult{OK: true, Calls: 10, ExpectedCalls: 10, Failure: "cancelled"}, false},
		{"no calls", VariantResult{OK: true}, false},
	}
	for _, tt := range tests {
		r := tt.r
		r.settle()
		if r.OK != tt.want {
			t.Errorf("%s: OK = %v, want %v", tt.name, r.OK, tt.want)
		}
	}
}
