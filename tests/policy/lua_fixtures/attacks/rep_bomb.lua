-- string.rep memory bomb.
X = string.rep("x", 1 << 30)
