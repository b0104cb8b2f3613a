-- torchlsp: starts `torchlsp serve --stdio` for Python buffers and exposes
-- its commands, status and progress. Works on Neovim 0.7 (start_client +
-- buf_attach_client) and on 0.8+ (vim.lsp.start).
local M = {}

local defaults = {
  -- The server command; the binary is looked up on PATH unless absolute.
  cmd = { "torchlsp", "serve", "--stdio" },
  -- Targets by name, as in torchlsp.toml: { NAME = { python = ..., env = {...},
  -- packages = {...}, ssh = "user@host:port", jump = {...}, exec = {...} } }.
  targets = {},
  default_target = "local",
  log_level = "info",
  filetypes = { "python" },
  -- Searched upward from the buffer, in this order of preference.
  root_markers = { "torchlsp.toml", "pyproject.toml", ".git" },
  on_attach = nil,
  capabilities = nil,
  -- Extra environment for the server process.
  cmd_env = nil,
}

-- All mutable plugin state lives here, keyed by client id where per client.
local state = {
  config = nil,
  augroup = nil,
  clients_by_root = {}, -- 0.7 path: root_dir -> client id
  status = {}, -- client id -> torchlsp/status params
  progress = {}, -- client id -> { [token] = { title, message, percentage } }
}

local server_commands = {
  select_target = "torchlsp.selectTarget",
  repro = "torchlsp.repro",
  doctor = "torchlsp.doctor",
  open_mirror = "torchlsp.openMirror",
}

local client_name = "torchlsp"

local function notify(msg, level)
  vim.notify("torchlsp: " .. msg, level or vim.log.levels.INFO)
end

--- Returns the server's "torchlsp" settings section built from the config.
-- Empty tables become JSON objects, not arrays.
function M.server_settings(config)
  config = config or state.config or defaults
  local targets = vim.empty_dict()
  for name, t in pairs(config.targets or {}) do
    local target = { python = t.python }
    if t.env ~= nil then
      target.env = vim.tbl_isempty(t.env) and vim.empty_dict() or vim.deepcopy(t.env)
    end
    for _, key in ipairs({ "packages", "jump", "exec" }) do
      if t[key] ~= nil then
        target[key] = vim.deepcopy(t[key])
      end
    end
    target.ssh = t.ssh
    targets[name] = target
  end
  return {
    defaultTarget = config.default_target or "local",
    targets = targets,
    logLevel = config.log_level or "info",
  }
end

--- Checks a config; returns a list of problems (empty when fine).
function M.validate(config)
  local problems = {}
  if type(config.cmd) ~= "table" or type(config.cmd[1]) ~= "string" then
    table.insert(problems, "cmd must be a list such as { 'torchlsp', 'serve', '--stdio' }")
  end
  if type(config.targets) ~= "table" then
    table.insert(problems, "targets must be a table of targets by name")
  else
    for name, t in pairs(config.targets) do
      if type(t) ~= "table" then
        table.insert(problems, ("targets.%s must be a table"):format(name))
      elseif type(t.python) ~= "string" or t.python == "" then
        table.insert(problems, ("targets.%s.python must name the interpreter on the target"):format(name))
      elseif t.jump and #t.jump > 0 and not t.ssh then
        table.insert(problems, ("targets.%s.jump needs ssh"):format(name))
      end
    end
    local dt = config.default_target
    if dt ~= "local" and config.targets[dt] == nil then
      table.insert(problems, ("default_target %q is not defined in targets"):format(tostring(dt)))
    end
  end
  return problems
end

--- Finds the workspace root of a file: the nearest folder holding one of
-- the markers, trying the markers in order; else the file's own folder.
function M.find_root(fname, markers)
  markers = markers or defaults.root_markers
  local dir = vim.fn.fnamemodify(fname, ":p:h")
  for _, marker in ipairs(markers) do
    local found = vim.fn.findfile(marker, dir .. ";")
    if found == "" then
      found = vim.fn.finddir(marker, dir .. ";")
    end
    if found ~= "" then
      -- ":p" gives directories a trailing slash; drop it before taking the parent.
      local full = vim.fn.fnamemodify(found, ":p"):gsub("/$", "")
      return vim.fn.fnamemodify(full, ":h")
    end
  end
  return dir
end

