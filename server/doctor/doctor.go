// Package doctor answers what the user asks about a target itself: the
// doctor's checks, hop by hop (Check, as a table for an editor: Run), and
// where its torch is mirrored (OpenMirror). It reads the targets' model
// (server/session), and knows of the rest of the engine only the Deps it
// was given.
package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/torchlsp/torchlsp/remote"
	"github.com/torchlsp/torchlsp/server/api"
	"github.com/torchlsp/torchlsp/server/session"
)

// Deps is what the doctor asks of the engine.
type Deps struct {
	Notify   api.Notifier
	CacheDir string
	// Session is the session of a target, the default one for "".
	Session func(name string) (*session.Session, error)
	// Sources names the files and settings the configuration came from.
	Sources func() []string
}

// Doctor runs the checks of a target.
type Doctor struct{ deps Deps }

// New makes the doctor over deps.
func New(deps Deps) *Doctor { return &Doctor{deps: deps} }

// editorTimeout bounds the checks an editor asked for.
const editorTimeout = 2 * time.Minute

// Result is the doctor's answer: every step, and the table an editor
// shows (the command's JSON holds the table alone).
type Result struct {
	Steps    []CheckStep `json:"-"`
	Markdown string      `json:"markdown,omitempty"`
}

// CheckStep is one line of a doctor report.
type CheckStep struct {
	Name    string
	OK      bool
	Detail  string
	Latency time.Duration
	Hint    string // what to do about a failure
}

// Check checks a target step by step: each hop, the interpreter, the
// helper's round trip, the packages and their mirrors. It stops at the
// first step that fails, since later ones depend on it. Env values are not
// shown: they may hold secrets.
func (d *Doctor) Check(ctx context.Context, name string, importTorch bool) ([]CheckStep, error) {
	s, err := d.deps.Session(name)
	if err != nil {
		return nil, err
	}
	spec, client := s.Spec(), s.Client()
	var steps []CheckStep
	add := func(st CheckStep) bool { steps = append(steps, st); return st.OK }

	sources := d.deps.Sources()
	if len(sources) == 0 {
		sources = []string{"built-in defaults"}
	}
	envNames := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		envNames = append(envNames, k)
	}
	sort.Strings(envNames)
	desc := describeSpec(spec)
	if len(envNames) > 0 {
		desc += " env: " + strings.Join(envNames, ",")
	}
	add(CheckStep{Name: "config", OK: true, Detail: fmt.Sprintf("target %s (%s) from %s", spec.Name, desc, strings.Join(sources, ", "))})

	if hc, ok := s.Target().(remote.HopChecker); ok {
		for _, h := range hc.CheckHops(ctx) {
			st := CheckStep{Name: "hop " + h.Name, OK: h.Err == nil, Latency: h.Latency, Detail: h.Addr}
			if h.Err != nil {
				st.Detail = h.Err.Error()
				st.Hint = h.Hint
			}
			if !add(st) {
				return steps, nil
			}
		}
	}

	start := time.Now()
	hello, err := client.Hello(ctx)
	if !add(CheckStep{Name: "interpreter", OK: err == nil, Latency: time.Since(start), Detail: helloDetail(hello, err),
		Hint: "check the target's python setting; the interpreter must exist on the target and be Python 3.8 or newer"}) {
		return steps, nil
	}
	steps[len(steps)-1].Hint = ""

	var rtts []time.Duration
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if err := client.Ping(ctx); err != nil {
			add(CheckStep{Name: "helper round trip", Detail: err.Error()})
			return steps, nil
		}
		rtts = append(rtts, time.Since(t0))
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	add(CheckStep{Name: "helper round trip", OK: true, Latency: rtts[len(rtts)/2], Detail: fmt.Sprintf("median of 5, min %s, max %s", rtts[0].Round(time.Microsecond), rtts[len(rtts)-1].Round(time.Microsecond))})

	for _, pkg := range spec.Packages {
		t0 := time.Now()
		info, err := client.PackageInfo(ctx, pkg)
		if err != nil || info.Location == "" {
			detail := "not installed"
			if err != nil {
				detail = err.Error()
			}
			add(CheckStep{Name: "package " + pkg, Latency: time.Since(t0), Detail: detail,
				Hint: fmt.Sprintf("install %s for %s on the target, or remove it from the target's packages%s", pkg, spec.Python, userSiteHint(spec))})
			continue
		}
		add(CheckStep{Name: "package " + pkg, OK: true, Latency: time.Since(t0),
			Detail: fmt.Sprintf("%s %s at %s (%d files, %.1f MB)", pkg, info.Version, info.Location, info.FilesCount, float64(info.Bytes)/1e6)})
		m, err := remote.LookupMirror(d.deps.CacheDir, spec, pkg)
		switch {
		case err == nil && m != nil && m.Manifest.Version == info.Version:
			add(CheckStep{Name: "mirror " + pkg, OK: true, Detail: m.Root})
		case err == nil && m != nil:
			add(CheckStep{Name: "mirror " + pkg, OK: true, Detail: fmt.Sprintf("%s holds %s, the target has %s: it is mirrored again on next use", m.Root, m.Manifest.Version, info.Version)})
		default:
			add(CheckStep{Name: "mirror " + pkg, OK: true, Detail: "not mirrored yet: the first hover or definition mirrors it"})
		}
		if importTorch {
			t0 := time.Now()
			r, err := client.Import(ctx, pkg)
			st := CheckStep{Name: "import " + pkg, OK: err == nil, Latency: time.Since(t0)}
			if err != nil {
				st.Detail = err.Error()
			} else {
				st.Detail = fmt.Sprintf("%.2f s in the interpreter", r.Seconds)
			}
			add(st)
		}
	}
	return steps, nil
}

