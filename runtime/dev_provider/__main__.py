"""`python -m runtime.dev_provider`: serve the scripted stand-in (see the package docstring)."""

from runtime.dev_provider.server import main

main()
