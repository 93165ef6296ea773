"""The kernel cache (dyn_control/kernel_cache.py): one location every entry point finds, entries
keyed on the content of everything they were built from, so that an edit recompiles what it touches
and nothing else, and nothing stale is ever loaded.

Each check runs in fresh processes, as a user's commands do; compiles are counted with Numba's own
compile events (a load from the cache is none).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
from compile_events import RECORDER

import dyn_control as dc
from dyn_control.nodes.preload import LOADERS

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM = os.path.join(REPOSITORY, "config", "urdf", "arm7.urdf")

# a user's script: gravity, rnea and crba on the bundled arm; prints the results and the names of
# the functions Numba compiled
SCRIPT = RECORDER + r"""
import json, sys
import numpy as np
import dyn_control as dc
model = dc.load_urdf(sys.argv[1])
data = model.create_data()
q = np.linspace(-1.0, 1.0, model.nv)
g = dc.gravity(model, data, q)
tau = dc.rnea(model, data, q, 0 * q, 0 * q)
M = dc.crba(model, data, q)
print(json.dumps({"package": dc.__file__, "g": g.tolist(), "rnea": tau.tolist(), "M": M.tolist(),
                  "compiled": Compiles.names}))
"""


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "NUMBA_DISABLE_JIT")}
    env.update(extra)
    return env


def _run_script(cwd, env):
    out = subprocess.run([sys.executable, "-c", SCRIPT, ARM], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_edit_recompiles_every_caller_in_any_module_and_nothing_else(tmp_path):
    """A copy of the package with its own cache: the public gravity (entry kernel in kernels/entry.py
    calling the gravity kernel of kernels/rnea.py) is compiled once; then the gravity kernel's
    arithmetic changes (its bodies' forces doubled) in rnea.py only. In a new process gravity computes the
    new result (entry.gravity and rnea.gravity compiled again), while rnea's and crba's kernels (rnea
    in the same file, not calling the changed one) load from the cache. The results are checked
    against Pinocchio-free identities: g(q) = rnea(q, 0, 0) before the edit, 2 g after."""
    root = tmp_path / "copy"
    shutil.copytree(os.path.join(REPOSITORY, "dyn_control"), root / "dyn_control",
                    ignore=shutil.ignore_patterns("__pycache__", "__kernel_cache__"))
    env = _clean_env(PYTHONPATH=str(root))
    first = _run_script(tmp_path, env)
    assert first["package"].startswith(str(root))
    assert {"gravity", "rnea", "crba"} <= set(first["compiled"])
    np.testing.assert_allclose(first["g"], first["rnea"], rtol=0, atol=1e-12)
    again = _run_script(tmp_path, env)
    assert again["compiled"] == [] and again["g"] == first["g"]       # nothing changed: all from the cache

    kernel = root / "dyn_control" / "kernels" / "rnea.py"
    source = kernel.read_text()
    own_forces = "        # eq. 4 at V = 0: F_i = G_i Vdot_i\n        inertia_times(phi[i], Vdot[i], F[i])\n"
    edited = source.replace(own_forces, own_forces + "        for k in range(6):\n            F[i, k] *= 2.0\n")
    assert edited != source, "the gravity kernel's line to edit was not found"
    kernel.write_text(edited)
    after = _run_script(tmp_path, env)
    np.testing.assert_allclose(after["g"], 2.0 * np.array(first["g"]), rtol=1e-14, atol=1e-14)
    assert after["rnea"] == first["rnea"] and after["M"] == first["M"]
    assert "gravity" in after["compiled"]                  # the kernel, and the entry kernel calling it
    assert after["compiled"].count("gravity") >= 2
    assert "rnea" not in after["compiled"] and "crba" not in after["compiled"]

    kernel.write_text(source)                              # back: the first version is compiled again
    back = _run_script(tmp_path, env)
    assert back["g"] == first["g"]
    # only the latest version of each function is kept in the cache (older entries are removed)
    index = [name for _, _, files in os.walk(root / "dyn_control" / "__kernel_cache__") for name in files
             if name.startswith("rnea.gravity-") and name.endswith(".nbc")]
    assert len(index) == 1, index


def test_every_entry_point_finds_the_kernels_compiled_once(tmp_path, compiled_kernels):
    """After one `dyn-control compile` (the Makefile's, which the suite ran), with no NUMBA_CACHE_DIR
    and from another folder: a user's script, `dyn-control compile` itself (every node loop's
    kernels, as the nodes preload them), each compile nothing."""
    compiled = subprocess.run([os.path.join(os.path.dirname(sys.executable), "dyn-control"), "compile", "--jobs", "1"],
                              cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=1800)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert f"{', '.join(LOADERS)}: 0 functions compiled" in compiled.stdout, compiled.stdout
    assert os.path.join("dyn_control", "__kernel_cache__") in compiled.stdout     # it says where the cache is
    script = _run_script(tmp_path, _clean_env())
    assert script["package"] == dc.__file__
    assert script["compiled"] == []


def test_a_kernel_compiled_for_callers_of_different_flags_keeps_both_entries(compiled_kernels):
    """rnea's kernel is compiled without Numba's runtime for the public rnea (its entry kernel is
    `_nrt=False`) and with it for the controller's tick: after `dyn-control compile` (the Makefile's)
    the cache's index holds both, neither removed by the other's save, each with its data file."""
    import pickle

    from dyn_control.kernel_cache import cache_dirs
    index = os.path.join(cache_dirs()[0], "dyn_control", "kernels", "rnea", "rnea.rnea-k.py311.nbi")
    with open(index, "rb") as f:
        pickle.load(f)                              # Numba's version
        _, overloads = pickle.loads(f.read())
    flags = {key[2][3].split(",")[0] for key in overloads}
    assert flags == {"nrt=False", "nrt=True"}, flags
    assert all(os.path.isfile(os.path.join(os.path.dirname(index), name)) for name in overloads.values())


def test_numba_cache_dir_wins_and_the_package_says_where(tmp_path):
    from dyn_control import kernel_cache
    folder = str(tmp_path / "explicit")
    out = subprocess.run([sys.executable, "-c", "from dyn_control.kernel_cache import cache_dirs; print(cache_dirs())"],
                         env=_clean_env(NUMBA_CACHE_DIR=folder), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr((folder, (folder,)))
    assert kernel_cache.cache_dirs()[0] in (kernel_cache.PACKAGE_CACHE, os.environ.get("NUMBA_CACHE_DIR"))


def test_every_compiled_function_of_the_package_uses_the_kernel_cache():
    """No module declares a cached kernel with Numba's own decorator (its cache would be keyed on
    its own file only): every Dispatcher of the package caching at all caches in KernelCache."""
    import importlib
    import pkgutil

    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    from dyn_control.kernel_cache import KernelCache
    modules = [m.name for m in pkgutil.walk_packages(dc.__path__, "dyn_control.")]
    checked, offenders = 0, []
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:            # an optional dependency (rosbags, mujoco) absent
            print(f"{module_name} not checked: {error}")
            continue
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module_name:
                checked += 1
                if not isinstance(value._cache, (KernelCache, NullCache)):
                    offenders.append(f"{module_name}.{value.py_func.__qualname__}")
    assert checked > 200 and offenders == []


def _save_entries(folder, process, count):
    """`count` entries of one version of a function into one index (keys of other signatures and
    closure variables: none is an older version of another), as a compiling process saves them."""
    from dyn_control.kernel_cache import STAMP, _IndexFile
    index = _IndexFile(folder, "kernel.f-k.py311", STAMP)
    for i in range(count):
        key = ((f"sig{process}.{i}",), "codegen", ("bytecode", f"closure{process}.{i}", "digest", "flags"))
        index.save(key, (process, i))


def test_processes_saving_into_one_index_at_once_keep_every_entry(tmp_path):
    """dyn-control compile's processes (and two nodes compiling one kernel) save into one index at
    once: each reads the index, adds its entry and writes it back. Every entry of four processes
    saving 40 each at once stays in the index, each with its own data file."""
    import multiprocessing
    import pickle
    folder = str(tmp_path)
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_save_entries, args=(folder, p, 40)) for p in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    with open(os.path.join(folder, "kernel.f-k.py311.nbi"), "rb") as f:
        pickle.load(f)
        _, overloads = pickle.loads(f.read())
    assert len(overloads) == 160
    assert len(set(overloads.values())) == 160          # no two entries share a data file
