-- End-to-end test: the real torchlsp server started through the plugin in a
-- headless Neovim, on a fixture workspace. Run (Neovim 0.7+):
--
--   TORCHLSP_BIN=bin/torchlsp TORCHLSP_FIXTURE_WS=editors/testdata/workspace \
--   TORCHLSP_PYTHON=/usr/bin/python3 TORCHLSP_PYTHONPATH=editors/testdata/site \
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile editors/nvim/test/e2e.lua'
--
-- Prints one "ok"/"not ok" line per check and "N passed, N failed" last;
-- exits non-zero when a check fails.

local function env(name, default)
  local v = os.getenv(name)
  if v == nil or v == "" then
    return default
  end
  return v
end

local function abs(p)
  return vim.fn.fnamemodify(p, ":p"):gsub("/$", "")
end

local bin = abs(env("TORCHLSP_BIN", "bin/torchlsp"))
local fixture_ws = abs(env("TORCHLSP_FIXTURE_WS", "editors/testdata/workspace"))
-- Work on a copy: repro runs write their reports under the workspace.
local ws = vim.fn.tempname() .. "-workspace"
vim.fn.mkdir(ws, "p")
for _, f in ipairs(vim.fn.readdir(fixture_ws)) do
  vim.fn.writefile(vim.fn.readfile(fixture_ws .. "/" .. f, "b"), ws .. "/" .. f, "b")
end
ws = abs(vim.fn.resolve(ws))
-- Trust records of this run only: the server reads them from here too.
local state_home = vim.fn.tempname() .. "-state"
local python = env("TORCHLSP_PYTHON", "/usr/bin/python3")
local pythonpath = abs(env("TORCHLSP_PYTHONPATH", "editors/testdata/site"))
-- Seconds to wait for the server's first answers (it mirrors and indexes first).
local ready_timeout_ms = tonumber(env("TORCHLSP_READY_TIMEOUT", "120")) * 1000

local passed, failed = 0, 0
local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

-- check runs fn; fn returns nothing on success or raises with a reason.
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
  vim.fn.delete(ws, "rf")
  vim.fn.delete(state_home, "rf")
  out(("%d passed, %d failed"):format(passed, failed))
  vim.cmd(failed == 0 and "qall!" or "cquit! 1")
end

-- Progress the server reports, by title, to check the repro shows it.
local progress_titles = {}
local progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  if result and result.value and result.value.title then
    progress_titles[result.value.title] = true
  end
  if progress then
    return progress(err, result, ctx, config)
  end
end

-- Raw publishDiagnostics, kept to send back as codeAction context.
local published = {}
local publish = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  if result then
    published[result.uri] = result.diagnostics
  end
  return publish(err, result, ctx, config)
end

vim.cmd("filetype on")
local torchlsp = require("torchlsp")

local bufnr, client, compile_pos, eq_file

-- The fixture target lives in the workspace's torchlsp.toml, which starts
-- untrusted; the plugin sets no default target, so once the file is
-- trusted its default (fixture) answers.
vim.fn.mkdir(state_home, "p")
vim.env.XDG_STATE_HOME = state_home
vim.fn.writefile({
  'default = "fixture"',
  "",
  "[targets.fixture]",
  ("python = %q"):format(python),
  ('env = { PYTHONPATH = %q }'):format(pythonpath),
  'packages = ["torch"]',
}, ws .. "/torchlsp.toml")

local function torchlsp_clients()
  local out = {}
  for _, c in pairs(vim.lsp.get_active_clients()) do
    if c.name == "torchlsp" then
      table.insert(out, c)
    end
  end
  return out
end

local function wait_status(target, ms)
  local last
  local ok = vim.wait(ms, function()
    local s = torchlsp.status(bufnr)
    last = s
    return s ~= nil and s.target == target and s.status ~= nil and s.status.target == target
  end, 100)
  assert(ok, ("status never showed target %s; last: %s"):format(target, vim.inspect(last)))
end

