-- Metatable and environment tricks that must find nothing dangerous.
setmetatable(_G, { __index = function(_, name) return "fallback:" .. name end })
IO = rawget(_G, "io")
OS_VIA_FALLBACK = os
STRING_META = getmetatable("").__index == string
LOADED = type(package)
GC = collectgarbage("count")
PRINTED = print("hello")
