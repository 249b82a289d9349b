import sys

from shockwave_gym.cli import main

sys.exit(main())
