-- A handcrafted binary chunk.
local chunk, problem = load("\27Lua\84\0\25\147\13\10\26\10")
assert(chunk, problem)
