package session

import (
	"fmt"
	"sync"

	"github.com/torchlsp/torchlsp/remote"
)

// Set holds one session per target, by name.
type Set struct {
	mu     sync.Mutex // guards byName
	byName map[string]*Session
}

// NewSet makes an empty set.
func NewSet() *Set { return &Set{byName: map[string]*Session{}} }

// Get returns the target's session, making it with open on first use.
func (ss *Set) Get(spec remote.Spec, open func() (*Session, error)) (*Session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.byName[spec.Name]; ok {
		return s, nil
	}
	s, err := open()
	if err != nil {
		return nil, err
	}
	ss.byName[spec.Name] = s
	return s, nil
}

// DropStale removes the sessions whose target's spec is gone or changed,
// and returns them for closing.
func (ss *Set) DropStale(specOf func(string) (remote.Spec, error)) []*Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var stale []*Session
	for name, s := range ss.byName {
		if spec, err := specOf(name); err != nil || !SameSpec(spec, s.spec) {
			stale = append(stale, s)
			delete(ss.byName, name)
		}
	}
	return stale
}

// All returns the sessions open now.
func (ss *Set) All() []*Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*Session, 0, len(ss.byName))
	for _, s := range ss.byName {
		out = append(out, s)
	}
	return out
}

// Drain removes every session and returns them for closing.
func (ss *Set) Drain() []*Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*Session, 0, len(ss.byName))
	for _, s := range ss.byName {
		out = append(out, s)
	}
	ss.byName = map[string]*Session{}
	return out
}

// SameSpec reports whether two specs reach the same target the same way.
func SameSpec(a, b remote.Spec) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}
