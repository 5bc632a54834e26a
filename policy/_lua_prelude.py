"""The Lua side of the sandbox: the plugin's environment, tracking, budget and result encoding.

This chunk runs first in a fresh Lua state with the full standard library. It keeps the dangerous
parts (debug, io, os, package, load of binary chunks) in its own locals and hands the plugin only
an allow-listed environment. Everything the plugin can touch is either a copy or a wrapper, so
changing it never reaches this code.

Chunk names are `=@<n>` (n = index into the file list kept by Python); error messages therefore
start with `@<n>:<line>:`, which Python maps back to the real file.
"""

PRELUDE = r"""
local instructions, max_values, max_depth, read_module, max_text = ...
local sethook, getinfo = debug.sethook, debug.getinfo
local error, type, next, select, tostring = error, type, next, select, tostring
local rawget, rawset, rawlen, rawequal = rawget, rawset, rawlen, rawequal
local setmetatable, getmetatable, pcall, xpcall, load = setmetatable, getmetatable, pcall, xpcall, load
local co_create, co_resume, co_running, co_close = coroutine.create, coroutine.resume, coroutine.running, coroutine.close
local s_format, s_find, s_gsub, s_match, s_sub = string.format, string.find, string.gsub, string.match, string.sub
local t_concat, t_pack, t_unpack = table.concat, table.pack, table.unpack
local math_type, huge = math.type, math.huge
local collect = collectgarbage

local HOOK_EVERY = 1000
local main_thread = co_running()
local state = {budget = instructions // HOOK_EVERY + 1, hook_count = HOOK_EVERY}
local chunk_of = {}          -- chunk name -> file index
local constructors = {}      -- constructor number -> {file, line, closing line, code, line, ...}
local threads = setmetatable({}, {__mode = "k"})

local function plugin_location(level)
  while true do
    local info = getinfo(level, "Sl")
    if info == nil then return nil end
    local file = chunk_of[info.source]
    if file ~= nil and info.currentline > 0 then return file, info.currentline end
    level = level + 1
  end
end

local function encode_location(file, line)
  if file == nil then return nil end
  return (file << 32) | line
end

-- Instruction budget ------------------------------------------------------------------------
local hook
hook = function()
  local left = state.budget
  if left > 0 then state.budget = left - 1 return end
  if state.exhausted_file == nil then
    local file, line = plugin_location(2)
    state.exhausted_file, state.exhausted_line = file or -1, line or 0
    state.hook_count = 1
    sethook(main_thread, hook, "", 1)
    for thread in next, threads do sethook(thread, hook, "", 1) end
    local current = co_running()
    sethook(current, hook, "", 1)
  end
  error("instruction budget exhausted", 0)
end

-- Tracked tables ----------------------------------------------------------------------------
-- (Comparisons with plugin values use rawequal: a plugin's __eq must never run in here.)
-- A proxy is an empty table (so every read and write reaches its metamethods) that keeps its
-- bookkeeping under private keys no plugin can name; `next` and `pairs` only ever show the real
-- table, and `rawget` is wrapped.
local REAL, MADE_BY, KEYS, LOG, ORDER, META = {}, {}, {}, {}, {}, {}
local function field(t, key)
  if type(t) == "table" then return rawget(t, key) end
  return nil
end
-- A plugin's metatable is usually a plugin table itself, so a proxy.
local function meta_field(meta, name)
  return rawget(rawget(meta, REAL) or meta, name)
end
local base = {}              -- the sandbox's own globals
local removed = {}           -- sandbox globals the plugin set to nil
local globals_table = {}     -- globals the plugin defined
local G                      -- the plugin's _G / _ENV

local last_closed              -- the table whose constructor finished last
local line_fixes = {}          -- file -> {[line Lua reports] = line the statement starts}

local function record(proxy, key, value)
  local log = rawget(proxy, LOG)
  if log == nil then
    log = {}
    rawset(proxy, LOG, log)
    rawset(proxy, ORDER, {})
  end
  if value == nil then
    log[key] = nil
  else
    if log[key] == nil then
      local order = rawget(proxy, ORDER)
      order[#order + 1] = key
    end
    local file, line = plugin_location(2)
    if file == nil then
      log[key] = 0
    else
      if rawequal(value, last_closed) then
        local info = constructors[rawget(value, MADE_BY)]
        -- `X = {` ... `}`: Lua reports the line of `}`; the statement starts at `{`.
        if info[1] == file and info[3] == line then line = info[2] end
      else
        local fixes = line_fixes[file]
        local first = fixes and fixes[line]
        if first ~= nil then line = first end
      end
      log[key] = (file << 32) | line
    end
  end
end

local function check_key(key)
  if key == nil then error("index is nil", 0) end
  if key ~= key then error("index is NaN", 0) end
end

local function tracked_set(proxy, key, value)
  check_key(key)
  local real = rawget(proxy, REAL)
  real[key] = value
  if rawequal(proxy, G) then removed[key] = (value == nil) or nil end
  record(proxy, key, value)
end

local proxy_meta = {}
proxy_meta.__index = function(proxy, key)
  local value = rawget(proxy, REAL)[key]
  if value ~= nil then return value end
  if rawequal(proxy, G) and not removed[key] then
    value = base[key]
    if value ~= nil then return value end
  end
  local meta = rawget(proxy, META)
  if meta ~= nil then
    local handler = meta_field(meta, "__index")
    if type(handler) == "function" then return handler(proxy, key) end
    if handler ~= nil then return handler[key] end
  end
  return nil
end
proxy_meta.__newindex = function(proxy, key, value)
  local meta = rawget(proxy, META)
  if meta ~= nil and rawget(proxy, REAL)[key] == nil then
    local handler = meta_field(meta, "__newindex")
    if type(handler) == "function" then return handler(proxy, key, value) end
    if handler ~= nil then handler[key] = value return end
  end
  check_key(key)
  rawget(proxy, REAL)[key] = value
  if rawequal(proxy, G) then removed[key] = (value == nil) or nil end
  record(proxy, key, value)
end
proxy_meta.__len = function(proxy) return #rawget(proxy, REAL) end
local function plugin_next(t, key)
  if type(t) ~= "table" then
    error("bad argument #1 to 'next' (table expected, got " .. type(t) .. ")", 2)
  end
  local real = field(t, REAL)
  if real ~= nil then return next(real, key) end
  return next(t, key)
end
proxy_meta.__pairs = function(proxy) return plugin_next, proxy, nil end
proxy_meta.__metatable = false

local function wrap(real, number)
  local proxy = setmetatable({}, proxy_meta)
  rawset(proxy, REAL, real)
  rawset(proxy, MADE_BY, number)
  return proxy
end

local key_stack, key_top = {}, 0
local function open_constructor() return key_top end
local function push_key(key) key_top = key_top + 1 key_stack[key_top] = key return key end
local function close_constructor(height, number, real)
  local proxy = wrap(real, number)
  if key_top > height then
    local keys = {}
    for i = height + 1, key_top do keys[i - height] = key_stack[i] key_stack[i] = nil end
    rawset(proxy, KEYS, keys)
    key_top = height
  end
  last_closed = proxy
  return proxy
end

-- The plugin's environment --------------------------------------------------------------------
local function copy(library, without)
  local result = {}
  for name, value in next, library do
    if name ~= without then result[name] = value end
  end
  return result
end

local function readonly(target, what)
  return setmetatable({}, {
    __index = target,
    __newindex = function() error(what .. " is read-only", 2) end,
    __metatable = false,
  })
end

local string_copy = copy(string, "dump")
getmetatable("").__index = string_copy
local string_view = readonly({__index = string_copy}, "the string metatable")

-- The wrappers check their arguments as the functions they stand for do: the prelude is loaded
-- without debug information, so an error raised inside it could not name the function.
local function expect_table(value, position, name)
  if type(value) ~= "table" then
    error(s_format("bad argument #%d to '%s' (table expected, got %s)", position, name, type(value)), 3)
  end
end

local function plugin_rawget(t, key)
  expect_table(t, 1, "rawget")
  local real = field(t, REAL)
  if real == nil then return rawget(t, key) end
  local value = rawget(real, key)
  if value == nil and rawequal(t, G) and not removed[key] then value = base[key] end
  return value
end

local function plugin_rawset(t, key, value)
  expect_table(t, 1, "rawset")
  if rawequal(t, string_view) then error("the string metatable is read-only", 2) end
  if field(t, REAL) == nil then return rawset(t, key, value) end
  tracked_set(t, key, value)
  return t
end

local function plugin_rawlen(v)
  local kind = type(v)
  if kind ~= "table" and kind ~= "string" then
    error("bad argument #1 to 'rawlen' (table or string expected, got " .. kind .. ")", 2)
  end
  return rawlen(field(v, REAL) or v)
end

local function plugin_setmetatable(t, meta)
  expect_table(t, 1, "setmetatable")
  if meta ~= nil and type(meta) ~= "table" then
    error("bad argument #2 to 'setmetatable' (nil or table expected)", 2)
  end
  if field(t, REAL) == nil then
    meta = field(meta, REAL) or meta  -- Lua reads metamethods raw, so hand it the real table
    -- Lua runs finalizers with hooks switched off, out of the budget's reach.
    if type(meta) == "table" and rawget(meta, "__gc") ~= nil then
      error("finalizers (__gc) are not available in configuration plugins", 2)
    end
    return setmetatable(t, meta)
  end
  local current = rawget(t, META)
  if current ~= nil and meta_field(current, "__metatable") ~= nil then
    error("cannot change a protected metatable", 2)
  end
  rawset(t, META, meta)
  return t
end

local function plugin_getmetatable(v)
  if field(v, REAL) ~= nil then
    local meta = rawget(v, META)
    if meta ~= nil then
      local protected = meta_field(meta, "__metatable")
      if protected ~= nil then return protected end
    end
    return meta
  end
  if type(v) == "string" then return string_view end
  return getmetatable(v)
end

local function plugin_load(chunk, _, _, ...)
  local env = G
  if select("#", ...) > 0 then env = ... end
  return load(chunk, "=(load)", "t", env)
end

-- A budget error raised inside the count hook runs the message handler with hooks switched off,
-- so a plugin's handler must not run once the budget is gone.
local function plugin_xpcall(f, handler, ...)
  return xpcall(f, function(message)
    if state.exhausted_file ~= nil then return message end
    return handler(message)
  end, ...)
end

local function plugin_create(f)
  if type(f) ~= "function" then
    error("bad argument #1 to 'create' (function expected, got " .. type(f) .. ")", 2)
  end
  local thread = co_create(f)
  threads[thread] = true
  sethook(thread, hook, "", state.hook_count)
  return thread
end

local function plugin_wrap(f)
  if type(f) ~= "function" then
    error("bad argument #1 to 'wrap' (function expected, got " .. type(f) .. ")", 2)
  end
  local thread = plugin_create(f)
  return function(...)
    local result = t_pack(co_resume(thread, ...))
    if result[1] then return t_unpack(result, 2, result.n) end
    co_close(thread)
    error(result[2], 0)
  end
end

local function register(file, table_source)
  local list, fixes = load(table_source, "=constructors", "t", {})()
  local offset = #constructors
  for i = 1, #list do constructors[offset + i] = list[i] end
  line_fixes[file] = fixes
  chunk_of["=@" .. file] = file
end

local loaded, loading = {}, {}
local function plugin_require(name)
  if type(name) ~= "string" then
    error("bad argument #1 to 'require' (string expected, got " .. type(name) .. ")", 2)
  end
  local cached = loaded[name]
  if cached ~= nil then return cached end
  if loading[name] then error("module '" .. name .. "' requires itself (circular require)", 2) end
  local file, source, table_source = read_module(name)
  if file == nil then error(source, 2) end
  local chunk, problem = load(source, "=@" .. file, "t", G)
  if chunk == nil then error(problem, 0) end
  register(file, table_source)
  loading[name] = true
  local result = chunk(close_constructor, open_constructor, push_key, name)
  loading[name] = nil
  if result == nil then result = true end
  loaded[name] = result
  return result
end

for _, name in next, {"assert", "error", "ipairs", "pairs", "pcall", "select", "tonumber",
                      "tostring", "type", "rawequal"} do
  base[name] = _G[name]
end
base.next, base.xpcall = plugin_next, plugin_xpcall
base.rawget, base.rawset, base.rawlen = plugin_rawget, plugin_rawset, plugin_rawlen
base.setmetatable, base.getmetatable = plugin_setmetatable, plugin_getmetatable
base.load, base.require = plugin_load, plugin_require
base.print = function() end
base.collectgarbage = function() return 0 end
base._VERSION = _VERSION
base.string = string_copy
base.table = copy(table)
base.math = copy(math)
base.utf8 = copy(utf8)
local coroutine_copy = copy(coroutine)
coroutine_copy.create, coroutine_copy.wrap = plugin_create, plugin_wrap
base.coroutine = coroutine_copy

-- bit32: AI Studio runs Lua 5.2, whose plugins may use it; built on 5.4's integer operators.
do
  local floor, fmod, tointeger, MASK = math.floor, math.fmod, math.tointeger, 0xFFFFFFFF
  local to_number = tonumber
  local function u32(x, i)
    if type(x) ~= "number" then
      error("bad argument #" .. i .. " to bit32 function (number expected, got " .. type(x) .. ")", 3)
    end
    local n = floor(x)
    if math_type(n) ~= "integer" then n = tointeger(fmod(n, 4294967296.0)) or 0 end
    return n & MASK
  end
  local function count(n, i)
    local number = n
    if type(n) == "string" then number = to_number(n) end  -- as math.floor reads it
    if type(number) ~= "number" then
      error("bad argument #" .. i .. " to bit32 function (number expected, got " .. type(n) .. ")", 3)
    end
    return floor(number)
  end
  local function shift(x, n)
    if n <= -32 or n >= 32 then return 0 end
    if n >= 0 then return (x << n) & MASK end
    return x >> -n
  end
  local function field_mask(field, width, i)
    field, width = floor(u32(field, i)), floor(u32(width or 1, i + 1))
    if field > 31 or width < 1 or field + width > 32 then
      error("bad argument to bit32 function (trying to access non-existent bits)", 3)
    end
    return field, (1 << width) - 1
  end
  local bit32 = {}
  function bit32.band(...)
    local r = MASK
    for i = 1, select("#", ...) do r = r & u32((select(i, ...)), i) end
    return r
  end
  function bit32.bor(...)
    local r = 0
    for i = 1, select("#", ...) do r = r | u32((select(i, ...)), i) end
    return r
  end
  function bit32.bxor(...)
    local r = 0
    for i = 1, select("#", ...) do r = r ~ u32((select(i, ...)), i) end
    return r
  end
  function bit32.btest(...) return bit32.band(...) ~= 0 end
  function bit32.bnot(x) return (~u32(x, 1)) & MASK end
  function bit32.lshift(x, n) return shift(u32(x, 1), count(n, 2)) end
  function bit32.rshift(x, n) return shift(u32(x, 1), -count(n, 2)) end
  function bit32.arshift(x, n)
    x, n = u32(x, 1), count(n, 2)
    if n <= 0 or x & 0x80000000 == 0 then return shift(x, -n) end
    if n >= 32 then return MASK end
    return ((x >> n) | (MASK << (32 - n))) & MASK
  end
  function bit32.lrotate(x, n)
    x, n = u32(x, 1), count(n, 2) % 32
    return ((x << n) | (x >> (32 - n))) & MASK
  end
  function bit32.rrotate(x, n) return bit32.lrotate(x, -count(n, 2)) end
  function bit32.extract(n, field, width)
    local f, m = field_mask(field, width, 2)
    return (u32(n, 1) >> f) & m
  end
  function bit32.replace(n, v, field, width)
    local f, m = field_mask(field, width, 3)
    return (u32(n, 1) & ~(m << f) & MASK) | ((u32(v, 2) & m) << f)
  end
  base.bit32 = bit32
end

G = setmetatable({}, proxy_meta)
rawset(G, REAL, globals_table)
base._G = G

-- Running -----------------------------------------------------------------------------------
local function message_handler(message)
  if type(message) ~= "string" then
    message = "error raised with a " .. type(message) .. " value"
  end
  if s_find(message, "^@%d+:%d+: ") == nil then
    local file, line = plugin_location(2)
    if file ~= nil then message = "@" .. file .. ":" .. line .. ": " .. message end
  end
  return message
end

local control = {}
control.state = state
control.hook = hook
control.hook_every = HOOK_EVERY

-- Only bytecode compiled by the sandbox itself (from the plugin's text) comes through here.
function control.load_compiled(bytecode)
  return load(bytecode, nil, "b", G)
end

function control.run(chunk, file, table_source)
  register(file, table_source)
  return xpcall(chunk, message_handler, close_constructor, open_constructor, push_key)
end

-- Result encoding (JSON text) -----------------------------------------------------------------
local escapes = {['"'] = '\\"', ["\\"] = "\\\\"}
for byte = 0, 31 do escapes[string.char(byte)] = s_format("\\u%04x", byte) end
escapes["\127"] = "\\u007f"

local function quote(s) return '"' .. s_gsub(s, '[%c"\\]', escapes) .. '"' end

local function number_text(n)
  if math_type(n) == "integer" then return s_format("%d", n) end
  if n ~= n then return "NaN" end
  if n == huge then return "Infinity" end
  if n == -huge then return "-Infinity" end
  local text = s_format("%.17g", n)
  if s_find(text, "[%.eEn]") == nil then text = text .. ".0" end
  return text
end

local scalar_key = {string = true, number = true}

-- Raw reads only: a metatable the plugin gave a plain table must not run once the hook is off.
local function ordered_entries(t)
  local real = field(t, REAL) or t
  local keys, locations, seen = {}, {}, {}
  local count = 0
  while rawget(real, count + 1) ~= nil do
    count = count + 1
    keys[count] = count
    seen[count] = true
  end
  local order = {}
  local number = field(t, MADE_BY)
  if number ~= nil then
    local info = constructors[number]
    local file, runtime_keys = info[1], field(t, KEYS)
    local position, bracket = 0, 0
    local last_positional_line
    for i = 4, #info, 2 do
      local code, line = info[i], info[i + 1]
      local location = (file << 32) | line
      if code == 0 then
        position = position + 1
        last_positional_line = (i == #info - 1) and location or nil
      else
        local key = code
        if code == 1 then
          bracket = bracket + 1
          key = runtime_keys and runtime_keys[bracket]
        end
        if key ~= nil then
          locations[key] = location
          order[#order + 1] = key
        end
      end
    end
    position = 0
    for i = 4, #info, 2 do
      if info[i] == 0 then
        position = position + 1
        locations[position] = (file << 32) | info[i + 1]
      end
    end
    if last_positional_line ~= nil then
      for index = position + 1, count do locations[index] = last_positional_line end
    end
  end
  local log = field(t, LOG)
  if log ~= nil then
    for _, key in next, field(t, ORDER) do
      local location = log[key]
      if location ~= nil then
        locations[key] = location
        order[#order + 1] = key
      end
    end
  end
  for _, key in next, order do
    if not seen[key] and rawget(real, key) ~= nil then
      count = count + 1
      keys[count] = key
      seen[key] = true
    end
  end
  for key in next, real do
    if not seen[key] then
      count = count + 1
      keys[count] = key
      seen[key] = true
    end
  end
  return keys, count, locations, real
end

local function constructor_location(t)
  local number = field(t, MADE_BY)
  if number == nil then return nil end
  local info = constructors[number]
  return (info[1] << 32) | info[2]
end

-- Shape: a table is `[constructor location, key, value, location, key, value, location, ...]`,
-- a function is `{"f": location}`; locations are `file << 32 | line` or null.
function control.encode()
  collect("stop")
  sethook()
  local out, n = {}, 0
  local values, text_bytes = 0, 0
  local on_path = {}
  local path = {}
  local failure

  local function fail(message, location, depth)
    local parts = {}
    for i = 1, depth do
      local key = path[i]
      if type(key) == "string" and #key > 40 then key = s_sub(key, 1, 40) .. "..." end
      if i == 1 then parts[#parts + 1] = tostring(key)
      elseif i > 4 and i < depth - 1 then
        if i == 5 then parts[#parts + 1] = "..." end
      elseif type(key) == "string" then
        parts[#parts + 1] = '["' .. key .. '"]'
      else parts[#parts + 1] = "[" .. tostring(key) .. "]" end
    end
    failure = {t_concat(parts) .. message, location}
    error(failure, 0)
  end

  local function count_text(s, location, depth)
    text_bytes = text_bytes + #s
    if text_bytes > max_text then
      fail(" is one string too many: the plugin's globals may hold at most " .. max_text .. " bytes of strings (keys and values together)", location, depth)
    end
  end

  local encode_table
  local function encode_value(value, depth, location)
    values = values + 1
    if values > max_values then
      fail(" is one value too many: the plugin's globals may hold at most " .. max_values .. " values", location, depth)
    end
    local kind = type(value)
    if kind == "string" then
      count_text(value, location, depth)
      n = n + 1
      if s_find(value, '[%c"\\]') == nil then out[n] = '"' .. value .. '"' else out[n] = quote(value) end
    elseif kind == "number" then n = n + 1 out[n] = number_text(value)
    elseif kind == "boolean" then n = n + 1 out[n] = value and "true" or "false"
    elseif kind == "table" then encode_table(value, depth, location)
    elseif kind == "function" then
      local file = chunk_of[getinfo(value, "S").source]
      n = n + 1
      if file == nil then out[n] = '{"f":null}'
      else out[n] = '{"f":' .. ((file << 32) | getinfo(value, "S").linedefined) .. "}" end
    else
      n = n + 1 out[n] = "null"
    end
  end

  encode_table = function(t, depth, location)
    if on_path[t] then fail(" contains itself; configuration values must form a tree", location, depth) end
    if depth > max_depth then
      fail(" nests tables deeper than " .. max_depth .. " levels", location, depth)
    end
    on_path[t] = true
    local keys, count, locations, real = ordered_entries(t)
    local where = constructor_location(t)
    n = n + 1
    if where == nil then out[n] = "[null" else out[n] = "[" .. where end
    local inner = depth + 1
    for i = 1, count do
      local key = keys[i]
      local value = rawget(real, key)
      local key_kind, value_kind = type(key), type(value)
      if (key_kind == "string" or key_kind == "number") and value_kind ~= "thread" and value_kind ~= "userdata" then
        local entry_location = locations[key]
        path[inner] = key
        n = n + 1
        if key_kind == "number" then out[n] = "," .. number_text(key) .. ","
        else
          count_text(key, entry_location or location, inner)
          if s_find(key, '[%c"\\]') == nil then out[n] = ',"' .. key .. '",'
          else out[n] = "," .. quote(key) .. "," end
        end
        encode_value(value, inner, entry_location or location)
        n = n + 1
        if entry_location == nil then out[n] = ",null" else out[n] = "," .. entry_location end
      end
    end
    n = n + 1 out[n] = "]"
    on_path[t] = nil
  end

  local ok, problem = pcall(encode_table, G, 0, nil)
  if not ok then
    if rawequal(problem, failure) then return nil, failure[1], failure[2] end
    return nil, tostring(problem), nil
  end
  return t_concat(out, "", 1, n)
end

return control
"""
