-- require outside the plugin folder.
require("../secret")
