package pyindex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

const chainsSite = "testdata/chains"

// TestResolveServed covers what Python binds that a plain reading of the
// module's bindings misses: rebinding assignments, the methods of a config
// module, and names a module's __getattr__ serves.
func TestResolveServed(t *testing.T) {
	t.Parallel()
	ix, err := Open(chainsSite, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	tests := []struct {
		qualname  string
		kind      Kind
		canonical string
		file      string
		pattern   string
		dynamic   bool // the index leaves it to the interpreter
	}{
		{qualname: "chainpkg.register", kind: KindFunction, canonical: "chainpkg._registry.register", file: "chainpkg/_registry.py", pattern: `^def (register)\(`},
		{qualname: "chainpkg.again", kind: KindFunction, canonical: "chainpkg._registry.register", file: "chainpkg/_registry.py", pattern: `^def (register)\(`},
		{qualname: "chainpkg.Registry", kind: KindClass, canonical: "chainpkg._registry.Registry", file: "chainpkg/_registry.py", pattern: `^class (Registry)`},
		// a constant, and a name the index cannot follow, stay assignments
		{qualname: "chainpkg.flag", kind: KindVariable, canonical: "chainpkg.flag", file: "chainpkg/__init__.py", pattern: `^(flag) =`},
		{qualname: "chainpkg.missing", kind: KindVariable, canonical: "chainpkg.missing", file: "chainpkg/__init__.py", pattern: `^(missing) =`},
		// install_config_module: ConfigModule's methods, not the typing stub
		{qualname: "chainpkg.config.patch", kind: KindFunction, canonical: "chainpkg.utils._config_module.ConfigModule.patch", file: "chainpkg/utils/_config_module.py", pattern: `def (patch)\(`},
		{qualname: "chainpkg.config.save_config", kind: KindFunction, canonical: "chainpkg.config.save_config", file: "chainpkg/config.py", pattern: `^def (save_config)\(`},
		{qualname: "chainpkg.config.only_typed", kind: KindFunction, canonical: "chainpkg.utils._config_typing.only_typed", file: "chainpkg/utils/_config_typing.pyi", pattern: `^def (only_typed)\(`},
		{qualname: "chainpkg.config.triton", kind: KindClass, canonical: "chainpkg.config.triton", file: "chainpkg/config.py", pattern: `^class (triton)`},
		{qualname: "chainpkg.config.triton.cudagraphs", kind: KindVariable, canonical: "chainpkg.config.triton.cudagraphs", file: "chainpkg/config.py", pattern: `(cudagraphs) =`},
		// __getattr__: submodules it imports, else the interpreter's answer
		{qualname: "chainpkg.lazy.bound", kind: KindVariable, canonical: "chainpkg.lazy.bound", file: "chainpkg/lazy.py", pattern: `^(bound) =`},
		{qualname: "chainpkg.lazy.served", dynamic: true},
		{qualname: "chainpkg.lazypkg.sub", kind: KindModule, canonical: "chainpkg.lazypkg.sub", file: "chainpkg/lazypkg/sub.py"},
		{qualname: "chainpkg.lazypkg.sub.inner", kind: KindFunction, canonical: "chainpkg.lazypkg.sub.inner", file: "chainpkg/lazypkg/sub.py", pattern: `^def (inner)\(`},
		{qualname: "chainpkg.lazypkg.other", dynamic: true},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			t.Parallel()
			r, err := ix.Resolve(tt.qualname)
			if tt.dynamic {
				if !errors.Is(err, ErrDynamic) || !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %+v, %v; want ErrDynamic", r.Symbol, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := r.Symbol
			if s.Kind != tt.kind || s.Qualname != tt.canonical || s.File != tt.file {
				t.Fatalf("got %s %s in %s, want %s %s in %s", s.Kind, s.Qualname, s.File, tt.kind, tt.canonical, tt.file)
			}
			if tt.pattern != "" {
				line, col := findDef(t, chainsSite, tt.file, tt.pattern, 0)
				if s.Line != line || s.Col != col {
					t.Fatalf("at %d:%d, want %d:%d", s.Line, s.Col, line, col)
				}
			}
		})
	}
}

// TestResolveServedTorch211 checks the same on the real torch 2.11 sources.
func TestResolveServedTorch211(t *testing.T) {
	t.Parallel()
	site := os.Getenv("TORCHLSP_TORCH211_SITE")
	if site == "" {
		t.Skip("TORCHLSP_TORCH211_SITE is not set: no torch 2.11 sources to resolve in")
	}
	// The variable may name a symbolic link; the index walks a directory.
	site, err := filepath.EvalSymlinks(site)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(site, "", WithPackages("torch"))
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	tests := []struct {
		qualname, canonical, file, pattern string
	}{
		{"torch.nn.attention.register_flash_attention_impl", "torch.nn.attention._registry.register_flash_attention_impl", "torch/nn/attention/_registry.py", `^def (register_flash_attention_impl)\(`},
		{"torch._inductor.config.patch", "torch.utils._config_module.ConfigModule.patch", "torch/utils/_config_module.py", `^    def (patch)\(`},
		{"torch._dynamo.config.patch", "torch.utils._config_module.ConfigModule.patch", "torch/utils/_config_module.py", `^    def (patch)\(`},
		{"torch._inductor.config.triton", "torch._inductor.config.triton", "torch/_inductor/config.py", `^class (triton)\b`},
		// A rebinding of a compiled object, which only a .pyi stub
		// declares, is the line of Python that makes the name.
		{"torch.mtia.Stream", "torch.mtia.Stream", "torch/mtia/__init__.py", `^(Stream) = torch\.Stream$`},
		{"torch.cuda.OutOfMemoryError", "torch.cuda.OutOfMemoryError", "torch/cuda/__init__.py", `^(OutOfMemoryError) = torch\._C\.OutOfMemoryError$`},
		// An attribute of a module-level instance (matmul = cuBLASModule())
		// that the class serves through __getattr__: the literal the
		// name is compared with.
		{"torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.cuBLASModule.allow_tf32", "torch/backends/cuda/__init__.py", `^        if name == "(allow_tf32)":`},
	}
	for _, tt := range tests {
		t.Run(tt.qualname, func(t *testing.T) {
			t.Parallel()
			r, err := ix.Resolve(tt.qualname)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Symbol
			if s.Qualname != tt.canonical || s.File != tt.file {
				t.Fatalf("got %s %s in %s, want %s in %s", s.Kind, s.Qualname, s.File, tt.canonical, tt.file)
			}
			line, col := findDef(t, site, tt.file, tt.pattern, 0)
			if s.Line != line || s.Col != col {
				t.Fatalf("at %d:%d, want %d:%d", s.Line, s.Col, line, col)
			}
		})
	}
}
