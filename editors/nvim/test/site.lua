-- End-to-end test of the site wiring: the plugin puts the active target's
-- site into the settings of the user's pyright (started by Neovim from
-- npm), which must then resolve torch.compile into that site; a target
-- change takes out exactly that entry, and a site whose build ends after a
-- switch to another target never reaches pyright. Run (Neovim 0.7+):
--
--   TORCHLSP_BIN=bin/torchlsp PYRIGHT_DIR=/var/cache/torchlsp-pyright \
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile editors/nvim/test/site.lua'
--
-- A torchlsp that lists the torchlsp.site command answers itself (its
-- site is the fixture target's mirror); an older one is replaced by
-- editors/e2e/site_server.py, which speaks the same contract with the
-- fixture site as the site. TORCHLSP_CAPTURE_DIR, when set, receives the
-- settings pyright was given, as JSON.

local function env(name, default)
  local v = os.getenv(name)
  return (v == nil or v == "") and default or v
end

local function abs(p)
  return (vim.fn.fnamemodify(p, ":p"):gsub("/$", ""))
end

local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local repo = vim.fn.fnamemodify(here, ":h:h:h")
local bin = abs(env("TORCHLSP_BIN", repo .. "/bin/torchlsp"))
-- pyright's own script, run by node: node_modules/.bin/pyright-langserver
-- may be basedpyright's, when both are installed under one prefix.
local pyright = env("PYRIGHT_DIR", "/var/cache/torchlsp-pyright") .. "/node_modules/pyright/langserver.index.js"
local python = env("TORCHLSP_PYTHON", "/usr/bin/python3")
local pythonpath = abs(env("TORCHLSP_PYTHONPATH", repo .. "/editors/testdata/site"))
local fixture_ws = abs(env("TORCHLSP_FIXTURE_WS", repo .. "/editors/testdata/workspace"))
local capture_dir = env("TORCHLSP_CAPTURE_DIR", "")
local ready_ms = tonumber(env("TORCHLSP_READY_TIMEOUT", "120")) * 1000

local ws = vim.fn.tempname() .. "-site-ws"
vim.fn.mkdir(ws, "p")
for _, f in ipairs(vim.fn.readdir(fixture_ws)) do
  vim.fn.writefile(vim.fn.readfile(fixture_ws .. "/" .. f, "b"), ws .. "/" .. f, "b")
end
ws = abs(vim.fn.resolve(ws))

-- The slow target's interpreter waits, while a hold file is in its gate
-- directory, until a release file is: whatever the target's site build
-- needs from it waits too. Same interpreter and torch as fixture otherwise.
local gate = vim.fn.tempname() .. "-slow-gate"
vim.fn.mkdir(gate, "p")
local slow_python = gate .. "/python3"
vim.fn.writefile({
  "#!/bin/sh",
  "gate=" .. vim.fn.shellescape(gate),
  'if [ -e "$gate/hold" ]; then',
  '  : > "$gate/arrived"',
  '  while [ ! -e "$gate/release" ]; do sleep 0.1; done',
  "fi",
  "exec " .. vim.fn.shellescape(python) .. ' "$@"',
}, slow_python)
vim.fn.setfperm(slow_python, "rwxr-xr-x")

local passed, failed = 0, 0
local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end
local function check(name, fn)
  local ok, err = pcall(fn)
  if ok then
    passed = passed + 1
    out(("ok %d - %s"):format(passed + failed, name))
  else
    failed = failed + 1
    out(("not ok %d - %s: %s"):format(passed + failed, name, tostring(err):gsub("\n", " | ")))
  end
  return ok
end
local function finish()
  for _, c in pairs(vim.lsp.get_active_clients()) do
    c.stop()
  end
  vim.wait(3000, function()
    return #vim.lsp.get_active_clients() == 0
  end, 50)
  vim.fn.delete(ws, "rf")
  vim.fn.writefile({}, gate .. "/release")
  vim.fn.delete(gate, "rf")
  out(("%d passed, %d failed"):format(passed, failed))
  vim.cmd(failed == 0 and "qall!" or "cquit! 1")
end

vim.cmd("filetype on")
local torchlsp = require("torchlsp")
local own = "/home/user/own/stubs" -- an extra path the user set: it must stay
local bufnr, tclient, site, real_server

local function targets()
  return {
    fixture = { python = python, env = { PYTHONPATH = pythonpath }, packages = { "torch" } },
    debian = { python = python, packages = { "torch" } },
    slow = { python = slow_python, env = { PYTHONPATH = pythonpath }, packages = { "torch" } },
  }
end

-- Whether a site path is the named target's: sites live at
-- <cache>/site/<target>-<identity>.
local function site_of(target, path)
  return type(path) == "string" and vim.fn.fnamemodify(path, ":t"):sub(1, #target + 1) == target .. "-"
end

-- What the language servers wrote to stderr and the log (Neovim's LSP log),
-- for the message of a wait that timed out.
local function log_tail()
  local ok, lines = pcall(vim.fn.readfile, vim.lsp.get_log_path())
  if not ok then
    return "(no LSP log)"
  end
  return "\n--- " .. vim.lsp.get_log_path() .. " (end) ---\n" .. table.concat(lines, "\n"):sub(-6000)
end

-- Waits until cond() holds; fails saying what it waited for.
local function wait_for(what, cond, timeout)
  timeout = timeout or ready_ms
  if not vim.wait(timeout, cond, 50) then
    local detail = type(what) == "function" and what() or what
    error(("waited %d ms for %s%s"):format(timeout, detail, log_tail()), 2)
  end
end

-- The torchlsp servers' window/logMessage lines.
local server_log = {}
vim.lsp.handlers["window/logMessage"] = function(_, result)
  if result and result.message then
    table.insert(server_log, result.message)
  end
end

-- What each pyright client did that the test waits on, by client id: the
-- settings it was sent or pulled, and its diagnostics.
local events = {}
local function record(id, e)
  events[id] = events[id] or {}
  table.insert(events[id], e)
end
local function recording(config)
  config.handlers = config.handlers or {}
  config.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, hconfig)
    record(ctx.client_id, { kind = "diagnostics", uri = result and result.uri, diagnostics = result and result.diagnostics })
    return vim.lsp.handlers["textDocument/publishDiagnostics"](err, result, ctx, hconfig)
  end
  config.handlers["workspace/configuration"] = function(err, result, ctx, hconfig)
    local answer = vim.lsp.handlers["workspace/configuration"](err, result, ctx, hconfig)
    record(ctx.client_id, { kind = "configuration", answer = vim.fn.json_encode(answer) })
    return answer
  end
  return config
end

local function start_torchlsp(cmd)
  assert(torchlsp.setup({ cmd = cmd, targets = targets(), default_target = "fixture" }), "setup refused")
  local c
  assert(vim.wait(20000, function()
    c = torchlsp.get_client(bufnr)
    return c ~= nil and c.server_capabilities ~= nil and next(c.server_capabilities) ~= nil
  end, 50), "no torchlsp client on train.py")
  return c
end

local function commands_of(c)
  local p = c.server_capabilities.executeCommandProvider
  return p and p.commands or {}
end

local function extra_paths(c)
  local s = c.config.settings
  return s and s.python and s.python.analysis and s.python.analysis.extraPaths
end

local function compile_position()
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local s = line:find("torch.compile(", 1, true)
    if s then
      return { line = i - 1, character = s + #"torch." - 1 }
    end
  end
  error("no torch.compile( in train.py")
end

-- Asks pyright for the definition of torch.compile once it has analysed
-- train.py with the settings it holds now: once it published diagnostics
-- of the file after the last settings it was sent or pulled, which must
-- hold `site` (nil: whatever they hold). Returns the locations and those
-- diagnostics.
local function pyright_definition(c, site)
  local uri = vim.uri_from_bufnr(bufnr)
  local published
  wait_for(function()
    return ("pyright's diagnostics of train.py after it read settings with %s; its events: %s"):format(
      site or "anything",
      vim.inspect(events[c.id])
    )
  end, function()
    published = nil
    local pulled = site == nil
    for _, e in ipairs(events[c.id] or {}) do
      if e.kind == "configuration" then
        pulled = site == nil or e.answer:find(vim.fn.json_encode(site), 1, true) ~= nil
      elseif e.kind == "diagnostics" and e.uri == uri and pulled then
        published = e
      end
    end
    return published ~= nil
  end)
  local params = { textDocument = { uri = uri }, position = compile_position() }
  local res = c.request_sync("textDocument/definition", params, 30000, bufnr)
  local r = res and res.result
  return (type(r) == "table" and (r.uri and { r } or r)) or {}, published.diagnostics
end

local function start_pyright(config)
  local id = vim.lsp.start_client(recording(config))
  assert(id, "pyright did not start")
  -- Settings pushed to it (Neovim 0.7, and the plugin, send them in
  -- workspace/didChangeConfiguration) count as read once sent.
  local client = vim.lsp.get_client_by_id(id)
  local notify = client.notify
  client.notify = function(method, params)
    if method == "workspace/didChangeConfiguration" then
      record(id, { kind = "configuration", answer = vim.fn.json_encode(params) })
    end
    return notify(method, params)
  end
  vim.lsp.buf_attach_client(bufnr, id)
  local c
  assert(vim.wait(30000, function()
    c = vim.lsp.get_client_by_id(id)
    return c ~= nil and c.server_capabilities ~= nil and next(c.server_capabilities) ~= nil
  end, 50), "pyright did not initialize")
  return c
end

local ok = check("pyright from npm and the fixture are there", function()
  assert(vim.fn.filereadable(pyright) == 1, "pyright is not installed: no " .. pyright)
  assert(vim.fn.executable("node") == 1, "node is not on PATH")
  assert(vim.fn.executable(bin) == 1, "server binary not executable: " .. bin)
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/train.py"))
  bufnr = vim.api.nvim_get_current_buf()
end)
if not ok then
  finish()
  return
end

-- A pyright the user started on their own, before torchlsp, with no helper.
local plain
check("the user's pyright, without the site, does not resolve torch.compile", function()
  plain = start_pyright({
    name = "pyright",
    cmd = { "node", pyright, "--stdio" },
    root_dir = ws,
    workspace_folders = { { uri = vim.uri_from_fname(ws), name = "ws" } },
    settings = { python = { analysis = { extraPaths = { own } } } },
  })
  local locs = pyright_definition(plain, nil)
  for _, l in ipairs(locs) do
    local f = vim.uri_to_fname(l.uri or l.targetUri)
    assert(not f:find(pythonpath, 1, true), "resolved into the fixture without the site: " .. f)
  end
end)

check("torchlsp reports the active target's site", function()
  tclient = start_torchlsp({ bin, "serve", "--stdio" })
  real_server = vim.tbl_contains(commands_of(tclient), "torchlsp.site")
  if not real_server then
    -- This torchlsp predates the site contract: the same contract from a
    -- server of the test's own.
    out("# " .. bin .. " has no torchlsp.site: using editors/e2e/site_server.py")
    tclient.stop()
    vim.wait(5000, function()
      return vim.lsp.get_client_by_id(tclient.id) == nil
    end, 50)
    tclient = start_torchlsp({ python, repo .. "/editors/e2e/site_server.py", "fixture=" .. pythonpath, "debian=" })
  end
  -- The active target is fixture: its site, and no other's.
  wait_for(function()
    return "a torchlsp/site with fixture's site: " .. vim.inspect(torchlsp.sites())
  end, function()
    local s = torchlsp.sites()[tclient.id]
    site = s and s.target == "fixture" and s.path
    return type(site) == "string" and site ~= "" and (not real_server or site_of("fixture", site))
  end)
  assert(vim.fn.isdirectory(site .. "/torch") == 1, "no torch in the site " .. site)
end)

check("the running pyright gets the site appended to its own extra paths", function()
  assert(site, "no site")
  assert(vim.wait(10000, function()
    return vim.deep_equal(extra_paths(plain), { own, site })
  end, 50), "extraPaths: " .. vim.inspect(extra_paths(plain)))
end)

check("pyright with exactly those settings resolves torch.compile into the site", function()
  assert(site, "no site")
  if capture_dir ~= "" then
    vim.fn.mkdir(capture_dir, "p")
    vim.fn.writefile({ vim.fn.json_encode(plain.config.settings) }, capture_dir .. "/nvim-pyright-settings.json")
  end
  local locs, diagnostics = pyright_definition(plain, site)
  assert(#locs > 0, "pyright found no definition; its diagnostics of train.py: " .. vim.inspect(diagnostics) .. log_tail())
  local f = vim.uri_to_fname(locs[1].uri or locs[1].targetUri)
  -- The site's packages are links into the mirrors: the file pyright
  -- names is the site's torch/__init__.py, by whichever path.
  local want = vim.loop.fs_realpath(site .. "/torch/__init__.py")
  assert(want and vim.loop.fs_realpath(f) == want, ("definition in %s, not the site's %s/torch/__init__.py"):format(f, site))
  local range = locs[1].range or locs[1].targetSelectionRange
  local line = vim.fn.readfile(f)[range.start.line + 1] or ""
  assert(line:find("def compile", 1, true), ("line %d of %s is %q"):format(range.start.line + 1, f, line))
end)

check("a target change takes out exactly the entry that was added", function()
  assert(site, "no site")
  local old = site
  torchlsp.select_target("debian")
  -- The old site goes at once; then debian's comes.
  wait_for(function()
    return "fixture's site out of extraPaths: " .. vim.inspect(extra_paths(plain))
  end, function()
    return not vim.tbl_contains(extra_paths(plain) or {}, old)
  end, 10000)
  local s
  wait_for(function()
    return ("debian's site in extraPaths: %s; torchlsp/site %s"):format(vim.inspect(extra_paths(plain)), vim.inspect(s))
  end, function()
    s = torchlsp.sites()[tclient.id]
    local p = extra_paths(plain) or {}
    return #p == 2 and p[1] == own and s.target == "debian" and p[2] == s.path and (not real_server or site_of("debian", p[2]))
  end)
  torchlsp.select_target("fixture")
  wait_for(function()
    return "fixture's site back in extraPaths: " .. vim.inspect(extra_paths(plain))
  end, function()
    return vim.deep_equal(extra_paths(plain), { own, old })
  end)
end)

check("a site whose build ends after a switch to another target never reaches pyright", function()
  assert(site, "no site")
  if not real_server then
    out("# skipped: the server predates torchlsp.site")
    return
  end
  vim.fn.writefile({}, gate .. "/hold")
  torchlsp.select_target("slow")
  wait_for(function()
    return "fixture's site out of extraPaths after the switch to slow: " .. vim.inspect(extra_paths(plain))
  end, function()
    return vim.deep_equal(extra_paths(plain), { own })
  end, 10000)
  wait_for("the slow target's interpreter to start", function()
    return vim.fn.filereadable(gate .. "/arrived") == 1
  end)
  -- slow's site is being built, and waits: back to fixture.
  torchlsp.select_target("fixture")
  wait_for(function()
    return "fixture's site back in extraPaths: " .. vim.inspect(extra_paths(plain))
  end, function()
    return vim.deep_equal(extra_paths(plain), { own, site })
  end)
  vim.fn.writefile({}, gate .. "/release")
  -- slow's site is built, and the server keeps it from the editor.
  local dropped = "the site of target slow is not handed to the editor: the default target is fixture now"
  wait_for(function()
    return "the end of slow's site build (" .. dropped .. "); server log: " .. vim.inspect(server_log)
  end, function()
    for _, m in ipairs(server_log) do
      if m:find(dropped, 1, true) then
        return true
      end
    end
    return false
  end)
  -- What the plugin does about a notification is scheduled: let it run.
  vim.wait(0)
  local s = torchlsp.sites()[tclient.id]
  assert(s.target == "fixture" and s.path == site, "torchlsp/site after slow's build: " .. vim.inspect(s))
  assert(vim.deep_equal(extra_paths(plain), { own, site }), "extraPaths after slow's build: " .. vim.inspect(extra_paths(plain)))
end)

check("python_settings gives a pyright started later the site from its start", function()
  assert(site, "no site")
  plain.stop()
  vim.wait(5000, function()
    return vim.lsp.get_client_by_id(plain.id) == nil
  end, 50)
  local config = torchlsp.python_settings({
    name = "pyright",
    cmd = { "node", pyright, "--stdio" },
    root_dir = ws,
    workspace_folders = { { uri = vim.uri_from_fname(ws), name = "ws" } },
    settings = { python = { analysis = { extraPaths = { own } } } },
  })
  assert(vim.deep_equal(config.settings.python.analysis.extraPaths, { own, site }), vim.inspect(config.settings))
  local helped = start_pyright(config)
  local locs, diagnostics = pyright_definition(helped, site)
  assert(#locs > 0, "pyright found no definition; its diagnostics of train.py: " .. vim.inspect(diagnostics) .. log_tail())
  local f = vim.uri_to_fname(locs[1].uri or locs[1].targetUri)
  assert(vim.loop.fs_realpath(f) == vim.loop.fs_realpath(site .. "/torch/__init__.py"), "definition in " .. f)
end)

finish()
