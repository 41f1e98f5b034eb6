"""``python -m eagerflow.saved_model_cli``: inspect and run SavedModels (like TensorFlow's
``saved_model_cli``). See :mod:`eagerflow.saved_model.cli` for the commands."""

import sys

from eagerflow.saved_model.cli import main

if __name__ == "__main__":
    sys.exit(main())
