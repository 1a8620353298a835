"""``python -m itbench_dev``: the developer commands (``itbench_dev/cli.py``)."""

from .cli import dev_app

if __name__ == "__main__":
    dev_app(prog_name="python -m itbench_dev")
