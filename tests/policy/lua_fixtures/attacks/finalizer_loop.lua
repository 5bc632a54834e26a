-- A finalizer that never returns; it would run when the Lua state is closed.
local meta = load("return { __gc = function() while true do end end }")()
setmetatable(load("return {}")(), meta)
X = 1
