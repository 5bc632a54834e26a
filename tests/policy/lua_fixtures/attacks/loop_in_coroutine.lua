-- An endless loop inside a coroutine.
local co = coroutine.create(function() while true do end end)
coroutine.resume(co)
X = "escaped"
