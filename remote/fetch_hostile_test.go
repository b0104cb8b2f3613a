package remote

import (
	"strings"
	"testing"
)

// hostileFetch replaces read_files, list_files and search_files with replies a broken or
// hostile target could send.
const hostileFetch = `
import base64
def _b(s):
    return base64.b64encode(s.encode()).decode()
def m_read_files(params):
    ask = (params.get("paths") or [""])[0]
    follow = params.get("follow")
    if ask == "fixturepkg/unasked.py":
        return {"site": "/s", "files": [{"path": "fixturepkg/config.py", "size": 1, "data": _b("x")}], "skipped": []}
    if ask == "fixturepkg/short.py":
        return {"site": "/s", "files": [{"path": ask, "size": 10, "data": _b("x")}], "skipped": []}
    if ask == "fixturepkg/twice.py":
        f = {"path": ask, "size": 1, "data": _b("x")}
        return {"site": "/s", "files": [f, f], "skipped": []}
    if ask == "fixturepkg/escape.py" and follow:
        return {"site": "/s", "files": [{"path": "fixturepkg/../../etc/passwd.py", "size": 1, "data": _b("x")}], "skipped": []}
    if ask == "fixturepkg/big.py":
        return {"site": "/s", "files": [{"path": ask, "size": 5 << 19, "data": _b("y" * (5 << 19))}], "skipped": []}
    if ask == "fixturepkg/ok.py":
        return {"site": "/s", "files": [{"path": ask, "size": 2, "data": _b("ok")}], "skipped": []}
    return {"site": "/s", "files": [], "skipped": []}
METHODS["read_files"] = (m_read_files, True)
def m_list_files(params):
    name = params["name"]
    bad = {
        "escape": [["fixturepkg/../x.py", 1]],
        "outside": [["other/x.py", 1]],
        "absolute": [["/etc/x.py", 1]],
        "notsource": [["fixturepkg/x.so", 1]],
        "negative": [["fixturepkg/x.py", -1]],
        "malformed": [["fixturepkg/x.py"]],
        "many": [["fixturepkg/m%d.py" % i, 1] for i in range(20001)],
        "fine": [["fixturepkg/x.py", 1]],
    }[name]
    return {"site": "/s", "member": "fixturepkg", "files": bad}
METHODS["list_files"] = (m_list_files, True)
def m_search_files(params):
    paths = {
        "escape": ["fixturepkg/../x.py"],
        "outside": ["other/x.py"],
        "absolute": ["/etc/x.py"],
        "notsource": ["fixturepkg/x.so"],
        "many": ["fixturepkg/m%d.py" % i for i in range(20001)],
        "badmember": ["fixturepkg/x.py"],
        "fine": ["fixturepkg/x.py"],
    }[params["name"]]
    member = "../up" if params["name"] == "badmember" else "fixturepkg"
    return {"site": "/s", "member": member, "paths": paths}
METHODS["search_files"] = (m_search_files, True)
`

func TestFetchRefusesHostileReplies(t *testing.T) {
	t.Parallel()
	spec := hostileSpec(t, "torchlsp_helper", hostileFetch)
	target := NewLocal(spec)
	c := NewClient(target, spec)
	t.Cleanup(func() { c.Close(); target.Close() })
	ctx := testContext(t)
	reads := []struct {
		path   string
		follow string
		want   string // "" for accepted
	}{
		{"fixturepkg/unasked.py", "", "not asked for"},
		{"fixturepkg/short.py", "", "for a stated"},
		{"fixturepkg/twice.py", "", "twice"},
		{"fixturepkg/escape.py", "fixturepkg.x", "not a clean relative path"},
		{"fixturepkg/big.py", "", "over the limit"},
		{"fixturepkg/ok.py", "", ""},
	}
	for _, tt := range reads {
		var err error
		if tt.follow != "" {
			_, err = c.ReadImportPath(ctx, "fixturepkg", tt.follow, []string{tt.path})
		} else {
			_, err = c.ReadFiles(ctx, "fixturepkg", []string{tt.path})
		}
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("read %s: %v, want %q", tt.path, err, tt.want)
		}
	}
	for _, name := range []string{"escape", "outside", "absolute", "notsource", "negative", "malformed", "many", "fine"} {
		_, err := c.ListFiles(ctx, name)
		if (name == "fine") != (err == nil) {
			t.Errorf("list %s: %v", name, err)
		}
	}
	for _, name := range []string{"escape", "outside", "absolute", "notsource", "many", "badmember", "fine"} {
		_, err := c.SearchFiles(ctx, name, SearchQuery{Words: []string{"x"}})
		if (name == "fine") != (err == nil) {
			t.Errorf("search %s: %v", name, err)
		}
	}
}
