package runs

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRunTableBound: MaxRuns runs at once, one more refused naming them;
// a cancel by id reaches that run, one without an id every run, and an
// unknown id says which runs there are.
func TestRunTableBound(t *testing.T) {
	t.Parallel()
	var tbl runTable
	cancelled := map[string]bool{}
	var ids []string
	for i := range MaxRuns {
		title := "run " + strconv.Itoa(i)
		id, err := tbl.add(title, func() { cancelled[title] = true })
		if err != nil {
			t.Fatalf("run %d refused: %v", i, err)
		}
		ids = append(ids, id)
	}
	if _, err := tbl.add("one too many", func() {}); err == nil || !strings.Contains(err.Error(), "torchlsp.cancelRun") || !strings.Contains(err.Error(), ids[0]+": run 0") {
		t.Fatalf("run past the bound: %v; want a refusal naming the runs and the cancel command", err)
	}
	hit, err := tbl.cancel(ids[1])
	if err != nil || len(hit) != 1 || hit[0] != ids[1]+": run 1" || !cancelled["run 1"] || cancelled["run 0"] {
		t.Errorf("cancel %s: %v %v; cancelled %v", ids[1], hit, err, cancelled)
	}
	if _, err := tbl.cancel("nope"); err == nil || !strings.Contains(err.Error(), ids[0]+": run 0") {
		t.Errorf("cancel of an unknown run: %v; want the runs in progress named", err)
	}
	// A run cancelled already is stopping: a second cancel says so and
	// never reports it cancelled again, alone or with the others.
	if _, err := tbl.cancel(ids[1]); err == nil || !strings.Contains(err.Error(), "cancelled already") {
		t.Errorf("second cancel of %s: %v; want it named as stopping", ids[1], err)
	}
	if hit, err := tbl.cancel(""); err != nil || len(hit) != MaxRuns-1 || slices.Contains(hit, ids[1]+": run 1") {
		t.Errorf("cancel all: %v %v; want every run but the one stopping", hit, err)
	}
	for _, id := range ids {
		tbl.remove(id)
	}
	if _, err := tbl.cancel("1"); err == nil || !strings.Contains(err.Error(), "no run is in progress") {
		t.Errorf("cancel with nothing running: %v", err)
	}
}
