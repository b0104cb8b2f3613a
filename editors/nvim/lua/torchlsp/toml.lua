-- The parts of a torchlsp.toml that decide what runs, for the trust prompt
-- and :checkhealth: a reader of the TOML torchlsp.toml is written in
-- (tables, dotted keys, strings, arrays, inline tables). The server's own
-- parser stays the judge of validity.
local M = {}

local Parser = {}
Parser.__index = Parser

local function new_parser(s)
  return setmetatable({ s = s, i = 1, root = {} }, Parser)
end

function Parser:err(want)
  local line = select(2, self.s:sub(1, self.i - 1):gsub("\n", "")) + 1
  error(("line %d: expected %s"):format(line, want), 0)
end

function Parser:peek(n)
  return self.s:sub(self.i, self.i + (n or 1) - 1)
end

function Parser:skip_space()
  self.i = self.s:find("[^ \t]", self.i) or (#self.s + 1)
end

-- skip_blank skips spaces, newlines and comments.
function Parser:skip_blank()
  while true do
    self:skip_space()
    local c = self:peek()
    if c == "#" then
      self.i = self.s:find("\n", self.i, true) or (#self.s + 1)
    elseif c == "\n" or c == "\r" then
      self.i = self.i + 1
    else
      return
    end
  end
end

function Parser:expect(tok)
  self:skip_space()
  if self:peek(#tok) ~= tok then
    self:err("'" .. tok .. "'")
  end
  self.i = self.i + #tok
end

local escapes = { b = "\b", t = "\t", n = "\n", f = "\f", r = "\r", ['"'] = '"', ["\\"] = "\\" }

local function utf8_char(cp)
  if cp < 0x80 then
    return string.char(cp)
  elseif cp < 0x800 then
    return string.char(0xC0 + math.floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 0x1000), 0x80 + math.floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
  return string.char(
    0xF0 + math.floor(cp / 0x40000),
    0x80 + math.floor(cp / 0x1000) % 0x40,
    0x80 + math.floor(cp / 0x40) % 0x40,
    0x80 + cp % 0x40
  )
end

function Parser:string()
  local q = self:peek()
  local multi = self:peek(3) == q:rep(3)
  local close = multi and q:rep(3) or q
  self.i = self.i + #close
  if multi and self:peek() == "\n" then
    self.i = self.i + 1
  end
  local out = {}
  while true do
    if self.i > #self.s then
      self:err("the end of a string")
    end
    if self:peek(#close) == close then
      self.i = self.i + #close
      return table.concat(out)
    end
    local c = self:peek()
    self.i = self.i + 1
    if c == "\n" and not multi then
      self:err("the end of a string")
    end
    if c ~= "\\" or q == "'" then
      table.insert(out, c)
    else
      local e = self:peek()
      self.i = self.i + 1
      if escapes[e] then
        table.insert(out, escapes[e])
      elseif e == "u" or e == "U" then
        local len = e == "u" and 4 or 8
        local cp = tonumber(self.s:sub(self.i, self.i + len - 1), 16)
        if not cp then
          self:err("a unicode escape")
        end
        table.insert(out, utf8_char(cp))
        self.i = self.i + len
      elseif multi and e:match("%s") then
        self.i = self.s:find("%S", self.i) or (#self.s + 1)
      else
        self:err("an escape, not \\" .. e)
      end
    end
  end
end

function Parser:key()
  self:skip_space()
  local c = self:peek()
  if c == '"' or c == "'" then
    return self:string()
  end
  local k = self.s:match("^[%w_-]+", self.i)
  if not k then
    self:err("a key")
  end
  self.i = self.i + #k
  return k
end

function Parser:key_path()
  local keys = { self:key() }
  while true do
    self:skip_space()
    if self:peek() ~= "." then
      return keys
    end
    self.i = self.i + 1
    table.insert(keys, self:key())
  end
end

function Parser:table_at(from, keys, upto)
  local t = from
  for n = 1, upto or #keys do
    local k = keys[n]
    local next_t = t[k]
    if next_t == nil then
      next_t = {}
      t[k] = next_t
    elseif type(next_t) ~= "table" then
      self:err("key " .. k .. " to be a table")
    elseif next_t[#next_t] ~= nil and type(next_t[#next_t]) == "table" and vim.tbl_islist(next_t) then
      next_t = next_t[#next_t]
    end
    t = next_t
  end
  return t
end

function Parser:assign(t, keys, value)
  local parent = self:table_at(t, keys, #keys - 1)
  parent[keys[#keys]] = value
end

function Parser:value()
  self:skip_space()
  local c = self:peek()
  if c == '"' or c == "'" then
    return self:string()
  elseif c == "[" then
    self.i = self.i + 1
    local out = {}
    while true do
      self:skip_blank()
      if self:peek() == "]" then
        self.i = self.i + 1
        return out
      end
      table.insert(out, self:value())
      self:skip_blank()
      if self:peek() == "," then
        self.i = self.i + 1
      elseif self:peek() ~= "]" then
        self:err("',' or ']'")
      end
    end
  elseif c == "{" then
    self.i = self.i + 1
    local t = {}
    while true do
      self:skip_space()
      if self:peek() == "}" then
        self.i = self.i + 1
        return t
      end
      local keys = self:key_path()
      self:expect("=")
      self:assign(t, keys, self:value())
      self:skip_space()
      if self:peek() == "," then
        self.i = self.i + 1
      elseif self:peek() ~= "}" then
        self:err("',' or '}'")
      end
    end
  end
  local word = self.s:match("^[^%s,%]}#]+", self.i)
  if not word then
    self:err("a value")
  end
  self.i = self.i + #word
  if word == "true" or word == "false" then
    return word == "true"
  end
  return tonumber((word:gsub("_", ""))) or word
end

function Parser:end_of_line()
  self:skip_space()
  if self:peek() == "#" then
    self.i = self.s:find("\n", self.i, true) or (#self.s + 1)
  end
  local c = self:peek()
  if self.i <= #self.s and c ~= "\n" and c ~= "\r" then
    self:err("the end of the line")
  end
end

function Parser:document()
  local current = self.root
  while true do
    self:skip_blank()
    if self.i > #self.s then
      return self.root
    end
    if self:peek() == "[" then
      local array = self:peek(2) == "[["
      self.i = self.i + (array and 2 or 1)
      local keys = self:key_path()
      self:expect(array and "]]" or "]")
      if array then
        local parent = self:table_at(self.root, keys, #keys - 1)
        local list = parent[keys[#keys]] or {}
        parent[keys[#keys]] = list
        current = {}
        table.insert(list, current)
      else
        current = self:table_at(self.root, keys)
      end
    else
      local keys = self:key_path()
      self:expect("=")
      self:assign(current, keys, self:value())
    end
    self:end_of_line()
  end
end

--- Parses TOML text into Lua tables; raises "line N: expected ..." on
-- what it cannot read.
function M.parse(text)
  return new_parser(text):document()
end

local function strings(v)
  if type(v) ~= "table" then
    return nil
  end
  for _, x in ipairs(v) do
    if type(x) ~= "string" then
      return nil
    end
  end
  return v
end

--- What a workspace file would make torchlsp do:
-- { default = NAME?, targets = { { name, python, ssh?, jump?, exec?, env_names } ... } },
-- targets sorted by name.
function M.summarize(text)
  local root = M.parse(text)
  local out = { targets = {} }
  if type(root.default) == "string" then
    out.default = root.default
  end
  if type(root.targets) == "table" then
    for name, raw in pairs(root.targets) do
      if type(raw) == "table" then
        local env_names = {}
        if type(raw.env) == "table" then
          for k in pairs(raw.env) do
            table.insert(env_names, k)
          end
          table.sort(env_names)
        end
        table.insert(out.targets, {
          name = name,
          python = (type(raw.python) == "string" and raw.python ~= "") and raw.python or "python3",
          ssh = type(raw.ssh) == "string" and raw.ssh or nil,
          jump = strings(raw.jump),
          exec = strings(raw.exec),
          env_names = env_names,
        })
      end
    end
  end
  table.sort(out.targets, function(a, b)
    return a.name < b.name
  end)
  return out
end

local function quote(w)
  if w:match("^[%w@%%+=:,./_-]+$") or w:match("^[%w_]+=…$") then
    return w
  end
  return "'" .. w:gsub("'", "'\\''") .. "'"
end

--- The command line a target starts, as a person would type it (env
-- values are never shown).
function M.command_line(t)
  local words = {}
  if t.ssh then
    table.insert(words, "ssh")
    if t.jump and #t.jump > 0 then
      table.insert(words, "-J")
      table.insert(words, table.concat(t.jump, ","))
    end
    table.insert(words, t.ssh)
  end
  for _, w in ipairs(t.exec or {}) do
    table.insert(words, w)
  end
  if #t.env_names > 0 then
    table.insert(words, "env")
    for _, n in ipairs(t.env_names) do
      table.insert(words, n .. "=…")
    end
  end
  table.insert(words, t.python)
  return table.concat(vim.tbl_map(quote, words), " ")
end

--- One line a target, then the default: what trusting the file allows.
function M.describe(summary)
  local lines = {}
  for _, t in ipairs(summary.targets) do
    table.insert(lines, t.name .. ": " .. M.command_line(t))
  end
  if summary.default then
    table.insert(lines, "default target: " .. summary.default)
  end
  if #lines == 0 then
    lines = { "no targets" }
  end
  return lines
end

return M