local setup_ok = check("setup and attach; no default target is sent", function()
  assert(vim.fn.executable(bin) == 1, "server binary not executable: " .. bin)
  assert(vim.fn.filereadable(ws .. "/train.py") == 1, "fixture has no train.py: " .. ws)
  assert(
    torchlsp.setup({
      cmd = { bin, "serve", "--stdio" },
      targets = {
        -- The interpreter's own torch: Debian's 1.13 has no torch.compile,
        -- so the repro runs its stand-in backend and reports in full.
        debian = { python = python, packages = { "torch" } },
      },
      log_level = "debug",
    }),
    "setup rejected the configuration"
  )
  assert(torchlsp.server_settings().defaultTarget == nil, "setup sent a default target")
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/train.py"))
  bufnr = vim.api.nvim_get_current_buf()
  assert(vim.bo[bufnr].filetype == "python", "filetype is " .. vim.bo[bufnr].filetype)
  local attached = vim.wait(15000, function()
    client = torchlsp.get_client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and next(client.server_capabilities) ~= nil
  end, 50)
  assert(attached, "no initialized torchlsp client attached within 15 s")
  assert(client.config.root_dir == ws, ("root %s, want %s"):format(tostring(client.config.root_dir), ws))
end)

if not setup_ok then
  finish()
  return
end

check("an untrusted torchlsp.toml is ignored: local answers", function()
  wait_status("local", 30000)
  eq_file = torchlsp.workspace_file(ws)
  assert(eq_file.trust == "untrusted", "trust " .. eq_file.trust)
end)

check(":TorchlspTrust! trusts the file and the running server takes its default", function()
  local first = client.id
  local result
  torchlsp.trust({ yes = true, on_done = function(ok, msg)
    result = { ok = ok, msg = msg }
  end })
  assert(vim.wait(20000, function()
    return result ~= nil
  end, 50), "trust did not finish")
  assert(result.ok, "trust failed: " .. result.msg)
  assert(torchlsp.workspace_file(ws).trust == "trusted", "not trusted after :TorchlspTrust")
  wait_status("fixture", 30000)
  local clients = torchlsp_clients()
  assert(#clients == 1 and clients[1].id == first, ("clients after trust: %d (first %d, now %d)"):format(#clients, first, clients[1] and clients[1].id or -1))
end)

check("the target picker lists the targets of every layer", function()
  local names
  torchlsp.refresh_targets(client, function(n)
    names = n
  end)
  assert(vim.wait(10000, function()
    return names ~= nil
  end, 50), "no target listing")
  for _, want in ipairs({ "local", "debian", "fixture" }) do
    assert(vim.tbl_contains(names, want), ("%s missing from %s"):format(want, table.concat(names, ", ")))
  end
  assert(vim.tbl_contains(vim.fn.getcompletion("TorchlspTarget ", "cmdline"), "fixture"), "completion lacks fixture")
end)

check(":checkhealth torchlsp reports the workspace file, its trust and the active target", function()
  local code_win = vim.api.nvim_get_current_win()
  vim.cmd("checkhealth torchlsp")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout!")
  if vim.api.nvim_win_is_valid(code_win) then
    vim.api.nvim_set_current_win(code_win)
  end
  vim.api.nvim_set_current_buf(bufnr)
  assert(text:find(ws .. "/torchlsp.toml is trusted", 1, true), "no trusted file in: " .. text)
  assert(text:find("active target: fixture", 1, true), "no active target in: " .. text)
  assert(text:find("fixture: env PYTHONPATH=… " .. python, 1, true), "no command line in: " .. text)
end)

-- Position of "compile" in "torch.compile(", in LSP (UTF-16) units.
check("fixture has torch.compile", function()
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i, line in ipairs(lines) do
    local s = line:find("torch.compile(", 1, true)
    if s then
      local byte_col = s + #"torch." - 1
      compile_pos = { line = i - 1, character = vim.str_utfindex(line, byte_col) }
      return
    end
  end
  error("no torch.compile( in train.py")
end)

local function position_params()
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = compile_pos }
end

-- request sends one request and returns the torchlsp client's result.
local function request(method, params, timeout)
  local results, err = vim.lsp.buf_request_sync(bufnr, method, params, timeout or 10000)
  if not results then
    error(method .. ": " .. tostring(err))
  end
  local r = results[client.id]
  if r == nil then
    error(method .. ": no answer from torchlsp")
  end
  if r.err then
    error(method .. ": " .. (r.err.message or vim.inspect(r.err)))
  end
  return r.result
