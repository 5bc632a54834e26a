-- An endless loop.
X = 1
while true do end
