package diagnose

import "testing"

func init() {
	// The fixture with the other spellings of a compile (testdata/hazards/README.md).
	siteMakers["spellings"] = func(t *testing.T) site {
		return overlaySite(t, "spellings", fixtureSite, "spellings")
	}
}
