-- :checkhealth torchlsp. Uses vim.health on Neovim 0.8+ (start/ok/... on
-- 0.10+, report_* before) and the health#report_* functions on 0.7.
local M = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return h.start, h.ok, h.warn, h.error, h.info
  end
  if h and h.report_start then
    return h.report_start, h.report_ok, h.report_warn, h.report_error, h.report_info
  end
  local fn = vim.fn
  return function(msg)
    fn["health#report_start"](msg)
  end, function(msg)
    fn["health#report_ok"](msg)
  end, function(msg, advice)
    fn["health#report_warn"](msg, advice or {})
  end, function(msg, advice)
    fn["health#report_error"](msg, advice or {})
  end, function(msg)
    fn["health#report_info"](msg)
  end
end

function M.check()
  local start, ok, warn, error, info = reporter()
  local torchlsp = require("torchlsp")

  start("torchlsp: Neovim")
  if vim.fn.has("nvim-0.7") == 1 then
    ok("Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. " has the built-in LSP client")
  else
    error("Neovim 0.7 or newer is required")
  end
  if not vim.lsp.start then
    info("Neovim 0.7: servers start through vim.lsp.start_client")
  end

  start("torchlsp: configuration")
  local config = torchlsp.config()
  if not config then
    warn("setup() has not been called", { "Add require('torchlsp').setup({}) to your init.lua" })
    return
  end
  local problems = torchlsp.validate(config)
  if #problems == 0 then
    ok("configuration is valid; default target: " .. config.default_target)
  end
  for _, p in ipairs(problems) do
    error(p)
  end
  for _, name in ipairs(torchlsp.target_names()) do
    local t = config.targets[name]
    if t then
      local via = {}
      for _, hop in ipairs(t.jump or {}) do
        table.insert(via, hop)
      end
      if t.ssh then
        table.insert(via, t.ssh)
      end
      if t.exec then
        table.insert(via, table.concat(t.exec, " "))
      end
      table.insert(via, t.python)
      info(("target %s: %s"):format(name, table.concat(via, " -> ")))
    end
  end

  start("torchlsp: server binary")
  local bin = config.cmd[1]
  local path = vim.fn.exepath(bin)
  if path == "" then
    error(("%q is not an executable on PATH"):format(bin), {
      "go install github.com/torchlsp/torchlsp/cmd/torchlsp@latest",
      "or: setup{ cmd = { '/path/to/torchlsp', 'serve', '--stdio' } }",
    })
  else
    ok("found " .. path)
  end

  start("torchlsp: running servers")
  local any = false
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == "torchlsp" then
      any = true
      local bufs = vim.lsp.get_buffers_by_client_id and vim.lsp.get_buffers_by_client_id(client.id) or {}
      local line = torchlsp.statusline(bufs[1]) or ""
      info(("client %d, root %s: %s"):format(client.id, client.config.root_dir or "?", line ~= "" and line or "no status yet"))
    end
  end
  if not any then
    info("no torchlsp server is running; open a Python file to start one")
  end
end

return M
