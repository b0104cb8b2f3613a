package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Expectation is something a test waits for the server to send. Its
// matcher sees every event in order, once, and may keep state between
// them (a progress token seen at begin, to match its end); make a fresh
// Expectation for each wait.
type Expectation struct {
	Description string
	Match       func(Event) bool
}

// AwaitAll waits until each expectation has been met by an event, past
// or future, and returns the meeting event of each, in order.
func (c *Client) AwaitAll(ctx context.Context, exps ...Expectation) ([]Event, error) {
	got := make([]Event, len(exps))
	met := make([]bool, len(exps))
	left := len(exps)
	if left == 0 {
		return got, nil
	}
	_, err := c.Await(ctx, func(ev Event) bool {
		for i, x := range exps {
			if !met[i] && x.Match(ev) {
				met[i], got[i] = true, ev
				left--
			}
		}
		return left == 0
	})
	if err != nil {
		var unmet []string
		for i, x := range exps {
			if !met[i] {
				unmet = append(unmet, x.Description)
			}
		}
		return got, fmt.Errorf("waiting for %s: %w", strings.Join(unmet, "; "), err)
	}
	return got, nil
}

// Notification is met by a notification of method whose params, decoded
// into a new T, satisfy ok (any, when ok is nil).
func Notification[T any](method, description string, ok func(T) bool) Expectation {
	return Expectation{Description: description, Match: func(ev Event) bool {
		if ev.Method != method || ev.Request {
			return false
		}
		var v T
		if json.Unmarshal(ev.Params, &v) != nil {
			return false
		}
		return ok == nil || ok(v)
	}}
}

// DiagnosticsAt is met by diagnostics published for uri at version (any
// version when 0) that satisfy ok (any, when ok is nil).
func DiagnosticsAt(uri string, version int32, ok func(Diagnostics) bool) Expectation {
	desc := fmt.Sprintf("diagnostics for %s", uri)
	if version != 0 {
		desc += fmt.Sprintf(" version %d", version)
	}
	return Notification("textDocument/publishDiagnostics", desc, func(d Diagnostics) bool {
		return d.URI == uri && (version == 0 || d.Version == version) && (ok == nil || ok(d))
	})
}

// ShownMessage is met by a window/showMessage containing substr.
func ShownMessage(substr string) Expectation {
	return Notification("window/showMessage", fmt.Sprintf("a message containing %q", substr), func(m Message) bool {
		return strings.Contains(m.Message, substr)
	})
}

// LoggedMessage is met by a window/logMessage containing substr.
func LoggedMessage(substr string) Expectation {
	return Notification("window/logMessage", fmt.Sprintf("a log message containing %q", substr), func(m Message) bool {
		return strings.Contains(m.Message, substr)
	})
}

// Status is torchlsp's torchlsp/status notification.
type Status struct {
	Target       string `json:"target"`
	TorchVersion string `json:"torchVersion"`
	State        string `json:"state"`
	Message      string `json:"message"`
}

// StatusIs is met by a torchlsp/status for target in state ("" matches
// any state).
func StatusIs(target, state string) Expectation {
	return Notification("torchlsp/status", fmt.Sprintf("status of %s %q", target, state), func(s Status) bool {
		return s.Target == target && (state == "" || s.State == state)
	})
}

// ProgressEnded is met by the end of a work-done progress titled title
// (its begin must come first), whose end message contains substr.
func ProgressEnded(title, substr string) Expectation {
	tokens := map[string]bool{}
	return Expectation{
		Description: fmt.Sprintf("the end of progress %q with %q", title, substr),
		Match: func(ev Event) bool {
			var p progressParams
			if ev.Method != "$/progress" || ev.Decode(&p) != nil {
				return false
			}
			switch p.Value.Kind {
			case "begin":
				if p.Value.Title == title {
					tokens[string(p.Token)] = true
				}
			case "end":
				return tokens[string(p.Token)] && strings.Contains(p.Value.Message, substr)
			}
			return false
		},
	}
}

// ProgressReported is met by a $/progress value for which ok is true.
func ProgressReported(description string, ok func(ProgressValue) bool) Expectation {
	return Notification("$/progress", description, func(p progressParams) bool { return ok(p.Value) })
}

// ServerRequest is met by a request from the server of method whose
// params contain substr.
func ServerRequest(method, substr string) Expectation {
	return Expectation{
		Description: fmt.Sprintf("a %s request with %q", method, substr),
		Match: func(ev Event) bool {
			return ev.Request && ev.Method == method && strings.Contains(string(ev.Params), substr)
		},
	}
}
