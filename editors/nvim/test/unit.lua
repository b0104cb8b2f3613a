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
    name = "defaults",
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
  { name = "undefined default", config = { cmd = { "torchlsp" }, targets = {}, default_target = "nope" }, want = 1 },
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

io.stdout:write(("%d passed, %d failed\n"):format(passed, failed))
vim.cmd(failed == 0 and "qall!" or "cquit! 1")
