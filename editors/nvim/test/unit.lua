-- Unit tests of the plugin's pure parts (settings mapping, validation, root
-- detection, statusline). Run:
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile editors/nvim/test/unit.lua'
local torchlsp = require("torchlsp")

local passed, failed = 0, 0
local function check(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    io.stdout:write(("ok %d - %s\n"):format(passed + failed, name))
  else
    failed = failed + 1
    io.stdout:write(("not ok %d - %s: %s\n"):format(passed + failed, name, tostring(err)))
  end
end

local function eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(("%s: got %s, want %s"):format(what or "value", vim.inspect(got), vim.inspect(want)), 2)
  end
end

local settings_cases = {
  {
    name = "no default target given: none sent, so torchlsp.toml's default wins",
    config = { targets = {}, log_level = "info" },
    json = '{"logLevel":"info","targets":{}}',
  },
  {
    name = "site packages and hover go to the server",
    config = { targets = {}, log_level = "info", site = { enable = true, packages = { "einops", "-sympy" }, hover = "full" } },
    json = '{"logLevel":"info","site":{"hover":"full","packages":["einops","-sympy"]},"targets":{}}',
  },
  {
    name = "site = true sends nothing of it",
    config = { targets = {}, log_level = "info", site = true },
    json = '{"logLevel":"info","targets":{}}',
  },
  {
    name = "an explicit local is sent",
    config = { targets = {}, default_target = "local", log_level = "info" },
    json = '{"defaultTarget":"local","logLevel":"info","targets":{}}',
  },
  {
    name = "remote target with hops",
    config = {
      targets = {
        h200 = {
          python = "/opt/torch/.venv/bin/python3",
          ssh = "root@gpu:22",
          jump = { "me@bastion" },
          exec = { "pct", "exec", "200", "--" },
          env = {},
          extra = "dropped",
        },
      },
      default_target = "h200",
      log_level = "debug",
    },
    json = '{"defaultTarget":"h200","logLevel":"debug","targets":{"h200":{"env":{},"exec":["pct","exec","200","--"],'
      .. '"jump":["me@bastion"],"python":"/opt/torch/.venv/bin/python3","ssh":"root@gpu:22"}}}',
  },
  {
    name = "a target's workdir goes to the server",
    config = { targets = { gpu = { python = "python3", ssh = "gpu", workdir = "/root/proj" } }, log_level = "info" },
    json = '{"logLevel":"info","targets":{"gpu":{"python":"python3","ssh":"gpu","workdir":"/root/proj"}}}',
  },
}
for _, c in ipairs(settings_cases) do
  check("server_settings: " .. c.name, function()
    -- Compare through JSON: empty tables must encode as objects.
    local got = vim.fn.json_decode(vim.fn.json_encode(torchlsp.server_settings(c.config)))
    eq(got, vim.fn.json_decode(c.json), "settings")
    local encoded = vim.fn.json_encode(torchlsp.server_settings(c.config))
    assert(not encoded:find('"targets":%[%]'), "targets encoded as a list: " .. encoded)
    assert(not encoded:find('"env":%[%]'), "env encoded as a list: " .. encoded)
  end)
end

local validate_cases = {
  { name = "valid", config = { cmd = { "torchlsp" }, targets = { a = { python = "p" } }, default_target = "a" }, want = 0 },
  { name = "missing python", config = { cmd = { "torchlsp" }, targets = { a = { ssh = "u@h" } }, default_target = "local" }, want = 1 },
  { name = "jump without ssh", config = { cmd = { "torchlsp" }, targets = { a = { python = "p", jump = { "x" } } }, default_target = "local" }, want = 1 },
  -- torchlsp.toml or config.toml may define it: never refused here.
  { name = "default only another layer defines", config = { cmd = { "torchlsp" }, targets = {}, default_target = "gpu" }, want = 0 },
  { name = "no default", config = { cmd = { "torchlsp" }, targets = {} }, want = 0 },
  { name = "default not a string", config = { cmd = { "torchlsp" }, targets = {}, default_target = 3 }, want = 1 },
  { name = "keymaps not a table", config = { cmd = { "torchlsp" }, targets = {}, keymaps = "K" }, want = 1 },
  { name = "site off", config = { cmd = { "torchlsp" }, targets = {}, site = false }, want = 0 },
  { name = "site table", config = { cmd = { "torchlsp" }, targets = {}, site = { packages = { "einops" }, hover = "full" } }, want = 0 },
  { name = "site hover unknown", config = { cmd = { "torchlsp" }, targets = {}, site = { hover = "tiny" } }, want = 1 },
  { name = "site a string", config = { cmd = { "torchlsp" }, targets = {}, site = "yes" }, want = 1 },
  { name = "cmd not a list", config = { cmd = "torchlsp", targets = {}, default_target = "local" }, want = 1 },
}
for _, c in ipairs(validate_cases) do
  check("validate: " .. c.name, function()
    local problems = torchlsp.validate(c.config)
    eq(#problems, c.want, "problem count (" .. table.concat(problems, "; ") .. ")")
  end)
end

check("find_root prefers torchlsp.toml, then pyproject.toml, then .git", function()
  local root = vim.fn.tempname()
  vim.fn.mkdir(root .. "/repo/.git", "p")
  vim.fn.mkdir(root .. "/repo/proj/pkg", "p")
  local file = root .. "/repo/proj/pkg/m.py"
  vim.fn.writefile({}, file)
  eq(torchlsp.find_root(file), root .. "/repo", ".git alone")
  vim.fn.writefile({}, root .. "/repo/proj/pyproject.toml")
  eq(torchlsp.find_root(file), root .. "/repo/proj", "pyproject.toml over .git")
  vim.fn.writefile({}, root .. "/repo/torchlsp.toml")
  eq(torchlsp.find_root(file), root .. "/repo", "torchlsp.toml first, even further up")
  eq(torchlsp.find_root(file, { ".git" }), root .. "/repo", "custom markers")
  eq(torchlsp.find_root(root .. "/elsewhere/x.py", { "no-such-marker" }), root .. "/elsewhere", "fallback: own folder")
  vim.fn.delete(root, "rf")
end)

check("setup rejects a bad config and keeps none", function()
  local notified
  local orig = vim.notify
  vim.notify = function(msg)
    notified = msg
  end
  local ok = torchlsp.setup({ targets = { bad = {} } })
  vim.notify = orig
  eq(ok, false, "setup result")
  eq(torchlsp.config(), nil, "config kept")
  assert(notified and notified:find("bad%.python"), "no message naming the problem: " .. tostring(notified))
end)

check("target names: local first, others sorted", function()
  assert(torchlsp.setup({ cmd = { "/bin/true" }, targets = { zeta = { python = "p" }, alpha = { python = "p" } } }))
  eq(torchlsp.target_names(), { "local", "alpha", "zeta" }, "names")
end)

check("setup keeps a default_target only another layer defines", function()
  assert(torchlsp.setup({ cmd = { "/bin/true" }, default_target = "gpu" }), "setup refused gpu")
  eq(torchlsp.server_settings().defaultTarget, "gpu", "sent")
  assert(torchlsp.setup({ cmd = { "/bin/true" } }))
  eq(torchlsp.server_settings().defaultTarget, nil, "nothing sent without default_target")
end)

check("user commands exist after setup", function()
  local cmds = vim.api.nvim_get_commands({})
  for _, name in ipairs({ "TorchlspTarget", "TorchlspRepro", "TorchlspDoctor", "TorchlspMirror" }) do
    assert(cmds[name], name .. " missing")
  end
end)

check("statusline is empty without a client", function()
  eq(torchlsp.statusline(vim.api.nvim_get_current_buf()), "", "statusline")
end)

local result_cases = {
  { name = "nil", result = nil, want = {} },
  { name = "vim.NIL", result = vim.NIL, want = {} },
  { name = "blank string", result = "  ", want = {} },
  { name = "markdown string", result = "# Doctor\nok", want = { markdown = "# Doctor\nok" } },
  { name = "one-line string", result = " target h200 ", want = { message = "target h200" } },
  { name = "markup content", result = { kind = "markdown", value = "a\nb" }, want = { markdown = "a\nb" } },
  { name = "file uri", result = "file:///m/torch/__init__.py", want = { path = "/m/torch/__init__.py", preview = false } },
  { name = "uri object", result = { uri = "file:///m/r.md" }, want = { path = "/m/r.md", preview = true } },
  {
    name = "repro report: the file, its markdown not twice",
    result = { markdown = "## repro\n| a |", path = "/ws/.torchlsp/repros/x/report.md" },
    want = { path = "/ws/.torchlsp/repros/x/report.md", preview = true },
  },
  {
    name = "open mirror: the file and a message",
    result = { markdown = "torch is mirrored at `/m`", path = "/m/torch/__init__.py" },
    want = { path = "/m/torch/__init__.py", preview = false, message = "torch is mirrored at `/m`" },
  },
  { name = "doctor table", result = { markdown = "| a |\n|---|" }, want = { markdown = "| a |\n|---|" } },
  {
    name = "select target",
    result = { targets = { "a", "h200" }, default = "h200" },
    want = { message = "target h200 (targets: a, h200)" },
  },
  {
    name = "a run started: its title and id, no report yet",
    result = { run = "3", title = "threaded repro of train.py:17 on h200" },
    want = { message = "started threaded repro of train.py:17 on h200 (run 3; :TorchlspCancel 3 stops it)" },
  },
  {
    name = "a run waited for: its report",
    result = { run = "4", title = "t", markdown = "## repro\n| a |", path = "/ws/.torchlsp/repros/x/report.md" },
    want = { path = "/ws/.torchlsp/repros/x/report.md", preview = true },
  },
  { name = "runs cancelled", result = { cancelled = { "3: t" } }, want = { message = "cancelled 3: t" } },
  { name = "no run to cancel", result = { cancelled = {} }, want = { message = "no run in progress" } },
  { name = "a list is shown as json", result = { 1 }, want = { markdown = "```json\n[1]\n```" } },
  { name = "an unknown object is shown as json", result = { x = 1 }, want = { markdown = '```json\n{"x": 1}\n```' } },
}
for _, c in ipairs(result_cases) do
  check("classify_result: " .. c.name, function()
    eq(torchlsp.classify_result(c.result), c.want, "classified")
  end)
end

check("repro_args: default, a target, every target", function()
  eq(torchlsp.repro_args("file:///t.py", 10), { uri = "file:///t.py", line = 10 }, "default")
  eq(torchlsp.repro_args("file:///t.py", 10, ""), { uri = "file:///t.py", line = 10 }, "empty")
  eq(torchlsp.repro_args("file:///t.py", 3, "h200"), { uri = "file:///t.py", line = 3, target = "h200" }, "target")
  eq(torchlsp.repro_args("file:///t.py", 3, "all"), { uri = "file:///t.py", line = 3, all = true }, "all")
end)

check("cancel_args: one run, every run", function()
  eq(torchlsp.cancel_args("3"), { { run = "3" } }, "one")
  eq(torchlsp.cancel_args(""), {}, "every")
  eq(torchlsp.cancel_args(nil), {}, "every, nil")
end)

check("report_dirs and every report of a run on several targets", function()
  local md = "## a\n\nScripts and output: `/ws/.torchlsp/repros/1-a`\n\n## b\n\nScripts and output: `/ws/.torchlsp/repros/1-b`\n"
  eq(torchlsp.report_dirs(md), { "/ws/.torchlsp/repros/1-a", "/ws/.torchlsp/repros/1-b" }, "dirs")
  eq(torchlsp.classify_result({ markdown = md, path = "/ws/.torchlsp/repros/1-a/report.md" }), {
    path = "/ws/.torchlsp/repros/1-a/report.md",
    preview = true,
    also = { "/ws/.torchlsp/repros/1-b/report.md" },
  }, "classified")
end)

check("fallback folders for the binary: ~/.local/bin, GOBIN, GOPATH/bin, ~/go/bin", function()
  eq(torchlsp.fallback_dirs("/h", nil), { "/h/.local/bin", "/h/go/bin" }, "no go")
  eq(torchlsp.fallback_dirs("/h", "/g\n/h/go:/p\n"), { "/h/.local/bin", "/g", "/h/go/bin", "/p/bin" }, "go env")
end)

check("find_binary looks in ~/.local/bin when PATH lacks it", function()
  local home = vim.fn.tempname()
  vim.fn.mkdir(home .. "/.local/bin", "p")
  local bin = home .. "/.local/bin/torchlsp-probe-" .. vim.fn.getpid()
  vim.fn.writefile({ "#!/bin/sh" }, bin)
  vim.fn.setfperm(bin, "rwxr-xr-x")
  local old_home = vim.env.HOME
  vim.env.HOME = home
  local found, searched = torchlsp.find_binary(vim.fn.fnamemodify(bin, ":t"))
  vim.env.HOME = old_home
  vim.fn.delete(home, "rf")
  eq(found, bin, "found (searched " .. table.concat(searched, ", ") .. ")")
end)

check("mirror files are known by the cache dir", function()
  local old = vim.env.XDG_CACHE_HOME
  vim.env.XDG_CACHE_HOME = "/tmp/torchlsp-unit-cache"
  assert(torchlsp.setup({ cmd = { "/bin/true" } }))
  eq(torchlsp.cache_dir(), "/tmp/torchlsp-unit-cache/torchlsp", "cache dir")
  eq(torchlsp.is_mirror("/tmp/torchlsp-unit-cache/torchlsp/fixture/x/torch/__init__.py"), true, "mirror")
  eq(torchlsp.is_mirror("/tmp/torchlsp-unit-cache/torchlspx/a.py"), false, "sibling")
  eq(torchlsp.is_mirror("/home/u/train.py"), false, "workspace")
  vim.env.XDG_CACHE_HOME = old
  assert(torchlsp.setup({ cmd = { "/bin/true" }, cache_dir = "/srv/c" }))
  eq(torchlsp.is_mirror("/srv/c/t/a.py"), true, "cache_dir option")
end)

check("workspace file trust follows the server's records", function()
  local dir = vim.fn.tempname()
  local state = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.fn.mkdir(state .. "/torchlsp", "p")
  local old = vim.env.XDG_STATE_HOME
  vim.env.XDG_STATE_HOME = state
  eq(torchlsp.workspace_file(dir).trust, "absent", "no file")
  local content = 'default = "gpu"\n'
  local f = assert(io.open(dir .. "/torchlsp.toml", "wb"))
  f:write(content)
  f:close()
  eq(torchlsp.workspace_file(dir).trust, "untrusted", "no records")
  local function records(files)
    vim.fn.writefile({ vim.fn.json_encode({ version = 1, files = files }) }, state .. "/torchlsp/trusted.json")
  end
  records({ [dir .. "/torchlsp.toml"] = "sha256:" .. vim.fn.sha256(content) })
  eq(torchlsp.workspace_file(dir).trust, "trusted", "trusted")
  records({ [dir .. "/torchlsp.toml"] = "sha256:00" })
  eq(torchlsp.workspace_file(dir).trust, "changed", "changed")
  vim.fn.writefile({ "{broken" }, state .. "/torchlsp/trusted.json")
  eq(torchlsp.workspace_file(dir).trust, "untrusted", "damaged records")
  vim.env.XDG_STATE_HOME = old
  vim.fn.delete(dir, "rf")
  vim.fn.delete(state, "rf")
end)

check("toml: what torchlsp.toml is written in", function()
  local toml = require("torchlsp.toml")
  eq(toml.parse([[
# comment
default = "gpu" # trailing
[targets.gpu]
ssh = "root@gpu-host"
exec = [
  "pct", "exec", # container
  "200", "--",
]
env = { CUDA_VISIBLE_DEVICES = "0", 'A.B' = 'lit\eral' }
[targets."my box"]
python = "/usr/bin/python3"
[targets.gpu2.env]
X = "q\"\u00e9"
n = 2
]]), {
    default = "gpu",
    targets = {
      gpu = { ssh = "root@gpu-host", exec = { "pct", "exec", "200", "--" }, env = { CUDA_VISIBLE_DEVICES = "0", ["A.B"] = "lit\\eral" } },
      ["my box"] = { python = "/usr/bin/python3" },
      gpu2 = { env = { X = 'q"é', n = 2 } },
    },
  }, "parsed")
  for _, bad in ipairs({ 'a = "open', "[targets", "a = 1 2", "= 3" }) do
    local ok, err = pcall(toml.parse, bad)
    assert(not ok and tostring(err):find("^line 1: expected"), bad .. ": " .. tostring(err))
  end
end)

check("trust summary: the command each target runs, never env values", function()
  local lines = torchlsp.trust_summary([[
default = "gpu"
[targets.gpu]
ssh = "root@gpu-host"
jump = ["me@bastion", "b2"]
exec = ["docker", "exec", "-i", "my trainer"]
python = "/root/venv/bin/python3"
env = { TOKEN = "secret", A = "1" }
[targets.box]
]])
  eq(lines, {
    "box: python3",
    "gpu: ssh -J me@bastion,b2 root@gpu-host docker exec -i 'my trainer' env A=… TOKEN=… /root/venv/bin/python3",
    "default target: gpu",
  }, "lines")
  assert(torchlsp.trust_summary("[oops")[1]:find("could not be read"), "unreadable file")
end)

local site = "/c/torchlsp/gpu/x/site"
local python_cases = {
  { name = "pyright by name: created", config = { name = "pyright" }, want = { settings = { python = { analysis = { extraPaths = { site } } } } } },
  {
    name = "pyright by command: appended to the user's",
    config = { cmd = { "/x/pyright-langserver", "--stdio" }, settings = { python = { analysis = { extraPaths = { "/mine" } } } } },
    want = { settings = { python = { analysis = { extraPaths = { "/mine", site } } } } },
  },
  { name = "basedpyright", config = { name = "basedpyright" }, want = { settings = { basedpyright = { analysis = { extraPaths = { site } } } } } },
  { name = "pylsp's jedi", config = { name = "pylsp" }, want = { settings = { pylsp = { plugins = { jedi = { extra_paths = { site } } } } } } },
  {
    name = "jedi-language-server's init_options",
    config = { cmd = { "jedi-language-server" } },
    want = { init_options = { workspace = { extraPaths = { site } } } },
  },
  {
    name = "already the user's: untouched, and never removed",
    config = { name = "pyright", settings = { python = { analysis = { extraPaths = { site } } } } },
    want = { settings = { python = { analysis = { extraPaths = { site } } } } },
  },
  { name = "another server: untouched", config = { name = "lua_ls", settings = {} }, want = { settings = {} } },
}
for _, c in ipairs(python_cases) do
  check("python_settings: " .. c.name, function()
    local got = torchlsp.python_settings(vim.deepcopy(c.config), site)
    eq(got.settings, c.want.settings, "settings")
    eq(got.init_options, c.want.init_options, "init_options")
  end)
end

check("active_site_path: only the active target's site goes to a Python server", function()
  local gpu, cpu = "/c/site/gpu-1", "/c/site/cpu-2"
  for _, c in ipairs({
    { name = "the active target's site", site = { target = "gpu", path = gpu }, active = "gpu", want = gpu },
    { name = "no active target known yet: the server's word", site = { target = "gpu", path = gpu }, want = gpu },
    { name = "switched away, or a late site of the old target: out", site = { target = "gpu", path = gpu }, active = "cpu", want = "" },
    { name = "the new target's site, no site yet", site = { target = "cpu", path = "" }, active = "cpu", want = "" },
    { name = "the new target's site", site = { target = "cpu", path = cpu }, active = "cpu", want = cpu },
    { name = "a server that names no target", site = { path = gpu }, active = "cpu", want = gpu },
    { name = "nothing announced", site = nil, active = "gpu", want = "" },
    { name = "a path that is not a string", site = { target = "gpu", path = 3 }, active = "gpu", want = "" },
  }) do
    eq(torchlsp.active_site_path(c.site, c.active), c.want, c.name)
  end
end)

check("python_settings: a new site replaces exactly the entry it added", function()
  local cfg = torchlsp.python_settings({ name = "pyright", settings = { python = { analysis = { extraPaths = { "/mine" } } } } }, "/s1")
  eq(cfg.settings.python.analysis.extraPaths, { "/mine", "/s1" }, "first")
  table.insert(cfg.settings.python.analysis.extraPaths, "/later")
  torchlsp.python_settings(cfg, "/s2")
  eq(cfg.settings.python.analysis.extraPaths, { "/mine", "/later", "/s2" }, "second")
  torchlsp.python_settings(cfg, "")
  eq(cfg.settings.python.analysis.extraPaths, { "/mine", "/later" }, "removed")
  torchlsp.python_settings(cfg, "")
  eq(cfg.settings.python.analysis.extraPaths, { "/mine", "/later" }, "removing twice")
end)

check("python_settings: on_init runs the user's too", function()
  local called = false
  local cfg = torchlsp.python_settings({ name = "pyright", on_init = function()
    called = true
  end }, "/s")
  cfg.on_init({ config = cfg, name = "pyright", notify = function() end }, {})
  assert(called, "the user's on_init did not run")
end)

check("keymaps: K is hover on attach; a map you made stays; keymaps = false sets none", function()
  assert(torchlsp.setup({ cmd = { "/bin/true" } }))
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_call(buf, function()
    vim.keymap.set("n", "gd", "<cmd>echo 'mine'<cr>", { buffer = buf })
  end)
  torchlsp.set_keymaps(buf)
  local k = vim.api.nvim_buf_call(buf, function()
    return vim.fn.maparg("K", "n", false, true)
  end)
  eq(k.buffer, 1, "K is buffer-local")
  eq(k.desc, "torchlsp: hover", "K's description")
  local gd = vim.api.nvim_buf_call(buf, function()
    return vim.fn.maparg("gd", "n", false, true)
  end)
  eq(gd.rhs, "<cmd>echo 'mine'<cr>", "your gd")
  assert(torchlsp.setup({ cmd = { "/bin/true" }, keymaps = false }))
  local buf2 = vim.api.nvim_create_buf(false, true)
  torchlsp.set_keymaps(buf2)
  local k2 = vim.api.nvim_buf_call(buf2, function()
    return vim.fn.maparg("K", "n", false, true)
  end)
  eq(k2.lhs, nil, "no K with keymaps = false")
  assert(torchlsp.setup({ cmd = { "/bin/true" }, keymaps = { hover = "<leader>h" } }))
  torchlsp.set_keymaps(buf2)
  local h = vim.api.nvim_buf_call(buf2, function()
    return vim.fn.maparg("<leader>h", "n", false, true)
  end)
  eq(h.desc, "torchlsp: hover", "custom hover key")
end)

local traceback = require("torchlsp.traceback")

check("traceback: the link under a byte column", function()
  local result = { links = {
    { start = 4, ["end"] = 20, path = "/m/site/torch/a.py", fileLine = 3 },
    { start = 30, ["end"] = 40, tooltip = "from torch 2.11.0, but …" },
  } }
  eq(traceback.link_at(result, 3), nil, "before the first")
  eq(traceback.link_at(result, 4).fileLine, 3, "at its start")
  eq(traceback.link_at(result, 20), nil, "at its end")
  eq(traceback.link_at(result, 35).tooltip, "from torch 2.11.0, but …", "a link with no file")
  eq(traceback.link_at(nil, 1), nil, "no answer")
  eq(traceback.link_at({ links = { { start = "x" } } }, 1), nil, "a malformed link")
end)

check("traceback: quickfix items", function()
  local items, user = traceback.quickfix_items({
    user = 1,
    frames = {
      { targetPath = "<frozen runpy>", targetLine = 198, func = "_run_module_as_main", line = 198 },
      { targetPath = "/tmp/x/t.py", targetLine = 8, func = "worker", path = "/ws/t.py", line = 8, source = "model(x)" },
      { targetPath = "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", targetLine = 114, func = "forward", path = "/m/site/torch/nn/modules/linear.py", line = 114 },
      { targetPath = "/usr/lib/python3.11/threading.py", targetLine = 975, func = "run", line = 975 },
    },
  })
  eq(user, 2, "your frame")
  eq(items[1], { text = "<frozen runpy>:198 in _run_module_as_main: not a file", valid = 0 }, "a pseudo-file")
  eq(items[2], { filename = "/ws/t.py", lnum = 8, col = 1, text = "in worker: model(x) [/tmp/x/t.py:8]", type = "E" }, "your frame")
  eq(items[3].filename, "/m/site/torch/nn/modules/linear.py", "torch's frame")
  eq(items[3].text, "in forward: [/usr/lib/python3/dist-packages/torch/nn/modules/linear.py:114]", "torch's frame's text")
  eq(items[3].type, "I", "torch's frame is information")
  eq(items[4], { text = "/usr/lib/python3.11/threading.py:975 in run: not mapped", valid = 0 }, "unmapped")
  eq(#traceback.quickfix_items(nil), 0, "no answer")
end)

check("capabilities announce torchlsp's notifications and keep the user's", function()
  local caps = torchlsp.client_capabilities({ experimental = { other = 1 }, window = { workDoneProgress = true } })
  eq(caps.experimental, { other = 1, torchlsp = { notifications = { "torchlsp/status", "torchlsp/site" } } }, "experimental")
  eq(caps.window, { workDoneProgress = true }, "window")
  local default = torchlsp.client_capabilities(nil)
  eq(default.experimental.torchlsp.notifications, { "torchlsp/status", "torchlsp/site" }, "with Neovim's own")
  assert(default.textDocument ~= nil, "Neovim's capabilities lost")
end)

io.stdout:write(("%d passed, %d failed\n"):format(passed, failed))
vim.cmd(failed == 0 and "qall!" or "cquit! 1")
