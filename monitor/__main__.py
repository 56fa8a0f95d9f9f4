"""`python -m monitor` runs the command line."""

from monitor.cli import main

if __name__ == "__main__":
    main()
