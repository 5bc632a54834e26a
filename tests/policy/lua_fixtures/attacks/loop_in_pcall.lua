-- An endless loop that pcall tries to swallow.
while true do
  pcall(function() while true do end end)
end
