-- Target paths in logs, terminals and tracebacks: gf and gF on a path the
-- target printed open the mirror (or the workspace file) the server maps
-- it to, gF at the line; :TorchlspTraceback loads a traceback from a
-- buffer, a range or a register into the quickfix list, each frame at its
-- mirrored or workspace line. The server does the mapping (torchlsp.links,
-- torchlsp.traceback): it knows the mirror, the workdir and the version.
local T = {}

local client_name = "torchlsp"
local commands = { links = "torchlsp.links", traceback = "torchlsp.traceback" }

-- How long gf waits for the server (its first answer may wait for the
-- target's torch to be mirrored).
T.links_timeout_ms = 15000

local function notify(msg, level)
  vim.notify("torchlsp: " .. msg, level or vim.log.levels.INFO)
end

-- The torchlsp client for a buffer: the one attached to it, else any
-- (a log or a terminal has none of its own).
local function client_for(plugin, bufnr)
  local c = plugin.get_client(bufnr)
  if c then
    return c
  end
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == client_name then
      return client
    end
  end
  return nil
end

--- The link of a torchlsp.links answer that covers a 0-based byte column,
-- or nil.
function T.link_at(result, col)
  if type(result) ~= "table" or type(result.links) ~= "table" then
    return nil
  end
  for _, l in ipairs(result.links) do
    if type(l) == "table" and type(l.start) == "number" and type(l["end"]) == "number" and l.start <= col and col < l["end"] then
      return l
    end
  end
  return nil
end

--- Quickfix items of a torchlsp.traceback answer: every reference in the
-- text's order, those mapped at their local file and line (the innermost
-- frame of your code as an error), the rest as text saying why not.
-- Returns the items and the 1-based index of your frame (or nil).
function T.quickfix_items(result)
  local items, user = {}, nil
  if type(result) ~= "table" or type(result.frames) ~= "table" then
    return items, user
  end
  for i, f in ipairs(result.frames) do
    local where = ("%s:%d"):format(tostring(f.targetPath), tonumber(f.targetLine) or 0)
    local fn = (type(f.func) == "string" and f.func ~= "") and (" in " .. f.func) or ""
    if type(f.path) == "string" and f.path ~= "" then
      local is_user = result.user == i - 1
      -- The list shows the local file; the text says the rest: the
      -- function, its line, and the path on the target when it differs.
      local parts = {}
      if fn ~= "" then
        table.insert(parts, fn:sub(2) .. ":")
      end
      if type(f.source) == "string" and f.source ~= "" then
        table.insert(parts, f.source)
      end
      if f.targetPath ~= f.path then
        table.insert(parts, "[" .. where .. "]")
      end
      local text = table.concat(parts, " ")
      table.insert(items, { filename = f.path, lnum = tonumber(f.line) or 1, col = 1, text = text, type = is_user and "E" or "I" })
      if is_user then
        user = #items
      end
    else
      local why = (type(f.tooltip) == "string" and f.tooltip ~= "") and f.tooltip or "not mapped"
      if type(f.targetPath) == "string" and f.targetPath:sub(1, 1) == "<" then
        why = "not a file"
      end
      table.insert(items, { text = where .. fn .. ": " .. why, valid = 0 })
    end
  end
  return items, user
end

--- Opens the file the target path under the cursor maps to: gF at its
-- line, gf at the top. Without a target path there, the built-in gf/gF.
function T.goto_target(plugin, key)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(plugin, bufnr)
  local fallback = function()
    local ok, err = pcall(vim.cmd, "normal! " .. key)
    if not ok then
      vim.api.nvim_err_writeln((tostring(err):gsub("^Vim%(normal%):", "")))
    end
  end
  if not client then
    return fallback()
  end
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local params = { command = commands.links, arguments = { { text = line } } }
  local resp = client.request_sync("workspace/executeCommand", params, T.links_timeout_ms, bufnr)
  local link = resp and not resp.err and T.link_at(resp.result, col) or nil
  if not link then
    return fallback()
  end
  if type(link.path) ~= "string" or link.path == "" then
    notify("not opened: " .. (link.tooltip or "the server does not link this path"), vim.log.levels.WARN)
    return
  end
  vim.cmd("edit " .. vim.fn.fnameescape(link.path))
  if key == "gF" then
    local last = vim.api.nvim_buf_line_count(0)
    pcall(vim.api.nvim_win_set_cursor, 0, { math.max(1, math.min(link.fileLine or 1, last)), 0 })
    vim.cmd("normal! ^")
  end
  if link.tooltip and link.tooltip ~= "" and #vim.api.nvim_list_uis() > 0 then
    vim.api.nvim_echo({ { "torchlsp: " .. link.tooltip, "Comment" } }, false, {})
  end
