-- rawset on the string metatable.
rawset(getmetatable(""), "__index", {})
