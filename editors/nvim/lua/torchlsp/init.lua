-- torchlsp: starts `torchlsp serve --stdio` for Python buffers and exposes
-- its commands, status and progress; keeps the mirror read-only and on the
-- workspace's server; points the user's Python servers (pyright,
-- basedpyright, pylsp, jedi-language-server) at the active target's site.
-- Works on Neovim 0.7 (start_client + buf_attach_client) and on 0.8+
-- (vim.lsp.start).
local M = {}

local defaults = {
  -- The server command; the binary is looked up on PATH, then in
  -- ~/.local/bin, GOBIN, GOPATH/bin and ~/go/bin, unless it is a path.
  cmd = { "torchlsp", "serve", "--stdio" },
  -- Targets by name, as in torchlsp.toml: { NAME = { python = ..., env = {...},
  -- packages = {...}, ssh = "user@host:port", jump = {...}, exec = {...},
  -- user_site = true (see ~/.local; off by default),
  -- workdir = "/path/of/the/workspace/on/the/target" } }.
  targets = {},
  -- nil: the default of a trusted torchlsp.toml, else of config.toml, else
  -- "local". Only a name given here is sent to the server.
  default_target = nil,
  log_level = "info",
  filetypes = { "python" },
  -- Searched upward from the buffer, in this order of preference.
  root_markers = { "torchlsp.toml", "pyproject.toml", ".git" },
  -- Buffer-local maps set when the server attaches (false: none; a key
  -- set to false: that one not). Your on_attach runs after, and may remap.
  keymaps = { hover = "K", definition = "gd", references = false, code_action = false },
  -- The active target's site (its packages as a local site-packages) for
  -- the Python servers: false leaves their settings alone; a table can also
  -- say what the site holds and how hovers share the work:
  -- { enable = true, packages = { "einops", "-sympy" }, hover = "full" }.
  site = true,
  -- Where the server keeps its mirrors; nil: $XDG_CACHE_HOME/torchlsp.
  cache_dir = nil,
  on_attach = nil,
  capabilities = nil,
  -- Extra environment for the server process.
  cmd_env = nil,
}

-- All mutable plugin state lives here, keyed by client id where per client.
local state = {
  config = nil,
  augroup = nil,
  binary = nil, -- the resolved server binary
  clients_by_root = {}, -- 0.7 path: root_dir -> client id
  status = {}, -- client id -> { [target] = torchlsp/status params }
  active = {}, -- client id -> the target that answers, as the server said last
  targets = {}, -- client id -> the server's target names (every layer)
  progress = {}, -- client id -> { [token] = { title, message, percentage } }
  site = {}, -- client id -> torchlsp/site params { target, path }
  site_asked = {}, -- client id -> { [target] = true } once told a Python server reads its site
  last_client = nil, -- the torchlsp client of the workspace buffer entered last
}

local server_commands = {
  select_target = "torchlsp.selectTarget",
  repro = "torchlsp.repro",
  cancel_run = "torchlsp.cancelRun",
  doctor = "torchlsp.doctor",
  open_mirror = "torchlsp.openMirror",
  site = "torchlsp.site",
}

local client_name = "torchlsp"
local workspace_file = "torchlsp.toml"

local function notify(msg, level)
  vim.notify("torchlsp: " .. msg, level or vim.log.levels.INFO)
end

local function current_config()
  return state.config or defaults
end

--- Returns the server's "torchlsp" settings section built from the config.
-- defaultTarget is there only when default_target was given, so that a
-- trusted torchlsp.toml's default is not overridden. Empty tables become
-- JSON objects, not arrays.
function M.server_settings(config)
  config = config or current_config()
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
    if t.user_site ~= nil then
      target.userSite = t.user_site
    end
    target.workdir = t.workdir
    targets[name] = target
  end
  local settings = { targets = targets, logLevel = config.log_level or "info" }
  if type(config.default_target) == "string" and config.default_target ~= "" then
    settings.defaultTarget = config.default_target
  end
  if type(config.site) == "table" then
    local site = {}
    if type(config.site.packages) == "table" and #config.site.packages > 0 then
      site.packages = vim.deepcopy(config.site.packages)
    end
    if config.site.hover == "compact" or config.site.hover == "full" then
      site.hover = config.site.hover
    end
    if next(site) then
      settings.site = site
    end
  end
  return settings
end

