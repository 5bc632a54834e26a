-- A chain of tables nested far too deep.
local t = {}
for i = 1, 10000 do t = { t } end
DEEP = t
