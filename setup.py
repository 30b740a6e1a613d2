"""Build hook: ship the repository's top-level agents.yaml and prompts/ inside the wheel.

The top-level files are the single source; the wheel gets a copy made at build time under
maps_autogen/_defaults/, so an installed `maps` works from any folder.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent


class BuildPyWithDefaults(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "maps_autogen" / "_defaults"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        shutil.copy2(ROOT / "agents.yaml", target / "agents.yaml")
        shutil.copytree(ROOT / "prompts", target / "prompts")


setup(cmdclass={"build_py": BuildPyWithDefaults})