end

local function hover_text(result)
  if not result or result == vim.NIL then
    return ""
  end
  local c = result.contents
  if type(c) == "string" then
    return c
  end
  if c.value then
    return c.value
  end
  local parts = {}
  for _, item in ipairs(c) do
    table.insert(parts, type(item) == "string" and item or item.value)
  end
  return table.concat(parts, "\n")
end

check("hover on torch.compile names its source", function()
  assert(compile_pos, "no position")
  local text, last_err = "", nil
  -- The first answers may come before the target is mirrored: retry, bounded.
  vim.wait(ready_timeout_ms, function()
    local ok, res = pcall(request, "textDocument/hover", position_params(), 15000)
    if ok then
      text = hover_text(res)
    else
      last_err = res
    end
    return text:find("torch/__init__%.py:%d+") ~= nil
  end, 500)
  assert(text ~= "", "no hover text; last error: " .. tostring(last_err))
  assert(text:find("compile", 1, true), "hover does not mention compile: " .. text)
  assert(text:find("torch/__init__%.py:%d+"), "hover has no torch/__init__.py:LINE: " .. text)
end)

check("definition of torch.compile is def compile in torch/__init__.py", function()
  local res = request("textDocument/definition", position_params(), 15000)
  assert(res and res ~= vim.NIL, "no definition")
  local loc = res.uri and res or res[1]
  assert(loc, "empty definition list")
  local uri = loc.uri or loc.targetUri
  local range = loc.range or loc.targetSelectionRange or loc.targetRange
  local fname = vim.uri_to_fname(uri)
  assert(fname:find("/torch/__init__%.py$"), "definition in " .. fname)
  local lines = vim.fn.readfile(fname)
  local line = lines[range.start.line + 1] or ""
  assert(line:find("def compile", 1, true), ("line %d of %s is %q"):format(range.start.line + 1, fname, line))
end)

check("K is hover on attach: a float with the target's source", function()
  local map = vim.fn.maparg("K", "n", false, true)
  assert(map.buffer == 1 and map.desc == "torchlsp: hover", "K is " .. vim.inspect(map))
  vim.api.nvim_win_set_cursor(0, { compile_pos.line + 1, compile_pos.character })
  vim.api.nvim_feedkeys("K", "x", false)
  local text = ""
  local shown = vim.wait(20000, function()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(w).relative ~= "" then
        text = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), "\n")
        if text:find("torch/__init__%.py:%d+") then
          return true
        end
      end
    end
    return false
  end, 100)
  assert(shown, "no hover float after K; last float text: " .. text)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= "" then
      vim.api.nvim_win_close(w, true)
    end
  end
end)

check("go to definition opens the mirror read-only, on the workspace's server", function()
  local code_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(code_win, { compile_pos.line + 1, compile_pos.character })
  vim.lsp.buf.definition()
  local mirror_buf
  assert(vim.wait(20000, function()
    local b = vim.api.nvim_get_current_buf()
    if b ~= bufnr and vim.api.nvim_buf_get_name(b):find("/torch/__init__%.py$") then
      mirror_buf = b
      return true
    end
    return false
  end, 50), "the definition did not open torch/__init__.py")
  local name = vim.api.nvim_buf_get_name(mirror_buf)
  assert(torchlsp.is_mirror(name), name .. " is not under " .. torchlsp.cache_dir())
  assert(vim.bo[mirror_buf].readonly, "the mirror buffer is not readonly")
  assert(not vim.bo[mirror_buf].modifiable, "the mirror buffer is modifiable")
  -- Give a second server the time it would take to start.
  vim.wait(1500, function()
    return #torchlsp_clients() > 1
  end, 50)
  local clients = torchlsp_clients()
  assert(#clients == 1, ("%d torchlsp servers run; roots: %s"):format(#clients, table.concat(vim.tbl_map(function(c)
    return c.config.root_dir
  end, clients), ", ")))
  local attached = torchlsp.get_client(mirror_buf)
  assert(attached and attached.id == client.id, "the mirror buffer is not on the workspace's client")
  vim.api.nvim_set_current_buf(bufnr)
end)