--- Reports whether a path or URI names a markdown file.
function M.is_markdown_path(p)
  return type(p) == "string" and (p:match("%.md$") ~= nil or p:match("%.markdown$") ~= nil)
end

--- Classifies a workspace/executeCommand result into what to show:
-- { path = file to open, preview = open it in a split (markdown report),
--   markdown = text for a scratch buffer, message = one line to echo }.
-- The server answers with { markdown?, path?, targets?, default? }; a
-- markdown report that was also written to `path` is shown once, as that
-- file. Older shapes (a string, MarkupContent, { uri }) are understood;
-- anything else is shown as JSON so nothing the server says is lost.
function M.classify_result(result)
  if result == nil or result == vim.NIL then
    return {}
  end
  local function text_output(text)
    local t = vim.trim(text)
    if t == "" then
      return {}
    end
    if t:find("\n", 1, true) then
      return { markdown = text }
    end
    return { message = t }
  end
  local function json_output()
    return { markdown = "```json\n" .. vim.fn.json_encode(result) .. "\n```" }
  end
  if type(result) == "string" then
    local s = vim.trim(result)
    if s:match("^file://%S+$") then
      return { path = vim.uri_to_fname(s), preview = M.is_markdown_path(s) }
    end
    return text_output(result)
  end
  if type(result) ~= "table" or vim.tbl_islist(result) and not vim.tbl_isempty(result) then
    return json_output()
  end
  if type(result.uri) == "string" then
    return { path = vim.uri_to_fname(result.uri), preview = M.is_markdown_path(result.uri) }
  end
  if type(result.value) == "string" then
    return text_output(result.value)
  end
  local out, known = {}, false
  if type(result.path) == "string" and result.path ~= "" then
    known = true
    out.path = result.path
    out.preview = M.is_markdown_path(result.path)
  end
  if type(result.markdown) == "string" then
    known = true
    -- A markdown file opened in a split already holds the report.
    if not out.preview then
      out = vim.tbl_extend("force", out, text_output(result.markdown))
    end
  end
  if type(result.targets) == "table" or type(result.default) == "string" then
    known = true
    if not out.markdown and not out.message then
      local current = (type(result.default) == "string" and result.default ~= "") and ("target " .. result.default)
        or "no target selected"
      local names = type(result.targets) == "table" and result.targets or {}
      out.message = #names > 0 and (current .. " (targets: " .. table.concat(names, ", ") .. ")") or current
    end
  end
  if not known then
    return json_output()
  end
  return out
end

-- The window showing a file, if any.
local function window_of(fname)
  local want = vim.fn.fnamemodify(fname, ":p")
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
    if name ~= "" and vim.fn.fnamemodify(name, ":p") == want then
      return win
    end
  end
  return nil
end

-- Opens a file; a markdown report goes to a read-only split so the code
-- stays in view. A file already on screen gets the focus instead.
local function open_file(fname, in_split)
  local win = window_of(fname)
  if win then
    vim.api.nvim_set_current_win(win)
    return
  end
  if in_split then
    vim.cmd("botright split " .. vim.fn.fnameescape(fname))
    vim.bo.readonly = true
    vim.bo.modifiable = false
  else
    vim.cmd("edit " .. vim.fn.fnameescape(fname))
  end
end

local function show_scratch(command, text)
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, "torchlsp://" .. command .. "/" .. buf)
end

-- Shows a command result: the file it names (a report in a split), markdown
-- in a scratch split, a one-line answer as a message.
local function show_result(command, result)
  local out = M.classify_result(result)
  if out.path then
    open_file(out.path, out.preview)
  end
  if out.markdown then
    show_scratch(command, out.markdown)
  end
  if out.message then
    notify(out.message)
  end
end

local function redraw_status()
  vim.schedule(function()
    pcall(vim.cmd, "redrawstatus!")
    pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "TorchlspStatus", modeline = false })
  end)
end

