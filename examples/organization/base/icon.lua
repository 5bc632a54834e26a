-- The icon of the base plugin; plugin.lua does require("icon") and ICON_SVG = SVG.
SVG = [[<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><rect x="3" y="3" width="18" height="18" rx="3"/></svg>]]
