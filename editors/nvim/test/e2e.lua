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

local bufnr, client, compile_pos

local setup_ok = check("setup and attach", function()
  assert(vim.fn.executable(bin) == 1, "server binary not executable: " .. bin)
  assert(vim.fn.filereadable(ws .. "/train.py") == 1, "fixture has no train.py: " .. ws)
  assert(
    torchlsp.setup({
      cmd = { bin, "serve", "--stdio" },
      targets = {
        fixture = { python = python, env = { PYTHONPATH = pythonpath }, packages = { "torch" } },
        -- The interpreter's own torch: Debian's 1.13 has no torch.compile,
        -- so the repro runs its stand-in backend and reports in full.
        debian = { python = python, packages = { "torch" } },
      },
      default_target = "fixture",
      log_level = "debug",
    }),
    "setup rejected the configuration"
  )
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

check(":TorchlspRepro debian shows progress and opens the report in a split", function()
  local code_win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(code_win, { compile_pos.line + 1, compile_pos.character })
  vim.cmd("TorchlspRepro debian")
  local shown = vim.wait(ready_timeout_ms, function()
    return #windows_showing("/report%.md$") > 0
  end, 200)
  assert(shown, "no report.md window; windows: " .. vim.inspect(vim.tbl_map(function(w)
    return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w))
  end, vim.api.nvim_list_wins())))
  local report = windows_showing("/report%.md$")
  assert(#report == 1, ("the report shows in %d windows, want 1"):format(#report))
  local name = vim.api.nvim_buf_get_name(report[1])
  assert(name:find(ws .. "/.torchlsp/repros/", 1, true), "report outside the workspace: " .. name)
  local text = table.concat(vim.api.nvim_buf_get_lines(report[1], 0, -1, false), "\n")
  assert(text:find("repro on `debian`", 1, true), "report is not debian's: " .. text:sub(1, 300))
  assert(text:find("AssertionError", 1, true), "report shows no AssertionError: " .. text:sub(1, 600))
  assert(vim.api.nvim_win_is_valid(code_win), "the code window was replaced")
  assert(vim.api.nvim_win_get_buf(code_win) == bufnr, "the code window no longer shows train.py")
  -- The report is in a split and no scratch copy of it was opened too.
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

finish()