local diagnostic
check("diagnostic on reduce-overhead in threads", function()
  local uri = vim.uri_from_bufnr(bufnr)
  local found = vim.wait(ready_timeout_ms, function()
    for _, d in ipairs(published[uri] or {}) do
      local msg = d.message:lower()
      if d.range.start.line == compile_pos.line and (msg:find("cudagraph") or msg:find("thread")) then
        diagnostic = d
        return true
      end
    end
    return false
  end, 200)
  assert(found, "no cudagraph/thread diagnostic on line " .. (compile_pos.line + 1) .. "; got: " .. vim.inspect(published[uri]))
  assert(#vim.diagnostic.get(bufnr) > 0, "vim.diagnostic has none for the buffer")
end)

-- Diagnostics follow the target: switching to another target's torch
-- republishes the open buffer's diagnostics, unedited, and switching back
-- brings the old ones back.
check("diagnostics follow a target switch without an edit", function()
  assert(diagnostic, "no diagnostic")
  local uri = vim.uri_from_bufnr(bufnr)
  local function has_tl001()
    for _, d in ipairs(published[uri] or {}) do
      if tostring(d.code or ""):find("TL001") then
        return true
      end
    end
    return false
  end
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  vim.cmd("TorchlspTarget debian")
  assert(vim.wait(ready_timeout_ms, function()
    return published[uri] ~= nil and not has_tl001()
  end, 100), "TL001 still shown after switching to debian (torch 1.13): " .. vim.inspect(published[uri]))
  vim.cmd("TorchlspTarget fixture")
  assert(vim.wait(ready_timeout_ms, function()
    return has_tl001()
  end, 100), "TL001 not back after switching to fixture: " .. vim.inspect(published[uri]))
  assert(vim.api.nvim_buf_get_changedtick(bufnr) == tick, "the buffer was edited")
end)

-- Windows showing a buffer whose name matches a Lua pattern.
local function windows_showing(pattern)
  local found = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local b = vim.api.nvim_win_get_buf(win)
    if vim.api.nvim_buf_get_name(b):find(pattern) then
      table.insert(found, b)
    end
  end
  return found
end

check("code actions offer the threaded repro", function()
  assert(diagnostic, "no diagnostic")
  local res = request("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = diagnostic.range,
    context = { diagnostics = { diagnostic } },
  }, 15000)
  local titles = vim.tbl_map(function(a)
    return a.title
  end, res or {})
  for _, a in ipairs(res or {}) do
    if a.command and a.command.command == "torchlsp.repro" then
      local arg = a.command.arguments[1]
      assert(arg.uri == vim.uri_from_bufnr(bufnr), "repro uri " .. tostring(arg.uri))
      assert(arg.line == compile_pos.line, ("repro line %s, want %d"):format(tostring(arg.line), compile_pos.line))
      return
    end
  end
  error("no torchlsp.repro action among: " .. vim.inspect(titles))
end)

