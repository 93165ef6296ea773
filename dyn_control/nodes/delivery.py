"""Why a controller's joint states stopped: did the robot's side go silent, or did its states fail to
reach this process over DDS (doc/running.md, "Joint states late in transit")? Judged when a watchdog
trip ends, from the backlog that ended it and the publisher's sequence numbers."""
import math

from . import qos
from .wire import header_stamp_ns


def delivery_verdict(c):
    """On leaving safe mode: did the robot's side go silent, or did its joint states fail to
    reach this process? Late in transit: the ones that ended the outage arrive together, the
    oldest stamped within the watchdog's timeout of the last state taken before the outage, or
    as a full queue (the older ones pushed out). Lost in transit: the publisher's sequence
    numbers (qos.PolledSubscription.publications) went on during the outage, and some of the
    states they number never arrived. Each is counted, and said in the log ("" for a silent
    robot)."""
    backlog = c.backlog
    lost = lost_in_transit(c.joint_states)
    said = ""
    if lost:
        c.lost_deliveries += 1
        said = (f"; the robot's side published {lost} more that never reached this process (their "
                "publication sequence numbers): lost in transit")
    oldest = header_stamp_ns(backlog[0]) if len(backlog) >= 2 else None
    after = (oldest - c.supervisor.stamp_before_outage) * 1e-9 if oldest is not None else math.inf
    if len(backlog) >= 2 and (len(backlog) >= qos.SENSOR_DATA.depth or 0.0 < after <= c.supervisor.watchdog_timeout):
        c.late_deliveries += 1
        said = (f"; {len(backlog)} arrived at once, the oldest stamped {after:.3f} s after the last one "
                f"before: they were late in transit to this process, the robot's side published on time"
                f"{said}")
    return f"{said} (doc/running.md, \"Joint states late in transit\")" if said else ""

def lost_in_transit(joint_states):
    """How many joint states the publisher of the newest one before the outage sent after it,
    up to the newest taken now, that this process never took (0 when unknown: an RMW without
    sequence numbers, or only other publishers now). `joint_states`: the qos.PolledSubscription."""
    before = joint_states.publication_before()
    if before is None or before[1] is None:
        return 0
    publisher, last = before
    taken = [number for sender, number in joint_states.publications()
             if sender == publisher and number is not None]
    return max(0, max(taken) - last - len(taken)) if taken else 0
