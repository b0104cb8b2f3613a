package diagnose

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/torchlsp/torchlsp/server/syntax"
)

// recompileLimit is the target's recompile limit as the buffer leaves it:
// a module-level write of recompile_limit (or its older name
// cache_size_limit) to an int, else the flag's default.
func (c ruleTL013) recompileLimit() (limit int, key string, cite Related, ok bool) {
	a := c.a
	flag := a.lookupFlag(dynamoConfig, "recompile_limit")
	if flag == nil || flag.Alias != "" {
		flag = a.lookupFlag(dynamoConfig, "cache_size_limit")
	}
	if flag == nil {
		return 0, "", Related{}, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(flag.Default))
	if err != nil {
		return 0, "", Related{}, false
	}
	cite = c.flagRelated(flag, fmt.Sprintf("%s = %d", flag.Key, v))
	for i := range a.refs {
		r := &a.refs[i]
		if r.Write && r.fn < 0 && r.Flag != nil && r.Module == dynamoConfig && r.valueNode >= 0 &&
			(r.Flag == flag || r.Flag.Alias == flag.FullKey() || flag.Alias == r.Flag.FullKey()) {
			if n, err := strconv.Atoi(c.t.Text(r.valueNode)); err == nil {
				v = n
			}
		}
	}
	return v, flag.Key, cite, true
}

// staticShapes reports whether site s compiles every shape on its own:
// dynamic=False, or automatic dynamic shapes turned off at module level.
func (c ruleTL013) staticShapes(s *compileSite) (bool, string) {
	t := c.t
	if v := s.settingValue("dynamic"); v >= 0 && t.Kind(v) == syntax.KindFalse {
		return true, "dynamic=False"
	}
	for i := range c.a.refs {
		r := &c.a.refs[i]
		if r.Write && r.fn < 0 && r.Module == dynamoConfig && r.Key == "automatic_dynamic_shapes" && r.Value == "False" {
			return true, fmt.Sprintf("automatic_dynamic_shapes = False (line %d)", r.Span.Start.Line+1)
		}
	}
	return false, ""
}

// recompiles reports compiled code called with more distinct shapes,
// values or dtypes than the target compiles or records CUDA graphs for
// before it gives up or warns (TL013).
func (c ruleTL013) recompiles() {
	a, t := c.a, c.t
	limit, limitKey, limitCite, haveLimit := c.recompileLimit()
	seen := map[string]bool{}
	for _, s := range a.sites {
		for _, name := range s.targets {
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			for _, call := range a.callsNamed(name) {
				if call.node == s.node || call.qual == "torch.compile" {
					continue
				}
				v, iter, body, ok := (loopFacts{a}).loopOf(call)
				if !ok {
					continue
				}
				vals, ok := (loopFacts{a}).iterValues(iter)
				if !ok {
					continue
				}
				kind := ""
				args := append([]int32(nil), call.args...)
				for _, kw := range call.kwargs {
					args = append(args, kw.value)
				}
				for _, arg := range args {
					if k := (loopFacts{a}).varies(arg, t.Text(v), body, 0); k != "" {
						kind = k
						break
					}
				}
				if kind == "value" && vals.kind == "dtype" {
					kind = "dtype"
				}
				if kind == "" || kind == "value" && vals.kind != "int" {
					continue
				}
				static, why := c.staticShapes(s)
				compiles := vals.n
				if kind != "dtype" && !static {
					compiles = min(vals.n, 2) // automatic dynamic shapes: once static, once dynamic
				}
				switch {
				case haveLimit && compiles > limit:
					c.add(c.pastRecompileLimit(s, call, name, kind, vals.n, limit, limitKey, limitCite, why, iter))
				case kind != "dtype" && !static:
					if d, ok := c.cudagraphReRecords(s, call, name, vals.n, iter); ok {
						c.add(d)
					}
				}
			}
		}
	}
}

