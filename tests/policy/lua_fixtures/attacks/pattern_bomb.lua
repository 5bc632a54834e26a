-- A pattern with exponential backtracking (one C call).
X = string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")