check(":TorchlspRepro all shows progress and opens every target's report in a split", function()
  local code_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(code_win, { compile_pos.line + 1, compile_pos.character })
  vim.cmd("TorchlspRepro all")
  local function names()
    return vim.tbl_map(function(w)
      return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))
    end, vim.api.nvim_list_wins())
  end
  local shown = vim.wait(ready_timeout_ms * 2, function()
    return #windows_showing("/report%.md$") >= 2
  end, 200)
  assert(shown, "not two report.md windows; windows: " .. vim.inspect(names()))
  local reports = windows_showing("/report%.md$")
  assert(#reports == 2, ("%d report windows, want 2: %s"):format(#reports, vim.inspect(names())))
  local by_target = {}
  for _, b in ipairs(reports) do
    local name = vim.api.nvim_buf_get_name(b)
    assert(name:find(ws .. "/.torchlsp/repros/", 1, true), "report outside the workspace: " .. name)
    local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
    local target = text:match("repro on `([^`]+)`")
    assert(target, "a report names no target: " .. text:sub(1, 200))
    by_target[target] = text
  end
  assert(by_target.debian and by_target.fixture, "reports are for: " .. table.concat(vim.tbl_keys(by_target), ", "))
  assert(by_target.debian:find("AssertionError", 1, true), "debian's report shows no AssertionError: " .. by_target.debian:sub(1, 600))
  assert(vim.api.nvim_win_is_valid(code_win), "the code window was replaced")
  assert(vim.api.nvim_win_get_buf(code_win) == bufnr, "the code window no longer shows train.py")
  -- The reports are in splits and no scratch copy of them was opened too.
  assert(#windows_showing("^torchlsp://") == 0, "the markdown was shown twice")
  local titled = false
  for title in pairs(progress_titles) do
    titled = titled or title:find("repro") ~= nil
  end
  assert(titled, "no repro progress; titles: " .. vim.inspect(vim.tbl_keys(progress_titles)))
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if w ~= code_win then
      vim.api.nvim_win_close(w, true)
    end
  end
end)

check(":TorchlspDoctor shows its table in a markdown scratch buffer", function()
  vim.cmd("TorchlspDoctor")
  local shown = vim.wait(60000, function()
    return #windows_showing("^torchlsp://torchlsp%.doctor/") > 0
  end, 100)
  assert(shown, "no doctor scratch buffer")
  local b = windows_showing("^torchlsp://torchlsp%.doctor/")[1]
  assert(vim.bo[b].filetype == "markdown", "filetype " .. vim.bo[b].filetype)
  local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
  assert(text:find("| check |", 1, true), "doctor text: " .. text)
  vim.cmd("close")
  vim.api.nvim_set_current_buf(bufnr)
end)

check("quick fix for the diagnostic turns cudagraphs off", function()
  assert(diagnostic, "no diagnostic")
  local res = request("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = diagnostic.range,
    context = { diagnostics = { diagnostic }, only = { "quickfix" } },
  }, 15000)
  assert(type(res) == "table" and #res > 0, "no code actions")
  local fix
  for _, a in ipairs(res) do
    if a.edit and (a.kind == nil or a.kind:find("^quickfix")) then
      fix = a
      break
    end
  end
  assert(fix, "no quick fix with an edit among: " .. vim.inspect(vim.tbl_map(function(a)
    return a.title
  end, res)))
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding or "utf-16")
  local line = vim.api.nvim_buf_get_lines(bufnr, compile_pos.line, compile_pos.line + 1, false)[1]
  assert(not line:find('"reduce-overhead"', 1, true), "line still uses reduce-overhead: " .. line)
  assert(line:find("no-cudagraphs", 1, true) or line:find("cudagraphs", 1, true), "fixed line: " .. line)
end)

-- A real traceback from the fixture target: the workspace's script calls
-- into the fixture torch, which fails in get_obj (cudagraph_trees.py:11).
local function fixture_traceback()
  local script = ws .. "/crash.py"
  vim.fn.writefile({ "import torch._inductor.cudagraph_trees as trees", "", "", 'trees.get_obj(trees.local, "tree_manager_containers")' }, script)
  local out = vim.fn.system({ "env", "PYTHONPATH=" .. pythonpath, python, script })
  assert(out:find("cudagraph_trees.py\", line 11, in get_obj", 1, true), "unexpected output of crash.py: " .. out)
  return out, script
end

