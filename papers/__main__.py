import sys

from papers.cli import main

sys.exit(main())
