"""Where the bundled robots (config/urdf/*.urdf) live: the installed share folder of a ROS 2
install, else the source checkout."""
import os


def config_dir():
    """The package's config/ folder (ament share folder first, then the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        shared = os.path.join(get_package_share_directory("dyn_control"), "config")
        if os.path.isdir(shared):
            return shared
    except (ImportError, LookupError, OSError):
        pass  # no ament index here (AMENT_PREFIX_PATH unset) or the package is not in it
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")


def bundled_urdf(name):
    """Path of a bundled robot: "arm7", "planar2", "five_bar"."""
    path = os.path.join(config_dir(), "urdf", name + ".urdf")
    if not os.path.isfile(path):
        available = sorted(f[:-5] for f in os.listdir(os.path.join(config_dir(), "urdf")) if f.endswith(".urdf"))
        raise ValueError(f"no bundled robot {name!r}; available: {', '.join(available)}")
    return path
