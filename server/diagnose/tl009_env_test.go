package diagnose

import "testing"

// Environment variables torch reads through a helper its config module
// calls when it is imported, shaped as the real trees have them:
// torch 2.11's _inductor/config.py reads TORCHINDUCTOR_WORKER_START in
// decide_worker_start_method() and TORCHINDUCTOR_COMPILE_THREADS in
// decide_compile_threads(), both called by module-level assignments;
// torch 2.6's reads only the second (its worker_start_method is None, and
// nothing reads TORCHINDUCTOR_WORKER_START).
const (
	importEnvAnchor = "def _a_function_is_not_a_flag"

	decideCompileThreads = `def decide_compile_threads() -> int:
    if "TORCHINDUCTOR_COMPILE_THREADS" in os.environ:
        compile_threads = int(os.environ["TORCHINDUCTOR_COMPILE_THREADS"])
    else:
        compile_threads = os.cpu_count() or 1
    return compile_threads


compile_threads: Optional[int] = None if is_fbcode() else decide_compile_threads()


`
	decideWorkerStart = `def decide_worker_start_method() -> str:
    if "TORCHINDUCTOR_WORKER_START" in os.environ:
        start_method = os.environ["TORCHINDUCTOR_WORKER_START"]
    else:
        start_method = "subprocess"
    assert start_method in ("subprocess", "fork", "spawn")
    return start_method


worker_start_method: str = decide_worker_start_method()


`
	workerStart26   = "worker_start_method: Optional[str] = None\n\n\n"
	importEnvHeader = "from typing import Optional\n\n\ndef is_fbcode() -> bool:\n    return False\n\n\n"
)

func init() {
	siteMakers["import-env"] = func(t *testing.T) site {
		return patchedSite(t, "import-env", fixtureSite, "torch/_inductor/config.py", importEnvAnchor,
			importEnvHeader+decideWorkerStart+decideCompileThreads+importEnvAnchor)
	}
	siteMakers["import-env26"] = func(t *testing.T) site {
		return patchedSite(t, "import-env26", fixtureSite, "torch/_inductor/config.py", importEnvAnchor,
			importEnvHeader+workerStart26+decideCompileThreads+importEnvAnchor)
	}
}

// The catalog finds each variable behind its helper, on the trees shaped
// as 2.11 and 2.6 and on torch 2.11 itself.
func TestImportEnvHelpers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		site func(t *testing.T) site
		want map[string]string // variable → flag, "" for none
	}{
		{"import-env", siteMakers["import-env"], map[string]string{"TORCHINDUCTOR_WORKER_START": "worker_start_method", "TORCHINDUCTOR_COMPILE_THREADS": "compile_threads"}},
		{"import-env26", siteMakers["import-env26"], map[string]string{"TORCHINDUCTOR_WORKER_START": "", "TORCHINDUCTOR_COMPILE_THREADS": "compile_threads"}},
		{"fixture", func(t *testing.T) site { return fixture(t) }, map[string]string{"TORCHINDUCTOR_WORKER_START": "", "TORCHINDUCTOR_COMPILE_THREADS": ""}},
		{"torch211", func(t *testing.T) site { return torch211(t) }, map[string]string{"TORCHINDUCTOR_WORKER_START": "worker_start_method", "TORCHINDUCTOR_COMPILE_THREADS": "compile_threads"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.site(t)
			for env, key := range tc.want {
				flags := s.cat.FlagForEnv(env)
				switch {
				case key == "" && len(flags) > 0:
					t.Errorf("%s: %s is read for %s.%s, want nothing", tc.name, env, flags[0].Module, flags[0].Key)
				case key != "" && (len(flags) != 1 || flags[0].Key != key || flags[0].Module != inductorConfig):
					t.Errorf("%s: %s is read for %v, want %s.%s", tc.name, env, flags, inductorConfig, key)
				}
			}
		})
	}
}