local log_path, crash_path
check("gF on a target path in a log opens the mirror at the line; gf the file", function()
  local out
  out, crash_path = fixture_traceback()
  log_path = ws .. "/run.log"
  vim.fn.writefile(vim.split("epoch 3 step 120 loss 0.51\n" .. out, "\n", { plain = true }), log_path)
  vim.cmd("edit " .. vim.fn.fnameescape(log_path))
  local log_buf = vim.api.nvim_get_current_buf()
  local map = vim.fn.maparg("gF", "n", false, true)
  assert(map.buffer == 1, "gF is not mapped in the log: " .. vim.inspect(map))
  local row, col
  for i, line in ipairs(vim.api.nvim_buf_get_lines(log_buf, 0, -1, false)) do
    local s = line:find("/torch/_inductor/cudagraph_trees.py", 1, true)
    if s then
      row, col = i, s + 4
    end
  end
  assert(row, "no cudagraph_trees.py frame in the log")
  for _, key in ipairs({ "gF", "gf" }) do
    vim.api.nvim_set_current_buf(log_buf)
    vim.api.nvim_win_set_cursor(0, { row, col })
    vim.api.nvim_feedkeys(key, "x", false)
    local name = vim.api.nvim_buf_get_name(0)
    assert(torchlsp.is_mirror(name) and name:find("/torch/_inductor/cudagraph_trees%.py$"), key .. " opened " .. name)
    assert(vim.bo.readonly, "the mirror file is not read-only")
    local at = vim.api.nvim_win_get_cursor(0)[1]
    if key == "gF" then
      local text = vim.api.nvim_get_current_line()
      assert(at == 11 and text:find("assert torch._C._is_key_in_tls", 1, true), ("gF: line %d: %q"):format(at, text))
    end
  end
  -- The user's frame opens the workspace's file.
  vim.api.nvim_set_current_buf(log_buf)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(log_buf, 0, -1, false)) do
    local s = line:find(crash_path, 1, true)
    if s then
      vim.api.nvim_win_set_cursor(0, { i, s + 2 })
      break
    end
  end
  vim.api.nvim_feedkeys("gF", "x", false)
  assert(vim.api.nvim_buf_get_name(0) == crash_path, "gF on the script's frame opened " .. vim.api.nvim_buf_get_name(0))
  assert(vim.api.nvim_win_get_cursor(0)[1] == 4, "gF on the script's frame: line " .. vim.api.nvim_win_get_cursor(0)[1])
  -- Elsewhere gf is Neovim's own: a file name that is no target path.
  vim.api.nvim_set_current_buf(log_buf)
  vim.api.nvim_buf_set_lines(log_buf, 0, 1, false, { ws .. "/torchlsp.toml" })
  vim.api.nvim_win_set_cursor(0, { 1, 2 })
  vim.api.nvim_feedkeys("gf", "x", false)
  assert(vim.api.nvim_buf_get_name(0) == ws .. "/torchlsp.toml", "gf on a plain file name opened " .. vim.api.nvim_buf_get_name(0))
  vim.api.nvim_set_current_buf(log_buf)
  vim.cmd("edit! " .. vim.fn.fnameescape(log_path))
end)

check(":TorchlspTraceback loads the traceback into the quickfix list, and its exception onto the script", function()
  assert(log_path, "no log")
  vim.cmd("edit " .. vim.fn.fnameescape(log_path))
  vim.fn.setqflist({}, "r", { title = "", items = {} })
  vim.cmd("TorchlspTraceback")
  local ok = vim.wait(ready_timeout_ms, function()
    return vim.fn.getqflist({ title = 1 }).title:find("^torchlsp traceback") ~= nil
  end, 100)
  assert(ok, "no quickfix list; title: " .. vim.fn.getqflist({ title = 1 }).title)
  -- (Asked for with items, idx would narrow them to that one entry.)
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  qf.idx = vim.fn.getqflist({ idx = 0 }).idx
  assert(qf.title:find("AttributeError", 1, true), "title " .. qf.title)
  local mirror, user
  for i, item in ipairs(qf.items) do
    local name = item.bufnr > 0 and vim.api.nvim_buf_get_name(item.bufnr) or ""
    if name:find("/torch/_inductor/cudagraph_trees%.py$") and item.lnum == 11 then
      mirror = item
    elseif name == crash_path and item.lnum == 4 then
      user = i
    end
  end
  assert(mirror and torchlsp.is_mirror(vim.api.nvim_buf_get_name(mirror.bufnr)), "no mirror item: " .. vim.inspect(qf.items))
  assert(user and qf.idx == user, ("the list is not at your frame (%s, idx %d)"):format(tostring(user), qf.idx))
  assert(vim.api.nvim_buf_get_name(0) == crash_path and vim.api.nvim_win_get_cursor(0)[1] == 4, "your frame did not open: " .. vim.api.nvim_buf_get_name(0))
  -- The exception sits on the script's line until the file changes.
  local uri = vim.uri_from_fname(crash_path)
  assert(vim.wait(30000, function()
    for _, d in ipairs(published[uri] or {}) do
      if tostring(d.code or ""):find("TL210") and d.range.start.line == 3 and d.message:find("AttributeError") then
        return true
      end
    end
    return false
  end, 100), "no traceback diagnostic on crash.py: " .. vim.inspect(published[uri]))
  vim.cmd("cclose")
end)

