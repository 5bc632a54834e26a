-- A removed global: the file system must stay out of reach.
X = 1
dofile("/etc/passwd")
