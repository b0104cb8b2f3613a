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
local ws = abs(env("TORCHLSP_FIXTURE_WS", "editors/testdata/workspace"))
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
  out(("%d passed, %d failed"):format(passed, failed))
  vim.cmd(failed == 0 and "qall!" or "cquit! 1")
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
      targets = { fixture = { python = python, env = { PYTHONPATH = pythonpath }, packages = { "torch" } } },
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
