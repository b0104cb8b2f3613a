-- End-to-end test of the site wiring: the plugin puts the active target's
-- site into the settings of the user's pyright (started by Neovim from
-- npm), which must then resolve torch.compile into that site; a target
-- change takes out exactly that entry. Run (Neovim 0.7+):
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
  }
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

-- Asks pyright for the definition of torch.compile until it answers with
-- one, or the analysis settled without one.
local function pyright_definition(c, want_some)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = compile_position() }
  local locs = {}
  -- A plain loop: a request inside vim.wait's condition would be sent on
  -- every event the wait processes.
  local deadline = vim.loop.now() + (want_some and 60000 or 8000)
  while vim.loop.now() < deadline do
    local res = c.request_sync("textDocument/definition", params, 30000, bufnr)
    local r = res and res.result
    locs = (type(r) == "table" and (r.uri and { r } or r)) or {}
    if want_some and #locs > 0 then
      break
    end
    vim.wait(500)
  end
  return locs
end

local function start_pyright(config)
  local id = vim.lsp.start_client(config)
  assert(id, "pyright did not start")
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
  local locs = pyright_definition(plain, false)
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
  assert(vim.wait(ready_ms, function()
    local s = torchlsp.sites()[tclient.id]
    site = s and s.path
    return type(site) == "string" and site ~= ""
  end, 100), "no torchlsp/site with a path: " .. vim.inspect(torchlsp.sites()))
  local s = torchlsp.sites()[tclient.id]
  assert(s.target == "fixture", "site of target " .. tostring(s.target))
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
  local locs = pyright_definition(plain, true)
  assert(#locs > 0, "pyright found no definition")
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
  local s
  assert(vim.wait(ready_ms, function()
    s = torchlsp.sites()[tclient.id]
    return s and s.target == "debian"
  end, 100), "no site for debian: " .. vim.inspect(torchlsp.sites()))
  -- The server may say "no site yet" first, then the new target's site.
  local want
  assert(vim.wait(ready_ms, function()
    s = torchlsp.sites()[tclient.id]
    want = { own }
    if s.path ~= "" then
      table.insert(want, s.path)
    end
    return s.target == "debian" and vim.deep_equal(extra_paths(plain), want)
  end, 100), ("extraPaths %s, want %s"):format(vim.inspect(extra_paths(plain)), vim.inspect(want)))
  assert(not vim.tbl_contains(extra_paths(plain), old), "the old site is still there")
  torchlsp.select_target("fixture")
  assert(vim.wait(ready_ms, function()
    return vim.deep_equal(extra_paths(plain), { own, old })
  end, 100), "back on fixture, extraPaths: " .. vim.inspect(extra_paths(plain)))
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
  local locs = pyright_definition(helped, true)
  assert(#locs > 0, "pyright found no definition")
  local f = vim.uri_to_fname(locs[1].uri or locs[1].targetUri)
  assert(vim.loop.fs_realpath(f) == vim.loop.fs_realpath(site .. "/torch/__init__.py"), "definition in " .. f)
end)

finish()
