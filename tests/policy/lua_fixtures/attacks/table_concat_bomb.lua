-- table.concat of a huge table.
local t = {}
for i = 1, 1 << 24 do t[i] = "0123456789abcdef" end
X = table.concat(t)
