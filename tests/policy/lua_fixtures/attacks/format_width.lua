-- A giant format width.
X = string.format("%99999999d", 1)
