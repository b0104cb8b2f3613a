package checks

import (
	"reflect"
	"testing"

	"github.com/torchlsp/torchlsp/server/diagnose"
	"github.com/torchlsp/torchlsp/server/wsmodel"
)

// printOf keeps in step with what a file's check reads of the verdicts:
// every map of Verdicts changes a file's print when it gains an entry
// for the file, and every field of a call of compiled code made in
// another file (what TL011, TL016 and TL017 read) changes it too, so
// that an edit of another file re-checks this one.
func TestPrintOfReadsTheVerdicts(t *testing.T) {
	t.Parallel()
	const path = "/w/eval.py"
	empty := printOf(&wsmodel.Verdicts{}, path)
	vt := reflect.TypeFor[wsmodel.Verdicts]()
	for i := range vt.NumField() {
		f := vt.Field(i)
		if f.Type.Kind() != reflect.Map {
			continue
		}
		var v wsmodel.Verdicts
		m := reflect.MakeMap(f.Type)
		m.SetMapIndex(reflect.ValueOf(path), reflect.MakeSlice(f.Type.Elem(), 1, 1))
		reflect.ValueOf(&v).Elem().Field(i).Set(m)
		if printOf(&v, path) == empty {
			t.Errorf("printOf does not read Verdicts.%s", f.Name)
		}
	}
	base := printOf(&wsmodel.Verdicts{Calls: map[string][]diagnose.ExternalCall{path: {{}}}}, path)
	ct := reflect.TypeFor[diagnose.ExternalCall]()
	for i := range ct.NumField() {
		var c diagnose.ExternalCall
		setNonZero(t, reflect.ValueOf(&c).Elem().Field(i))
		if printOf(&wsmodel.Verdicts{Calls: map[string][]diagnose.ExternalCall{path: {c}}}, path) == base {
			t.Errorf("printOf does not read ExternalCall.%s", ct.Field(i).Name)
		}
	}
}

// setNonZero gives v a value other than its zero.
func setNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(7)
	case reflect.Struct:
		for i := range v.NumField() {
			setNonZero(t, v.Field(i))
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setNonZero(t, s.Index(0))
		v.Set(s)
	default:
		t.Fatalf("no non-zero value for a %s", v.Type())
	}
}