--- Checks a config; returns a list of problems (empty when fine). A
-- default_target none of `targets` defines is fine: torchlsp.toml or
-- config.toml may define it, and the server says so when none does.
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
  end
  if config.default_target ~= nil and type(config.default_target) ~= "string" then
    table.insert(problems, "default_target must be a target's name")
  end
  local site = config.site
  if site ~= nil and type(site) ~= "boolean" and type(site) ~= "table" then
    table.insert(problems, "site must be true, false or a table { enable, packages, hover }")
  elseif type(site) == "table" then
    if site.hover ~= nil and site.hover ~= "compact" and site.hover ~= "full" then
      table.insert(problems, 'site.hover must be "compact" or "full"')
    end
    if site.packages ~= nil and type(site.packages) ~= "table" then
      table.insert(problems, "site.packages must be a list of package names")
    end
  end
  if config.keymaps ~= nil and config.keymaps ~= false and type(config.keymaps) ~= "table" then
    table.insert(problems, "keymaps must be false or a table such as { hover = 'K', definition = 'gd' }")
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

-- xdg returns $NAME when it is an absolute path, else HOME/fallback, as the
-- server does.
local function xdg(name, fallback)
  local v = vim.env[name]
  if v and v:sub(1, 1) == "/" then
    return v
  end
  return vim.loop.os_homedir() .. "/" .. fallback
end

--- Where the server keeps its mirrors: setup's cache_dir, else
-- $XDG_CACHE_HOME/torchlsp.
function M.cache_dir()
  local dir = current_config().cache_dir
  if type(dir) == "string" and dir ~= "" then
    return (vim.fn.fnamemodify(dir, ":p"):gsub("/$", ""))
  end
  return xdg("XDG_CACHE_HOME", ".cache") .. "/torchlsp"
end

--- Where the server keeps its trust records: $XDG_STATE_HOME/torchlsp.
function M.state_dir()
  return xdg("XDG_STATE_HOME", ".local/state") .. "/torchlsp"
end

