-- load of string.dump output: binary chunks are refused.
local f = function() return 1 end
X = load(string.dump(f))
