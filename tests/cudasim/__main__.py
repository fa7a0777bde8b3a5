"""``python -m cudasim <gpusvm arguments>`` (with tests/ on sys.path): the ``gpusvm`` command with the
emulated CuPy installed, e.g. ``PYTHONPATH=.:tests python -m cudasim bench --suite tiny --devices cpu,gpu``
to run the harness's GPU rows through the emulator. Its timings are the emulator's, not a GPU's."""

import sys

from . import install

install()

from gpusvm.__main__ import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
