"""`python -m maps_autogen.cli`: the `maps` command."""

from maps_autogen.cli import main

if __name__ == "__main__":
    main()