end

--- Maps a traceback and loads it into the quickfix list. opts.register
-- names a register to read it from; else lines opts.line1..opts.line2 of
-- the current buffer (all of it by default). The list opens, and the
-- innermost frame of your code opens in the window. on_done(items,
-- result), if given, is called once the list is set.
function T.traceback(plugin, opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local client = client_for(plugin, bufnr)
  if not client then
    notify("no torchlsp server is running: open a Python file of the workspace first", vim.log.levels.WARN)
    return false
  end
  local args
  if opts.register and opts.register ~= "" then
    args = { text = vim.fn.getreg(opts.register) }
  else
    local first = (opts.line1 or 1) - 1
    local last = (opts.line2 or vim.api.nvim_buf_line_count(bufnr)) - 1
    if plugin.get_client(bufnr) and vim.api.nvim_buf_get_name(bufnr) ~= "" then
      -- The server has the buffer: it reads the lines (and knows a repro
      -- run's folder from the file's name).
      args = { uri = vim.uri_from_bufnr(bufnr), line = first, endLine = last }
    else
      args = { text = table.concat(vim.api.nvim_buf_get_lines(bufnr, first, last + 1, false), "\n") .. "\n" }
    end
  end
  client.request("workspace/executeCommand", { command = commands.traceback, arguments = { args } }, function(err, result)
    if err then
      notify("traceback: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    local items, user = T.quickfix_items(result)
    local title = "torchlsp traceback"
    if type(result) == "table" and type(result.exception) == "string" and result.exception ~= "" then
      title = title .. ": " .. result.exception
    end
    vim.fn.setqflist({}, " ", { title = title, items = items })
    vim.cmd("copen")
    vim.cmd("wincmd p")
    if user then
      -- Your frame opens, where the server puts the exception.
      vim.cmd(("silent! cc %d"):format(user))
    end
    notify(("%d of %d references mapped"):format(type(result) == "table" and result.mapped or 0, #items))
    if opts.on_done then
      opts.on_done(items, result)
    end
  end, bufnr)
  return true
end

-- Buffers whose gf and gF look for target paths first: logs, run output,
-- text, Python and terminals.
local patterns = { "*.log", "*.out", "*.err", "*.stdout", "*.stderr", "*.txt" }

--- Sets gf and gF in a buffer, unless the buffer maps them already.
function T.set_keymaps(plugin, bufnr)
  for _, key in ipairs({ "gf", "gF" }) do
    local existing = vim.api.nvim_buf_call(bufnr, function()
      return vim.fn.maparg(key, "n", false, true)
    end)
    if type(existing) ~= "table" or existing.lhs == nil or existing.buffer ~= 1 then
      vim.keymap.set("n", key, function()
        T.goto_target(plugin, key)
      end, { buffer = bufnr, desc = "torchlsp: open the target path under the cursor in the mirror" })
    end
  end
end

--- Creates :TorchlspTraceback and the gf/gF maps (config.traceback_keymaps
-- = false leaves gf and gF alone).
function T.setup(plugin, augroup, config)
  vim.api.nvim_create_user_command("TorchlspTraceback", function(o)
    local register = o.args ~= "" and o.args or nil
    T.traceback(plugin, { register = register, line1 = o.line1, line2 = o.line2 })
  end, {
    nargs = "?",
    range = "%",
    desc = "torchlsp: load a traceback (the buffer, a range, or register ARG) into the quickfix list, mapped to the mirror",
  })
  if config.traceback_keymaps == false then
    return
  end
  local function map(args)
    T.set_keymaps(plugin, args.buf)
  end
  vim.api.nvim_create_autocmd("FileType", { group = augroup, pattern = { "python", "text", "log" }, callback = map })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, { group = augroup, pattern = patterns, callback = map })
  vim.api.nvim_create_autocmd("TermOpen", { group = augroup, callback = map })
end

return T
