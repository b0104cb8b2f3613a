package checks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/torchlsp/torchlsp/server/source"
	"github.com/torchlsp/torchlsp/server/syntax"
)

// A new version's check cancels the check of the one before and starts
// only after it has stopped; checks of other documents run side by side.
func TestDocChecksOneAtATime(t *testing.T) {
	t.Parallel()
	var d docChecks
	first, endFirst := d.begin(context.Background(), "file:///w/a.py")
	other, endOther := d.begin(context.Background(), "file:///w/b.py")
	defer endOther()

	d.supersede("file:///w/a.py")
	if first.Err() == nil {
		t.Fatal("a newer version left the older check running")
	}
	if other.Err() != nil {
		t.Fatal("a newer version of one document cancelled another's check")
	}

	started := make(chan error)
	go func() {
		ctx, end := d.begin(context.Background(), "file:///w/a.py")
		started <- ctx.Err()
		end()
	}()
	select {
	case <-started:
		t.Fatal("the new check started while the old one was still running")
	case <-time.After(50 * time.Millisecond):
	}
	endFirst()
	select {
	case err := <-started:
		if err != nil {
			t.Error("the new check started cancelled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new check never started after the old one ended")
	}
}

// Three versions in a row: whatever order the later two register in,
// neither runs before the first has ended, though the one registered
// between them is cancelled while it waits.
func TestDocChecksChain(t *testing.T) {
	t.Parallel()
	var d docChecks
	const u = "file:///w/a.py"
	_, endFirst := d.begin(context.Background(), u)
	secondStarted, thirdStarted := make(chan func()), make(chan struct{})
	go func() {
		_, end := d.begin(context.Background(), u)
		secondStarted <- end
	}()
	go func() {
		_, end := d.begin(context.Background(), u)
		end()
		close(thirdStarted)
	}()
	select {
	case <-thirdStarted:
		t.Fatal("the third check ran while the first was still running")
	case <-time.After(50 * time.Millisecond):
	}
	endFirst()
	(<-secondStarted)()
	<-thirdStarted
}

// Closing a document stops its check, also one still waiting for the
// parse budget behind a large parse that holds all of it.
func TestClosedStopsTheCheck(t *testing.T) {
	t.Parallel()
	budget := syntax.NewBudget(1 << 10)
	hold := budget.Take(1 << 10) // an index build's parse holds the whole budget
	defer hold()
	ch := &Checks{deps: Deps{Parses: budget}}
	ctx, end := ch.running.begin(context.Background(), "file:///w/big.py")
	defer end()
	doc, _ := source.NewStore(0, nil).Open("file:///w/big.py", "python", 1, "import torch\n"+strings.Repeat("x = 1\n", 1000))
	done := make(chan error, 1)
	go func() {
		_, err := ch.parseDoc(ctx, doc)
		done <- err
	}()
	ch.Closed("file:///w/big.py")
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the closed document's parse ended with %v, want it cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the closed document's check still waits for the parse budget")
	}
}