check(":TorchlspTraceback REG reads a register", function()
  local out = fixture_traceback()
  vim.fn.setreg("t", out)
  vim.cmd("enew")
  vim.fn.setqflist({}, "r", { title = "", items = {} })
  vim.cmd("TorchlspTraceback t")
  assert(vim.wait(ready_timeout_ms, function()
    return #vim.fn.getqflist() > 0
  end, 100), "no quickfix items from the register")
  local found = false
  for _, item in ipairs(vim.fn.getqflist()) do
    found = found or (item.bufnr > 0 and vim.api.nvim_buf_get_name(item.bufnr):find("/torch/_inductor/cudagraph_trees%.py$") ~= nil and item.lnum == 11)
  end
  assert(found, "no mirror item: " .. vim.inspect(vim.fn.getqflist()))
  vim.cmd("cclose")
  vim.api.nvim_set_current_buf(bufnr)
end)

check("a CUDA-graph output kept across calls (TL011) is fixed by cloning it", function()
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/serve.py"))
  local sb = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(sb)
  local function tl011()
    for _, d in ipairs(published[uri] or {}) do
      if tostring(d.code or ""):find("TL011") then
        return d
      end
    end
  end
  local d
  assert(vim.wait(ready_timeout_ms, function()
    d = tl011()
    return d ~= nil
  end, 100), "no TL011 in serve.py: " .. vim.inspect(published[uri]))
  assert(d.message:find("overwritten by a subsequent run", 1, true), "message: " .. d.message)
  assert(d.relatedInformation and #d.relatedInformation > 0, "TL011 cites no torch line")
  local res = request("textDocument/codeAction", {
    textDocument = { uri = uri },
    range = d.range,
    context = { diagnostics = { d }, only = { "quickfix" } },
  }, 15000)
  local fix
  for _, a in ipairs(res or {}) do
    if a.edit and a.title:find("Clone", 1, true) then
      fix = a
      break
    end
  end
  assert(fix, "no clone fix among: " .. vim.inspect(vim.tbl_map(function(a)
    return a.title
  end, res or {})))
  vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding or "utf-16")
  local line = vim.api.nvim_buf_get_lines(sb, d.range.start.line, d.range.start.line + 1, false)[1]
  assert(line:find("outs.append(step(x).clone())", 1, true), "fixed line: " .. line)
  assert(vim.wait(ready_timeout_ms, function()
    return published[uri] ~= nil and tl011() == nil
  end, 100), "TL011 still shown after the fix: " .. vim.inspect(published[uri]))
end)

-- References, the call hierarchy, workspace and document symbols: from a
-- workspace file into torch, and onward inside the mirrored torch.
local cg_buf

-- qf_wait waits for the quickfix list titled like `title` (a Lua
-- pattern) and returns its items, each with its file name.
local function qf_wait(title, ms)
  local items
  local ok = vim.wait(ms or 30000, function()
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    if qf.title and qf.title:find(title) and #qf.items > 0 then
      items = qf.items
      return true
    end
    return false
  end, 100)
  assert(ok, ("no quickfix list %q; last: %s"):format(title, vim.inspect(vim.fn.getqflist({ title = 1 }))))
  for _, it in ipairs(items) do
    it.filename = vim.api.nvim_buf_get_name(it.bufnr)
  end
  return items
end

local function qf_reset()
  vim.cmd("cclose")
  vim.fn.setqflist({}, "r", { title = "", items = {} })
end

-- cursor_on puts the cursor on `word` in the first line holding `context`.
local function cursor_on(buf, context, word)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local s = line:find(context, 1, true)
    if s then
      vim.api.nvim_set_current_buf(buf)
      vim.api.nvim_win_set_cursor(0, { i, s - 1 + context:find(word, 1, true) - 1 })
      return
    end
  end
  error(("no %q in buffer %d"):format(context, buf))
end

local function files_of(items)
  local out = {}
  for _, it in ipairs(items) do
    out[vim.fn.fnamemodify(it.filename, ":t")] = (out[vim.fn.fnamemodify(it.filename, ":t")] or 0) + 1
  end
  return out
