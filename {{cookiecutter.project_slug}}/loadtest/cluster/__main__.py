import sys

from .manifest import main

sys.exit(main())
