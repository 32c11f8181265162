# lit configuration for Loupe: every .lir file under lit_tests/ is a test whose RUN lines
# pipe loupe-opt (or loupe) output into FileCheck.
import os
import sys

import lit.formats

config.name = "loupe"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".lir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.loupe_bin_root, "lit_tests")

bin_dir = config.loupe_bin_root
config.substitutions.append(("%loupe-opt", os.path.join(bin_dir, "tools", "loupe-opt")))
config.substitutions.append(("%loupe ", os.path.join(bin_dir, "tools", "loupe") + " "))
config.substitutions.append(("%python", sys.executable))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", "")]
)
# Kernels compiled by tests go to a cache inside the build tree, not the user's home.
config.environment["LOUPE_CACHE_DIR"] = os.path.join(bin_dir, "kernel-cache")
