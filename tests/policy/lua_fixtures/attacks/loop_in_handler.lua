-- A message handler that never returns.
xpcall(function() while true do end end, function() while true do end end)
X = "escaped"