-- Per-client handlers: they record status and progress for the statusline
-- and show what workspace/executeCommand returns, whichever path sent it
-- (our user commands or a code action's command).
local function make_handlers()
  local handlers = {}
  handlers["torchlsp/status"] = function(_, result, ctx)
    state.status[ctx.client_id] = result
    redraw_status()
  end
  handlers["$/progress"] = function(err, result, ctx, config)
    local default = vim.lsp.handlers["$/progress"]
    if default then
      default(err, result, ctx, config)
    end
    if not result or not result.value then
      return
    end
    local per = state.progress[ctx.client_id] or {}
    state.progress[ctx.client_id] = per
    local v = result.value
    -- Neovim before 0.10 shows no progress of its own: echo it, briefly.
    local line = vim.trim(("%s %s"):format(v.title or (per[result.token] or {}).title or "", v.message or ""))
    line = line:gsub("^torchlsp:%s*", "")
    -- Headless (no UI attached): nobody reads the message area.
    if line ~= "" and #vim.api.nvim_list_uis() > 0 then
      vim.schedule(function()
        vim.api.nvim_echo({ { "torchlsp: " .. line, "Comment" } }, false, {})
      end)
    end
    if v.kind == "end" then
      per[result.token] = nil
    else
      local cur = per[result.token] or {}
      cur.title = v.title or cur.title
      cur.message = v.message or cur.message
      cur.percentage = v.percentage or cur.percentage
      per[result.token] = cur
    end
    redraw_status()
  end
  handlers["workspace/executeCommand"] = function(err, result, ctx)
    local command = ctx.params and ctx.params.command or "command"
    if err then
      notify(command .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    show_result(command, result)
  end
  -- The server opens repro reports with window/showDocument: markdown goes
  -- to a split beside the code; other files open as Neovim would (0.7 has
  -- no handler of its own).
  handlers["window/showDocument"] = function(err, result, ctx, config)
    if result and not result.external and M.is_markdown_path(result.uri) then
      open_file(vim.uri_to_fname(result.uri), true)
      return { success = true }
    end
    local default = vim.lsp.handlers["window/showDocument"]
    if default then
      return default(err, result, ctx, config)
    end
    open_file(vim.uri_to_fname(result.uri), false)
    if result.selection then
      local s = result.selection.start
      pcall(vim.api.nvim_win_set_cursor, 0, { s.line + 1, s.character })
    end
    return { success = true }
  end
  return handlers
end

local function client_config(root_dir)
  local config = state.config
  local settings = M.server_settings(config)
  return {
    name = client_name,
    cmd = config.cmd,
    cmd_env = config.cmd_env,
    root_dir = root_dir,
    workspace_folders = {
      { uri = vim.uri_from_fname(root_dir), name = vim.fn.fnamemodify(root_dir, ":t") },
    },
    init_options = settings,
    settings = { torchlsp = settings },
    capabilities = config.capabilities or vim.lsp.protocol.make_client_capabilities(),
    handlers = make_handlers(),
    on_attach = config.on_attach,
    on_exit = function(code, signal, client_id)
      state.status[client_id] = { state = "error", message = ("server exited (code %d, signal %d)"):format(code, signal) }
      state.progress[client_id] = nil
      for root, id in pairs(state.clients_by_root) do
        if id == client_id then
          state.clients_by_root[root] = nil
        end
      end
      redraw_status()
    end,
  }
end

--- Starts (or reuses) the server for a buffer and attaches it.
-- Returns the client id, or nil when the buffer is not a local file.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if not state.config then
    M.setup({})
  end
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if fname == "" or fname:match("^%a[%w+.-]*://") then
    return nil
  end
  local bin = state.config.cmd[1]
  if vim.fn.executable(bin) ~= 1 then
    notify(
      ("server binary %q not found. Install it with `go install github.com/torchlsp/torchlsp/cmd/torchlsp@latest` "):format(bin)
        .. "or pass its path as setup{ cmd = { '/path/to/torchlsp', 'serve', '--stdio' } }.",
      vim.log.levels.ERROR
    )
    return nil
  end
  local root = M.find_root(fname, state.config.root_markers)
  if vim.lsp.start then
    return vim.lsp.start(client_config(root), { bufnr = bufnr })
  end
  local id = state.clients_by_root[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(client_config(root))
    if id == nil then
      notify("failed to start " .. bin, vim.log.levels.ERROR)
      return nil
    end
    state.clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
  return id
end

--- The torchlsp client attached to a buffer, if any.
function M.get_client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
    if client.name == client_name then
      return client
    end
  end
  return nil
end

--- Sends workspace/executeCommand to the buffer's torchlsp client; the
-- result is shown by the client's handler.
function M.execute(command, arguments, bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = M.get_client(bufnr)
  if not client then
    notify("no torchlsp server is attached to this buffer", vim.log.levels.WARN)
    return false
  end
  client.request("workspace/executeCommand", { command = command, arguments = arguments }, nil, bufnr)
  return true
end

--- Asks the server to switch targets; prompts when name is nil.
function M.select_target(name)
  if name and name ~= "" then
    return M.execute(server_commands.select_target, { { target = name } })
  end
  vim.ui.select(M.target_names(), { prompt = "torchlsp target" }, function(choice)
    if choice then
      M.execute(server_commands.select_target, { { target = choice } })
    end
  end)
end

--- The argument of torchlsp.repro for a buffer line (0-based) and a
-- target: nil or "" for the default target, "all" for every target.
function M.repro_args(uri, line, target)
  local args = { uri = uri, line = line }
  if target == "all" then
    args.all = true
  elseif target and target ~= "" then
    args.target = target
  end
  return args
end

--- Runs the threaded repro of the torch.compile call at (or above) the
-- cursor, on `target` (nil: the default; "all": every target). Progress
-- shows in the statusline and the message area; the report opens in a split.
function M.repro(target)
  local bufnr = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  return M.execute(server_commands.repro, { M.repro_args(vim.uri_from_bufnr(bufnr), line, target) }, bufnr)
end

function M.doctor()
  return M.execute(server_commands.doctor, {})
end

function M.open_mirror()
  return M.execute(server_commands.open_mirror, {})
end

--- Target names: local first, then the configured ones sorted.
function M.target_names()
  local names = {}
  for name in pairs((state.config or defaults).targets or {}) do
    if name ~= "local" then
      table.insert(names, name)
    end
  end
  table.sort(names)
  table.insert(names, 1, "local")
  return names
end

--- The latest torchlsp/status and progress of the buffer's client.
function M.status(bufnr)
  local client = M.get_client(bufnr)
  if not client then
    return nil
  end
  return { status = state.status[client.id], progress = state.progress[client.id] or {} }
end

--- A short text for a statusline: "torch 2.11.0@h200 ready", with the
-- running progress while the server works. Empty when not attached.
function M.statusline(bufnr)
  local s = M.status(bufnr)
  if not s then
    return ""
  end
  local st = s.status or {}
  local target = st.target or (state.config and state.config.default_target) or "local"
  local torch = st.torchVersion and ("torch " .. st.torchVersion) or "torch"
  local parts = { torch .. "@" .. target, st.state or "starting" }
  for _, p in pairs(s.progress) do
    local item = p.title or ""
    if p.message then
      item = item .. " " .. p.message
    end
    if p.percentage then
      item = item .. (" %d%%"):format(p.percentage)
    end
    table.insert(parts, vim.trim(item))
    break
  end
  if st.state == "error" and st.message then
    table.insert(parts, st.message)
  end
  return table.concat(parts, " ")
end

local function create_commands()
  vim.api.nvim_create_user_command("TorchlspTarget", function(opts)
    M.select_target(opts.args)
  end, {
    nargs = "?",
    complete = function()
      return M.target_names()
    end,
    desc = "torchlsp: select the target whose torch answers",
  })
  vim.api.nvim_create_user_command("TorchlspRepro", function(opts)
    M.repro(opts.args)
  end, {
    nargs = "?",
    complete = function()
      local names = M.target_names()
      table.insert(names, "all")
      return names
    end,
    desc = "torchlsp: run the threaded repro for the call under the cursor ([target|all])",
  })
  vim.api.nvim_create_user_command("TorchlspDoctor", function()
    M.doctor()
  end, { desc = "torchlsp: check the target, the mirror and the index" })
  vim.api.nvim_create_user_command("TorchlspMirror", function()
    M.open_mirror()
  end, { desc = "torchlsp: open the local mirror of the target's sources" })
end

--- Configures the plugin and starts the server for matching buffers,
-- including those already open.
function M.setup(opts)
  local config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  -- Lists replace, not merge.
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then
      config[key] = opts[key]
    end
  end
  local problems = M.validate(config)
  if #problems > 0 then
    notify("setup: " .. table.concat(problems, "; "), vim.log.levels.ERROR)
    return false
  end
  state.config = config
  state.augroup = vim.api.nvim_create_augroup("torchlsp", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = state.augroup,
    pattern = config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  create_commands()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(config.filetypes, vim.bo[buf].filetype) then
      M.attach(buf)
    end
  end
  return true
end

--- The active configuration (read-only use).
function M.config()
  return state.config
end

return M
