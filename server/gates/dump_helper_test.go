package gates

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
)

func TestDumpFixtureSites(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		t.Skip()
	}
	cat, err := Scan(context.Background(), "testdata/site", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range cat.SiteMap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, s := range cat.SiteMap[k] {
			fmt.Println(formatSiteLine(k, s))
		}
	}
}
