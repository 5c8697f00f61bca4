import sys

from cybpe.cli.main import main

sys.exit(main())
