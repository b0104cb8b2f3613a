package diagnose

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/torchlsp/torchlsp/server/gates"
	"github.com/torchlsp/torchlsp/server/pybuf"
)

func TestDebugDump(t *testing.T) {
	if os.Getenv("DIAG_DEBUG") == "" {
		t.Skip()
	}
	site := os.Getenv("DIAG_SITE")
	cat, err := gates.Scan(context.Background(), site, gates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(cat.Version, cat.HasCompile, cat.Modes)
	files, _ := filepath.Glob("testdata/check/" + os.Getenv("DIAG_DEBUG"))
	for _, f := range files {
		src, _ := os.ReadFile(f)
		buf := pybuf.Parse(src)
		fmt.Println("==", f)
		for _, r := range FlagRefs(buf, src, cat) {
			fmt.Printf("  ref %s %s.%s prefix=%q %s write=%v val=%q env=%s known=%v\n", r.Spelling, r.Module, r.Key, r.KeyPrefix, r.Span, r.Write, r.Value, r.EnvVar, r.Flag != nil)
		}
		for _, d := range Check(buf, src, cat, Options{SiteDir: site}) {
			fmt.Printf("  %s %s %s: %s\n", d.Code, d.Severity, d.Span, d.Message)
			for _, r := range d.Related {
				fmt.Printf("     rel %s:%d %s\n", r.File, r.Line+1, r.Message)
			}
			for _, x := range d.Fixes {
				fmt.Printf("     fix %q %v %+v\n", x.Title, x.Preferred, x.Edits)
			}
		}
	}
}
