-- A table that contains itself.
LOOP = {}
LOOP.self = LOOP
