-- A module next to plugin.lua, pulled in with require("icon"); it sets a global the plugin reads.
SVG = [[<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16"/></svg>]]
