-- End-to-end test on a real torch 2.6: Debian 13's python3-torch in LXC
-- container 200, entered as users enter theirs (`pct exec 200 --`), through
-- the plugin in a headless Neovim. scripts/editors-test.sh starts the
-- container (scripts/hops/lxc.sh up PREFIX trixie), asks it where its torch
-- puts things and passes the answers here; nothing of that torch is written
-- down in this file. Run (Neovim 0.7+):
--
--   TORCHLSP_BIN=bin/torchlsp TORCHLSP_TORCH26_PCT=/run/torchlsp-hops/PREFIX/bin/pct \
--   TORCHLSP_TORCH26_VERSION=… TORCHLSP_TORCH26_ROOT=… \
--   TORCHLSP_TORCH26_COMPILE_LINE=… TORCHLSP_TORCH26_ASSERT_LINE=… \
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile editors/nvim/test/torch26.lua'
--
--   TORCHLSP_TORCH26_PCT           the container's pct front end (lxc.sh up's PCT_BIN/pct)
--   TORCHLSP_TORCH26_PYTHON        the interpreter in the container; default /usr/bin/python3
--   TORCHLSP_TORCH26_VERSION       its torch.__version__
--   TORCHLSP_TORCH26_ROOT          its torch.__path__[0]
--   TORCHLSP_TORCH26_COMPILE_LINE  the line of `def compile` in torch/__init__.py
--   TORCHLSP_TORCH26_ASSERT_LINE   the line of `assert torch._C._is_key_in_tls`
--                                  in torch/_inductor/cudagraph_trees.py
--
-- The workspace is a copy of editors/testdata/torch26; the server's cache
-- is a fresh one, so the container's torch is mirrored in the test.
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

local bin = abs(env("TORCHLSP_BIN", "bin/torchlsp"))
local ct = {
  pct = env("TORCHLSP_TORCH26_PCT", ""),
  python = env("TORCHLSP_TORCH26_PYTHON", "/usr/bin/python3"),
  version = env("TORCHLSP_TORCH26_VERSION", ""),
  root = env("TORCHLSP_TORCH26_ROOT", ""),
  compile_line = tonumber(env("TORCHLSP_TORCH26_COMPILE_LINE", "")),
  assert_line = tonumber(env("TORCHLSP_TORCH26_ASSERT_LINE", "")),
}
local ready_timeout_ms = tonumber(env("TORCHLSP_READY_TIMEOUT", "120")) * 1000

-- Work on a copy, with a cache and state of this run only.
local tmp = vim.fn.tempname() .. "-torch26"
local ws = tmp .. "/workspace"
vim.fn.mkdir(ws, "p")
local fixture = abs(env("TORCHLSP_TORCH26_WS", "editors/testdata/torch26"))
for _, f in ipairs(vim.fn.readdir(fixture)) do
  vim.fn.writefile(vim.fn.readfile(fixture .. "/" .. f, "b"), ws .. "/" .. f, "b")
end
ws = abs(vim.fn.resolve(ws))
vim.env.XDG_CACHE_HOME = tmp .. "/cache"
vim.env.XDG_STATE_HOME = tmp .. "/state"
vim.env.XDG_CONFIG_HOME = tmp .. "/config"

local function finish()
  for _, c in pairs(vim.lsp.get_active_clients()) do
    c.stop()
  end
  vim.wait(5000, function()
    return #vim.lsp.get_active_clients() == 0
  end, 50)
  vim.fn.delete(tmp, "rf")
  out(("%d passed, %d failed"):format(passed, failed))
  vim.cmd(failed == 0 and "qall!" or "cquit! 1")
end

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

