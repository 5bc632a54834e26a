-- coroutine.wrap inside pcall, repeatedly.
while true do
  pcall(coroutine.wrap(function() while true do end end))
end