func describeSpec(s remote.Spec) string {
	var parts []string
	if s.SSH != "" {
		parts = append(parts, "ssh "+s.SSH)
	}
	for _, j := range s.Jump {
		parts = append(parts, "jump "+j)
	}
	if len(s.Exec) > 0 {
		parts = append(parts, "exec "+strings.Join(s.Exec, " "))
	}
	parts = append(parts, "python "+s.Python)
	if s.UserSite {
		parts = append(parts, "user site")
	}
	return strings.Join(parts, ", ")
}

// userSiteHint says how to reach a package installed with pip --user,
// which the interpreter does not see unless the target asks for it.
func userSiteHint(s remote.Spec) string {
	if s.UserSite {
		return ""
	}
	return " (a package installed with pip install --user is seen only with user_site = true in the target's table)"
}

func helloDetail(h remote.Hello, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("Python %s at %s (pid %d)", h.Python, h.Executable, h.PID)
}

// Run runs torchlsp.doctor (and `torchlsp doctor`): the checks, and the
// table an editor shows of them.
func (d *Doctor) Run(ctx context.Context, args api.DoctorArgs) (*Result, error) {
	if _, bounded := ctx.Deadline(); !bounded {
		// An editor's request has no deadline of its own; the command
		// line's --timeout bounds its run.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, editorTimeout)
		defer cancel()
	}
	steps, err := d.Check(ctx, args.Target, args.ImportTorch)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("| | check | result | time |\n|---|---|---|---|\n")
	for _, st := range steps {
		mark := "✓"
		if !st.OK {
			mark = "✗"
		}
		detail := st.Detail
		if st.Hint != "" && !st.OK {
			detail += " — " + st.Hint
		}
		lat := ""
		if st.Latency > 0 {
			lat = st.Latency.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mark, st.Name, strings.ReplaceAll(detail, "|", "\\|"), lat)
	}
	return &Result{Steps: steps, Markdown: b.String()}, nil
}

// OpenMirror runs torchlsp.openMirror: it shows where the target's torch is mirrored, and opens its
// __init__.py in the editor when it can.
func (d *Doctor) OpenMirror(ctx context.Context, args api.TargetArgs) (*api.CommandResult, error) {
	s, err := d.deps.Session(args.Target)
	if err != nil {
		return nil, err
	}
	ps, err := s.Package(ctx, "torch")
	if err != nil {
		return nil, err
	}
	path := ps.Mirror().SiteDir + "/torch/__init__.py"
	api.OpenResult(ctx, d.deps.Notify, fmt.Sprintf("torch %s of target %s, mirrored read-only", ps.Info().Version, s.Spec().Name), path)
	return &api.CommandResult{
		Path:     path,
		Markdown: fmt.Sprintf("torch %s of target **%s** is mirrored read-only at `%s` (from `%s` on the target)", ps.Info().Version, s.Spec().Name, ps.Mirror().SiteDir, ps.Mirror().TargetDir),
	}, nil
}
