-- init file for the screenshot run: a real TUI Neovim inside tmux, with the
-- plugin configured from the same environment variables as e2e.lua.
-- Helpers in _G.torchlsp_screens are driven by screens.sh through send-keys.
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ":h"))
vim.cmd("filetype plugin on")
vim.cmd("syntax on")
vim.o.termguicolors = true
vim.o.number = true
vim.o.laststatus = 2
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. "I"
-- Neovim 0.7's default float colours are magenta; set calmer ones that
-- every version accepts.
local function calm_floats()
  vim.cmd([[
    highlight NormalFloat guifg=#d0d0d0 guibg=#2d323c
    highlight FloatBorder guifg=#7f8c98 guibg=#2d323c
    highlight Pmenu guifg=#d0d0d0 guibg=#2d323c
    highlight DiagnosticVirtualTextWarn guifg=#e0af68
  ]])
end
calm_floats()
vim.o.statusline = [[ %f %m%=%{luaeval("require'torchlsp'.statusline()")} ]]

local function env(name, default)
  local v = os.getenv(name)
  return (v == nil or v == "") and default or v
end

local torchlsp = require("torchlsp")
torchlsp.setup({
  cmd = { vim.fn.fnamemodify(env("TORCHLSP_BIN", "bin/torchlsp"), ":p"), "serve", "--stdio" },
  targets = {
    fixture = {
      python = env("TORCHLSP_PYTHON", "/usr/bin/python3"),
      env = { PYTHONPATH = vim.fn.fnamemodify(env("TORCHLSP_PYTHONPATH", "editors/testdata/site"), ":p") },
    },
    -- The interpreter's own torch (Debian's 1.13): the repro's stand-in backend.
    debian = { python = env("TORCHLSP_PYTHON", "/usr/bin/python3") },
  },
  default_target = "fixture",
})

local function goto_text(text, offset)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for i, line in ipairs(lines) do
    local s = line:find(text, 1, true)
    if s then
      vim.api.nvim_win_set_cursor(0, { i, s - 1 + (offset or 0) })
      return true
    end
  end
  return false
end

-- Retries a hover on `compile` until the server answers with text, then shows it.
local function hover(attempts_left)
  goto_text("torch.compile(", #"torch.")
  local params = vim.lsp.util.make_position_params()
  vim.lsp.buf_request_all(0, "textDocument/hover", params, function(results)
    for _, r in pairs(results) do
      if r.result and r.result.contents then
        local lines = vim.lsp.util.convert_input_to_markdown_lines(r.result.contents)
        lines = vim.lsp.util.trim_empty_lines(lines)
        if #lines > 0 then
          vim.lsp.util.open_floating_preview(lines, "markdown", { border = "rounded", focus_id = "textDocument/hover" })
          return
        end
      end
    end
    if attempts_left > 0 then
      vim.defer_fn(function()
        hover(attempts_left - 1)
      end, 1000)
    end
  end)
end

-- Waits for the diagnostic on the compile line, then lists its code actions.
local function quickfix(attempts_left)
  -- Inside the flagged argument, where the diagnostic's range is.
  goto_text('"reduce-overhead"', 1)
  local lnum = vim.api.nvim_win_get_cursor(0)[1] - 1
  if #vim.diagnostic.get(0, { lnum = lnum }) == 0 then
    if attempts_left > 0 then
      vim.defer_fn(function()
        quickfix(attempts_left - 1)
      end, 1000)
    end
    return
  end
  vim.lsp.buf.code_action()
end

-- Runs the repro on the interpreter's own torch from the compile line; the
-- report opens in a split. Shrinks the code window so the report's table
-- gets the room.
local function repro()
  vim.cmd("silent! only")
  goto_text("torch.compile(")
  vim.api.nvim_create_autocmd("BufWinEnter", {
    pattern = "report.md",
    once = true,
    callback = function()
      vim.schedule(function()
        vim.wo.wrap = false
        vim.wo.number = false
        vim.cmd("resize 22")
        vim.cmd("normal! gg")
      end)
    end,
  })
  require("torchlsp").repro("debian")
end

-- Writes a real traceback of the fixture target (a workspace script that
-- calls into the fixture torch) to run.log, opens it, and loads it into
-- the quickfix list with :TorchlspTraceback: the script opens at its frame
-- with the exception on it, torch's frame in the list below it.
local function traceback()
  vim.cmd("silent! only")
  local ws
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name:match("/train%.py$") then
      ws = vim.fn.fnamemodify(name, ":p:h")
    end
  end
  local script = ws .. "/crash.py"
  vim.fn.writefile({ "import torch._inductor.cudagraph_trees as trees", "", "", 'trees.get_obj(trees.local, "tree_manager_containers")' }, script)
  local python = env("TORCHLSP_PYTHON", "/usr/bin/python3")
  local pythonpath = vim.fn.fnamemodify(env("TORCHLSP_PYTHONPATH", "editors/testdata/site"), ":p")
  local out = vim.fn.system({ "env", "PYTHONPATH=" .. pythonpath, python, script })
  vim.fn.writefile(vim.split("epoch 3 step 120 loss 0.51\n" .. out, "\n", { plain = true }), ws .. "/run.log")
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/run.log"))
  vim.cmd("TorchlspTraceback")
end

_G.torchlsp_screens = { hover = hover, quickfix = quickfix, repro = repro, traceback = traceback, goto_text = goto_text }
