-- Replace the string metatable entry.
local meta = getmetatable("")
meta.__index = { upper = function() return "pwned" end }
