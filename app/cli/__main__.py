"""`python -m app.cli`: the figsearch command line."""
from app.cli import main

main()