local setup_ok = check("the container's facts are given; setup with target ct200 (pct exec 200 --) attaches", function()
  for _, k in ipairs({ "pct", "version", "root", "compile_line", "assert_line" }) do
    assert(ct[k] ~= nil and ct[k] ~= "", ("TORCHLSP_TORCH26_%s is not set (scripts/editors-test.sh sets it from the container)"):format(k:upper()))
  end
  assert(vim.fn.executable(bin) == 1, "server binary not executable: " .. bin)
  assert(vim.fn.executable(ct.pct) == 1, "pct not executable: " .. ct.pct)
  assert(
    torchlsp.setup({
      cmd = { bin, "serve", "--stdio" },
      targets = { ct200 = { exec = { ct.pct, "exec", "200", "--" }, python = ct.python } },
      default_target = "ct200",
      log_level = "debug",
    }),
    "setup rejected the configuration"
  )
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/threaded_compile.py"))
  bufnr = vim.api.nvim_get_current_buf()
  assert(vim.wait(15000, function()
    client = torchlsp.get_client(bufnr)
    return client ~= nil and client.server_capabilities ~= nil and next(client.server_capabilities) ~= nil
  end, 50), "no initialized torchlsp client attached within 15 s")
  assert(client.config.root_dir == ws, ("root %s, want %s"):format(tostring(client.config.root_dir), ws))
  local last
  assert(vim.wait(30000, function()
    last = torchlsp.status(bufnr)
    return last ~= nil and last.target == "ct200"
  end, 100), "status never showed ct200; last: " .. vim.inspect(last))
  for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local s = line:find("torch.compile(", 1, true)
    if s then
      compile_pos = { line = i - 1, character = vim.str_utfindex(line, s + #"torch." - 1) }
      break
    end
  end
  assert(compile_pos, "no torch.compile( in threaded_compile.py")
end)

if not setup_ok then
  finish()
  return
end

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

local function position_params()
  return { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = compile_pos }
end

check("hover on torch.compile: the container's file and line, ending with its torch version", function()
  local defined = ("Defined at `%s/__init__.py:%d` on target **ct200**"):format(ct.root, ct.compile_line)
  local text, last_err = "", nil
  -- The first answers may come before the container's torch is mirrored.
  vim.wait(ready_timeout_ms, function()
    local ok, res = pcall(request, "textDocument/hover", position_params(), 15000)
    if ok and res and res ~= vim.NIL then
      local c = res.contents
      text = type(c) == "string" and c or (c.value or "")
    elseif not ok then
      last_err = res
    end
    return text:find(defined, 1, true) ~= nil
  end, 500)
  assert(text:find(defined, 1, true), ("no %q in the hover (last error %s): %s"):format(defined, tostring(last_err), text))
  local tail = "torch " .. ct.version
  local trimmed = vim.trim(text)
  assert(trimmed:sub(-#tail) == tail, ("the hover does not end with %q: %s"):format(tail, text))
end)

check("definition of torch.compile: the mirror's torch/__init__.py at the container's line", function()
  local res = request("textDocument/definition", position_params(), 15000)
  assert(res and res ~= vim.NIL, "no definition")
  local loc = res.uri and res or res[1]
  assert(loc, "empty definition list")
  local fname = vim.uri_to_fname(loc.uri or loc.targetUri)
  local range = loc.range or loc.targetSelectionRange or loc.targetRange
  assert(fname:find("/site/torch/__init__%.py$"), "definition in " .. fname)
  assert(torchlsp.is_mirror(fname), fname .. " is not under " .. torchlsp.cache_dir())
  assert(range.start.line + 1 == ct.compile_line, ("definition at line %d, want %d"):format(range.start.line + 1, ct.compile_line))
  local line = vim.fn.readfile(fname)[ct.compile_line] or ""
  assert(line:find("def compile", 1, true), ("line %d of %s is %q"):format(ct.compile_line, fname, line))
end)

check("TL001 on reduce-overhead in threads cites the container's cudagraph_trees.py line", function()
  local uri = vim.uri_from_bufnr(bufnr)
  local d
  vim.wait(ready_timeout_ms, function()
    for _, x in ipairs(published[uri] or {}) do
      if tostring(x.code or ""):find("TL001", 1, true) then
        d = x
        return true
      end
    end
    return false
  end, 200)
  assert(d, "no TL001; published: " .. vim.inspect(published[uri]))
  assert(d.range.start.line == compile_pos.line, ("TL001 on line %d, want %d"):format(d.range.start.line + 1, compile_pos.line + 1))
  local cite = "torch/_inductor/cudagraph_trees.py:" .. ct.assert_line
  assert(d.message:find(vim.pesc(cite) .. "%f[%D]"), ("the message does not cite %s: %s"):format(cite, d.message))
  assert(d.message:find("torch " .. ct.version, 1, true), "the message does not name torch " .. ct.version .. ": " .. d.message)
  -- The cite is also a place to go: the mirrored file, at that line.
  local at
  for _, r in ipairs(d.relatedInformation or {}) do
    if r.location.uri:find("/torch/_inductor/cudagraph_trees%.py$") then
      at = r.location
    end
  end
  assert(at, "no related information in cudagraph_trees.py: " .. vim.inspect(d.relatedInformation))
  assert(at.range.start.line + 1 == ct.assert_line, ("related line %d, want %d"):format(at.range.start.line + 1, ct.assert_line))
  local fname = vim.uri_to_fname(at.uri)
  assert(torchlsp.is_mirror(fname), fname .. " is not in the mirror")
  local line = vim.fn.readfile(fname)[ct.assert_line] or ""
  assert(line:find("assert torch._C._is_key_in_tls", 1, true), ("line %d of %s is %q"):format(ct.assert_line, fname, line))
end)

finish()
