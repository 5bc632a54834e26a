-- require with a path separator.
require("sub/module")