// pastRecompileLimit's fix names the limit as the target's config does:
// recompile_limit, or cache_size_limit on a torch older than that name.
func (c ruleTL013) pastRecompileLimit(s *compileSite, call *callInfo, name, kind string, n, limit int, limitKey string, cite Related, static string, iter int32) Diagnostic {
	t := c.t
	what := map[string]string{"size": "shape", "value": "int value", "dtype": "dtype"}[kind]
	fate := "runs uncompiled (eager) for the inputs past the limit"
	d := Diagnostic{Code: CodeRecompileLimit, Severity: SeverityWarning, Span: t.Span(call.calleeNode), Related: []Related{cite}}
	fullgraph := s.settingValue("fullgraph")
	if fullgraph >= 0 && t.Kind(fullgraph) == syntax.KindTrue {
		if l := c.files.find(fileConvertFrame, 0, "Hard failure due to fullgraph=True"); l >= 0 {
			fate = "raises FailOnRecompileLimitHit (fullgraph=True)"
			d.Related = append(d.Related, Related{File: fileConvertFrame, Line: l, Message: c.files.text(fileConvertFrame, l)})
		}
	}
	d.Message = fmt.Sprintf("torch.compile compiles %s once per %s it is called with, and this loop (line %d) calls it with %d different ones: past %s's recompile limit (%d), it %s",
		name, what, t.StartPos(iter).Line+1, n, c.torchName(), limit, fate)
	if static != "" {
		d.Message += fmt.Sprintf("; %s keeps Dynamo from compiling one graph for every size", static)
	}
	d.Message += "; pad or bucket the inputs to a few " + what + "s, or raise torch._dynamo.config." + limitKey
	if dyn, ok := s.settings["dynamic"]; ok && dyn.kw >= 0 && kind == "size" && s.kind == siteCall && s.call != nil {
		d.Fixes = append(d.Fixes, Fix{Title: "Remove dynamic=False (compile one graph for all sizes)", Preferred: true,
			Edits: []Edit{c.deleteArg(s.call, dyn.kw)}})
	}
	return d
}

// cudagraphReRecords reports compiled code with CUDA graphs called with
// more distinct sizes than the target records graphs for without warning.
func (c ruleTL013) cudagraphReRecords(s *compileSite, call *callInfo, name string, n int, iter int32) (Diagnostic, bool) {
	a, t := c.a, c.t
	cg := cudagraphDecision(c).cudagraphs(s)
	if !cg.on {
		return Diagnostic{}, false
	}
	warn := a.lookupFlag(inductorConfig, "triton.cudagraph_dynamic_shape_warn_limit")
	skip := a.lookupFlag(inductorConfig, "triton.cudagraph_skip_dynamic_graphs")
	if warn == nil {
		return Diagnostic{}, false
	}
	limit, err := strconv.Atoi(strings.TrimSpace(warn.Default))
	if err != nil {
		return Diagnostic{}, false
	}
	skipped := skip != nil && skip.Default == "True"
	for i := range a.refs {
		r := &a.refs[i]
		mine := r.Spelling == SpellOptionsKey && r.call == s.node
		global := r.Spelling != SpellOptionsKey && r.Spelling != SpellEnvVar && r.fn < 0
		if !r.Write || !mine && !global {
			continue
		}
		switch {
		case r.Flag == warn:
			if v, err := strconv.Atoi(r.Value); err == nil {
				limit = v
			} else if r.Value == "None" {
				return Diagnostic{}, false
			}
		case skip != nil && r.Flag == skip:
			skipped = r.Value == "True"
		}
	}
	if skipped || n <= limit {
		return Diagnostic{}, false
	}
	d := Diagnostic{
		Code: CodeRecompileLimit, Severity: SeverityWarning, Span: t.Span(call.calleeNode),
		Message: fmt.Sprintf("%s turns on CUDA graphs, which record one graph per distinct input size, and this loop (line %d) calls %s with %d sizes: past %s's triton.cudagraph_dynamic_shape_warn_limit (%d) every new size costs a recording and its own memory; pad or bucket the sizes, or skip CUDA graphs for dynamic shapes (triton.cudagraph_skip_dynamic_graphs)",
			cg.why, t.StartPos(iter).Line+1, name, n, c.torchName(), limit),
		Related: []Related{c.flagRelated(warn, fmt.Sprintf("cudagraph_dynamic_shape_warn_limit = %s", warn.Default))},
	}
	if skip != nil {
		d.Related = append(d.Related, c.flagRelated(skip, "cudagraph_skip_dynamic_graphs = "+skip.Default))
		if cg.kind == "mode" && s.modeKw.node >= 0 && s.optionsNode < 0 {
			flags := map[string]string{}
			for k, v := range c.cat.Modes[s.mode] {
				flags[k] = v
			}
			flags["triton.cudagraph_skip_dynamic_graphs"] = "True"
			var parts []string
			for _, k := range sortedKeys(flags) {
				parts = append(parts, fmt.Sprintf("%q: %s", k, flags[k]))
			}
			d.Fixes = append(d.Fixes, Fix{
				Title:     fmt.Sprintf("Replace mode=%q with its options, skipping CUDA graphs for dynamic shapes", s.mode),
				Preferred: true,
				Edits:     []Edit{{Span: t.Span(s.modeKw.node), NewText: "options={" + strings.Join(parts, ", ") + "}"}},
			})
		}
	}
	return d, true
}

// ruleTL013 is the TL013 rule: a function of the check's pass
// (checker), whose facts and shared helpers it reads.
type ruleTL013 struct{ *checker }
