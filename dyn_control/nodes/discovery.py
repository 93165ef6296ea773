"""Discovery of the graph with Fast DDS: how long a controller waits between joining the graph and its
activation (discovery_settle: the bringup, autostart and the launch files wait it), and a bringup
participant that announces itself often (announcing_often), so that node processes started before
it find it at once."""
import contextlib
import os
import tempfile

ANNOUNCEMENT_PERIOD_NS = 250_000_000   # the bringup participant's announcements (Fast DDS default: 3 s)
# [s] from a controller's joining the graph to its activation with Fast DDS. A participant hears of
# those that were there before it at their next announcement (every 3 s by default), and its
# discovery then stalls every subscription of its process for up to 0.34 s (doc/running.md, "Joint states
# late in transit"): measured up to 3.08 s after the nodes' first log lines, so over 3.42 s after
# them; those lines come up to 0.06 s after the bringup found the nodes (measured under the suite's
# load). 0.5 s of margin.
DISCOVERY_SETTLE = 4.0
PROFILES_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"
FAST_ANNOUNCEMENTS_PROFILE = f"""<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="dyn_control_bringup" is_default_profile="true">
      <rtps><builtin><discovery_config>
        <leaseAnnouncement><sec>0</sec><nanosec>{ANNOUNCEMENT_PERIOD_NS}</nanosec></leaseAnnouncement>
      </discovery_config></builtin></rtps>
    </participant>
  </profiles>
</dds>
"""


def discovery_settle():
    """[s] from a controller's joining the graph to its activation: DISCOVERY_SETTLE with Fast DDS
    (the default RMW), none with another RMW. autostart (which the launch files set) waits it from
    rclpy.init."""
    fast_dds = os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp").startswith("rmw_fastrtps")
    return DISCOVERY_SETTLE if fast_dds else 0.0


@contextlib.contextmanager
def announcing_often():
    """Within: a participant created here announces itself every ANNOUNCEMENT_PERIOD_NS (through a
    Fast DDS default profile, unless the user names one). A node process started after this
    process's first announcements finds it only at the next one, and only then its lifecycle
    services (measured: 2.5-3.5 s after the node was up with Fast DDS's 3 s period; 0.1-0.3 s with
    0.25 s). The node processes keep the defaults: they are started before, with the environment
    as it was."""
    if PROFILES_VARIABLE in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="dyn_control_bringup_") as folder:
        path = os.path.join(folder, "fastdds_profile.xml")
        with open(path, "w") as f:
            f.write(FAST_ANNOUNCEMENTS_PROFILE)
        os.environ[PROFILES_VARIABLE] = path
        try:
            yield
        finally:
            del os.environ[PROFILES_VARIABLE]
