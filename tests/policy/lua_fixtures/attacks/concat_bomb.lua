-- Doubling a string until memory runs out.
local s = "0123456789abcdef"
for i = 1, 40 do s = s .. s end
X = s
