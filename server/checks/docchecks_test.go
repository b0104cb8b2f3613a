package checks

import (
	"context"
	"testing"
	"time"
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
