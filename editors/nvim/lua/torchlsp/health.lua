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

-- The buffer :checkhealth was run from: it opens its report in a new tab,
-- so that is the current one's alternate, or one shown in the tab before.
local function source_buffer(torchlsp)
  local candidates = { vim.api.nvim_get_current_buf(), vim.fn.bufnr("#") }
  local prev = vim.fn.tabpagenr("#")
  if prev > 0 then
    vim.list_extend(candidates, vim.fn.tabpagebuflist(prev))
  end
  for _, b in ipairs(candidates) do
    if b > 0 and vim.api.nvim_buf_is_valid(b) and torchlsp.get_client(b) then
      return b
    end
  end
  for _, b in ipairs(candidates) do
    if b > 0 and vim.api.nvim_buf_is_valid(b) and vim.bo[b].buftype == "" and vim.api.nvim_buf_get_name(b) ~= "" then
      return b
    end
  end
  return vim.api.nvim_get_current_buf()
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
    if config.default_target then
      ok("configuration is valid; default target from setup(): " .. config.default_target)
    else
      ok("configuration is valid; no default target in setup(): torchlsp.toml, config.toml or local decides")
    end
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
  if config.keymaps then
    local maps = {}
    for action, lhs in pairs(config.keymaps) do
      if type(lhs) == "string" and lhs ~= "" then
        table.insert(maps, ("%s %s"):format(lhs, action))
      end
    end
    table.sort(maps)
    info("buffer keymaps on attach: " .. (#maps > 0 and table.concat(maps, ", ") or "none"))
  end
  info("mirror (read-only, attached to the workspace's server): " .. torchlsp.cache_dir())

  start("torchlsp: workspace")
  local buf = source_buffer(torchlsp)
  local client = torchlsp.get_client(buf)
  local root = client and client.config.root_dir
  if not root then
    local name = vim.api.nvim_buf_get_name(buf)
    root = name ~= "" and torchlsp.find_root(name, config.root_markers) or vim.fn.getcwd()
  end
  info("workspace root: " .. root)
  local file = torchlsp.workspace_file(root)
  if file.trust == "absent" then
    info("no " .. file.path)
  elseif file.trust == "trusted" then
    ok(file.path .. " is trusted")
    for _, line in ipairs(torchlsp.trust_summary(file.content)) do
      info("  " .. line)
    end
  else
    warn(
      ("%s is %s: its targets are ignored"):format(file.path, file.trust == "changed" and "changed since you trusted it" or "not trusted"),
      { "Review it, then run :TorchlspTrust (or `torchlsp trust " .. root .. "`)" }
    )
    for _, line in ipairs(torchlsp.trust_summary(file.content)) do
      info("  would run " .. line)
    end
  end
  if client then
    -- Asked of the server: it merges config.toml, a trusted torchlsp.toml
    -- and the editor's settings.
    local res = client.request_sync("workspace/executeCommand", { command = "torchlsp.selectTarget", arguments = {} }, 5000, buf)
    local result = res and res.result
    if type(result) == "table" and type(result.default) == "string" then
      ok(("active target: %s (targets: %s)"):format(result.default, table.concat(result.targets or {}, ", ")))
    else
      local s = torchlsp.status(buf)
      warn("the server did not list its targets; last status: " .. vim.inspect(s and s.status))
    end
    local site = torchlsp.sites()[client.id]
    if site and site.path and site.path ~= "" then
      info(("site of target %s, given to the Python servers: %s"):format(site.target or "?", site.path))
    end
  else
    info("no torchlsp server on this buffer: the active target is known once one runs")
  end

  start("torchlsp: server binary")
  local bin = config.cmd[1]
  local path, searched = torchlsp.find_binary(bin)
  if not path then
    error(("%q is not an executable on PATH%s"):format(bin, #searched > 0 and (" nor in " .. table.concat(searched, ", ")) or ""), {
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
