"""Process-level machinery below the ops: device names, devices, and the execution context."""