end

check("vim.lsp.buf.references from a workspace file lists the places in torch", function()
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/cudagraphs.py"))
  cg_buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(15000, function()
    local c = torchlsp.get_client(cg_buf)
    return c ~= nil and c.id == client.id
  end, 50), "cudagraphs.py is not on the workspace's client")
  qf_reset()
  cursor_on(cg_buf, "cudagraph_trees.get_container(0)", "get_container")
  vim.lsp.buf.references()
  local items = qf_wait("^References$", ready_timeout_ms)
  local files = files_of(items)
  assert(files["cudagraph_trees.py"] == 3 and files["compile_fx.py"] == 2 and files["cudagraphs.py"] == 1,
    "references by file: " .. vim.inspect(files))
  for _, it in ipairs(items) do
    if not it.filename:find("cudagraphs%.py$") then
      assert(torchlsp.is_mirror(it.filename), it.filename .. " is not in the mirror")
    end
  end
  qf_reset()
end)

check("vim.lsp.buf.incoming_calls lists the callers in torch and the workspace", function()
  cursor_on(cg_buf, "cudagraph_trees.get_container(0)", "get_container")
  vim.lsp.buf.incoming_calls()
  local items = qf_wait("call hierarchy", ready_timeout_ms)
  local callers = {}
  for _, it in ipairs(items) do
    callers[it.text] = vim.fn.fnamemodify(it.filename, ":t")
  end
  assert(callers.get_manager == "cudagraph_trees.py" and callers.cudagraphify == "compile_fx.py" and callers.fresh_start == "cudagraphs.py",
    "callers: " .. vim.inspect(callers))
  qf_reset()
end)

local trees_file
check("vim.lsp.buf.workspace_symbol finds torch's function in the mirror", function()
  vim.lsp.buf.workspace_symbol("get_obj")
  local items = qf_wait("^Symbols matching 'get_obj'$", ready_timeout_ms)
  for _, it in ipairs(items) do
    if it.filename:find("/torch/_inductor/cudagraph_trees%.py$") and it.text:find("get_obj", 1, true) then
      trees_file = it.filename
    end
  end
  assert(trees_file, "no get_obj of cudagraph_trees.py among: " .. vim.inspect(vim.tbl_map(function(it)
    return it.filename .. ": " .. it.text
  end, items)))
  assert(torchlsp.is_mirror(trees_file), trees_file .. " is not in the mirror")
  -- Jump there, as a user picks the entry.
  vim.cmd("cfirst")
  qf_reset()
end)

check("inside the mirror: document_symbol is the outline, references stay in torch", function()
  assert(trees_file, "no mirror file")
  local b = vim.fn.bufnr(trees_file)
  assert(b > 0 and vim.api.nvim_get_current_buf() == b, "cudagraph_trees.py is not the current buffer")
  assert(vim.wait(15000, function()
    local c = torchlsp.get_client(b)
    return c ~= nil and c.id == client.id
  end, 50), "the mirror buffer is not on the workspace's client")
  vim.lsp.buf.document_symbol()
  local items = qf_wait("^Symbols in ", 30000)
  local names = {}
  for _, it in ipairs(items) do
    names[#names + 1] = it.text:match("%] (.*)$") or it.text
  end
  local text = table.concat(names, ",")
  for _, want in ipairs({ "get_obj", "get_container", "get_manager", "reset_cudagraph_trees", "TreeManagerContainer", "get_tree_manager" }) do
    assert(text:find(want, 1, true), want .. " missing from the outline: " .. text)
  end
  qf_reset()
  cursor_on(b, "def get_obj(", "get_obj")
  vim.lsp.buf.references()
  items = qf_wait("^References$", 30000)
  local files = files_of(items)
  assert(files["cudagraph_trees.py"] == 4 and vim.tbl_count(files) == 1, "references of get_obj: " .. vim.inspect(files))
  qf_reset()
  -- One buffer for the one file, however it was reached.
  local same = 0
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):find("/cudagraph_trees%.py$") then
      same = same + 1
    end
  end
  assert(same == 1, ("%d buffers of cudagraph_trees.py"):format(same))
  vim.api.nvim_set_current_buf(bufnr)
end)

finish()
