import sys

from engine.cli.main import main

sys.exit(main(sys.argv[1:]))
