package site

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPyrightFirstDefinition measures pyright's first definition of
// model.parameters() from a cold start (process start, initialize, didOpen,
// definition retried until it answers), reading torch 2.11 through the
// site of a local target and through a plain extraPaths to the same tree.
// The two alternate within each iteration, so that a busy machine slows
// both alike; the medians of wall time and of pyright's CPU time up to the
// answer are reported:
//
//	TORCHLSP_TORCH211_SITE=/work/torch211 go test -run '^$' -bench PyrightFirstDefinition -benchtime 5x ./test/site/
func BenchmarkPyrightFirstDefinition(b *testing.B) {
	tgt := torch211Target(b)
	argv := npmServer("pyright")(b)
	ws := workspace(b)
	h := newHome(b, tgt)
	site := runSite(b, h, ws)
	python := noTorchPython(b)
	train := filepath.Join(ws, "train.py")
	line, col := find(b, train, "model.parameters()", "parameters")
	kinds := []struct{ name, extra string }{{"site", site}, {"copy", tgt.site}}
	wall := map[string][]float64{}
	cpu := map[string][]float64{}
	i := 0
	for b.Loop() {
		for k := range kinds {
			kind := kinds[(k+i)%len(kinds)]
			settings := map[string]any{"python": map[string]any{"pythonPath": python, "analysis": map[string]any{"extraPaths": []string{kind.extra}}}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			start := time.Now()
			srv := startServer(b, ctx, serverConfig{argv: argv, env: cleanEnv(h.env...), root: ws, settings: settings, initOptions: settings})
			srv.open(train, "python")
			locs, err := srv.definition(ctx, train, line, col)
			elapsed := time.Since(start)
			used, cpuErr := cpuTime(srv.cmd.Process.Pid)
			srv.stop()
			cancel()
			if err != nil || len(locs) == 0 {
				b.Fatalf("%s: definition: %v %v", kind.name, locs, err)
			}
			if cpuErr != nil {
				b.Fatal(cpuErr)
			}
			wall[kind.name] = append(wall[kind.name], float64(elapsed.Milliseconds()))
			cpu[kind.name] = append(cpu[kind.name], float64(used.Milliseconds()))
		}
		i++
	}
	for _, k := range kinds {
		b.ReportMetric(median(wall[k.name]), k.name+"-wall-ms")
		b.ReportMetric(median(cpu[k.name]), k.name+"-cpu-ms")
		b.Logf("%s: wall %v ms, cpu %v ms", k.name, wall[k.name], cpu[k.name])
	}
}

// cpuTime is the user and system time a process has used so far.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; fields count from its ")".
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