local function under(path, dir)
  return path:sub(1, #dir + 1) == dir .. "/"
end

--- Reports whether a file is in the mirror (the read-only copies of the
-- targets' sources that definitions open).
function M.is_mirror(fname)
  if type(fname) ~= "string" or fname == "" then
    return false
  end
  local path = vim.fn.fnamemodify(fname, ":p")
  local dir = M.cache_dir()
  if under(path, dir) then
    return true
  end
  local real_dir = vim.loop.fs_realpath(dir)
  local real_path = vim.loop.fs_realpath(path)
  return real_dir ~= nil and real_path ~= nil and under(real_path, real_dir)
end

local function executable(path)
  return path ~= nil and path ~= "" and vim.fn.executable(path) == 1
end

--- The folders searched after PATH: ~/.local/bin, GOBIN, each GOPATH's
-- bin and ~/go/bin (where `go install` puts binaries), without repeats.
-- go_env is what `go env GOBIN GOPATH` printed (nil: go is not installed).
function M.fallback_dirs(home, go_env)
  local dirs = { home .. "/.local/bin" }
  local lines = vim.split(go_env or "", "\n", { plain = true })
  local gobin, gopath = vim.trim(lines[1] or ""), vim.trim(lines[2] or "")
  if gobin ~= "" then
    table.insert(dirs, gobin)
  end
  for _, p in ipairs(vim.split(gopath, ":", { plain = true })) do
    if p ~= "" then
      table.insert(dirs, p .. "/bin")
    end
  end
  table.insert(dirs, home .. "/go/bin")
  local seen, out = {}, {}
  for _, d in ipairs(dirs) do
    if not seen[d] then
      seen[d] = true
      table.insert(out, d)
    end
  end
  return out
end

--- Finds the server binary: a path as given; a name on PATH, else in
-- ~/.local/bin, GOBIN, GOPATH/bin, ~/go/bin. Returns the path, or nil and
-- the folders searched.
function M.find_binary(name)
  if name:find("/", 1, true) then
    local p = vim.fn.fnamemodify(name, ":p")
    return executable(p) and p or nil, {}
  end
  if executable(name) then
    return vim.fn.exepath(name), {}
  end
  local go_env
  if executable("go") then
    -- Asked only now: it takes a moment.
    go_env = vim.fn.system({ "go", "env", "GOBIN", "GOPATH" })
    if vim.v.shell_error ~= 0 then
      go_env = nil
    end
  end
  local dirs = M.fallback_dirs(vim.loop.os_homedir(), go_env)
  for _, d in ipairs(dirs) do
    local p = d .. "/" .. name
    if executable(p) then
      return p, dirs
    end
  end
  return nil, dirs
end

--- The workspace's torchlsp.toml and whether torchlsp trusts it as it is
-- now (by its own trust records): { path, trust = "absent" | "untrusted"
-- | "changed" | "trusted" }.
function M.workspace_file(root)
  local path = root .. "/" .. workspace_file
  local f = io.open(path, "rb")
  if not f then
    return { path = path, trust = "absent" }
  end
  local content = f:read("*a")
  f:close()
  local rf = io.open(M.state_dir() .. "/trusted.json", "rb")
  if not rf then
    return { path = path, trust = "untrusted", content = content }
  end
  local ok, records = pcall(vim.fn.json_decode, rf:read("*a"))
  rf:close()
  -- A damaged record file trusts nothing, as in the server.
  local want = ok and type(records) == "table" and type(records.files) == "table" and records.files[path] or nil
  if type(want) ~= "string" then
    return { path = path, trust = "untrusted", content = content }
  end
  local trust = want == ("sha256:" .. vim.fn.sha256(content)) and "trusted" or "changed"
  return { path = path, trust = trust, content = content }
end

--- Reports whether a path or URI names a markdown file.
function M.is_markdown_path(p)
  return type(p) == "string" and (p:match("%.md$") ~= nil or p:match("%.markdown$") ~= nil)
end

--- The run folders a repro report names ("Scripts and output: `DIR`"),
-- one per target, in order.
function M.report_dirs(markdown)
  local dirs = {}
  for _, line in ipairs(vim.split(markdown or "", "\n", { plain = true })) do
    local dir = line:match("^Scripts and output: `([^`]+)`%s*$")
    if dir then
      table.insert(dirs, dir)
    end
  end
  return dirs
end

--- Classifies a workspace/executeCommand result into what to show:
-- { path = file to open, preview = open it in a split (markdown report),
--   also = the other reports of a run on several targets,
--   markdown = text for a scratch buffer, message = one line to echo }.
-- The server answers with { markdown?, path?, targets?, default? }, or,
-- for a run (repro, explain), { run, title } at once: the run goes on,
-- streams to the progress and the log, and its report opens through
-- window/showDocument when it ends (a run waited for also carries the
-- report, as { run, title, markdown, path }); a
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
    else
      -- A run on several targets writes one report each: the path names
      -- the first, the markdown every run's folder.
      for _, dir in ipairs(M.report_dirs(result.markdown)) do
        local report = dir:gsub("/+$", "") .. "/report.md"
        if report ~= out.path and not vim.tbl_contains(out.also or {}, report) then
          out.also = out.also or {}
          table.insert(out.also, report)
        end
      end
    end
  end
  if type(result.run) == "string" and not known then
    known = true
    local title = type(result.title) == "string" and result.title ~= "" and result.title or "run"
    out.message = ("started %s (run %s; :TorchlspCancel %s stops it)"):format(title, result.run, result.run)
  elseif type(result.run) == "string" then
    known = true
  end
  if type(result.cancelled) == "table" then
    known = true
    out.message = #result.cancelled == 0 and "no run in progress" or ("cancelled " .. table.concat(result.cancelled, "; "))
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

-- Shows a command result: the file it names (a report in a split, and
-- each other report of the run), markdown in a scratch split, a one-line
-- answer as a message.
local function show_result(command, result)
  local out = M.classify_result(result)
  if out.path then
    open_file(out.path, out.preview)
  end
  for _, report in ipairs(out.also or {}) do
    if vim.fn.filereadable(report) == 1 then
      open_file(report, true)
    end
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

local function torchlsp_clients()
  local out = {}
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == client_name then
      table.insert(out, client)
    end
  end
  return out
end

-- Python servers --------------------------------------------------------

-- Where each Python server reads its extra import paths from.
local python_servers = {
  pyright = { "settings", "python", "analysis", "extraPaths" },
  basedpyright = { "settings", "basedpyright", "analysis", "extraPaths" },
  pylsp = { "settings", "pylsp", "plugins", "jedi", "extra_paths" },
  -- Read at start only: a running server needs :LspRestart to see a change.
  jedi_language_server = { "init_options", "workspace", "extraPaths" },
}

local python_aliases = {
  pyright = "pyright",
  ["pyright-langserver"] = "pyright",
  basedpyright = "basedpyright",
  ["basedpyright-langserver"] = "basedpyright",
  pylsp = "pylsp",
  jedi_language_server = "jedi_language_server",
  ["jedi-language-server"] = "jedi_language_server",
}

--- Which Python server a client config starts, by its name or its
-- command: "pyright", "basedpyright", "pylsp", "jedi_language_server" or nil.
function M.python_server(config)
  if type(config) ~= "table" then
    return nil
  end
  if config.name and python_aliases[config.name] then
    return python_aliases[config.name]
  end
  local cmd = type(config.cmd) == "table" and config.cmd[1] or nil
  if type(cmd) == "string" then
    return python_aliases[vim.fn.fnamemodify(cmd, ":t")]
  end
  return nil
end

-- The list at keys inside t, created when create is set (nil otherwise).
local function list_at(t, keys, create)
  for i = 1, #keys do
    local k = keys[i]
    if t[k] == nil or t[k] == vim.NIL then
      if not create then
        return nil
      end
      t[k] = {}
    end
    t = t[k]
    if type(t) ~= "table" then
      return nil
    end
  end
  return t
end

--- The site a Python server should read, from a torchlsp client's last
-- torchlsp/site and the target active there: its path while its target is
-- the active one, "" else. The server announces its default target's site
-- only, but a notification can cross a target switch on the way: a switch
-- takes the old target's site out at once, and a late one stays out.
function M.active_site_path(site, active)
  if type(site) ~= "table" or type(site.path) ~= "string" then
    return ""
  end
  local target = type(site.target) == "string" and site.target or ""
  -- A server that names no target: its word.
  if site.path ~= "" and target ~= "" and active ~= nil and target ~= active then
    return ""
  end
  return site.path
end

-- The site path for a Python client's root: that of the torchlsp client of
-- the same workspace (or one holding the other), else the only one known.
local function site_for_root(root)
  local only, count = "", 0
  for id, site in pairs(state.site) do
    local c = vim.lsp.get_client_by_id(id)
    local path = M.active_site_path(site, state.active[id])
    if c then
      count = count + 1
      only = path
      local r = c.config.root_dir
      if root and r and (r == root or under(root, r) or under(r, root)) then
        return path
      end
    end
  end
  return count == 1 and only or ""
end

-- Tells the torchlsp server whose site a Python client now reads that it
-- does (torchlsp.site): hovers then leave signatures and docstrings to the
-- Python server, and definitions point into the site. Once per target.
local function site_handed(config)
  local path = config.torchlsp_site
  if not path then
    return
  end
  for id, site in pairs(state.site) do
    local c = vim.lsp.get_client_by_id(id)
    if c and site.path == path and type(site.target) == "string" then
      local asked = state.site_asked[id] or {}
      state.site_asked[id] = asked
      local p = c.server_capabilities and c.server_capabilities.executeCommandProvider
      if not asked[site.target] and p and vim.tbl_contains(p.commands or {}, server_commands.site) then
        asked[site.target] = true
        c.request("workspace/executeCommand", { command = server_commands.site, arguments = { { target = site.target } } }, function() end)
      end
    end
  end
end

--- Puts the active target's site into a Python server's config: pyright's
-- and basedpyright's analysis.extraPaths, pylsp's plugins.jedi.extra_paths,
-- jedi-language-server's init_options.workspace.extraPaths. Appends to
-- what the config has, takes out the entry it added before, and returns
-- the config (other configs are returned untouched). Use it as
-- nvim-lspconfig's on_new_config, or around a config for vim.lsp.start.
-- `path` overrides the site (tests; "" removes the entry).
function M.python_settings(config, path)
  local kind = M.python_server(config)
  if not kind then
    return config
  end
  if path == nil then
    local site = current_config().site
    if site == false or (type(site) == "table" and site.enable == false) then
      path = ""
    else
      path = site_for_root(config.root_dir)
    end
  end
  local keys = python_servers[kind]
  local had = config.torchlsp_site
  local list = list_at(config, keys, path ~= "")
  if list and had and had ~= path then
    for i = #list, 1, -1 do
      if list[i] == had then
        table.remove(list, i)
        break
      end
    end
    config.torchlsp_site = nil
  end
  if list and path ~= "" and had ~= path then
    -- A path that is there already is the user's: it is never removed.
    if not vim.tbl_contains(list, path) then
      table.insert(list, path)
      config.torchlsp_site = path
    end
  end
  -- Clients started later find the site in on_init. Neovim before 0.8
  -- does not offer workspace/configuration, so a server hears of its
  -- settings only when they are sent: send them once it is up (as
  -- nvim-lspconfig does).
  if not config.torchlsp_on_init then
    local user_on_init = config.on_init
    config.torchlsp_on_init = true
    config.on_init = function(client, result)
      if not M.update_python_client(client) and client.config.torchlsp_site then
        site_handed(client.config)
        if python_servers[kind][1] == "settings" then
          client.notify("workspace/didChangeConfiguration", { settings = client.config.settings })
        end
      end
      if user_on_init then
        return user_on_init(client, result)
      end
    end
  end
  return config
end

--- Brings a running Python client's settings up to date with the site of
-- its workspace, and tells it (workspace/didChangeConfiguration) when
-- they changed.
function M.update_python_client(client)
  local kind = M.python_server(client.config)
  if not kind then
    return false
  end
  local before = client.config.torchlsp_site
  M.python_settings(client.config)
  if client.config.torchlsp_site == before then
    return false
  end
  site_handed(client.config)
  if python_servers[kind][1] == "settings" then
    client.notify("workspace/didChangeConfiguration", { settings = client.config.settings })
  else
    notify(
      ("%s reads its extra paths at start: restart it (:LspRestart) to use the new site"):format(client.name),
      vim.log.levels.INFO
    )
  end
  return true
end

local function update_python_clients()
  for _, client in pairs(vim.lsp.get_active_clients()) do
    -- Only initialized clients are told; the others find it in on_init.
    if client.name ~= client_name and client.server_capabilities and next(client.server_capabilities) ~= nil then
      M.update_python_client(client)
    end
  end
end

local function set_site(client_id, site)
  state.site[client_id] = type(site) == "table" and site or nil
  vim.schedule(update_python_clients)
end

-- Records the target that answers on a torchlsp client; the Python
-- servers follow a change (the old target's site goes out).
local function set_active(client_id, target)
  target = target ~= "" and target or nil
  if state.active[client_id] == target then
    return
  end
  state.active[client_id] = target
  vim.schedule(update_python_clients)
end

-- Targets ----------------------------------------------------------------

--- Asks the server for its targets (every layer: config.toml, a trusted
-- torchlsp.toml, the editor's) and the active one; calls cb(names,
-- active) when it answered. selectTarget with no name lists them.
function M.refresh_targets(client, cb)
  client.request("workspace/executeCommand", { command = server_commands.select_target, arguments = {} }, function(err, result)
    if not err and type(result) == "table" then
      if type(result.targets) == "table" then
        state.targets[client.id] = result.targets
      end
      if type(result.default) == "string" and result.default ~= "" then
        set_active(client.id, result.default)
      end
      redraw_status()
    end
    if cb then
      cb(M.target_names(client.id), state.active[client.id])
    end
  end)
end

local function refresh_soon(client_id, ms)
  vim.defer_fn(function()
    local c = vim.lsp.get_client_by_id(client_id)
    if c then
      M.refresh_targets(c)
    end
  end, ms)
end

-- Keymaps ----------------------------------------------------------------

local keymap_actions = {
  hover = { fn = vim.lsp.buf.hover, desc = "torchlsp: hover" },
  definition = { fn = vim.lsp.buf.definition, desc = "torchlsp: go to definition" },
  references = { fn = vim.lsp.buf.references, desc = "torchlsp: references" },
  code_action = { fn = vim.lsp.buf.code_action, desc = "torchlsp: code actions" },
}

--- Sets the buffer-local maps of setup's keymaps on bufnr; a key that is
-- mapped already (by you, or by Neovim 0.10+ itself) is left alone.
function M.set_keymaps(bufnr)
  local maps = current_config().keymaps
  if maps == false or maps == nil then
    return
  end
  for action, lhs in pairs(maps) do
    local a = keymap_actions[action]
    if a and type(lhs) == "string" and lhs ~= "" then
      -- Asked in the buffer, for its own maps; the dict form, because a
      -- map with a Lua callback has no rhs text.
      local existing = vim.api.nvim_buf_call(bufnr, function()
        return vim.fn.maparg(lhs, "n", false, true)
      end)
      -- No map: an empty dict (which 0.7 hands Lua as { [true] = 6 }).
      if type(existing) ~= "table" or existing.lhs == nil then
        vim.keymap.set("n", lhs, a.fn, { buffer = bufnr, desc = a.desc })
      end
    end
  end
end

-- Handlers ---------------------------------------------------------------

-- Per-client handlers: they record status and progress for the statusline
-- and show what workspace/executeCommand returns, whichever path sent it
-- (our user commands or a code action's command).
local function make_handlers()
  local handlers = {}
  handlers["torchlsp/status"] = function(_, result, ctx)
    if type(result) ~= "table" then
      return
    end
    local target = result.target or "local"
    local per = state.status[ctx.client_id] or {}
    per[target] = result
    state.status[ctx.client_id] = per
    -- The server reports the target that answers only.
    set_active(ctx.client_id, target)
    redraw_status()
  end
  handlers["torchlsp/site"] = function(_, result, ctx)
    set_site(ctx.client_id, result)
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
  -- Each pull of the configuration is followed by the server reading its
  -- files again: ask it for the active target once it has.
  handlers["workspace/configuration"] = function(err, result, ctx, config)
    refresh_soon(ctx.client_id, 400)
    return vim.lsp.handlers["workspace/configuration"](err, result, ctx, config)
  end
  handlers["workspace/executeCommand"] = function(err, result, ctx)
    local command = ctx.params and ctx.params.command or "command"
    if err then
      notify(command .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if command == server_commands.select_target and type(result) == "table" and type(result.default) == "string" then
      set_active(ctx.client_id, result.default)
      redraw_status()
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

--- The client capabilities the plugin's client announces: `capabilities`
-- (Neovim's own by default), plus torchlsp's notifications the plugin
-- handles, under experimental.torchlsp.notifications: the server sends
-- torchlsp/status and torchlsp/site only to a client that announces them.
function M.client_capabilities(capabilities)
  local caps = vim.deepcopy(capabilities or vim.lsp.protocol.make_client_capabilities())
  caps.experimental = type(caps.experimental) == "table" and caps.experimental or {}
  caps.experimental.torchlsp = { notifications = { "torchlsp/status", "torchlsp/site" } }
  return caps
end

local function client_config(root_dir)
  local config = state.config
  local settings = M.server_settings(config)
  local cmd = vim.deepcopy(config.cmd)
  cmd[1] = state.binary or cmd[1]
  return {
    name = client_name,
    cmd = cmd,
    cmd_env = config.cmd_env,
    root_dir = root_dir,
    workspace_folders = {
      { uri = vim.uri_from_fname(root_dir), name = vim.fn.fnamemodify(root_dir, ":t") },
    },
    init_options = settings,
    settings = { torchlsp = settings },
    capabilities = M.client_capabilities(config.capabilities),
    handlers = make_handlers(),
    on_init = function(client)
      refresh_soon(client.id, 0)
    end,
    on_attach = function(client, bufnr)
      M.set_keymaps(bufnr)
      if config.on_attach then
        config.on_attach(client, bufnr)
      end
    end,
    on_exit = function(code, signal, client_id)
      local per = state.status[client_id] or {}
      local target = state.active[client_id] or "local"
      per[target] = { target = target, state = "error", message = ("server exited (code %d, signal %d)"):format(code, signal) }
      state.status[client_id] = per
      state.progress[client_id] = nil
      state.site[client_id] = nil
      state.site_asked[client_id] = nil
      if state.last_client == client_id then
        state.last_client = nil
      end
      for root, id in pairs(state.clients_by_root) do
        if id == client_id then
          state.clients_by_root[root] = nil
        end
      end
      redraw_status()
      vim.schedule(update_python_clients)
    end,
  }
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

local function mark_readonly(bufnr)
  vim.bo[bufnr].readonly = true
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].swapfile = false
end

-- The client a mirror file belongs to: that of the buffer it was opened
-- from, else of the workspace buffer entered last, else any.
local function client_for_mirror()
  local alt = vim.fn.bufnr("#")
  if alt > 0 and not M.is_mirror(vim.api.nvim_buf_get_name(alt)) then
    local c = M.get_client(alt)
    if c then
      return c.id
    end
  end
  if state.last_client and vim.lsp.get_client_by_id(state.last_client) then
    return state.last_client
  end
  local any = torchlsp_clients()[1]
  return any and any.id or nil
end

--- Starts (or reuses) the server for a buffer and attaches it. A mirror
-- file is made read-only and attached to the client of the workspace that
-- opened it: never to a server of its own. Returns the client id, or nil
-- when the buffer is not a local file (or a mirror file with no client).
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if not state.config then
    M.setup({})
  end
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if fname == "" or fname:match("^%a[%w+.-]*://") then
    return nil
  end
  if M.is_mirror(fname) then
    mark_readonly(bufnr)
    local id = client_for_mirror()
    if id then
      vim.lsp.buf_attach_client(bufnr, id)
    end
    return id
  end
  if not state.binary then
    local bin, searched = M.find_binary(state.config.cmd[1])
    if not bin then
      local where = #searched > 0 and (" (searched PATH, " .. table.concat(searched, ", ") .. ")") or ""
      notify(
        ("server binary %q not found%s. Install it with `go install github.com/torchlsp/torchlsp/cmd/torchlsp@latest` "):format(
          state.config.cmd[1],
          where
        ) .. "or pass its path as setup{ cmd = { '/path/to/torchlsp', 'serve', '--stdio' } }.",
        vim.log.levels.ERROR
      )
      return nil
    end
    state.binary = bin
  end
  local root = M.find_root(fname, state.config.root_markers)
  local id
  if vim.lsp.start then
    id = vim.lsp.start(client_config(root), { bufnr = bufnr })
  else
    id = state.clients_by_root[root]
    if id == nil or vim.lsp.get_client_by_id(id) == nil then
      id = vim.lsp.start_client(client_config(root))
      if id == nil then
        notify("failed to start " .. state.binary, vim.log.levels.ERROR)
        return nil
      end
      state.clients_by_root[root] = id
    end
    vim.lsp.buf_attach_client(bufnr, id)
  end
  if id then
    state.last_client = id
  end
  return id
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

--- Asks the server to switch targets; prompts with the targets of every
-- layer when name is nil.
function M.select_target(name)
  if name and name ~= "" then
    return M.execute(server_commands.select_target, { { target = name } })
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local client = M.get_client(bufnr)
  local function pick(names)
    vim.ui.select(names, { prompt = "torchlsp target" }, function(choice)
      if choice then
        M.execute(server_commands.select_target, { { target = choice } }, bufnr)
      end
    end)
  end
  if not client then
    pick(M.target_names())
    return true
  end
  M.refresh_targets(client, function(names)
    vim.schedule(function()
      pick(names)
    end)
  end)
  return true
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
-- cursor, on `target` (nil: the default; "all": every target). The server
-- answers at once with the run's id; progress shows in the statusline and
-- the message area; every report opens in a split when the run ends.
function M.repro(target)
  local bufnr = vim.api.nvim_get_current_buf()
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  return M.execute(server_commands.repro, { M.repro_args(vim.uri_from_bufnr(bufnr), line, target) }, bufnr)
end

function M.doctor()
  return M.execute(server_commands.doctor, {})
end

--- The argument of torchlsp.cancelRun: a run's id, or none for every run.
function M.cancel_args(run)
  if run and run ~= "" then
    return { { run = run } }
  end
  return {}
end

--- Cancels a run (repro, explain) by its id; every run without one.
function M.cancel_run(run)
  return M.execute(server_commands.cancel_run, M.cancel_args(run))
end

function M.open_mirror()
  return M.execute(server_commands.open_mirror, {})
end

--- The workspace root the trust command works on: the buffer's torchlsp
-- client's, else found from the buffer's file.
local function workspace_root(bufnr)
  local client = M.get_client(bufnr)
  if client and client.config.root_dir then
    return client.config.root_dir, client
  end
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if fname == "" then
    return vim.fn.getcwd(), nil
  end
  return M.find_root(fname, current_config().root_markers), nil
end

--- The lines that tell what trusting a workspace file allows.
function M.trust_summary(content)
  local ok, summary = pcall(require("torchlsp.toml").summarize, content)
  if not ok then
    return { ("(the file could not be read: %s; read it before you trust it)"):format(tostring(summary)) }
  end
  return require("torchlsp.toml").describe(summary)
end

--- Shows the workspace's torchlsp.toml and what it would make torchlsp
-- run, asks, then trusts it (`torchlsp trust DIR`) and has the running
-- server apply it at once (workspace/didChangeConfiguration, no restart).
-- opts.yes skips the question (:TorchlspTrust!); opts.on_done(ok, message)
-- is called when done.
function M.trust(opts)
  opts = opts or {}
  local bufnr = vim.api.nvim_get_current_buf()
  local root, client = workspace_root(bufnr)
  local file = M.workspace_file(root)
  local function done(ok, msg)
    notify(msg, ok and vim.log.levels.INFO or vim.log.levels.WARN)
    if opts.on_done then
      opts.on_done(ok, msg)
    end
  end
  if file.trust == "absent" then
    done(false, root .. " has no " .. workspace_file)
    return false
  end
  local code_win = vim.api.nvim_get_current_win()
  if not window_of(file.path) then
    vim.cmd("botright split " .. vim.fn.fnameescape(file.path))
    mark_readonly(vim.api.nvim_get_current_buf())
    vim.api.nvim_set_current_win(code_win)
  end
  local lines = M.trust_summary(file.content)
  if not opts.yes then
    local msg = ("Trust %s?\nTrusting it lets torchlsp run, on this machine:\n  %s\nA change to the file needs trust again."):format(
      file.path,
      table.concat(lines, "\n  ")
    )
    if vim.fn.confirm(msg, "&Trust\n&Cancel", 2, "Warning") ~= 1 then
      done(false, "not trusted")
      return false
    end
  end
  local bin = state.binary or M.find_binary(current_config().cmd[1])
  if not bin then
    done(false, "the torchlsp binary was not found, so the file cannot be trusted")
    return false
  end
  local output = {}
  local job = vim.fn.jobstart({ bin, "trust", root }, {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data)
      vim.list_extend(output, data)
    end,
    on_stderr = function(_, data)
      vim.list_extend(output, data)
    end,
    on_exit = function(_, code)
      vim.schedule(function()
        local text = vim.trim(table.concat(output, "\n"))
        if code ~= 0 then
          done(false, "torchlsp trust failed: " .. text)
          return
        end
        for _, c in ipairs(torchlsp_clients()) do
          if c.config.root_dir == root or c == client then
            -- The server pulls the configuration and reads its files again.
            c.notify("workspace/didChangeConfiguration", { settings = c.config.settings })
            -- Neovim 0.7 is never asked for its configuration, so nothing
            -- else says when the server has read its files again.
            refresh_soon(c.id, 800)
          end
        end
        done(true, "trusted " .. file.path)
      end)
    end,
  })
  if job <= 0 then
    done(false, "could not run " .. bin)
    return false
  end
  -- `torchlsp trust` returns at once; bound it anyway.
  vim.defer_fn(function()
    if vim.fn.jobwait({ job }, 0)[1] == -1 then
      vim.fn.jobstop(job)
    end
  end, 20000)
  return true
end

--- Target names: local first, then the configured ones, then those only
-- the server knows (torchlsp.toml, config.toml), each once, sorted.
function M.target_names(client_id)
  local seen, names = { ["local"] = true }, {}
  local function add(name)
    if type(name) == "string" and not seen[name] then
      seen[name] = true
      table.insert(names, name)
    end
  end
  for name in pairs(current_config().targets or {}) do
    add(name)
  end
  local ids = client_id and { client_id } or vim.tbl_keys(state.targets)
  for _, id in ipairs(ids) do
    for _, name in ipairs(state.targets[id] or {}) do
      add(name)
    end
  end
  table.sort(names)
  table.insert(names, 1, "local")
  return names
end

--- The active target of the buffer's client, and its latest status and
-- progress.
function M.status(bufnr)
  local client = M.get_client(bufnr)
  if not client then
    return nil
  end
  local target = state.active[client.id] or current_config().default_target
  local per = state.status[client.id] or {}
  return { target = target, status = target and per[target], progress = state.progress[client.id] or {} }
end

--- A short text for a statusline: "torch 2.11.0@h200 ready", with the
-- running progress while the server works. Empty when not attached.
function M.statusline(bufnr)
  local s = M.status(bufnr)
  if not s then
    return ""
  end
  local st = s.status or {}
  local target = s.target or st.target or "local"
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
  vim.api.nvim_create_user_command("TorchlspCancel", function(opts)
    M.cancel_run(opts.args)
  end, { nargs = "?", desc = "torchlsp: cancel a run (repro, explain) by its id, or every run" })
  vim.api.nvim_create_user_command("TorchlspDoctor", function()
    M.doctor()
  end, { desc = "torchlsp: check the target, the mirror and the index" })
  vim.api.nvim_create_user_command("TorchlspMirror", function()
    M.open_mirror()
  end, { desc = "torchlsp: open the local mirror of the target's sources" })
  vim.api.nvim_create_user_command("TorchlspTrust", function(opts)
    M.trust({ yes = opts.bang })
  end, { bang = true, desc = "torchlsp: review and trust the workspace's torchlsp.toml (! skips the question)" })
end

--- Configures the plugin and starts the server for matching buffers,
-- including those already open.
function M.setup(opts)
  local config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  -- Lists replace, not merge; keymaps = false turns them all off.
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts and opts[key] then
      config[key] = opts[key]
    end
  end
  if opts and opts.keymaps == false then
    config.keymaps = false
  end
  local problems = M.validate(config)
  if #problems > 0 then
    notify("setup: " .. table.concat(problems, "; "), vim.log.levels.ERROR)
    return false
  end
  state.config = config
  state.binary = nil
  state.augroup = vim.api.nvim_create_augroup("torchlsp", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = state.augroup,
    pattern = config.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- Mirror files of any type are read-only, python or not.
  vim.api.nvim_create_autocmd("BufReadPost", {
    group = state.augroup,
    callback = function(args)
      if M.is_mirror(vim.api.nvim_buf_get_name(args.buf)) then
        mark_readonly(args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufEnter", {
    group = state.augroup,
    callback = function(args)
      if M.is_mirror(vim.api.nvim_buf_get_name(args.buf)) then
        return
      end
      local c = M.get_client(args.buf)
      if c then
        state.last_client = c.id
      end
    end,
  })
  if vim.fn.exists("##LspAttach") == 1 then
    -- Python servers started without python_settings get the site too.
    vim.api.nvim_create_autocmd("LspAttach", {
      group = state.augroup,
      callback = function(args)
        local c = args.data and vim.lsp.get_client_by_id(args.data.client_id)
        if c and c.name ~= client_name then
          M.update_python_client(c)
        end
      end,
    })
  end
  create_commands()
  require("torchlsp.traceback").setup(M, state.augroup, config)
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

--- The site each torchlsp client reported, by client id (read-only use).
function M.sites()
  return state.site
end

return M
