"""Builds deltaproof._core with the repository's CMake build, then packages it.

The extension is the CMake target deltaproof_py (python/CMakeLists.txt), which
links the gates' static libraries. It is built in the repository's build/
(the release preset's folder, which scripts/setup.sh configures with
-DDELTAPROOF_PYTHON=ON), or in DELTAPROOF_BUILD_DIR when set, so a machine that
has built the CLI compiles one more file; a fresh one builds the libraries the
module needs, and nothing else.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(os.environ.get("DELTAPROOF_BUILD_DIR", ROOT / "build")).resolve()
        configure = [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build),
            "-DDELTAPROOF_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        if not (build / "CMakeCache.txt").exists():
            configure.append("-DCMAKE_BUILD_TYPE=Release")
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(
            [
                "cmake",
                "--build",
                str(build),
                "--target",
                "deltaproof_py",
                "-j",
                str(os.cpu_count() or 1),
            ],
            check=True,
        )
        built = build / "python" / "deltaproof" / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not built.exists():
            sys.exit(
                f"setup.py: the CMake build made no {built}; was it configured for another "
                "Python? Remove its CMakeCache.txt or set DELTAPROOF_BUILD_DIR."
            )
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(ext_modules=[Extension("deltaproof._core", sources=[])], cmdclass={"build_ext": CMakeBuild})
